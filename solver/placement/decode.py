"""From counts to concrete placements: which pod goes to which node, on which GPU indices.

Two steps. :func:`resolve` hands each bucket's slots to real shapes with their real requests
(the model counted every pod of a bucket at the bucket's least request); pods that find no node
are reported with their bucket, so the search can refine it. :func:`bindings` then hands concrete
pods to the shape slots and picks GPU indices. Both are deterministic: oldest pods first, nodes in
name order, lowest free GPU indices first, bigger GPU pods first.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from functools import lru_cache

from vcsat.model import Binding, Pod
from vcsat.model import resources as res
from vcsat.model.gpu_topology import GpuTopology
from vcsat.model.gpus import FULL_GPU_MILLI
from vcsat.solver.assignment import Assignment
from vcsat.solver.placement.gpu_choice import NodePlan, plan_node
from vcsat.solver.placement.gpu_share import fresh_gpus_needed
from vcsat.solver.pricing.fragmentation import fragmentation_layout, node_score
from vcsat.solver.problem import Bucket, Problem


@dataclass
class Resolution:
    shape_slots: dict[tuple[int, int], int] = field(default_factory=dict)
    short: dict[int, int] = field(default_factory=dict)
    """Per bucket: pods that found no node with room for their real request."""
    short_shapes: dict[int, int] = field(default_factory=dict)
    """Per shape: the same pods, by shape."""
    moved: int = 0
    """Pods placed outside their bucket's slots (the packing is then no longer proven optimal)."""
    gang_slots: dict[tuple[int, int, int], int] = field(default_factory=dict)
    """Per (gang, shape, node): topology gangs' pods, placed inside the domains the model chose."""


def resolve(problem: Problem, assignment: Assignment, buckets: list[Bucket]) -> Resolution:
    layout = fragmentation_layout(problem, assignment)  # GPU-sharing workloads: FGD's measure decides where
    if layout is not None:
        return Resolution(shape_slots=layout)
    out = Resolution(shape_slots=dict(assignment.shape_slots))
    room = problem.room_left(assignment.shape_slots)

    supply: dict[int, int] = {}
    for c, k in assignment.count.items():
        shape = problem.classes[c].shape
        supply[shape] = supply.get(shape, 0) + k
    for (s, _node), k in assignment.shape_slots.items():
        supply[s] = supply.get(s, 0) - k

    scale = [max(1, max((n.allocatable.get(name, 0) for n in problem.nodes), default=1)) for name in problem.resources]
    slots_of: dict[int, dict[int, int]] = {}
    for (b, node), k in assignment.bucket_slots.items():
        if k > 0:
            slots_of.setdefault(b, {})[node] = k
    if assignment.domain_counts:
        _place_in_domains(problem, assignment, buckets, out, room, supply, slots_of)

    # Isolated classes' buckets first (rules between pods were decided for exactly those nodes),
    # then the other exact buckets: the model counted their pods at their real requests, so their
    # slots always hold them. Only the relaxed buckets, handed out last, can then fall short, and
    # those are the ones the refinement can split (a relaxed bucket that took more room than the
    # model counted must not leave an exact one short: splitting that changes nothing).
    isolated = {b.index for b in buckets if b.exact and problem.shapes[b.shapes[0]].isolated is not None}
    for bucket in sorted(buckets, key=lambda b: (b.index not in isolated, not b.exact, -b.gpus, b.index)):
        slots = slots_of.get(bucket.index)
        pods = [s for s in bucket.shapes for _ in range(max(0, supply.get(s, 0)))]
        if not pods:
            continue
        if not slots:
            _short(out, bucket, pods)
            continue
        # Biggest pods first, each to the node with the most room left once the node's other
        # slots are reserved at the bucket's least request.
        pods.sort(key=lambda s: (-_size(problem.shapes[s].request, scale), s))
        left = {node: k for node, k in slots.items() if k > 0}  # topology gangs may have taken some
        heap = [(-_slack(room[n], bucket, left[n], scale), n) for n in sorted(left)]
        heapq.heapify(heap)
        missing: list[int] = []
        for s in pods:
            request = problem.shapes[s].request
            placed = False
            popped: list[tuple[float, int]] = []
            while heap:
                key, node = heapq.heappop(heap)
                if _fits_reserving(request, room[node], bucket, left[node]):
                    for r, amount in enumerate(request):
                        room[node][r] -= amount
                    left[node] -= 1
                    out.shape_slots[(s, node)] = out.shape_slots.get((s, node), 0) + 1
                    if left[node] > 0:
                        heapq.heappush(heap, (-_slack(room[node], bucket, left[node], scale), node))
                    placed = True
                    break
                popped.append((key, node))
                if len(popped) >= 8:
                    break  # the roomiest nodes refused it; the rest will too, or nearly
            for item in popped:
                heapq.heappush(heap, item)
            if not placed:
                missing.append(s)
        # A pod the bucket's slots could not hold may still fit elsewhere with its real request:
        # the placement (and its value) stands, only the packing changes.
        for s in missing:
            if problem.shapes[s].isolated is not None or problem.shapes[s].volumes:
                # Its nodes are the model's: rules between pods and shared volumes' attach slots
                # were decided for those (never moved).
                _short(out, bucket, [s])
                continue
            wanted = problem.shapes[s]
            elsewhere = _anywhere(wanted.request, wanted.upper, room, wanted.preference)
            if elsewhere is None:
                _short(out, bucket, [s])
                continue
            for r, amount in enumerate(problem.shapes[s].request):
                room[elsewhere][r] -= amount
            out.shape_slots[(s, elsewhere)] = out.shape_slots.get((s, elsewhere), 0) + 1
            out.moved += 1
    if res.GPU_MILLI in problem.resources:
        _pack_shares(problem, out, room)
    return out


