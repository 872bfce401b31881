"""Admission: which PodGroups move from Pending to Inqueue this cycle (Volcano's enqueue action).

Why: the Job controller creates pods only for admitted groups, and Volcano's users expect a job
to wait as ``Pending`` with a reason, instead of flooding the cluster with pods that cannot run.
Volcano spreads this decision over the enqueue action and three plugins' ``JobEnqueueable``
votes; here it is one explicit pass, before the solve, that the model builder, the status writer
and ``vcsat solve`` all read.

The rules, in the order they are applied:

1. With ``policy.enqueue`` off every group is admitted (Volcano without the enqueue action moves
   Pending groups straight to Inqueue). Pods without a PodGroup never wait for admission.
2. A group's *need*: its ``minResources``; without them, the requests of the pods that make its
   gang (each task's ``minTaskMember`` pods, then more up to ``minMember``, oldest first). A group
   with neither asks nothing and is admitted (Volcano's "best effort" group). GPU shares
   (``vcsat.io/gpu-milli``) are not counted: they are no cluster resource to overcommit.
3. Groups already Inqueue or Running stay admitted, except an Inqueue group that
   - can never run as the cluster is built: fewer than ``minMember`` (or a task's
     ``minTaskMember``) of its existing pods pass the predicates and fit the allocatable of any
     node, ignoring readiness and cordons and ignoring what is in use; or its need exceeds its
     queue's (or an ancestor's) capability or the whole cluster — reason ``Unschedulable``. This
     is Volcano's known complaint (volcano-sh/volcano#4471, #5006): an unplaceable group holding
     quota forever. No state is needed for it: the check is redone every cycle.
   - has been Inqueue for ``inqueue_timeout_s`` with none of its pods bound — reason
     ``InqueueTimeout``. This one needs state across cycles: the time each group became Inqueue,
     read from ``PodGroup.inqueue_since`` (the converter takes it from the ``lastTransitionTime``
     of the ``Inqueued`` condition vcsat writes on admission: Volcano's own PodGroup conditions,
     ``Unschedulable`` and ``Scheduled``, record no admission time) with the cycle's clock ``Snapshot.now`` and
     ``Policy.inqueue_timeout_s``. Without a clock (a file dumped without one) nothing times out.
     Exception: a group whose queue holds less than its deserved share keeps its room while
     another queue that holds its share has groups waiting for admission: the released room
     would be lent to that queue, against fair sharing (without the exception the lowest-weight
     queue of the synthetic workload ends above its share; benchmarks/RESULTS.md).
   Demoted groups release their reservation at once and are not readmitted in the same cycle.
4. Pending groups are then considered one at a time from the queue least served, counting both
   what it holds and what its groups admitted so far in this pass will hold (relative to its
   deserved share), and inside a queue by priority (highest first), then creation time, then
   name. Volcano's queue heap looks only at what queues hold, so one queue's backlog may take all
   the overcommitted room before another queue is looked at; counting admissions interleaves the
   queues by weight instead. A rejected group does not block the next one.
5. A Pending group is admitted when all of these hold, each checked only on the resources its
   need asks for:
   - its queue exists and is Open (``QueueNotFound``, ``QueueClosed``);
   - it could run at all (the static check of rule 3, when its pods exist; ``Unschedulable``);
   - queue room, for the queue and each ancestor (``QueueOverused``): ``need + committed ≤
     allowed``. ``allowed`` is the capability, and with ``policy.proportion`` also no more than the
     parent's allowance less the guarantees of the parent's other children (Volcano's
     ``realCapability``; the top level's parent allowance is the cluster's allocatable).
     ``committed`` is what the queue's groups are held to: each admitted group its need (its pods
     beyond their need are elastic and may be reclaimed, so they do not block admission, as
     Volcano's ``elastic`` term), each other group what it holds up to its need, and each bound pod
     without a PodGroup its requests;
   - cluster room, unless the overcommit plugin is off (``ClusterOverused``): ``need + reserved ≤
     ⌊allocatable × overcommit_factor⌋ − used``, where ``used`` is everything bound on Ready nodes
     and ``reserved`` is, per admitted group of ours, the part of its need its pods do not hold
     yet. Another scheduler's groups (:func:`is_ours`) are load only: their bound pods are in
     ``used``, and none of their need is reserved or committed (counting both refused our Jobs
     with ``ClusterOverused`` next to another scheduler's running gangs).
   Each admission adds to ``committed`` and ``reserved`` before the next group is considered.

Where this differs from Volcano, and why: the need of a group without ``minResources`` is taken
from its pods instead of admitting it unchecked (the quota would otherwise be unenforced for
plain PodGroups); the overcommit reservation of an Inqueue group deducts what its pods already
hold (Volcano counts those twice, in ``used`` and in ``inqueue``); ``capability`` is checked even
without the proportion plugin, since contract §3 makes it a hard cap; and the demotions of rule 3
are new (Volcano has only the proposal above).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

from vcsat.model import Pod, PodGroup, Policy, Snapshot
from vcsat.model import resources as res
from vcsat.model.conformance import protection
from vcsat.model.queue_rule import queue_in
from vcsat.solver import admission_commitments, admission_groups, admission_ours, admission_walk, cycle, pod_sums
from vcsat.solver.admission_room import FreeRoom as _FreeRoom
from vcsat.solver.admission_room import bits as _bits  # noqa: F401  (tests read it here)
from vcsat.solver.admission_static import Placeable as _Placeable
from vcsat.solver.shares.deserved import FAIR_EXCLUDED, QueueShare, QueueTree, fair_shares

PENDING_PHASES = frozenset({"", "Pending"})
"""Phases of a group that still waits for admission (Volcano: an empty phase is Pending)."""


class Admission(NamedTuple):
    """The admission of one PodGroup this cycle."""

    admitted: bool
    phase: str
    """The phase after admission: ``Pending`` when refused or demoted, ``Inqueue`` when admitted
    now or kept, otherwise the group's own phase (``Running``, ...)."""
    reason: str
    """Machine-readable code; empty when admitted."""
    message: str
    """What blocks it, with the resource and the amounts; empty when admitted."""


