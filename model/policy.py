"""Options of one cycle: what the solver may do and how hard it tries.

A policy file (``vcsat solve --policy FILE``) is this model in YAML; unknown keys are refused so a
typo never silently changes a decision.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Policy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    scheduler_name: str = "vcsat"
    """Only pods with this ``spec.schedulerName`` are placed; all others are fixed load."""
    time_limit_s: float = Field(default=10.0, gt=0)
    """Wall seconds the whole cycle may take, from the moment it started (``vcsat solve``: the
    command's start, reading the file included). Inside it the CP-SAT searches get budgets in
    their deterministic seconds, computed from this limit and the problem's size only, so a replay
    decides the same; the wall deadline is the outer stop, and a decision it cut short says so
    (``solver.wall_stopped``). The greedy decision stands if the search finds nothing better."""
    num_workers: int | None = Field(default=None, ge=1)
    """CP-SAT search workers; None: the cores this process may run on (``os.sched_getaffinity``)
    less one (the rest of the cycle and the scheduler's own threads keep a core), at least 1 and
    at most 8. Several workers are interleaved (CP-SAT's ``interleave_search``), which with
    deterministic limits gives the same decision for the same input and the same number of
    workers; the decision records the number it used (``solver.workers``), so a replay passes it.
    Several workers count their deterministic time together and stop only between interleaved
    chunks, so they may use more than the budget (``solver.deterministic_time``); the wall
    deadline still holds."""
    random_seed: int = 0
    search: bool = True
    """Run the CP-SAT search of the allocate phase. Off: the greedy decision with its LP bound
    (``FALLBACK``), what the exact search adds being the difference; for ablations, not for use."""
    relative_gap: float = Field(default=0.005, ge=0)
    """Stop as soon as the proven gap (:func:`vcsat.model.relative_gap`) is at most this; a greedy
    decision already within it is kept without a search (``WITHIN_GAP``, see
    :mod:`vcsat.solver.search.stop`). 0: prove optimality or hit the limit. The default, half a
    percent: on 1,000-node clusters the greedy decision is usually proven within 0.3-0.4%, and the
    search and its neighbourhood then cost twice the rest of the cycle for gains smaller than that
    (benchmarks/RESULTS.md, the stop rule)."""
    packing_weight: int = Field(default=1, ge=0)
    """Packing levels (whole GPU nodes kept free, partly used ones completed) rank below every
    placement level; 0 leaves them out."""
    gang: bool = True
    """All-or-nothing gangs (Volcano's gang plugin). Off: each pod is placed on its own."""
    priority: bool = True
    """Placed work ranked by priority, highest first (Volcano's priority plugin). Off: one level."""
    proportion: bool = True
    """Queue fair shares by weight, capped by capability, raised to guarantee (proportion plugin)."""
    drf: bool = True
    """Dominant Resource Fairness among the jobs of a queue at equal priority (drf plugin)."""
    preempt: bool = True
    """Higher-priority gangs may evict lower-priority pods of the same queue (preempt action)."""
    reclaim: bool = True
    """Queues below their deserved share may take back room from reclaimable queues above it."""
    enqueue: bool = True
    """PodGroups move Pending → Inqueue only when their minResources fit (enqueue action)."""
    overcommit: bool = True
    """Enqueue also checks the cluster's overcommitted idle room (Volcano's overcommit plugin)."""
    overcommit_factor: float = Field(default=1.2, ge=1.0)
    """Enqueue admits up to this multiple of the cluster's allocatable (Volcano's overcommit plugin)."""
    inqueue_timeout_s: float | None = Field(default=600.0, gt=0)
    """Enqueue's ``InqueueTimeout``: a group admitted (Inqueue) this many seconds ago with none of its
    pods placed goes back to ``Pending`` and releases its overcommit reservation, so that an unplaceable
    group does not hold the cluster's admission room for ever and groups that can run now are admitted
    in its place. It is re-admitted by the usual rules (often in the next cycle, if room is left). None:
    never (Volcano's behaviour). Needs the snapshot's clock (``Snapshot.now``); without one nothing
    times out. A group whose queue holds less than its deserved share keeps its room while a queue that
    holds its own waits for admission (see ``vcsat.solver.enqueue``). The default, 10 minutes: far above
    a cycle, so a gang is not demoted while room for it is being freed, yet well below typical batch job
    lengths, so room idles minutes, not hours; much shorter timeouts churn (a group re-admitted every
    few cycles), much longer ones release the room late (benchmarks/RESULTS.md, design measurements)."""
    admit_by_fit: bool = True
    """Enqueue's rule 6 (not Volcano's): a group refused only because the overcommitted admission room
    is taken is admitted all the same when its gang fits the nodes' free room now (after what admitted
    groups would take) and its queue stays within its deserved share, so idle room does not wait
    behind reservations of gangs that cannot start. False: Volcano's enqueue exactly."""
    topology: bool = True
    """Price placements by GPU interconnect and HyperNode tiers (network-topology-aware plugin)."""
    explain_per_queue: int | None = Field(default=64, ge=0)
    """How many waiting PodGroups of each queue (in the queue's order) get the full explanation of a
    cycle, the one that tries to place the gang again on the room left. The rest still get the cheap
    reasons (queue capability, cluster total) and otherwise ``NotExamined``, whose message says how to
    get the full one (``vcsat explain``). None: every group is examined in full. Only the reasons
    depend on it, never a placement."""
