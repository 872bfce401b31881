"""What one cycle decides (contract §2), as typed data.

The JSON the CLI prints is exactly ``Decision.model_dump(mode="json")``; field names here are the
contract's, so renaming one is a breaking change.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Binding(_Out):
    pod: str
    """``namespace/name``."""
    node: str
    gpus: list[int] = []
    """Device indices on the node, as many as the pod asks ``nvidia.com/gpu`` (one for a GPU share)."""


class Nomination(_Out):
    pod: str
    node: str
    gpus: list[int] = []


class Eviction(_Out):
    pod: str
    reason: Literal["preempt", "reclaim"]


PodGroupPhase = Literal["Running", "Inqueue", "Pending"]


class PodGroupOutcome(_Out):
    podgroup: str
    """``namespace/name``; a pod with no PodGroup appears as its own ``namespace/name``."""
    phase: PodGroupPhase
    reason: str = ""
    """Machine-readable code for what blocks it: Unschedulable, QueueOverused, GangUnsatisfied,
    Fragmented, WaitingForEviction, ...; empty when placed."""
    message: str = ""


SolverStatus = Literal["OPTIMAL", "FEASIBLE", "WITHIN_GAP", "FALLBACK"]
"""``OPTIMAL``: every level proven best. ``FEASIBLE``: the search's budget ended first; ``bound``
limits how much better the decision could be. ``WITHIN_GAP``: the decision is proven within
``Policy.relative_gap`` of its bound, where the search stops (or never starts, when the greedy
decision already is). ``FALLBACK``: the greedy decision was kept because the search found nothing
better, was too large for its budget, or was turned off."""


def relative_gap(objective: float, bound: float) -> float:
    """How far a decision may be from the best one: ``(bound − objective) / max(|bound|, 1)``.

    The one definition of the gap, used by the table, the metrics, the benchmarks and the simulator.
    The objective is maximised, so the proven ``bound`` is at least the ``objective``; dividing by the
    bound makes the gap the share of the best possible value this decision may miss, between 0
    (optimal) and 1, and the floor of 1 keeps a cycle with nothing to place at 0 instead of dividing
    by zero. The solver's own stop rule for ``Policy.relative_gap`` measures the same way. A bound
    below the objective (a baseline reports none) counts as no gap.
    """
    return max(0.0, bound - objective) / max(abs(bound), 1.0)


class LevelBound(_Out):
    """One level of the objective (design.md, "Better"): the decision's value there and a proven
    upper bound on it, every more important level held at the decision's own value."""

    level: str
    """The level's name, as the search's stages name it (a queue fair-share level, or placed work
    at one priority)."""
    value: int
    bound: int

    @property
    def gap(self) -> float:
        """:func:`relative_gap` of the decision at this level."""
        return relative_gap(self.value, self.bound)


def first_short(levels: list[LevelBound]) -> LevelBound | None:
    """The most important level whose bound is above the decision's value: where a better
    decision may differ first (each level's bound holds the ones above at the decision's values,
    so the levels below it say how much more *this* decision's shares leave room for); None when
    the decision reaches every bound."""
    return next((level for level in levels if level.bound > level.value), None)


class SolverStats(_Out):
    status: SolverStatus
    objective: float = 0.0
    bound: float = 0.0
    seconds: float = 0.0
    """Wall seconds of the cycle, from its start (``vcsat solve``: the command's, reading included)."""
    workers: int = 1
    """CP-SAT workers the searches ran with (``Policy.num_workers``, or the cores available)."""
    deterministic_budget: float = 0.0
    """Deterministic seconds the searches were given: computed from the time limit and the
    problem's size only, so a replay of the same instance and policy gets the same."""
    deterministic_time: float = 0.0
    """Deterministic seconds the searches used."""
    wall_stopped: bool = False
    """The wall-clock deadline (the time limit) stopped a search before its deterministic budget
    did: a replay may decide differently. When False, ``vcsat solve`` on the dumped instance with
    the same policy and ``--workers`` gives the same decision."""
    skipped: list[str] = []
    """Optional steps (``second_fill``, ``search``, ``top_up``, ``neighbourhood``, ``exchange``, ``evictions``)
    not run because they would have ended after the time limit (:mod:`vcsat.solver.deadline`); the
    decision is the best one in hand without them. A replay skipping the same steps decides alike
    unless a search was also cut short on the wall clock."""
    levels: list[LevelBound] = []
    """Every level of the objective, most important first: the queue fair-share levels, then
    placed work by priority (whose values and bounds sum to ``objective`` and ``bound``). Each
    level's bound holds the more important levels at this decision's values, so where a fair-share
    level is below its bound the placed-work gap below it is measured at shares a better decision
    would raise (:func:`first_short` names the first such level)."""

    @property
    def gap(self) -> float:
        """:func:`relative_gap` of this decision."""
        return relative_gap(self.objective, self.bound)


class Decision(_Out):
    bindings: list[Binding] = []
    nominations: list[Nomination] = []
    evictions: list[Eviction] = []
    podgroups: list[PodGroupOutcome] = []
    solver: SolverStats