DEFAULT_SCHEDULER = "vcsat"
"""Whose a PodGroup is when it has no pod yet and no ``vcsat.io/scheduler-name``."""

_KEPT: dict[str, Admission] = {}
"""An admission in each phase, made once and shared: a pass gives every admitted group one, and a
named tuple is made by a Python call (mypyc does not compile it); tuples are immutable."""


def _admitted(phase: str) -> Admission:
    """``Admission(True, phase, "", "")``, made once per phase."""
    found = _KEPT.get(phase)
    if found is None:
        if len(_KEPT) >= 64:  # phases are a handful; any text is possible (a status written by hand)
            _KEPT.clear()
        found = _KEPT[phase] = Admission(True, phase, "", "")
    return found


def admit(
    snapshot: Snapshot,
    policy: Policy,
    *,
    now: float | None = None,
    inqueue_since: Mapping[str, float] | None = None,
    inqueue_timeout_s: float | None = None,
    overcommit: bool = True,
) -> dict[str, Admission]:
    """The admission of every PodGroup of the snapshot, by key (see the module docstring).

    ``inqueue_since`` (per group key: the epoch seconds at which it became Inqueue), ``now`` and
    ``inqueue_timeout_s`` enable the timeout of rule 3; each defaults to what the snapshot and policy
    carry (``PodGroup.inqueue_since``, ``Snapshot.now``, ``Policy.inqueue_timeout_s``).
    ``overcommit=False`` skips the cluster-room check (a Volcano configuration without the overcommit
    plugin).
    """
    if now is None:
        now = snapshot.now
    if inqueue_since is None:
        inqueue_since = {g.key: g.inqueue_since for g in snapshot.podgroups if g.inqueue_since is not None}
    if inqueue_timeout_s is None:
        inqueue_timeout_s = policy.inqueue_timeout_s
    # Groups of other schedulers (no pod of ours, and named for another scheduler) are not ours
    # to admit, and hold no room in our admission.
    # A pass that carries nothing reads every group once for all it starts from (admission_walk);
    # otherwise each part is carried from the last pass for the groups the change set leaves out
    # (admission_ours, admission_groups, admission_commitments).
    walk = (
        admission_walk.walk(snapshot, policy.scheduler_name, DEFAULT_SCHEDULER, group_need) if policy.enqueue else None
    )
    if walk is not None:
        ours = walk.ours
        groups = sorted(walk.groups, key=_key_of)
    else:
        ours = admission_ours.ours(snapshot, policy.scheduler_name, ours_of, is_ours)
        groups = sorted((g for g in snapshot.podgroups if g.key in ours), key=_key_of)
    if not policy.enqueue:
        return {g.key: _admitted(_kept_phase(g)) for g in groups}

    state = _State.of(snapshot, policy, ours, walk)
    out: dict[str, Admission] = {}
    shares = fair_shares(snapshot)
    state.shares = shares
    served_now = {name: _served(shares, {name: share.usage}, name) for name, share in shares.items()}
    # Queues that wait for admission while holding their deserved share already: the room a
    # timed-out group releases would be lent to them (rule 3's exception for queues below theirs).
    lenders = {g.queue for g in groups if g.phase in PENDING_PHASES and served_now.get(g.queue, 0) >= 1}

    # Rule 3: keep what is admitted, except groups that cannot run or waited too long.
    for group in groups:
        if group.phase in PENDING_PHASES:
            continue
        if group.phase != "Inqueue":
            out[group.key] = _admitted(group.phase)
            continue
        why = state.never_runs(group)
        if (
            why is None
            and _timed_out(group, state, now, inqueue_since, inqueue_timeout_s)
            and not _owed(group.queue, served_now, lenders)
        ):
            since = (inqueue_since or {})[group.key]
            why = (
                "InqueueTimeout",
                f"Inqueue for {now - since if now is not None else 0:.0f}s (timeout "
                f"{inqueue_timeout_s:.0f}s) with no pod placed: its reservation is released",
            )
        if why is None:
            out[group.key] = _admitted("Inqueue")
            state.admitted.append(group)
            continue
        out[group.key] = Admission(False, "Pending", *why)
        state.release(group)

    # Rules 4 and 5: admit Pending groups queue by queue, the queue least served counting what
    # its admitted groups will hold first, then job order inside a queue. Counting admissions
    # (where Volcano's heap looks only at what queues hold) interleaves queues by weight, so one
    # queue's backlog never takes all the cluster's overcommitted room before the others get any.
    waiting: dict[str, list[PodGroup]] = {}
    for group in sorted((g for g in groups if g.phase in PENDING_PHASES), key=state.order):
        waiting.setdefault(group.queue, []).append(group)
    committed = {name: dict(share.usage) for name, share in shares.items()}
    # Volcano's enqueue walks queues of higher ``spec.priority`` first, then by share.
    priority = {q.name: q.priority for q in snapshot.queues}
    # A queue's served fraction changes only when one of its own groups is admitted: kept per queue,
    # as its numerator and denominator (compared by cross-multiplying, :func:`_next_queue`).
    served = {q: _served_ratio(shares, committed, q) for q in waiting}
    heads = dict.fromkeys(waiting, 0)
    while waiting:
        queue = _next_queue(waiting, priority, served)
        group = waiting[queue][heads[queue]]
        heads[queue] += 1
        if heads[queue] == len(waiting[queue]):
            del waiting[queue]
        verdict = state.consider(group, overcommit=overcommit)
        out[group.key] = verdict
        if verdict.admitted:
            state.reserve(group)
            state.note_admitted(group)
            held = committed.setdefault(queue, {})
            for name, amount in state.need[group.key].items():
                held[name] = held.get(name, 0) + amount
            served[queue] = _served_ratio(shares, committed, queue)
    return {key: out[key] for key in sorted(out)}


