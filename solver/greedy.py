"""The greedy decision: CP-SAT's warm start and the fallback when the search finds nothing better.

It places gangs one at a time in the order Volcano's allocate action would (priority, then age),
each pod on its most preferred node (:mod:`vcsat.solver.preferences`) if it has preferences, else
the best-fitting one (fewest free GPUs that still fit, so whole nodes stay free), and
commits a gang only when all of it fits. It is fast and always feasible, which is what a hint and a
fallback need; it is not optimal, which is why CP-SAT runs after it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from fractions import Fraction
from functools import partial

from vcsat.model import resources as res
from vcsat.model.gpus import FULL_GPU_MILLI
from vcsat.solver import scarcity
from vcsat.solver.assignment import Assignment
from vcsat.solver.fragmentation import greedy_chooser
from vcsat.solver.interpod_tracker import Tracker
from vcsat.solver.objectives.fairness import fair_ranks, fair_terms, tier_threshold
from vcsat.solver.problem import Domains, Gang, Problem, Shape
from vcsat.solver.spread import SpreadState

Allow = Callable[[int], bool]
"""Whether one more pod may go to a node under the rules between pods."""


def gang_order(gang: Gang) -> tuple[int, float, str]:
    """Volcano's job order without fairness: higher priority first, then older, then by name."""
    return (-gang.rank, gang.created, gang.key)