def _gpu_load(problem: Problem, slots: dict[tuple[int, int], int], node: int) -> tuple[int, list[int]]:
    """(whole GPUs, share requests) that the resolved slots put on a node."""
    whole = 0
    shares: list[int] = []
    milli = problem.resources.index(res.GPU_MILLI)
    for (s, n), k in slots.items():
        if n != node or k <= 0:
            continue
        shape = problem.shapes[s]
        share = shape.request[milli] - FULL_GPU_MILLI * shape.gpus
        whole += k * shape.gpus
        if share > 0:
            shares += [share] * k
    return whole, shares


def _gpus_fit(problem: Problem, node: int, whole: int, shares: list[int]) -> bool:
    if not shares:
        return whole <= len(problem.free_gpu_ids[node])
    limit = len(problem.free_gpu_ids[node]) - whole
    return limit >= 0 and fresh_gpus_needed(shares, shared=problem.shared_milli[node], limit=limit) <= limit


def _pack_shares(problem: Problem, out: Resolution, room: list[list[int]]) -> None:
    """The model counts share room as a sum; here shares must land on real GPUs. A node that
    cannot hold its shares gives the largest away, to the node that fits it best, or leaves it
    short (the repair then drops its gang)."""
    milli = problem.resources.index(res.GPU_MILLI)
    nodes = sorted({node for (s, node), k in out.shape_slots.items() if k > 0 and problem.shapes[s].request[milli] > 0})
    for node in nodes:
        while True:
            whole, shares = _gpu_load(problem, out.shape_slots, node)
            if _gpus_fit(problem, node, whole, shares):
                break
            share_shapes = sorted(
                (
                    s
                    for (s, n), k in out.shape_slots.items()
                    if n == node and k > 0 and problem.shapes[s].gpus == 0 and problem.shapes[s].request[milli] > 0
                ),
                key=lambda s: (-problem.shapes[s].request[milli], s),
            )
            s = share_shapes[0]
            request = problem.shapes[s].request
            out.shape_slots[(s, node)] -= 1
            for r, amount in enumerate(request):
                room[node][r] += amount
            target = None
            for other in sorted(problem.shapes[s].upper if problem.shapes[s].isolated is None else ()):
                if other == node or not all(a <= room[other][r] for r, a in enumerate(request) if a > 0):
                    continue
                other_whole, other_shares = _gpu_load(problem, out.shape_slots, other)
                if _gpus_fit(problem, other, other_whole, [*other_shares, request[milli]]):
                    target = other
                    break
            if target is None:
                out.short_shapes[s] = out.short_shapes.get(s, 0) + 1
                bucket = next(b.index for b in problem.buckets if s in b.shapes)
                out.short[bucket] = out.short.get(bucket, 0) + 1
                continue
            for r, amount in enumerate(request):
                room[target][r] -= amount
            out.shape_slots[(s, target)] = out.shape_slots.get((s, target), 0) + 1
            out.moved += 1