def _next_queue(
    waiting: Mapping[str, object], priority: Mapping[str, int], served: Mapping[str, tuple[int, int]]
) -> str:
    """The queue of ``waiting`` first by ``(-spec.priority, served fraction, name)``: what
    ``min(waiting, key=...)`` over those tuples picks, with the fractions (``served``: numerator,
    positive denominator) compared as integers by cross-multiplying, exactly, where comparing
    Fractions runs Python code per pair and a pass picks a queue per group it considers."""
    best, found = "", False
    best_rank, best_held, best_deserved = 0, 0, 1
    for queue in waiting:
        rank = -priority.get(queue, 0)
        held, deserved = served[queue]
        if found:
            if rank != best_rank:
                if rank > best_rank:
                    continue
            else:
                left, right = held * best_deserved, best_held * deserved
                if left > right or (left == right and queue > best):
                    continue
        best, best_rank, best_held, best_deserved, found = queue, rank, held, deserved, True
    return best


def next_inqueue_timeout(snapshot: Snapshot, policy: Policy) -> float | None:
    """When (epoch seconds, on the snapshot's clock) the next Inqueue group's admission times out,
    if one is still to: a live scheduler idle until then re-runs the cycle at that moment. Only our
    groups time out (another scheduler's are not ours to admit). Groups with pods placed never time
    out, but are not told apart here: an early extra cycle is harmless."""
    timeout = policy.inqueue_timeout_s
    if not policy.enqueue or timeout is None or snapshot.now is None:
        return None
    due = [
        group.inqueue_since + timeout
        for group in snapshot.podgroups
        if group.phase == "Inqueue"
        and group.inqueue_since is not None
        and is_ours(group, snapshot, policy.scheduler_name)
    ]
    return min((moment for moment in due if moment > snapshot.now), default=None)


def is_ours(group: PodGroup, snapshot: Snapshot, scheduler_name: str) -> bool:
    """Whether a PodGroup is ours to admit: one of its pods is ours, or it is named for us (or for
    nobody) while it has no pod. Another scheduler's groups are only load: their bound pods count
    as used, and nothing of their need is reserved or committed in our admission."""
    pods = snapshot.pods_of_group.get(group.key, ())
    if any(p.managed for p in pods):
        return True
    if pods:
        return False
    return (group.scheduler_name or DEFAULT_SCHEDULER) == scheduler_name


def ours_of(snapshot: Snapshot, scheduler_name: str) -> set[str]:
    """The keys of the PodGroups that are ours (:func:`is_ours`), in one pass over the pods and one
    over the groups: asking group by group read every group's pod tuple (~0.04 CPU s a cycle at
    5,000 nodes)."""
    managing = {pod.group for pod in snapshot.pods if pod.managed and pod.group is not None}
    with_pods = snapshot.pods_of_group
    return {
        group.key
        for group in snapshot.podgroups
        if group.key in managing
        or (group.key not in with_pods and (group.scheduler_name or DEFAULT_SCHEDULER) == scheduler_name)
    }


_NOTHING: Mapping[str, int] = {}
"""An empty vector to read from (never written)."""

_NOTHING_SERVED = Fraction(0)
"""The share of a queue with no deserved share (fractions are immutable: one serves every such queue)."""


def _served(shares: Mapping[str, QueueShare], committed: Mapping[str, Mapping[str, int]], queue: str) -> Fraction:
    """The largest part of its deserved share a queue holds or has been admitted for."""
    if queue not in shares:
        return _NOTHING_SERVED
    return Fraction(*_served_ratio(shares, committed, queue))


def _served_ratio(
    shares: Mapping[str, QueueShare], committed: Mapping[str, Mapping[str, int]], queue: str
) -> tuple[int, int]:
    """:func:`_served` as its numerator and denominator (positive; not reduced)."""
    share = shares.get(queue)
    if share is None:
        return (0, 1)
    # The largest held / deserved, compared by cross-multiplying.
    worst_held, worst_deserved = 0, 1
    shared = share.deserved
    for resource, held in committed.get(queue, {}).items():
        deserved = shared.get(resource, 0)
        # Only resources queues share count: a pods count or a resource nobody deserves any of
        # would make every queue look fully served.
        if deserved <= 0 or held <= 0 or resource in FAIR_EXCLUDED:
            continue
        if held * worst_deserved > worst_held * deserved:
            worst_held, worst_deserved = held, deserved
    return (worst_held, worst_deserved)


_NEEDS: dict[int, tuple[Mapping[str, int], dict[str, int]]] = {}
_NEEDS_KEPT = 1 << 14
""":func:`group_need` of a group without gated pods, by its ``minResources`` dict: the PodGroups of
one kind of job share that dict (the converter reads each spelling once), so the need is made once
per dict and shared (needs are read, never changed). The entry holds the dict, so the id it is
found by cannot be reused while it lives; cleared when full."""