class Room:
    """Free room per node, with nodes bucketed by free GPUs so best fit is found without a scan.

    GPU shares are placed exactly: onto the shared GPU they fit best, else onto a fresh GPU,
    which whole-GPU pods then no longer get (contract §1)."""

    def __init__(self, problem: Problem) -> None:
        self.free = [list(row) for row in problem.free]
        self.gpu = problem.resources.index(res.GPU) if res.GPU in problem.resources else None
        self.milli = problem.resources.index(res.GPU_MILLI) if res.GPU_MILLI in problem.resources else None
        self.whole = [len(ids) for ids in problem.free_gpu_ids]
        self.shared = [dict(used) for used in problem.shared_milli]
        self.opened: list[list[tuple[int, bool]]] = [[] for _ in problem.free]
        """Per node, the shares placed: (GPU, whether it was opened for them), newest last."""
        self.levels: dict[int, dict[int, None]] = {}
        for node, row in enumerate(self.free):
            self.levels.setdefault(self._level(row), {})[node] = None
        self.touched: set[int] = set()
        """Nodes changed since :meth:`free_gpus_in` last looked."""
        self.domain_sums: dict[tuple[int, str], int] = {}
        self.spread = SpreadState(problem.spread) if problem.spread else None
        """Topology spread counts of what is placed so far (None without spread constraints)."""
        self.interpod = Tracker(problem, problem.interpod) if problem.interpod is not None else None
        """Rules between pods, pod by pod (None when no class is isolated)."""

    def _level(self, row: list[int]) -> int:
        return max(0, row[self.gpu]) if self.gpu is not None else 0

    def _parts(self, request: tuple[int, ...]) -> tuple[int, int]:
        """(whole GPUs, share thousandths) of a request."""
        whole = request[self.gpu] if self.gpu is not None else 0
        share = request[self.milli] - FULL_GPU_MILLI * whole if self.milli is not None else 0
        return whole, share

    def _shift(self, node: int, change: list[int]) -> None:
        self.touched.add(node)
        row = self.free[node]
        before = self._level(row)
        for i, amount in enumerate(change):
            row[i] += amount
        after = self._level(row)
        if after != before:
            del self.levels[before][node]
            self.levels.setdefault(after, {})[node] = None

    def take(self, node: int, request: tuple[int, ...]) -> None:
        whole, share = self._parts(request)
        change = [-amount for amount in request]
        self.whole[node] -= whole
        if share > 0:
            fits = [
                (FULL_GPU_MILLI - used, gpu)
                for gpu, used in self.shared[node].items()
                if used + share <= FULL_GPU_MILLI
            ]
            if fits:
                gpu = min(fits)[1]
                self.opened[node].append((gpu, False))
            else:
                gpu = max([*self.shared[node], -1]) + 1 + len(self.opened[node])  # a fresh one
                self.whole[node] -= 1
                if self.gpu is not None:
                    change[self.gpu] -= 1
                self.opened[node].append((gpu, True))
            self.shared[node][gpu] = self.shared[node].get(gpu, 0) + share
        self._shift(node, change)

    def give(self, node: int, request: tuple[int, ...]) -> None:
        """Undo the newest ``take`` of this request on this node."""
        whole, share = self._parts(request)
        change = list(request)
        self.whole[node] += whole
        if share > 0:
            gpu, opened = self.opened[node].pop()
            self.shared[node][gpu] -= share
            if opened:
                del self.shared[node][gpu]
                self.whole[node] += 1
                if self.gpu is not None:
                    change[self.gpu] += 1
        self._shift(node, change)

    def fits(self, node: int, request: tuple[int, ...]) -> bool:
        if not all(amount <= room for amount, room in zip(request, self.free[node], strict=True)):
            return False
        whole, share = self._parts(request)
        if whole > self.whole[node]:
            return False
        if share <= 0:
            return True
        if any(used + share <= FULL_GPU_MILLI for used in self.shared[node].values()):
            return True
        return self.whole[node] - whole >= 1

    def free_gpus_in(self, domains: Domains, tier: int, name: str) -> int:
        """Free whole GPUs in a topology domain: sums kept per domain and redone only where nodes
        changed (summing every domain for every gang is quadratic at 5,000 nodes)."""
        if self.touched:
            for node in self.touched:
                for t, domain in domains.of_node[node].items():
                    self.domain_sums.pop((t, domain), None)
            self.touched.clear()
        total = self.domain_sums.get((tier, name))
        if total is None:
            total = sum(max(0, self.whole[n]) for n in domains.nodes_in(tier, name))
            self.domain_sums[(tier, name)] = total
        return total

    def fullest_with(self, gpus: int) -> int | None:
        """A node with at least ``gpus`` free GPUs and the fewest such (lowest index on ties)."""
        for level in sorted(lvl for lvl in self.levels if lvl >= gpus):
            nodes = [n for n in self.levels[level] if self.whole[n] >= gpus]
            if nodes:
                return min(nodes)
        return None

    def best_fit_in(
        self, request: tuple[int, ...], eligible: dict[int, int], nodes: list[int], allow: Allow | None = None
    ) -> int | None:
        """Best fit among the given nodes only (a topology domain): fewest free GPUs, then index."""
        fitting = [n for n in nodes if n in eligible and self.fits(n, request) and (allow is None or allow(n))]
        return min(fitting, key=lambda n: (self._level(self.free[n]), n)) if fitting else None

    def preferred_fit(self, shape: Shape, allow: Allow | None = None) -> int | None:
        """The node a pod with node preferences goes to: the highest preference score among those
        it fits (kube-scheduler's choice), then best fit (fewest free GPUs), then node order."""
        fitting = [n for n in shape.upper if self.fits(n, shape.request) and (allow is None or allow(n))]
        if not fitting:
            return None
        return min(fitting, key=lambda n: (-shape.preference.get(n, 0), self._level(self.free[n]), n))

    def best_fit(
        self, request: tuple[int, ...], gpus: int, eligible: dict[int, int], allow: Allow | None = None
    ) -> int | None:
        for level in sorted(lvl for lvl in self.levels if lvl >= gpus):
            for node in self.levels[level]:
                if node in eligible and self.fits(node, request) and (allow is None or allow(node)):
                    return node
        return None


def greedy(problem: Problem) -> Assignment:
    """Volcano's allocate, greedily, in the order of the objective's levels (:mod:`objectives`):
    first each queue fair-share level (:func:`_fill_tier`: per queue priority, highest first, as
    Volcano's QueueOrderFn, and per tier of each queue's own priorities, queues water-filled
    towards their deserved shares, the least served first), then
    everything left by priority then age into whatever room remains (lending).

    Following the levels matters: a queue's low-priority work placed before another queue's
    high-priority work takes room that the first fair-share level would give the latter, and the
    search then starts far from the optimum (it cannot undo whole gangs quickly)."""
    room = Room(problem)
    queue_room = {name: dict(caps) for name, caps in problem.queue_room.items()}
    assignment = Assignment()
    held = {queue: dict(usage) for queue, usage in problem.queue_usage.items()}
    order = sorted(problem.candidates, key=lambda gang: _packing_order(problem, gang))
    tried: set[int] = set()
    for tier in fair_ranks(problem):
        _fill_tier(problem, tier, order, tried, room, queue_room, assignment, held)
    for gang in order:
        if gang.index not in tried:
            _place(problem, gang, room, queue_room, assignment, held)
    if problem.interpod is not None and any(need.justifiers for need in problem.interpod.affinity.values()):
        # A gang whose affinity needs another gang of this cycle may have come before it: once
        # more, now that the others are placed (kube-scheduler would retry it likewise).
        for gang in order:
            if gang.index not in assignment.placed and any(c in problem.isolated for c in gang.classes):
                _place(problem, gang, room, queue_room, assignment, held)
    return assignment