def _anywhere(
    request: tuple[int, ...], eligible: dict[int, int], room: list[list[int]], preference: dict[int, int]
) -> int | None:
    """The eligible node that still fits ``request``: the most preferred (node preferences), then
    the one with the least room left (best fit)."""
    best: tuple[int, int, int] | None = None
    for node in eligible:
        row = room[node]
        if all(amount <= row[r] for r, amount in enumerate(request) if amount > 0):
            left = sum(row[r] - amount for r, amount in enumerate(request) if amount > 0)
            if best is None or (-preference.get(node, 0), left, node) < best:
                best = (-preference.get(node, 0), left, node)
    return None if best is None else best[2]


def _place_in_domains(
    problem: Problem,
    assignment: Assignment,
    buckets: list[Bucket],
    out: Resolution,
    room: list[list[int]],
    supply: dict[int, int],
    slots_of: dict[int, dict[int, int]],
) -> None:
    """Topology gangs first: each pod into its bucket's slots inside the rack the model chose,
    onto a node already holding the gang where it fits (NVLink beats the leaf switch)."""
    domains = problem.domains
    assert domains is not None
    finest = domains.tiers[0]
    by_bucket = {b.index: b for b in buckets}
    left = dict(assignment.count)
    for (g, k, rack), wanted in sorted(assignment.domain_counts.items()):
        gang = problem.gangs[g]
        bucket = by_bucket[k]
        mine = sorted(
            (c for c in gang.classes if problem.classes[c].shape in bucket.shapes and left.get(c, 0) > 0),
            key=lambda c: (-sum(problem.shapes[problem.classes[c].shape].request), c),
        )
        nodes = [n for n in domains.nodes_in(finest, rack) if slots_of.get(k, {}).get(n, 0) > 0]
        for _ in range(wanted):
            mine = [c for c in mine if left.get(c, 0) > 0]
            if not mine:
                break
            c = mine[0]
            s = problem.classes[c].shape
            request = problem.shapes[s].request
            fitting = [
                n for n in nodes if slots_of[k].get(n, 0) > 0 and all(a <= room[n][r] for r, a in enumerate(request))
            ]
            held = {n for (gg, _s, n), cnt in out.gang_slots.items() if gg == g and cnt > 0}
            if not fitting:
                continue  # left to the bucket's general hand-out below
            node = min(fitting, key=lambda n: (n not in held, sum(room[n][r] - a for r, a in enumerate(request)), n))
            slots_of[k][node] -= 1
            for r, amount in enumerate(request):
                room[node][r] -= amount
            out.shape_slots[(s, node)] = out.shape_slots.get((s, node), 0) + 1
            out.gang_slots[(g, s, node)] = out.gang_slots.get((g, s, node), 0) + 1
            supply[s] = supply.get(s, 0) - 1
            left[c] -= 1


def _short(out: Resolution, bucket: Bucket, shapes: list[int]) -> None:
    out.short[bucket.index] = out.short.get(bucket.index, 0) + len(shapes)
    for s in shapes:
        out.short_shapes[s] = out.short_shapes.get(s, 0) + 1


def _size(request: tuple[int, ...], scale: list[int]) -> float:
    return sum(amount / cap for amount, cap in zip(request, scale, strict=True))


def _slack(room: list[int], bucket: Bucket, slots_left: int, scale: list[int]) -> float:
    """Room for one more pod here, after the node's other slots take the bucket's least request."""
    reserve = slots_left - 1
    return (
        min(
            (room[r] - reserve * least) / scale[r] for r, least in enumerate(bucket.request) if least > 0 or room[r] < 0
        )
        if any(least > 0 for least in bucket.request)
        else 0.0
    )


def _fits_reserving(request: tuple[int, ...], room: list[int], bucket: Bucket, slots_left: int) -> bool:
    reserve = slots_left - 1
    return all(amount <= room[r] - reserve * bucket.request[r] for r, amount in enumerate(request) if amount > 0)