def group_need(group: PodGroup, pods: Sequence[Pod]) -> dict[str, int]:
    """What a group asks to be admitted: its minResources, else the requests of its gang's pods.

    The gang's pods: per task its ``minTaskMember`` oldest pods, then the oldest others up to
    ``minMember``; with fewer pods than that (the controller may still be creating them), all.
    Pods held by scheduling gates or resource claims are not counted (Volcano's
    ``DeductSchGatedResources``): they take no room until released.
    """
    minimum = group.min_resources
    if minimum:
        # Volcano deducts what gated pods ask from minResources: they cannot use the room yet.
        gating = [p.requests for p in pods if p.held and not p.bound and not p.finished]
        if not gating:  # the usual case: minResources as they are, made once per minResources dict
            found = _NEEDS.get(id(minimum))
            if found is None or found[0] is not minimum:
                if len(_NEEDS) >= _NEEDS_KEPT:
                    _NEEDS.clear()
                made = {r: max(0, amount) for r, amount in minimum.items() if r != res.GPU_MILLI}
                found = _NEEDS[id(minimum)] = (minimum, made)
            return found[1]
        gated = res.total(gating)
        return {r: max(0, amount - gated.get(r, 0)) for r, amount in _without_shares(minimum).items()}
    return _without_shares(res.total(p.requests for p in gang_pods(group, pods) if not p.held))


def gang_pods(group: PodGroup, pods: Sequence[Pod]) -> list[Pod]:
    """The pods that make a group's gang (see :func:`group_need`), oldest first per task."""
    if len(pods) == 1:
        # Most groups have one pod: it is the gang when it is alive and some minimum counts it.
        (pod,) = pods
        wanted = group.min_member > 0 or group.min_task_member.get(pod.task, 0) > 0
        return [pod] if wanted and not pod.finished else []
    alive = sorted((p for p in pods if not p.finished), key=lambda p: (p.created, p.key))
    chosen: list[Pod] = []
    for task, minimum in sorted(group.min_task_member.items()):
        chosen.extend([p for p in alive if p.task == task][:minimum])
    taken = {p.key for p in chosen}
    rest = [p for p in alive if p.key not in taken]
    chosen.extend(rest[: max(0, group.min_member - len(chosen))])
    return chosen


# --- the bookkeeping of one admission pass ------------------------------------------------------