def _packing_order(problem: Problem, gang: Gang) -> tuple[int, bool, float, str]:
    """Job order, except that within one priority the gangs confined to one topology domain go
    first: they need whole nodes side by side, which the smaller gangs placed before them would
    break up; the others fit into what is left (first-fit decreasing)."""
    return (-gang.rank, problem.highest_tier(gang) is None, gang.created, gang.key)


def _fill_tier(
    problem: Problem,
    tier: int,
    order: list[Gang],
    tried: set[int],
    room: Room,
    queue_room: dict[str, dict[str, int]],
    assignment: Assignment,
    held: dict[str, dict[str, int]],
) -> None:
    """One queue fair-share level: the queues it can raise, least filled first (on the resource
    the level measures), each with its work of this tier's priorities in job order, until each is
    at its deserved share or out of work. Room only shrinks, so a gang that failed once is not
    tried again."""
    share: dict[str, tuple[str, int]] = {}
    for queue, name, deserved, _held, _asked in fair_terms(problem, tier):
        share[queue] = (name, deserved)
    waiting: dict[str, deque[Gang]] = {}
    for gang in order:
        if gang.queue in share and gang.index not in tried and gang.rank >= tier_threshold(problem, gang.queue, tier):
            waiting.setdefault(gang.queue, deque()).append(gang)

    def fill(queue: str) -> Fraction:
        name, deserved = share[queue]
        return Fraction(held.get(queue, {}).get(name, 0), deserved)

    while waiting:
        queue = min(waiting, key=lambda q: (fill(q), q))
        if fill(queue) >= 1:
            break  # the least filled is at its share: no queue gains more at this level
        gang = waiting[queue].popleft()
        if not waiting[queue]:
            del waiting[queue]
        tried.add(gang.index)
        _place(problem, gang, room, queue_room, assignment, held)


def _place(
    problem: Problem,
    gang: Gang,
    room: Room,
    queue_room: dict[str, dict[str, int]],
    assignment: Assignment,
    held: dict[str, dict[str, int]],
) -> bool:
    taken = fit_topology_first(problem, gang, room, [queue_room[q] for q in problem.caps_of(gang.queue)])
    if taken is None:
        return False
    assignment.placed.add(gang.index)
    lineage_caps = [queue_room[q] for q in problem.caps_of(gang.queue)]
    usage = held.setdefault(gang.queue, {})
    for class_index, shape_index, node in taken:
        assignment.count[class_index] = assignment.count.get(class_index, 0) + 1
        key = (shape_index, node)
        assignment.shape_slots[key] = assignment.shape_slots.get(key, 0) + 1
        slot = (gang.index, shape_index, node)
        assignment.gang_slots[slot] = assignment.gang_slots.get(slot, 0) + 1
        request = problem.shapes[shape_index].request
        for r, name in enumerate(problem.resources):
            usage[name] = usage.get(name, 0) + request[r]
        for caps in lineage_caps:
            for name in caps:
                if name in problem.resources:
                    caps[name] -= request[problem.resource_index(name)]
    return True


def fit_topology_first(problem: Problem, gang: Gang, room: Room, caps: list[dict[str, int]]) -> Taken | None:
    """A topology gang tries each domain of the finest tier, then of coarser tiers (the fullest
    domain that fits first, to keep roomy ones whole), then anywhere unless its networkTopology is
    hard; other gangs go anywhere."""
    for nodes in _domain_attempts(problem, gang, room):
        taken = fit_gang(problem, gang, room, caps, nodes)
        if taken is not None:
            return taken
    return None


