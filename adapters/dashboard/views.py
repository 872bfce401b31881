"""What the dashboard's pages show, computed from one cycle's snapshot and decision (no HTML here).

The state shown is the cluster once the cycle's decision is applied: its bindings hold room and
GPUs, its evictions free theirs, as :mod:`vcsat.adapters.live.queue_view` counts the queues.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vcsat.model import Decision, Node, Pod, PodGroupOutcome, Snapshot
from vcsat.model import resources as res
from vcsat.model.gpus import FULL_GPU_MILLI, gpu_holdings
from vcsat.solver.pricing.fragmentation import workload_of


def pods_after(snapshot: Snapshot, decision: Decision) -> dict[str, tuple[Pod, ...]]:
    """Per node, the pods that hold room on it once ``decision`` is applied (GPU ids of the bindings
    included)."""
    evicted = {eviction.pod for eviction in decision.evictions}
    out: dict[str, list[Pod]] = {}
    for pod in snapshot.pods:
        if pod.bound and pod.node_name is not None and pod.key not in evicted:
            out.setdefault(pod.node_name, []).append(pod)
    for binding in decision.bindings:
        found = snapshot.pod_by_key.get(binding.pod)
        if found is not None and binding.node in snapshot.node_by_name:
            placed = found.model_copy(
                update={"node_name": binding.node, "gpu_ids": tuple(binding.gpus) if binding.gpus else None}
            )
            out.setdefault(binding.node, []).append(placed)
    return {name: tuple(pods) for name, pods in out.items()}


# --- the GPU map ------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuCell:
    index: int
    state: str
    """``held`` (a whole-GPU pod), ``shared`` (GPU shares use part of it), ``free``, ``stranded``
    (free, but no GPU task type of the workload fits the node's room left) or ``unavailable``
    (the node takes nothing new: cordoned or not Ready)."""
    used_milli: int
    pods: tuple[str, ...]


@dataclass(frozen=True)
class NodeView:
    name: str
    schedulable: bool
    allocatable: dict[str, int]
    free: dict[str, int]
    gpus: tuple[GpuCell, ...]
    pods: int

    def count(self, state: str) -> int:
        return sum(1 for cell in self.gpus if cell.state == state)


def node_views(snapshot: Snapshot, decision: Decision) -> list[NodeView]:
    """Every node, by name, with its GPUs one by one."""
    on_node = pods_after(snapshot, decision)
    workload = [task for task, _ in workload_of(snapshot) if task.gpu_milli]
    out = []
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        pods = on_node.get(node.name, ())
        used = res.total(pod.requests for pod in pods)
        free = {name: amount - used.get(name, 0) for name, amount in node.allocatable.items()}
        cells = _cells(node, pods, free, workload)
        out.append(NodeView(node.name, node.schedulable, dict(node.allocatable), free, cells, len(pods)))
    return out


def _cells(node: Node, pods: Sequence[Pod], free: Mapping[str, int], workload: Sequence[object]) -> tuple[GpuCell, ...]:
    if node.gpus == 0:
        return ()
    holdings = gpu_holdings(node.gpus, pods)
    holders: dict[int, list[str]] = {}
    for key, ids in holdings.whole.items():
        for index in ids:
            holders.setdefault(index, []).append(key)
    for key, index in holdings.share.items():
        holders.setdefault(index, []).append(key)
    used = {index: FULL_GPU_MILLI for index in holdings.whole_held}
    for index, milli in holdings.share_milli.items():
        used[index] = used.get(index, 0) + milli
    lefts = [FULL_GPU_MILLI - min(FULL_GPU_MILLI, used.get(i, 0)) for i in range(node.gpus)]
    usable = _usable_room(lefts, free, workload)
    cells = []
    for index in range(node.gpus):
        milli = used.get(index, 0)
        if index in holdings.whole_held:
            state = "held"
        elif milli:
            state = "shared"
        elif not node.schedulable:
            state = "unavailable"
        elif index in usable:
            state = "free"
        else:
            state = "stranded"
        cells.append(GpuCell(index, state, min(milli, FULL_GPU_MILLI), tuple(sorted(holders.get(index, ())))))
    return tuple(cells)


def _usable_room(lefts: Sequence[int], free: Mapping[str, int], workload: Sequence[object]) -> set[int]:
    """The GPUs with room that some GPU task type of the workload could use on this node: enough
    GPUs with its share of room, and the cpu and memory it asks left (fragmentation's sense, node
    predicates aside). With no GPU work in sight every GPU with room counts as usable."""
    with_room = {i for i, left in enumerate(lefts) if left > 0}
    if not workload:
        return with_room
    usable: set[int] = set()
    cpu, memory = free.get(res.CPU, 0), free.get(res.MEMORY, 0)
    for task in workload:
        gpu_milli, count = getattr(task, "gpu_milli", 0), getattr(task, "gpu_count", 0)
        if cpu < getattr(task, "cpu_milli", 0) or memory < getattr(task, "memory", 0):
            continue
        fitting = [i for i, left in enumerate(lefts) if left >= gpu_milli]
        if len(fitting) >= max(1, count):
            usable.update(fitting)
    return usable


# --- waiting PodGroups and one job ------------------------------------------------------------


@dataclass(frozen=True)
class Waiting:
    key: str
    queue: str
    phase: str
    reason: str
    message: str
    pods: int
    pending: int
    min_member: int


def waiting(snapshot: Snapshot, decision: Decision) -> list[Waiting]:
    """The PodGroups (and lone pods) the cycle left waiting, by key."""
    out = []
    for outcome in decision.podgroups:
        if outcome.phase == "Running":
            continue
        out.append(_waiting(snapshot, outcome))
    return sorted(out, key=lambda w: w.key)


def _waiting(snapshot: Snapshot, outcome: PodGroupOutcome) -> Waiting:
    group = snapshot.podgroup_by_key.get(outcome.podgroup)
    if group is not None:
        pods = snapshot.pods_of_group.get(group.key, ())
        queue, need = group.queue, group.min_member
    else:
        lone = snapshot.pod_by_key.get(outcome.podgroup)
        pods = (lone,) if lone is not None else ()
        queue, need = (snapshot.queue_of(lone) or "") if lone is not None else "", 1
    return Waiting(
        key=outcome.podgroup,
        queue=queue,
        phase=outcome.phase,
        reason=outcome.reason or "Unknown",
        message=outcome.message,
        pods=len(pods),
        pending=sum(1 for pod in pods if pod.pending),
        min_member=need,
    )


@dataclass(frozen=True)
class PodLine:
    name: str
    state: str
    node: str
    requests: dict[str, int]


@dataclass(frozen=True)
class JobView:
    key: str
    exists: bool
    queue: str
    phase: str
    min_member: int
    outcome: PodGroupOutcome | None
    pods: tuple[PodLine, ...]
    need: dict[str, int]
    """What its pods that still wait ask, summed."""
    cluster_free: dict[str, int]
    largest_free: dict[str, int]
    """Per resource, the most any one schedulable node has free."""
    notices: tuple[str, ...]


def job_view(snapshot: Snapshot, decision: Decision, key: str) -> JobView:
    """Everything the page of one PodGroup (or lone pod) ``namespace/name`` answers with."""
    outcome = next((o for o in decision.podgroups if o.podgroup == key), None)
    group = snapshot.podgroup_by_key.get(key)
    lone = snapshot.pod_by_key.get(key)
    if group is not None:
        pods: Sequence[Pod] = snapshot.pods_of_group.get(key, ())
        queue, need_members, phase = group.queue, group.min_member, group.phase or "Pending"
    elif lone is not None:
        pods, queue, need_members, phase = (lone,), snapshot.queue_of(lone) or "", 1, lone.phase
    else:
        pods, queue, need_members, phase = (), "", 0, ""
    if outcome is not None:
        phase = outcome.phase
    placed = {b.pod: b.node for b in decision.bindings}
    nominated = {n.pod: n.node for n in decision.nominations}
    evicted = {e.pod: e.reason for e in decision.evictions}
    lines = []
    for pod in sorted(pods, key=lambda p: p.name):
        if pod.key in evicted:
            state, node = f"evicted ({evicted[pod.key]})", pod.node_name or ""
        elif pod.key in placed:
            state, node = "bound now", placed[pod.key]
        elif pod.key in nominated:
            state, node = "nominated (waits for evictions)", nominated[pod.key]
        elif pod.bound:
            state, node = "running", pod.node_name or ""
        elif pod.held:
            state, node = "held (scheduling gates or resource claims)", ""
        elif pod.pending:
            state, node = "pending", ""
        else:
            state, node = pod.phase.lower(), pod.node_name or ""
        lines.append(PodLine(pod.name, state, node, {k: v for k, v in pod.requests.items() if k != res.PODS}))
    still = [pod for pod in pods if pod.pending and pod.key not in placed]
    on_node = pods_after(snapshot, decision)
    free_by_node = []
    for each in snapshot.nodes:
        if each.schedulable:
            used = res.total(pod.requests for pod in on_node.get(each.name, ()))
            free_by_node.append({n: a - used.get(n, 0) for n, a in each.allocatable.items()})
    names = sorted({name for free in free_by_node for name in free} - {res.PODS})
    notices = tuple(str(n) for n in snapshot.notices if n.key == key or n.key in {p.key for p in pods})
    return JobView(
        key=key,
        exists=bool(pods) or group is not None,
        queue=queue,
        phase=phase,
        min_member=need_members,
        outcome=outcome,
        pods=tuple(lines),
        need={k: v for k, v in res.total(p.requests for p in still).items() if k != res.PODS and v},
        cluster_free={n: max(0, sum(f.get(n, 0) for f in free_by_node)) for n in names},
        largest_free={n: max((f.get(n, 0) for f in free_by_node), default=0) for n in names},
        notices=notices,
    )
