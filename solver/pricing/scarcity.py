"""Scarce GPU pools: the price of taking room that pods confined to it will need.

Why it exists: on a cluster of mixed GPU models, some pods may run only on one model (required node
affinity on the node's GPU model label, a node selector, a toleration of one pool's taint), others
anywhere. A pod that could run anywhere but lands on the scarce model takes room the confined pods
can get nowhere else; they wait and, in a saturated cluster, never run. Neither best fit nor FGD's
measure sees this: FGD counts a model's room as fragmented for every task that may not run there,
so it even *prefers* to fill the scarce model with work that could have run elsewhere.

The measure, per cycle, from the snapshot alone (the pods the scheduler was asked to run, bound and
pending, stand for the workload to come; nothing is remembered between cycles):

- **Pools**: the GPU nodes grouped by which confined eligibility keys accept them (a key is
  *confined* when some pod asking GPUs has it and it rejects some GPU node; keys are read without
  their rules about location, :mod:`vcsat.solver.pricing.pool_keys`: a host or rack is not a pool) and by
  their values of the node labels those keys select on (:func:`selected_labels`). On a cluster of
  GPU models with pods confined by model, a pool is a model, those no confined pod asked for yet
  included: the label tells them apart before their first pod comes, so that each keeps its own
  share of the prior below (merged into one pool, the unconfined work could fill one small model
  of it while the pool as a whole still looked roomy). A confined key's demand is counted per GPUs
  its pods ask on one node, and accepts only the nodes with that many GPUs (:func:`fitting_mask`):
  a model's few big nodes, which its pods asking many GPUs need whole, are then a pool of their
  own that its 1-GPU pods and the unconfined work keep off (in one pool with the model's small
  nodes, they were filled like any of its room). A size alone confines nothing: pods that may run
  on every model make no pool, whatever they ask. Without confined pods there are no pools and
  every price is 0, so homogeneous workloads are decided exactly as before.
- **Expected need of a pool**: the GPU thousandths its confined pods pending now ask (certain),
  plus its share of the demand to come (the cluster's free GPU room left after the pending pods:
  what the arrivals to come are expected to fill). That share is the confined demand seen for the
  pool (each confined key's bound and pending GPU thousandths, spread over the pools it accepts by
  their size) over all GPU demand seen, shrunk towards a prior while little was seen: the confined
  share of the whole workload spread over the wanted pools by size, weighing as much as
  :data:`PRIOR_WEIGHT` of the cluster's GPUs of demand. The few pods of a small pool seen early say
  little (a pool nobody seemed to want would be filled first), the confined share of the workload
  is known far sooner. The prior covers every pool, those no confined pod asked for yet included:
  until demand seen outweighs it, a model nobody asked for yet is kept like the others, since the
  next pods may ask for it.
- **Pressure** of a pool: its expected need, plus a margin of one standard deviation of the demand
  to come (:mod:`vcsat.solver.pricing.shortfall`: pods arrive one by one, so a small model whose room is a
  few pods' worth runs out on a pod or two more than expected, a big one does not), over its free
  GPU room, at most 1: the share of a thousandth of its room that confined work is expected to
  miss if someone else takes it.
- **Price** of a pod on a node: 0 when the pod's own key accepts no other pool (it is that confined
  work); otherwise the node's pool pressure × the GPU room the pod takes there: its own GPU
  thousandths (a whole GPU 1000, a share its thousandths), or, when more, the node's free GPU room
  times the share of the node's free cpu or memory it takes (a CPU-only pod on a GPU node strands
  the GPUs it leaves without cores or memory). The key is read without the pod's size: a pod
  asking four GPUs of a model whose big nodes are a pool pays that pool's pressure, the same on
  every node it fits, so it changes no choice of node, only a constant of the CP-SAT level.

- **Rare node types** (:mod:`vcsat.solver.pricing.rarity`): the pools above are learnt from the
  pods seen, so they cannot keep a kind of node for a pod that is the first of its kind (the only
  pod asking a whole 4-GPU T4 node, the one needing the 336 GiB V100 node). From the cluster alone,
  a type of GPU node (its pool labels, GPU count, cores and memory) with few nodes is priced as a
  pool that expects one pod of its own, a whole node: taking a node of it whose GPUs are all free
  costs ``1 / k`` per thousandth, ``k`` its type's nodes still wholly free, so the last free node of
  a rare type costs as much as the dearest pool. A pod whose eligible GPU nodes are all of that
  type pays nothing for it (it is that type's own work). The rate on such a node counts both
  ways its room may be missed, ``1 - (1 - pressure)(1 - rare rate)`` (:func:`rarity.either`), so a
  wholly free node of a rare type is dearer than a node of its pool already in use.
- **Size classes** (:mod:`vcsat.solver.pricing.size_classes`): a pod seen whose GPUs, cores and
  memory fit at most half of the nodes with enough GPUs for it (8 GPUs and 120 cores on a cluster
  whose 8-GPU nodes mostly have 96) is confined by its size; the nodes it fits that it still fits
  now cost ``1 / k`` per thousandth, ``k`` of them, counted with the others by :func:`rarity.either`.

- **Nodes without GPUs**: when some nodes have GPUs and others none, a pod asking none that may
  run on a node without GPUs pays, on a GPU node, the whole GPU room it strands (rate 1, whatever
  the pools: pods asking GPUs can go nowhere else, and GPU nodes are there for them, asked for
  yet or not); a cluster of GPU nodes only has none of this.

How it is used, always *below* placed work (it decides where, never what or how much): the
greedy warm start and the fragmentation decode order the nodes they consider for a pod by price
first (:func:`price`, in whole thousandths), then their existing order (FGD's measure on
GPU-sharing workloads, :func:`cheapest_fit` then best fit elsewhere); and
:mod:`vcsat.solver.objectives.scarcity` is a CP-SAT level after the placed-work, fairness and
preference levels, so the lexicographic order guarantees it never trades one pod of placed work for
it. Nodes of different pools are not interchangeable for the model's symmetry breaking. A price
first rather than a weight against fragmentation: equal pressures (a cluster whose confined demand
matches its models' sizes) tie and leave FGD's choice as it was, while a pressure that rises where
one pool fills faster than its confined demand justifies steers the unconfined work to the pool
with most slack, which keeps every pool's free room in proportion to the work only it can take
(FGD's own measure would otherwise pull that work onto the scarce pool, see above). GPU shares are
priced by their thousandths like whole GPUs; where a share goes within a pool stays FGD's choice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from vcsat.model import Node, Pod, Snapshot
from vcsat.model import resources as res
from vcsat.model.gpus import FULL_GPU_MILLI
from vcsat.solver.pricing.node_masks import flags_of, mask_of
from vcsat.solver.pricing.pod_tally import Tally
from vcsat.solver.pricing.pool_keys import pool_key
from vcsat.solver.pricing.rarity import RareTypes, either, rare_groups, rare_types
from vcsat.solver.pricing.shortfall import with_margin
from vcsat.solver.pricing.size_classes import NodeRoom, PodSize, SizeClasses, pod_size, size_classes
from vcsat.solver.pricing.spec_memo import SpecMemo
from vcsat.solver.rules.predicates import EligibilityKey, NodeIndex, eligibility_key

if TYPE_CHECKING:
    from vcsat.solver.greedy import Room
    from vcsat.solver.problem import Problem, Shape

MAX_POOLS = 64
"""More distinct confined keys than this (say, pods pinned to single hosts) are not pools of a
model but placement rules of their own; only the largest keys by demand make pools."""

PRIOR_WEIGHT = 0.25
"""How much GPU demand (as a share of the GPU nodes' capacity) weighs the prior that confined demand
is spread over the pools in proportion to their size, against the demand seen per pool."""


def gpu_milli(pod: Pod) -> int:
    """GPU thousandths a pod asks: whole GPUs × 1000, or its share."""
    return pod.gpus * FULL_GPU_MILLI if pod.gpus > 0 else pod.gpu_milli


def shape_milli(problem: Problem, shape: Shape) -> int:
    """GPU thousandths one pod of ``shape`` takes: whole GPUs × 1000 plus its share."""
    if res.GPU_MILLI in problem.resources:
        return shape.request[problem.resource_index(res.GPU_MILLI)]
    return shape.gpus * FULL_GPU_MILLI


@dataclass(frozen=True)
class Scarcity:
    """Per cycle: the pools of GPU nodes and their pressure (see the module docstring)."""

    pool_of: tuple[int, ...]
    """Per node of the problem, its pool, or -1 (no GPU, or no confined key tells it apart)."""
    pool_mask: tuple[int, ...]
    """Per pool, its nodes as a bit mask over the problem's nodes."""
    pressure: tuple[float, ...]
    """Per pool, in [0, 1]."""
    index: NodeIndex
    pooled: int
    """Every pooled node, as a bit mask."""
    cpu: int | None = None
    memory: int | None = None
    """Indices of cpu and memory in the problem's resources (None when no pending pod asks it)."""
    gpu_nodes: int = 0
    """Every node with GPUs, as a bit mask."""
    plain: int = 0
    """The ready nodes without GPUs, as a bit mask: where pods asking none can go instead of
    stranding GPU room."""
    rare: RareTypes | None = None
    """The rare node types and their rates (:mod:`vcsat.solver.pricing.rarity`), None when none."""
    sized: SizeClasses | None = None
    """The size classes seen and their rates (:mod:`vcsat.solver.pricing.size_classes`), None when none."""
    _rates: dict[tuple[EligibilityKey, bool], NDArray[np.float64]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """Per eligibility key and whether the pod asks GPUs, :meth:`rate` over every node, made once
    (the greedy asks per pod)."""
    _gpu_nodes_array: NDArray[np.bool_] | None = field(default=None, compare=False, repr=False)

    def rates(self, key: EligibilityKey, gpu: bool = True) -> NDArray[np.float64]:
        """:meth:`rate` of ``key`` on every node, as an array."""
        kept = self._rates.get((key, gpu))
        if kept is None:
            # Per pool first (a few), then spread over the nodes: the same values as :meth:`rate`.
            per_pool = np.array(
                [0.0 if p <= 0 or self.confined(key, pool) else p for pool, p in enumerate(self.pressure)] + [0.0],
                dtype=np.float64,
            )
            kept = per_pool[np.array(self.pool_of, dtype=np.int64)]  # pool -1 reads the last entry, 0
            if not gpu and self.plain and self.index.mask(key) & self.plain:
                kept = np.where(self._gpu_node_array(), 1.0, kept)
            if self.rare is not None:
                kept = either(kept, self.rare.rates(self.index.mask(key) & self.gpu_nodes))
            if self.sized is not None:
                kept = either(kept, self.sized.rates(self.index.mask(key) & self.gpu_nodes))
            self._rates[key, gpu] = kept
        return kept

    def _gpu_node_array(self) -> NDArray[np.bool_]:
        """Per node, whether it has GPUs (:attr:`gpu_nodes` as an array), made once."""
        if self._gpu_nodes_array is None:
            mask = self.gpu_nodes
            array = np.array([(mask >> n) & 1 for n in range(len(self.pool_of))], dtype=np.bool_)
            object.__setattr__(self, "_gpu_nodes_array", array)  # a cache on a frozen dataclass
            return array
        return self._gpu_nodes_array

    def applies(self, key: EligibilityKey, gpu: bool) -> bool:
        """Whether the greedy orders nodes by price for such a pod: always when there are pools,
        else (nodes without GPUs only) when some node is priced for it."""
        return self.pooled != 0 or bool(self.rates(key, gpu).any())

    def confined(self, key: EligibilityKey, pool: int) -> bool:
        """Whether pods of ``key`` may run on no pool but ``pool`` (they are its confined work)."""
        return self.index.mask(key) & ~self.pool_mask[pool] & self.pooled == 0

    def rate(self, node: int, key: EligibilityKey, gpu: bool = True) -> float:
        """Price per GPU thousandth taken on ``node`` by a pod of ``key`` (``gpu``: that asks GPUs).
        A pod asking none that may run on a node without GPUs pays the whole GPU room it strands
        on a GPU node: pods asking GPUs can go nowhere else."""
        if not gpu and self.plain and (self.gpu_nodes >> node) & 1 and self.index.mask(key) & self.plain:
            return 1.0
        pool = self.pool_of[node]
        pressure = 0.0 if pool < 0 or self.pressure[pool] <= 0 or self.confined(key, pool) else self.pressure[pool]
        if self.rare is not None:
            pressure = either(pressure, self.rare.rate(node, self.index.mask(key) & self.gpu_nodes))
        if self.sized is not None:
            pressure = either(pressure, self.sized.rate(node, self.index.mask(key) & self.gpu_nodes))
        return pressure


def room_taken(gpu_asked: int, free_gpu: int, cpu: tuple[int, int], memory: tuple[int, int]) -> int:
    """GPU thousandths a pod makes unusable on a node: its own (``gpu_asked``), or when more, the
    node's free GPU room (``free_gpu``) times the largest share of the node's free cpu or memory it
    takes; ``cpu`` and ``memory`` are (asked, free)."""
    fraction = 0.0
    for asked, free in (cpu, memory):
        if asked > 0:
            fraction = max(fraction, 1.0 if free <= 0 else min(1.0, asked / free))
    return max(gpu_asked, round(free_gpu * fraction))


def node_gpu_room(problem: Problem, node: int) -> int:
    """GPU thousandths nobody holds on ``node`` now."""
    return free_room(len(problem.free_gpu_ids[node]), problem.shared_milli[node].values())


_last: tuple[Problem, Scarcity | None] | None = None


def for_problem(problem: Problem) -> Scarcity | None:
    """The cycle's pools and pressures, or None when no pod is confined to part of the GPU nodes
    and no pod asking none could keep off them (see the module docstring).
    Computed once per problem: the greedy, the model and the decode all read it."""
    global _last
    if _last is not None and _last[0] is problem:
        return _last[1]
    result = measure(problem)
    _last = (problem, result)
    return result


Demand = tuple[EligibilityKey, int]
"""A kind of confined demand: the pods' eligibility (read by :func:`pool_key`) and the GPUs one pod
asks on one node (1 for a share)."""


def fitting_mask(nodes: Sequence[Node], gpus: int) -> int:
    """The nodes with at least ``gpus`` GPUs, as a bit mask: where a pod asking that many fits at all."""
    return mask_of(np.fromiter((node.gpus for node in nodes), dtype=np.int64, count=len(nodes)) >= gpus)


def selected_labels(keys: Iterable[EligibilityKey]) -> tuple[str, ...]:
    """The node label keys that ``keys`` select nodes by (node selectors and required node affinity
    expressions), in name order: the kinds of node pods ask for, a GPU model label say."""
    labels = {label for key in keys for label, _ in key.node_selector}
    labels |= {req.key for key in keys for term in key.affinity for req in term.match_expressions}
    return tuple(sorted(labels))


_Contribution = tuple[tuple[tuple[str, Demand | PodSize], int], ...]


def _pod_demand(pod: Pod) -> _Contribution:
    """What one pod adds to the measure's sums: its GPU thousandths to its kind's demand, their
    square to its squares, and to its pending demand while it waits; one to the count of its size
    (:mod:`vcsat.solver.pricing.size_classes`)."""
    if not pod.managed or not (pod.bound or pod.pending):
        return ()
    # Pods of one spec and state add the same: made once per spec and state.
    return _BY_SPEC.made(pod, pod.pending)


def _spec_demand(pod: Pod) -> _Contribution:
    """:func:`_pod_demand` made afresh (it reads the pod's requests, eligibility and pending only)."""
    milli = gpu_milli(pod)
    if milli <= 0:
        return ()
    # What kind of node (not where: vcsat.solver.pricing.pool_keys), and how many GPUs on one.
    key = (_pool_key_of(eligibility_key(pod)), max(1, pod.gpus))
    size = (("size", pod_size(pod.gpus, pod.gpu_milli, pod.requests)), 1)
    added = ((("demand", key), milli), (("squares", key), milli * milli), size)
    return (*added, (("pending", key), milli)) if pod.pending else added


_BY_SPEC: SpecMemo[_Contribution] = SpecMemo(_spec_demand)
"""What a pod adds, by its spec and whether it waits."""


_POOL_KEYS: dict[int, tuple[EligibilityKey, EligibilityKey]] = {}
_POOL_KEYS_KEPT = 1 << 12
"""Pool keys made, by the identity of the eligibility key they are made from (pods of one spec
share one: :func:`vcsat.solver.rules.predicates.eligibility_key`); cleared when full. An entry
holds its key, so the id it is found by cannot be reused while it lives."""


def _pool_key_of(key: EligibilityKey) -> EligibilityKey:
    """:func:`pool_key`, made once per eligibility key object."""
    found = _POOL_KEYS.get(id(key))
    if found is not None and found[0] is key:
        return found[1]
    made = pool_key(key)
    if len(_POOL_KEYS) >= _POOL_KEYS_KEPT:
        _POOL_KEYS.clear()
    _POOL_KEYS[id(key)] = (key, made)
    return made


_DEMAND: Tally[tuple[str, Demand | PodSize]] = Tally(_pod_demand)
"""The workload's demand sums, kept from the last measure (:mod:`vcsat.solver.pricing.pod_tally`)."""


def demand_sums(snapshot: Snapshot) -> dict[tuple[str, Demand | PodSize], int]:
    """The workload's demand sums over ``snapshot``'s pods, per part and kind (kept for the next call)."""
    return _DEMAND.of_snapshot(snapshot)


def measure(problem: Problem) -> Scarcity | None:
    """The pools and pressures of ``problem`` (see the module docstring)."""
    nodes = problem.nodes
    node_gpus = np.fromiter((node.gpus for node in nodes), dtype=np.int64, count=len(nodes))
    gpu_mask = mask_of(node_gpus > 0)
    if not gpu_mask:
        return None
    index = problem.node_index or NodeIndex(nodes)
    demand: dict[Demand, int] = {}
    squares: dict[Demand, int] = {}
    pending: dict[Demand, int] = {}
    sizes: list[PodSize] = []
    parts = {"demand": demand, "squares": squares, "pending": pending}
    for (part, key), amount in demand_sums(problem.snapshot).items():
        if part == "size":
            sizes.append(key)  # type: ignore[arg-type]  # a size's part holds sizes
        else:
            parts[part][key] = amount  # type: ignore[index]  # the other parts hold demands
    total = sum(demand.values())
    pending_total = sum(pending.values())
    eligible = {key: index.mask(key[0]) & gpu_mask for key in demand}
    # Confined: a kind of node is asked (not every GPU node accepts the pods); its pools are then
    # the nodes a pod of it fits on at all, so a model's few big nodes, which its pods asking many
    # GPUs need whole, are a pool of their own (a size alone confines nothing: pods that may run
    # on any model make no pools, whatever they ask).
    confined = [key for key, mask in eligible.items() if mask and mask != gpu_mask]
    masks = {key: eligible[key] & mask_of(node_gpus >= key[1]) for key in confined}  # as fitting_mask
    confined = [key for key in confined if masks[key]]
    plain = index.ready_mask & ~gpu_mask
    cpu = problem.resources.index(res.CPU) if res.CPU in problem.resources else None
    memory = problem.resources.index(res.MEMORY) if res.MEMORY in problem.resources else None
    if not confined or total <= 0:
        if not plain:
            return None
        return Scarcity((-1,) * len(nodes), (), (), index, 0, cpu, memory, gpu_mask, plain)
    confined.sort(key=lambda key: (-demand[key], repr(key[0]), key[1]))
    confined = confined[:MAX_POOLS]
    selecting = selected_labels([key for key, _ in confined])
    pools: dict[tuple[object, ...], int] = {}
    pool_of = [-1] * len(nodes)
    in_key = np.stack([flags_of(masks[key], len(nodes)) for key in confined], axis=1).tolist()
    for i in np.flatnonzero(node_gpus > 0).tolist():
        sig = (*in_key[i], *(nodes[i].labels.get(label) for label in selecting))
        if sig not in pools:
            pools[sig] = len(pools)
        pool_of[i] = pools[sig]
    pool_array = np.array(pool_of, dtype=np.int64)
    members = [mask_of(pool_array == p) for p in range(len(pools))]
    size = [0] * len(members)
    free = [0] * len(members)
    # Each GPU node's free room once: the pools' sums here and the size classes' rooms below.
    free_milli = [node_gpu_room(problem, i) if node_gpus[i] > 0 else 0 for i in range(len(nodes))]
    for i, pool in enumerate(pool_of):
        if pool >= 0:
            size[pool] += nodes[i].gpus
            free[pool] += free_milli[i]
    cluster_free = sum(free)
    future = max(0, cluster_free - pending_total)
    # Per pool, the confined demand seen (bound and pending) and the pending part of it; each key's
    # spread over the pools it accepts by their size.
    seen = [0.0] * len(members)
    seen_squares = [0.0] * len(members)
    certain = [0.0] * len(members)
    for key in confined:
        accepting = [p for p in range(len(members)) if masks[key] & members[p]]
        weight = sum(size[p] for p in accepting)
        for p in accepting:
            seen[p] += demand[key] * size[p] / weight
            seen_squares[p] += squares[key] * size[p] / weight
            certain[p] += pending.get(key, 0) * size[p] / weight
    # The share of demand to come that only a pool can take: what was seen, shrunk towards the
    # pool's size share of all confined demand while little was seen (one pool's few pods say
    # little; the confined share of the whole workload is known far sooner).
    # Every pool, wanted by a key seen or not yet, gets the prior: a model no confined pod asked for
    # so far may be asked for next, and filling it first would strand those pods.
    # The float sums start at 0.0: compiled (docs/compiled-build.md), a sum started at the int 0
    # is read back as an int.
    confined_share = sum(seen, 0.0) / total
    prior = PRIOR_WEIGHT * sum(size) * FULL_GPU_MILLI
    need = [
        certain[p] + (seen[p] + prior * confined_share * size[p] / sum(size)) / (total + prior) * future
        for p in range(len(members))
    ]
    # Pressure: the need with a margin for how the demand to come varies (vcsat.solver.pricing.shortfall),
    # counted in pods of the size the pool's confined pods come in (all confined pods' for a pool
    # nobody asked for yet), over the free room.
    overall = sum(seen_squares, 0.0) / sum(seen, 0.0)
    unit = [seen_squares[p] / seen[p] if seen[p] > 0 else overall for p in range(len(members))]
    kept = [certain[p] + with_margin(need[p] - certain[p], unit[p]) for p in range(len(members))]
    pressure = tuple(
        (min(1.0, kept[p] / free[p]) if free[p] > 0 else 1.0) if need[p] > 0 else 0.0 for p in range(len(members))
    )
    rare_kinds = rare_groups(nodes, selecting)
    rare = rare_types(nodes, rare_kinds, free_milli, index.ready_mask)
    room = _node_room(problem, node_gpus, free_milli, cpu, memory)
    sized = size_classes(room, sizes, sum(1 << i for group in rare_kinds for i in group))
    return Scarcity(
        tuple(pool_of), tuple(members), pressure, index, gpu_mask, cpu, memory, gpu_mask, plain, rare, sized
    )


def _node_room(
    problem: Problem, node_gpus: NDArray[np.int64], free_milli: Sequence[int], cpu: int | None, memory: int | None
) -> NodeRoom:
    """The nodes' room as :mod:`vcsat.solver.pricing.size_classes` reads it."""
    nodes = problem.nodes
    count = len(nodes)

    def allocatable(name: str) -> NDArray[np.int64]:
        return np.fromiter((node.allocatable.get(name, 0) for node in nodes), dtype=np.int64, count=count)

    def free_of(index: int | None) -> NDArray[np.int64] | None:
        if index is None:
            return None
        return np.fromiter((row[index] for row in problem.free), dtype=np.int64, count=count)

    return NodeRoom(
        gpus=node_gpus,
        cpu=allocatable(res.CPU),
        memory=allocatable(res.MEMORY),
        free_gpus=np.fromiter((len(ids) for ids in problem.free_gpu_ids), dtype=np.int64, count=count),
        free_milli=np.array(free_milli, dtype=np.int64),
        free_cpu=free_of(cpu),
        free_memory=free_of(memory),
        ready=flags_of((problem.node_index or NodeIndex(nodes)).ready_mask, count),
    )


def price(
    scarcity: Scarcity,
    node: int,
    key: EligibilityKey,
    gpu_asked: int,
    free_gpu: int,
    cpu: tuple[int, int] = (0, 0),
    memory: tuple[int, int] = (0, 0),
) -> float:
    """What a pod of ``key`` placed on ``node`` is expected to cost confined work, in GPU
    thousandths (see :func:`room_taken` for the other arguments)."""
    rate = scarcity.rate(node, key, gpu_asked > 0)
    if rate <= 0:
        return 0.0
    return rate * room_taken(gpu_asked, free_gpu, cpu, memory)


def free_room(whole: int, shared: Iterable[int]) -> int:
    """GPU thousandths free on a node with ``whole`` untouched GPUs and shares holding ``shared``."""
    return whole * FULL_GPU_MILLI + sum(max(0, FULL_GPU_MILLI - used) for used in shared)


def cheapest_fit(scarcity: Scarcity, room: Room, shape: Shape, allow: Callable[[int], bool] | None) -> int | None:
    """For the greedy's best fit: the node a pod of ``shape`` goes to when pools are priced: the
    cheapest (:func:`price`, whole thousandths), then best fit (fewest free GPUs), then node order.
    Node by node; :meth:`vcsat.solver.greedy.Room.cheapest_fit` is the same choice with numpy."""
    best: tuple[int, int, int] | None = None
    milli = shape.request[room.milli] if room.milli is not None else shape.gpus * FULL_GPU_MILLI
    for node in shape.nodes:
        if not room.fits(node, shape.request) or (allow is not None and not allow(node)):
            continue
        cost = 0
        if scarcity.rate(node, shape.eligibility, milli > 0) > 0:
            free_gpu = free_room(room.whole[node], room.shared[node].values())
            row = room.free[node]
            cpu = (shape.request[scarcity.cpu], row[scarcity.cpu]) if scarcity.cpu is not None else (0, 0)
            memory = (shape.request[scarcity.memory], row[scarcity.memory]) if scarcity.memory is not None else (0, 0)
            cost = round(price(scarcity, node, shape.eligibility, milli, free_gpu, cpu, memory))
        level = max(0, room.free[node][room.gpu]) if room.gpu is not None else 0
        key = (cost, level, node)
        if best is None or key < best:
            best = key
    return None if best is None else best[2]