def _domain_attempts(problem: Problem, gang: Gang, room: Room) -> list[list[int] | None]:
    needed = sum(
        problem.shapes[problem.classes[c].shape].gpus * min(len(problem.classes[c].pods), max(1, gang.need))
        for c in gang.classes
    )
    pods = sum(len(problem.classes[c].pods) for c in gang.classes)
    attempts: list[list[int] | None] = []
    if pods > 1 and needed > 0:
        # All on one node first (NVLink beats any network): the fullest node that has the GPUs.
        fullest = room.fullest_with(needed)
        if fullest is not None:
            attempts.append([fullest])
    domains = problem.domains
    if domains is None or gang.index not in problem.topology_gangs:
        return [*attempts, None]
    hard = problem.highest_tier(gang)
    for tier in domains.tiers:
        if hard is not None and tier > hard:
            break
        inside = []
        for name in domains.domains(tier):
            nodes = domains.nodes_in(tier, name)
            free = room.free_gpus_in(domains, tier, name)
            if name and free >= needed:  # a domain without that many free GPUs cannot hold it
                inside.append((free, name, nodes))
        attempts += [nodes for _, _, nodes in sorted(inside)]
    if hard is None:
        attempts.append(None)
    return attempts


Taken = list[tuple[int, int, int]]
"""(pod class, shape, node) per placed pod."""


def fit_gang(
    problem: Problem, gang: Gang, room: Room, caps: list[dict[str, int]], within: list[int] | None = None
) -> Taken | None:
    """Best-fit the gang's pods into ``room`` (only onto ``within`` when given); keep them there if
    the gang is whole, else undo.

    Every pending pod is tried (an elastic gang takes what fits beyond its minimum).
    """
    taken: Taken = []
    used: dict[str, int] = {}
    least_fragmenting = greedy_chooser(problem)  # GPU-sharing workloads: FGD's choice of node
    scarce = scarcity.for_problem(problem)
    classes = sorted(
        (problem.classes[c] for c in gang.classes),
        key=lambda pc: (-problem.shapes[pc.shape].gpus, pc.index),
    )
    for pod_class in classes:
        shape = problem.shapes[pod_class.shape]
        request_by_name = dict(zip(problem.resources, shape.request, strict=True))
        for _ in pod_class.pods:
            if any(
                used.get(name, 0) + request_by_name.get(name, 0) > cap
                for limits in caps
                for name, cap in limits.items()
                if request_by_name.get(name, 0) > 0
            ):
                break
            tracker = room.interpod if pod_class.index in problem.isolated else None
            spread = room.spread if room.spread is not None and pod_class.index in room.spread.of_class else None
            allow = _both(
                partial(tracker.allows, pod_class.index) if tracker is not None else None,
                partial(spread.allows, pod_class.index) if spread is not None else None,
            )
            if tracker is not None:
                tracker.begin()
            if within is not None:
                node = room.best_fit_in(shape.request, shape.upper, within, allow)
            elif shape.preference:
                node = room.preferred_fit(shape, allow)
            elif least_fragmenting is not None and allow is None:
                node = least_fragmenting(room, shape)
            elif scarce is not None:  # scarce GPU pools priced (vcsat.solver.scarcity): cheapest, then best fit
                node = scarcity.cheapest_fit(scarce, room, shape, allow)
            else:
                node = room.best_fit(shape.request, shape.gpus, shape.upper, allow)
            if node is None:
                if tracker is not None:
                    tracker.stuck = True
                break
            room.take(node, shape.request)
            if tracker is not None:
                tracker.place(pod_class.index, node)
            if spread is not None:
                spread.add(pod_class.index, node, 1)
            for name, amount in request_by_name.items():
                used[name] = used.get(name, 0) + amount
            taken.append((pod_class.index, shape.index, node))

    per_task: dict[str, int] = {}
    for class_index, _, _ in taken:
        task = problem.classes[class_index].task
        per_task[task] = per_task.get(task, 0) + 1
    whole = len(taken) >= max(1, gang.need) and all(
        per_task.get(task, 0) >= need for task, need in gang.task_need.items()
    )
    if whole:
        return taken
    undo(problem, room, taken)
    return None


def _both(first: Allow | None, second: Allow | None) -> Allow | None:
    """Both rules' node tests (inter-pod rules and topology spread), or the one there is."""
    if first is None or second is None:
        return first or second
    return lambda node: first(node) and second(node)


def undo(problem: Problem, room: Room, taken: Taken) -> None:
    for class_index, shape_index, node in reversed(taken):
        room.give(node, problem.shapes[shape_index].request)
        if room.interpod is not None:
            room.interpod.remove(class_index, node)
        if room.spread is not None:
            room.spread.add(class_index, node, -1)