def bindings(
    problem: Problem,
    assignment: Assignment,
    shape_slots: dict[tuple[int, int], int],
    gang_slots: dict[tuple[int, int, int], int] | None = None,
) -> list[Binding]:
    """Concrete pods for the slots: first the pods decided gang by gang (``gang_slots``), then the
    rest of each shape's pods, oldest first, into its remaining slots in node order."""
    gang_slots = gang_slots if gang_slots is not None else assignment.gang_slots
    left: dict[int, list[Pod]] = {c: list(problem.classes[c].pods[:k]) for c, k in sorted(assignment.count.items())}
    on_node: dict[int, list[Pod]] = {}
    remaining = dict(shape_slots)
    for (g, s, node), k in sorted(gang_slots.items()):
        for c in problem.gangs[g].classes:
            if problem.classes[c].shape != s or k <= 0:
                continue
            given = left.get(c, [])[:k]
            on_node.setdefault(node, []).extend(given)
            del left.get(c, [])[: len(given)]
            k -= len(given)
            remaining[(s, node)] = remaining.get((s, node), 0) - len(given)

    waiting: dict[int, list[Pod]] = {}
    for c, pods in sorted(left.items()):
        waiting.setdefault(problem.classes[c].shape, []).extend(pods)
    for shape, node in sorted(remaining, key=lambda key: (key[1], key[0])):
        queue = waiting.get(shape, [])
        take = max(0, remaining[(shape, node)])
        on_node.setdefault(node, []).extend(queue[:take])
        del queue[:take]
    leftover = sorted(shape for shape, pods in waiting.items() if pods)
    if leftover:
        raise AssertionError(f"placed pods without a node for shapes {leftover}")

    out: list[Binding] = []
    for node, pods in sorted(on_node.items()):
        out.extend(gpu_bindings(problem, node, pods, problem.free_gpu_ids[node]))
    out.sort(key=lambda b: b.pod)
    return out


@lru_cache(maxsize=4096)
def _plan(
    topology: GpuTopology, free: tuple[int, ...], counts: tuple[int, ...], shared: tuple[tuple[int, int], ...]
) -> NodePlan:
    """:func:`plan_node` for whole-GPU pods alone, kept by its arguments: many nodes of a cycle
    (the same GPUs free, the same pods landing) ask the same question."""
    return plan_node(topology, free, counts, shared=dict(shared))


def gpu_bindings(problem: Problem, node: int, pods: list[Pod], free: tuple[int, ...] | list[int]) -> list[Binding]:
    """The pods landing on one node, with GPU indices chosen jointly by interconnect bandwidth
    (:mod:`vcsat.solver.placement.gpu_choice`): bigger pods first, each on the best-connected set it can
    get, the rest left as well connected as possible; GPU shares best-fit onto shared GPUs."""
    node_obj = problem.nodes[node]
    ordered = sorted(pods, key=lambda p: (-p.gpus, -p.gpu_milli, p.key))
    whole = [pod for pod in ordered if pod.gpus > 0]
    shares = [pod for pod in ordered if pod.gpus == 0 and pod.gpu_milli > 0]
    if sum(pod.gpus for pod in whole) > len(free):
        raise AssertionError(f"node {node_obj.name} has too few free GPU indices")
    ids: dict[str, list[int]] = {}
    if whole or shares:
        counts = tuple(pod.gpus for pod in whole)
        share_milli = tuple(pod.gpu_milli for pod in shares)
        if shares:
            plan = plan_node(
                problem.topology(node),
                free,
                counts,
                shares=share_milli,
                shared=problem.shared_milli[node],
                fragmentation=node_score(problem, node, pods),
            )
        else:
            plan = _plan(problem.topology(node), tuple(free), counts, tuple(problem.shared_milli[node].items()))
        for pod, chosen in zip(whole, plan.whole, strict=True):
            ids[pod.key] = sorted(chosen)
        for pod, gpu in zip(shares, plan.shares, strict=True):
            if gpu is None:
                raise AssertionError(f"node {node_obj.name} has no GPU with room for share pod {pod.key}")
            ids[pod.key] = [gpu]
    return [Binding(pod=pod.key, node=node_obj.name, gpus=ids.get(pod.key, [])) for pod in ordered]