@dataclass
class _State:
    snapshot: Snapshot
    policy: Policy
    tree: QueueTree
    need: dict[str, dict[str, int]]
    held: dict[str, dict[str, int]]
    committed: dict[str, dict[str, int]]
    """Per queue, its subtree's commitments (rule 5)."""
    reserved: dict[str, int]
    """Cluster-wide: needs of admitted groups not yet held by their pods."""
    allocatable: dict[str, int]
    idle: dict[str, int]
    """``⌊allocatable × factor⌋ − used``, before reservations."""
    allowed: dict[str, dict[str, int | None]]
    """Per queue and resource, Volcano's realCapability (None: unbounded)."""
    queue_rank: dict[str, tuple[int, Fraction, str]]
    placeable: _Placeable
    victims: _Victims | None = None
    freed: dict[tuple[str, int, bool], dict[str, int]] = field(default_factory=dict)
    """What :meth:`evictable` found, per (queue, priority, same queue only): the same all pass."""
    shares: Mapping[str, QueueShare] = field(default_factory=dict)
    """Each queue's deserved share: the bound of admission by fit (rule 6)."""
    admitted: list[PodGroup] = field(default_factory=list)
    """Groups holding an admission, in the order they got it: the first claims on the free room."""
    room: _FreeRoom | None = None
    """The nodes' free room less what admitted groups' gangs take of it, built on first need."""
    to_place: deque[PodGroup] = field(default_factory=deque)
    """Admitted groups whose gangs are still to be taken from :attr:`room`, in the order they claim it:
    taken only when a verdict needs them (:meth:`_catch_up`)."""
    by_fit: set[str] = field(default_factory=set)
    """Keys of the groups :meth:`fits_idle_room` admitted: their gangs hold the room already."""
    lent: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per queue, what the groups admitted by fit this pass will hold (rule 6's share bound)."""
    unbound: dict[str, list[Pod] | None] = field(default_factory=dict)
    """:meth:`_unbound_gang` per group key, made once."""
    ours: set[str] = field(default_factory=set)
    """The keys of the groups that are ours (:func:`is_ours`), found once per pass."""
    lineages: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """:meth:`lineage` per queue, made once (the queue tree does not change in a pass)."""
    within_cluster: dict[int, tuple[Mapping[str, int], bool]] = field(default_factory=dict)
    """Per need dict (by id, holding it): whether the Ready nodes' allocatable holds all of it."""
    reserving_of: dict[str, bool] = field(default_factory=dict)
    """:meth:`reserving` per group key, asked once (groups and their pods do not change in a pass)."""
    queue_places: dict[str, int] = field(default_factory=dict)
    """:meth:`queue_place` per queue, found once."""
    ranked_queues: list[tuple[int, Fraction, str]] | None = None
    """The queues with a share, as their tuples of proportion's order, sorted (made on first need)."""

    @staticmethod
    def of(
        snapshot: Snapshot, policy: Policy, ours: set[str] | None = None, walk: admission_walk.Walk | None = None
    ) -> _State:
        tree = QueueTree.of(snapshot)
        if walk is not None:
            need, held = walk.need, walk.held
        else:
            # Groups and pods unchanged since the last pass keep their sums (admission_groups).
            need, held = admission_groups.needs_and_holdings(snapshot, group_need)
        # Carried from the last snapshot for the nodes and pods that did not change (pod_sums).
        allocatable, used, _ = pod_sums.ready_room(snapshot)
        factor = Fraction(str(policy.overcommit_factor))
        idle = {name: int(amount * factor) - used.get(name, 0) for name, amount in allocatable.items()}
        state = _State(
            snapshot=snapshot,
            policy=policy,
            tree=tree,
            need=need,
            held=held,
            committed={},
            reserved={},
            allocatable=allocatable,
            idle=idle,
            allowed=_allowed(snapshot, tree, allocatable, proportion=policy.proportion),
            queue_rank=_queue_rank(snapshot),
            placeable=_Placeable(snapshot.nodes, cycle.of(snapshot).keys),
        )
        if ours is None:
            ours = ours_of(snapshot, policy.scheduler_name)
        state.ours = ours
        if walk is not None:
            own, reserved = walk.own, walk.reserved
            state.reserving_of.update(walk.reserving)
        else:
            # Groups whose PodGroup and pods are those of the last pass keep their parts (admission_commitments).
            own, reserved = admission_commitments.commitments(
                snapshot, state.need, held, state.reserving, policy.scheduler_name
            )
        state.reserved = reserved
        groups = snapshot.podgroup_by_key
        for pod in snapshot.pods:
            # A bound pod outside any PodGroup is a gang of one that is running: all of it is needed.
            if pod.bound and (pod.group is None or pod.group not in groups):
                queue = queue_in(pod, groups)
                if queue is not None:
                    own[queue] = res.add(own.get(queue, {}), pod.requests)
        for queue, vector in own.items():
            for name in state.lineage(queue):
                state.committed[name] = res.add(state.committed.get(name, {}), vector)
        return state

    # -- what each group counts for --

    def reserving(self, group: PodGroup) -> bool:
        """Admitted groups of ours hold their whole need (Volcano: Inqueue, or Running with its gang
        up). Another scheduler's groups reserve nothing: their bound pods are in ``used`` already,
        and what they have not bound yet is that scheduler's business (counting both was
        ``ClusterOverused`` next to another scheduler's running gangs with the cluster half idle)."""
        answer = self.reserving_of.get(group.key)
        if answer is None:
            answer = self._reserving(group)
            self.reserving_of[group.key] = answer
        return answer

    def _reserving(self, group: PodGroup) -> bool:
        if group.phase not in admission_commitments.RESERVING_PHASES:
            return False
        if group.key not in self.ours:
            return False
        if group.phase == "Inqueue":
            return True
        bound = sum(1 for p in self.snapshot.pods_of_group.get(group.key, ()) if p.bound)
        return bound >= group.min_member

    def commitment(self, group: PodGroup) -> dict[str, int]:
        need, held = self.need[group.key], self.held[group.key]
        if self.reserving(group):
            return dict(need)
        return {name: min(amount, held.get(name, 0)) for name, amount in need.items()}

    def reservation(self, group: PodGroup) -> dict[str, int]:
        if not self.reserving(group):
            return {}
        held = self.held[group.key]
        return {name: max(0, amount - held.get(name, 0)) for name, amount in self.need[group.key].items()}

    def lineage(self, queue: str) -> tuple[str, ...]:
        """The queue and its ancestors, nearest first (made once per queue: asked several times per group)."""
        found = self.lineages.get(queue)
        if found is not None:
            return found
        chain = [queue]
        parent = self.tree.parent.get(queue)
        while parent is not None:
            chain.append(parent)
            parent = self.tree.parent.get(parent)
        found = self.lineages[queue] = tuple(chain)
        return found

    def _shift(self, group: PodGroup, before: Mapping[str, int], after: Mapping[str, int]) -> None:
        delta = res.sub(after, before)
        for name in self.lineage(group.queue):
            self.committed[name] = res.add(self.committed.get(name, {}), delta)

    def release(self, group: PodGroup) -> None:
        """A demoted group: back to what a Pending group counts for."""
        before = self.commitment(group)
        self.reserved = res.sub(self.reserved, self.reservation(group))
        held = self.held[group.key]
        after = {name: min(amount, held.get(name, 0)) for name, amount in self.need[group.key].items()}
        self._shift(group, before, after)

    def reserve(self, group: PodGroup) -> None:
        """A group admitted now: it holds its need from here on."""
        need, held = self.need[group.key], self.held[group.key]
        # From what it held of its need to all of it: each queue of its lineage commits, and the
        # cluster reserves, the part of its need its pods do not hold (``need - min(need, held)``).
        # Added in place, in the need's order, to dicts this pass made and nobody else holds: the
        # same sums, keys in the same order, as adding the difference into a copy.
        unheld = [(name, max(0, amount - held.get(name, 0))) for name, amount in need.items()]
        committed = self.committed
        for queue in self.lineage(group.queue):
            mine = committed.get(queue)
            if mine is None:
                mine = committed[queue] = {}
            for name, amount in unheld:
                mine[name] = mine.get(name, 0) + amount
        reserved = self.reserved
        for name, amount in unheld:
            reserved[name] = reserved.get(name, 0) + amount

    # -- ordering and the verdict --

    def order(self, group: PodGroup) -> tuple[int, str, int, float, str]:
        """Job order: the queue's place (:meth:`queue_place`), then group priority, age and key."""
        queue = group.queue
        place = self.queue_places.get(queue)
        if place is None:
            place = self.queue_place(queue)
        return (place, queue, -group.priority, group.created, group.key)

    def queue_place(self, queue: str) -> int:
        """Where a queue comes in proportion's order of ``(-spec.priority, share, name)``, as an int.

        The tuples hold a Fraction, compared in Python: a sort by them would compare it on every pair
        of groups from two queues of one priority, so each queue's place is found once here. Queues
        with a share are at even places; one without (its tuple ``(0, 0, name)``) at the odd place
        just before the first queue with a share that sorts after it, so the int orders every pair
        of queues as the tuples do, except queues without a share in one gap: their names (next in
        the key) then order them, as the tuples' names did."""
        ranked = self.ranked_queues
        if ranked is None:
            ranked = self.ranked_queues = sorted((-p, share, name) for name, (p, share, _) in self.queue_rank.items())
            for i, (_, _, name) in enumerate(ranked):
                self.queue_places[name] = 2 * i
        found = self.queue_places.get(queue)
        if found is not None:
            return found
        place = 2 * bisect_left(ranked, (0, _NOTHING_SERVED, queue)) - 1
        self.queue_places[queue] = place
        return place

    def never_runs(self, group: PodGroup) -> tuple[str, str] | None:
        """Rule 3's static check: why the group can never run as the cluster is built, if so."""
        gang = self.placeable.gang_never_fits(group, self.snapshot.pods_of_group.get(group.key, ()))
        if gang is not None:
            return gang
        need = self.need[group.key]
        for name in self.lineage(group.queue):
            queue = self.snapshot.queue_by_name.get(name)
            if queue is None or not queue.capability:
                continue  # no capability: nothing is over it
            capability = queue.capability
            over = [r for r, amount in need.items() if r in capability and amount > capability[r]]
            if over:
                which = "its queue" if name == group.queue else "ancestor queue"
                return (
                    "Unschedulable",
                    f"needs {res.format_vector(_pick(need, over))} but {which} {name} may never hold "
                    f"more than {_format_have(capability, over)} (capability)",
                )
        # The usual case, without building the (empty) shortfall; asked once per need dict (groups
        # of one kind of job share theirs: group_need).
        known = self.within_cluster.get(id(need))
        if known is None or known[0] is not need:
            allocatable = self.allocatable
            known = (need, all(amount <= allocatable.get(name, 0) for name, amount in need.items()))
            self.within_cluster[id(need)] = known
        if known[1]:
            return None
        too_big = res.shortfall(need, self.allocatable)
        if too_big:
            return (
                "Unschedulable",
                f"needs {res.format_vector(_pick(need, too_big))} but the whole cluster has "
                f"{_format_have(self.allocatable, too_big)} allocatable",
            )
        return None

    def evictable(self, group: PodGroup, short: Mapping[str, int], *, same_queue: bool) -> bool:
        """Whether running pods that preempt (same queue, lower priority) or, unless
        ``same_queue``, reclaim (a reclaimable queue above its share, for a queue below its own)
        could give up at least ``short`` of each resource for this group."""
        key = (group.queue, group.priority, same_queue)
        freed = self.freed.get(key)
        if freed is None:
            freed = self._freeable(group, same_queue=same_queue)
            self.freed[key] = freed
        return all(freed.get(name, 0) >= amount for name, amount in short.items())

    def _freeable(self, group: PodGroup, *, same_queue: bool) -> dict[str, int]:
        """What evictions could free at most for a group of this queue and priority."""
        victims = self._victims()
        freed: dict[str, int] = {}
        if self.policy.preempt:
            for priority, requests in victims.by_queue.get(group.queue, ()):
                if priority >= group.priority:
                    break
                for name, amount in requests.items():
                    freed[name] = freed.get(name, 0) + amount
        if self.policy.reclaim and not same_queue and group.queue in victims.below:
            for queue, held in victims.reclaimable.items():
                if queue != group.queue:
                    for name, amount in held.items():
                        freed[name] = freed.get(name, 0) + amount
        return freed

    def _victims(self) -> _Victims:
        """Who could be evicted, gathered once per cycle: per queue and priority (ascending), what its
        running pods that may be victims hold; what reclaimable queues above their share hold; which
        queues are below theirs."""
        if self.victims is None:
            shares = fair_shares(self.snapshot)
            served = {name: _served(shares, {name: share.usage}, name) for name, share in shares.items()}
            reclaimable = {q.name for q in self.snapshot.queues if q.reclaimable}
            # Per queue and priority, what its possible victims hold together: a group's question is
            # "everything below my priority", so pods of one priority are never asked about apart.
            at: dict[str, dict[int, dict[str, int]]] = {}
            above: dict[str, dict[str, int]] = {}
            groups = self.snapshot.podgroup_by_key
            # Pods of one spec share their requests dict: counted per (queue, priority, dict), then
            # each dict's amounts added times its count (the same sums, keys met in the same order;
            # the entry holds the dict, so its id is not reused).
            counted: dict[tuple[str, int, int], list[Any]] = {}
            for pod in self.snapshot.pods:
                if not pod.bound or protection(pod):
                    continue
                queue = queue_in(pod, groups)
                if queue is None:
                    continue
                requests = pod.requests
                at_key = (queue, pod.priority, id(requests))
                entry = counted.get(at_key)
                if entry is None:
                    counted[at_key] = [requests, 1]
                else:
                    entry[1] += 1
            for (queue, priority, _), (requests, count) in counted.items():
                of_queue = at.get(queue)
                if of_queue is None:
                    of_queue = at[queue] = {}
                summed = of_queue.get(priority)
                if summed is None:
                    summed = of_queue[priority] = {}
                for name, amount in requests.items():
                    summed[name] = summed.get(name, 0) + amount * count
                if queue in reclaimable and served.get(queue, 0) > 1:
                    held = above.setdefault(queue, {})
                    for name, amount in requests.items():
                        held[name] = held.get(name, 0) + amount * count
            self.victims = _Victims(
                by_queue={queue: sorted(sums.items()) for queue, sums in at.items()},
                reclaimable=above,
                below={name for name, share in served.items() if share < 1},
            )
        return self.victims

    def note_admitted(self, group: PodGroup) -> None:
        """An admitted group claims the free room its gang would take now, before later groups."""
        self.admitted.append(group)
        # A group admitted by fit took its room when it was tested: queued again, its gang would be
        # taken a second time and hold twice its room against every later candidate.
        if self.room is not None and group.key not in self.by_fit:
            self.to_place.append(group)

    def _catch_up(self, gang: list[Pod]) -> bool:
        """Take the gangs of the admitted groups still to be placed, in their order, until none is
        left (True: the gang may now be tried) or the room refuses the gang outright (False).

        Exact: the room only shrinks as gangs are taken, so a gang refused outright (more GPUs than any
        node has left) is refused after the rest too, and every gang that is tried sees the room of
        every earlier admission taken, in the same order as taking each at its admission. What it
        saves: once the admitted gangs have taken every GPU, the rest are never placed while the
        candidates by fit all ask for GPUs (at 10,000 nodes a third of the 19,000 gangs)."""
        room, queued = self.room, self.to_place
        assert room is not None
        if not queued:
            return True
        if room.refuses_outright(gang):
            return False
        # The same test after each take, on the gang's largest GPU count found once (not its pods
        # read again per admitted gang): nothing else in the outright refusal changes as room shrinks.
        most = room.most_gpus(gang)
        while queued:
            room.take(self._unbound_gang(queued.popleft()))
            if most > room.gpu_most:
                return False
        return True

    def _unbound_gang(self, group: PodGroup) -> list[Pod] | None:
        key = group.key
        if key in self.unbound:
            return self.unbound[key]
        pods = self.snapshot.pods_of_group.get(key, ())
        gang: list[Pod] | None
        if len(pods) == 1:
            # Most groups have one pod: the general walk below, without its sorts and counts.
            (pod,) = pods
            if group.min_member > (0 if pod.finished else 1):
                gang = None
            elif pod.bound or pod.finished:
                gang = []
            else:
                gang = gang_pods(group, pods)
        elif sum(1 for p in pods if not p.finished) < group.min_member:
            gang = None  # its pods are not all created yet: where they would go is unknown
        else:
            gang = [p for p in gang_pods(group, pods) if not p.bound]
        self.unbound[key] = gang
        return gang

    def fits_idle_room(self, group: PodGroup) -> str | None:
        """Rule 6: why a group refused for cluster room may not be admitted by fit, or None (then
        its gang's room is taken)."""
        need, held = self.need[group.key], self.held[group.key]
        unheld = {r: max(0, amount - held.get(r, 0)) for r, amount in need.items()}
        for name in self.lineage(group.queue):
            share = self.shares.get(name)
            if share is None:
                continue
            # What the queue holds now, plus what admissions by fit this pass will hold, plus this gang.
            after = res.add(res.add(share.usage, self.lent.get(name, {})), unheld)
            over = sorted(
                r
                for r, amount in need.items()
                if amount > 0 and r not in FAIR_EXCLUDED and after.get(r, 0) > share.deserved.get(r, 0)
            )
            if over:
                parts = [
                    f"{res.format_amount(r, after.get(r, 0))} > {res.format_amount(r, share.deserved.get(r, 0))}"
                    for r in over
                ]
                return f"admitting it by fit would put queue {name} above its deserved share ({'; '.join(parts)})"
        gang = self._unbound_gang(group)
        if gang is None:
            return "its pods are not all created, so its fit on the nodes is unknown"
        if self.room is None:
            self.room = _FreeRoom(self.snapshot, self.placeable.keys)
            self.to_place.extend(sorted(self.admitted, key=self.order))
        if not self._catch_up(gang) or not self.room.take(gang):
            return "its gang does not fit the free room of the nodes now"
        self.by_fit.add(group.key)
        for name in self.lineage(group.queue):
            self.lent[name] = res.add(self.lent.get(name, {}), unheld)
        return None

    def consider(self, group: PodGroup, *, overcommit: bool) -> Admission:
        queue = self.snapshot.queue_by_name.get(group.queue)
        if queue is None:
            return _refuse("QueueNotFound", f"queue {group.queue} does not exist")
        if not queue.open:
            return _refuse("QueueClosed", f"queue {group.queue} is Closed: no new groups are admitted")
        why = self.never_runs(group)
        if why is not None:
            return _refuse(*why)
        need = {name: amount for name, amount in self.need[group.key].items() if amount > 0}
        if not need:
            return _admitted("Inqueue")
        mine = self.commitment(group)
        for name in self.lineage(group.queue):
            allowed = self.allowed.get(name, {})
            # What the group's own bound pods hold is in ``committed`` already (a gang cut off
            # mid-bind): count it once (read less its own part, no dict made per queue).
            commits = self.committed.get(name, _NOTHING)
            short = {
                r: amount
                for r, amount in need.items()
                if (limit := allowed.get(r)) is not None and commits.get(r, 0) - mine.get(r, 0) + amount > limit
            }
            if short and self.evictable(group, short, same_queue=True):
                continue  # lower-priority pods of its own queue can make the room (preempt)
            if short:
                committed = res.sub(commits, mine)
                which = "queue" if name == group.queue else "ancestor queue"
                parts = [
                    f"{res.format_amount(r, need[r])} asked, {res.format_amount(r, committed.get(r, 0))} "
                    f"committed of {res.format_amount(r, allowed[r] or 0)} allowed"
                    for r in sorted(short)
                ]
                return _refuse("QueueOverused", f"{which} {name} has no room: " + "; ".join(parts))
        if overcommit:
            held = self.held[group.key]  # already in use, so already out of the idle room
            short = {
                r: amount
                for r, amount in need.items()
                if self.reserved.get(r, 0) + max(0, amount - held.get(r, 0)) > self.idle.get(r, 0)
            }
            if short and self.evictable(group, short, same_queue=False):
                short = {}  # evictions can make the room: admitted, so preempt or reclaim may act
            not_by_fit: str | None = ""
            if short and self.policy.admit_by_fit:
                not_by_fit = self.fits_idle_room(group)
                if not_by_fit is None:
                    short = {}  # rule 6: its gang fits the nodes' free room now, within its queue's share
            if short:
                factor = self.policy.overcommit_factor
                parts = [
                    f"{res.format_amount(r, need[r])} asked, "
                    f"{res.format_amount(r, max(0, self.idle.get(r, 0) - self.reserved.get(r, 0)))} left of "
                    f"{res.format_amount(r, max(0, self.idle.get(r, 0)))} idle at overcommit factor {factor:g} "
                    f"after {res.format_amount(r, self.reserved.get(r, 0))} reserved by admitted groups"
                    for r in sorted(short)
                ]
                because = f"; and {not_by_fit}" if not_by_fit else ""
                return _refuse("ClusterOverused", "the cluster is overcommitted: " + "; ".join(parts) + because)
        return _admitted("Inqueue")


def _allowed(
    snapshot: Snapshot, tree: QueueTree, allocatable: Mapping[str, int], *, proportion: bool
) -> dict[str, dict[str, int | None]]:
    """Volcano's realCapability per queue: the capability, and with proportion at most the parent's
    allowance less the other children's guarantees."""
    queues = snapshot.queue_by_name
    resources = set(allocatable)
    for queue in snapshot.queues:
        resources.update(queue.capability or {})
        resources.update(queue.guarantee)
    out: dict[str, dict[str, int | None]] = {}
    pending: list[tuple[str | None, dict[str, int | None]]] = [(None, {r: allocatable.get(r, 0) for r in resources})]
    while pending:
        parent, parent_allowed = pending.pop()
        children = tree.children.get(parent, [])
        guarantees = res.total(queues[c].guarantee for c in children)
        for child in children:
            queue = queues[child]
            mine: dict[str, int | None] = {}
            for r in resources:
                limit: int | None = None
                if queue.capability is not None and r in queue.capability:
                    limit = queue.capability[r]
                above = parent_allowed.get(r)
                if proportion and above is not None:
                    share = above - guarantees.get(r, 0) + queue.guarantee.get(r, 0)
                    limit = share if limit is None else min(limit, share)
                mine[r] = limit
            out[child] = mine
            pending.append((child, mine))
    return out


def _queue_rank(snapshot: Snapshot) -> dict[str, tuple[int, Fraction, str]]:
    """Proportion's queue order: ``spec.priority`` (kept positive here, negated in ``order``), then the
    largest ``held / deserved`` over resources, lowest first."""
    priority = {q.name: q.priority for q in snapshot.queues}
    rank: dict[str, tuple[int, Fraction, str]] = {}
    for name, share in fair_shares(snapshot).items():
        worst = Fraction(0)
        for resource, held in share.usage.items():
            deserved = share.deserved.get(resource, 0)
            if held > 0:
                worst = max(worst, Fraction(1) if deserved <= 0 else Fraction(held, deserved))
        rank[name] = (priority.get(name, 0), worst, name)
    return rank


@dataclass
class _Victims:
    by_queue: dict[str, list[tuple[int, dict[str, int]]]]
    """Per queue, by ascending priority: what its running pods of that priority that may be
    victims hold together."""
    reclaimable: dict[str, dict[str, int]]
    below: set[str]


def _timed_out(
    group: PodGroup,
    state: _State,
    now: float | None,
    inqueue_since: Mapping[str, float] | None,
    timeout_s: float | None,
) -> bool:
    if now is None or timeout_s is None or inqueue_since is None or group.key not in inqueue_since:
        return False
    if any(amount > 0 for amount in state.held[group.key].values()):
        return False
    return now - inqueue_since[group.key] >= timeout_s


def _owed(queue: str, served_now: Mapping[str, Fraction], lenders: set[str]) -> bool:
    """Whether a queue below its deserved share keeps its timed-out groups' room: releasing it would
    lend it to another queue that already holds its share, the opposite of fair sharing."""
    return served_now.get(queue, Fraction(0)) < 1 and bool(lenders - {queue})


def _key_of(group: PodGroup) -> str:
    return group.key


def _kept_phase(group: PodGroup) -> str:
    return "Inqueue" if group.phase in PENDING_PHASES else group.phase


def _refuse(reason: str, message: str) -> Admission:
    return Admission(False, "Pending", reason, message)


def _without_shares(vector: Mapping[str, int]) -> dict[str, int]:
    return {name: amount for name, amount in vector.items() if name != res.GPU_MILLI}


def _pick(vector: Mapping[str, int], names: Iterable[str]) -> dict[str, int]:
    return {name: vector.get(name, 0) for name in names}


def _format_have(vector: Mapping[str, int], names: Iterable[str]) -> str:
    return ", ".join(res.format_amount(name, vector.get(name, 0)) for name in sorted(names))
