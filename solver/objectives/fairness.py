"""The fairness objective levels: queues towards their deserved shares, then DRF among elastic jobs.

Queue fair share is the first objective level (Volcano's proportion plugin orders queues before
jobs): per queue, how much of its deserved share (:mod:`vcsat.solver.shares.deserved`) on its
dominant deserved resource it holds, in thousandths, through a concave utility, summed over
queues: raising the least-served queue gains most, as Volcano serves the queue with the lowest
share first. One such level per priority, highest first, counting only work of at least that
priority, so a queue's share is filled with its higher-priority work first. Above all of that
stands the queues' own priority (``Queue.spec.priority``, Volcano v1.10+, whose QueueOrderFn in the
proportion and capacity plugins compares it before the shares): the levels of the queues of the
highest priority come first, those of the next priority below them, and so on, so a lower-priority
queue's fair share is served only with what the higher-priority queues' shares leave; queues of
equal priority share their levels (when all queues have one priority, there is one set of levels).
Priority orders the serving of deserved shares; it raises no share. Room a
queue cannot use earns it nothing, and work beyond a share is still rewarded by the placed-work
levels below, so idle room is lent and the whole stays work-conserving.

DRF ranks below placed work of the same priority: among the decisions that place the most work,
it prefers the one whose elastic jobs (those with pods beyond their gang minimum) have the most
equal dominant shares, by a concave (piecewise-linear) utility of each job's dominant share. A job
that is all-or-nothing has no share to balance; it is left to the levels above. Max-work first is
our choice: DRF here never places less work than it could, where Volcano's progressive filling may.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import Gang, Problem
from vcsat.solver.search.levels import Level, make_level
from vcsat.solver.search.variables import Variables
from vcsat.solver.units import bounded_row, share_row

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

SHARE_SCALE = 1000
"""Shares in thousandths of the cluster."""
DRF_PIECES = 4
"""Pieces of the concave DRF utility: slopes 4, 3, 2, 1 between quarters of the cluster."""
EXCLUDED = frozenset({res.PODS, res.GPU_MILLI, res.EPHEMERAL_STORAGE})


def fair_resources(problem: Problem, queue: str) -> list[str]:
    """The queue's dominant deserved resource: among those where it wants more than it deserves,
    the one of which it deserves the largest part of the cluster (GPUs, on a GPU cluster). Shares
    are judged there, as Volcano orders queues by their dominant share; counting every resource
    would ask each queue to match the cluster's cpu:memory:GPU ratio, which no real workload does."""
    deserved = problem.deserved.get(queue, {})
    wanted = problem.wanted.get(queue, {})
    candidates = [
        name
        for name in problem.resources
        if name not in EXCLUDED and problem.total.get(name, 0) > 0 and deserved.get(name, 0) > 0
    ]
    # Where the queue wants more than it deserves is where its share binds; a resource it is
    # given all it asks of (memory, often) says nothing about fairness.
    binding = [name for name in candidates if deserved[name] < wanted.get(name, 0)]
    pool = binding or candidates
    if not pool:
        return []
    return [max(pool, key=lambda name: (deserved[name] / problem.total[name], name))]


def _queue_tiers(problem: Problem) -> dict[str, list[int]]:
    """Per queue with candidates: its own priorities, highest first (computed once per problem)."""
    if problem.queue_tiers is None:
        tiers: dict[str, set[int]] = {}
        for gang in problem.candidates:
            tiers.setdefault(gang.queue, set()).add(gang.rank)
        problem.queue_tiers = {queue: sorted(ranks, reverse=True) for queue, ranks in tiers.items()}
    return problem.queue_tiers


def fair_levels(problem: Problem) -> list[tuple[int, int]]:
    """(queue priority, tier) of each queue fair-share level, most important first: the queue
    priorities from the highest, and within one, the tiers of its queues' own job priorities
    (0 = each queue's highest), as deep as its deepest queue goes. Computed once per problem."""
    if problem.fair_levels is None:
        depth: dict[int, int] = {}
        for queue, ranks in _queue_tiers(problem).items():
            priority = problem.queue_priority(queue)
            depth[priority] = max(depth.get(priority, 0), len(ranks))
        problem.fair_levels = [(p, tier) for p in sorted(depth, reverse=True) for tier in range(depth[p])]
    return problem.fair_levels


def fair_ranks(problem: Problem) -> list[int]:
    """The queue fair-share levels, as indices into :func:`fair_levels` (0 = the most important)."""
    if not problem.deserved:
        return []
    return list(range(len(fair_levels(problem))))


def tier_threshold(problem: Problem, queue: str, rank: int) -> int:
    """The least priority a queue's work needs to count at level ``rank``: the queue's ``tier``-th
    own priority (its lowest once it has fewer), where ``tier`` is the level's job-priority tier."""
    ranks = _queue_tiers(problem).get(queue)
    if not ranks:
        return 0
    tier = fair_levels(problem)[rank][1]
    return ranks[min(tier, len(ranks) - 1)]


def _held(problem: Problem, queue: str, name: str) -> int:
    """What the queue's bound pods hold of a resource (all of them: what a queue holds is what it
    holds, whatever the tier that counts new work)."""
    return problem.queue_usage.get(queue, {}).get(name, 0)


def fair_terms(problem: Problem, rank: int) -> list[tuple[str, str, int, int, list[int]]]:
    """(queue, resource, deserved amount, held, asking classes) for every queue share the level
    ``rank`` can still grow: the queues of the level's queue priority, each counting its work of its
    ``tier`` highest priorities only.

    The model's variables, the greedy's fill order, the LP bound and the measure of a decided
    assignment all come from this list, so they always agree. It depends on the problem alone, so
    it is made once per level and kept on the problem (``Problem.fair_terms``); callers only read it."""
    kept = problem.fair_terms.get(rank)
    if kept is None:
        kept = _fair_terms(problem, rank)
        problem.fair_terms[rank] = kept
    return kept


def _fair_terms(problem: Problem, rank: int) -> list[tuple[str, str, int, int, list[int]]]:
    priority = fair_levels(problem)[rank][0]
    # Per queue of the level's queue priority, the least job priority that counts (once per queue).
    thresholds = {
        queue: tier_threshold(problem, queue, rank)
        for queue in _queue_tiers(problem)
        if problem.queue_priority(queue) == priority
    }
    # Each class with its request, looked up once: every fair resource of its queue reads it.
    by_queue: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
    for gang in problem.candidates:
        threshold = thresholds.get(gang.queue)
        if threshold is None or gang.rank < threshold:
            continue
        for c in gang.classes:
            shape = problem.shapes[problem.classes[c].shape]
            if shape.nodes:
                by_queue.setdefault(gang.queue, []).append((c, shape.request))
    out: list[tuple[str, str, int, int, list[int]]] = []
    for queue, classes in sorted(by_queue.items()):
        if queue not in problem.deserved:
            continue
        for name in fair_resources(problem, queue):
            r = problem.resource_index(name)
            cap = problem.deserved[queue][name]
            held = _held(problem, queue, name)
            if held >= cap:
                continue  # already at its share: nothing to gain here
            asked = [c for c, request in classes if request[r] > 0]
            if asked:
                out.append((queue, name, cap, held, asked))
    return out


def level_name(problem: Problem, rank: int) -> str:
    priority, tier = fair_levels(problem)[rank]
    name = f"queue fair share, each queue's {tier + 1} highest priorities"
    if len({p for p, _ in fair_levels(problem)}) > 1:
        name += f", queues of priority {priority}"
    return name


def fairness_levels(cp: cp_model.CpModel, problem: Problem, v: Variables, hint: Assignment) -> list[Level]:
    """One queue level per queue priority (highest first) and tier of each queue's own job priorities
    (highest first): between queues of one queue priority the levels are blind to job priority
    (each queue's top tier weighs alike), inside a queue its share is
    first filled with its highest-priority work, so fairness never trades a queue's higher-priority pods
    for its lower-priority ones. Variables are hinted from ``hint``'s placements."""
    from ortools.sat.python import cp_model

    levels: list[Level] = []
    for rank in fair_ranks(problem):
        terms: list[tuple[cp_model.IntVar, int]] = []
        for queue, name, deserved, held, asked in fair_terms(problem, rank):
            r = problem.resource_index(name)
            fill = cp.new_int_var(0, SHARE_SCALE, f"fill[{queue},{name},{rank}]")
            # deserved·fill ≤ SHARE_SCALE·(held + Σ count·request), in small exact integers.
            divisor = problem.units.divisor[r]
            coef, factor, bound = share_row(deserved, SHARE_SCALE, divisor, held)
            coef, bound, coefs = bounded_row(
                coef,
                SHARE_SCALE,
                bound,
                [factor * (problem.shapes[problem.classes[c].shape].request[r] // divisor) for c in asked],
                [v.upper[v.count[c].index] for c in asked],
            )
            allocation = cp_model.LinearExpr.weighted_sum([v.count[c] for c in asked], coefs)
            cp.add(_at_most(coef * fill, bound + allocation))
            utility = cp.new_int_var(0, share_utility(SHARE_SCALE), f"fair[{queue},{name},{rank}]")
            v.upper[utility.index] = share_utility(SHARE_SCALE)
            for slope, offset in utility_pieces():
                cp.add(_at_most(utility, slope * fill + offset))
            hinted = _fill(held, deserved, asked, r, problem, hint)
            cp.add_hint(fill, hinted)
            cp.add_hint(utility, share_utility(hinted))
            terms.append((utility, 1))
        levels.append(
            make_level(level_name(problem, rank), terms, upper_of=v.upper, measure=partial(queue_fair_share, rank=rank))
        )
    return levels


def queue_fair_share(problem: Problem, assignment: Assignment, rank: int) -> int:
    """The queue level's value for a decided assignment (what the model's variables would hold)."""
    return sum(
        share_utility(_fill(held, deserved, asked, problem.resource_index(name), problem, assignment))
        for _queue, name, deserved, held, asked in fair_terms(problem, rank)
    )


def fair_share_values(problem: Problem, assignment: Assignment) -> dict[int, int]:
    return {rank: queue_fair_share(problem, assignment, rank) for rank in fair_ranks(problem)}


def _fill(held: int, deserved: int, asked: list[int], r: int, problem: Problem, assignment: Assignment) -> int:
    """How much of its deserved share a queue holds, in thousandths, at most all of it."""
    return min(SHARE_SCALE, SHARE_SCALE * (held + placed_amount(problem, assignment, asked, r)) // deserved)


def placed_amount(problem: Problem, assignment: Assignment, classes: Iterable[int], r: int) -> int:
    """How much of resource ``r`` the pods of ``classes`` (a fair-share term's counted classes) that
    ``assignment`` places ask: what the decision adds to the term's ``held``."""
    # A loop, not a generator: the exchange sums every fair-share term for each trade's rank, and
    # most of a term's classes are not placed (whole numbers: the same sum).
    placed = assignment.count.get
    shapes, pod_classes = problem.shapes, problem.classes
    total = 0
    for c in classes:
        k = placed(c)
        if k:
            total += k * shapes[pod_classes[c].shape].request[r]
    return total


def utility_pieces() -> list[tuple[int, int]]:
    """(slope, offset) of the lines whose minimum is the concave utility: slopes 4, 3, 2, 1, 0."""
    step = SHARE_SCALE // DRF_PIECES
    return [(DRF_PIECES - k, sum(m * step for m in range(1, k + 1))) for k in range(DRF_PIECES + 1)]


# --- DRF --------------------------------------------------------------------------------------


def _drf_jobs(problem: Problem) -> list[tuple[Gang, str, int]]:
    """(gang, its dominant resource, what it holds of it) for every elastic gang that competes with
    another elastic gang of its queue and priority."""
    if not problem.policy.drf:
        return []
    totals = problem.total or res.total(node.allocatable for node in problem.nodes if node.schedulable)
    groups: dict[tuple[str, int], list[Gang]] = {}
    for gang in problem.candidates:
        if elastic(gang, problem) and any(problem.shapes[problem.classes[c].shape].nodes for c in gang.classes):
            groups.setdefault((gang.queue, gang.rank), []).append(gang)
    out: list[tuple[Gang, str, int]] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        for gang in members:
            request = problem.shapes[problem.classes[gang.classes[0]].shape].request
            named = [
                (amount / totals[name], name)
                for name, amount in zip(problem.resources, request, strict=True)
                if name not in EXCLUDED and totals.get(name, 0) > 0 and amount > 0
            ]
            if not named:
                continue
            name = max(named)[1]
            held = (
                sum(p.requests.get(name, 0) for p in problem.snapshot.pods_of_group.get(gang.key, ()) if p.bound)
                if gang.group is not None
                else 0
            )
            out.append((gang, name, held))
    return out


def _at_most(left: Any, right: Any) -> Any:
    """``left <= right``: the CP-SAT constraint the comparison makes. Typed Any because ortools'
    stubs type a linear expression's comparison ``bool``, and compiled code (mypyc) would check
    the constraint object it really returns against that and refuse it."""
    return left <= right


def share_utility(share: int) -> int:
    """The concave utility of a share in thousandths: slopes 4, 3, 2, 1 by quarters, then flat.
    Concave, so raising the least-served share gains most: max-min in spirit, linear in CP-SAT."""
    return min(slope * share + offset for slope, offset in utility_pieces())


def drf_levels(cp: cp_model.CpModel, problem: Problem, v: Variables, hint: Assignment) -> list[Level]:
    """Max-min-like DRF among elastic jobs of one queue and priority, as a concave utility;
    variables hinted from ``hint``."""
    from ortools.sat.python import cp_model

    jobs = _drf_jobs(problem)
    if not jobs:
        return []
    totals = problem.total or res.total(node.allocatable for node in problem.nodes if node.schedulable)
    terms: list[tuple[cp_model.IntVar, int]] = []
    for gang, name, held in jobs:
        r = problem.resource_index(name)
        classes = [c for c in gang.classes if c in v.count]
        share = cp.new_int_var(0, SHARE_SCALE, f"drf_share[{gang.index}]")
        # totals·share ≤ SHARE_SCALE·(held + Σ count·request), in small exact integers.
        divisor = problem.units.divisor[r]
        coef, factor, bound = share_row(totals[name], SHARE_SCALE, divisor, held)
        coef, bound, small = bounded_row(
            coef,
            SHARE_SCALE,
            bound,
            [factor * (problem.shapes[problem.classes[c].shape].request[r] // divisor) for c in classes],
            [v.upper[v.count[c].index] for c in classes],
        )
        cp.add(_at_most(coef * share, bound + cp_model.LinearExpr.weighted_sum([v.count[c] for c in classes], small)))
        coefs = [SHARE_SCALE * problem.shapes[problem.classes[c].shape].request[r] for c in classes]
        added = sum(k * hint.count.get(c, 0) for c, k in zip(classes, coefs, strict=True))
        hinted = min(SHARE_SCALE, (SHARE_SCALE * held + added) // totals[name])
        cp.add_hint(share, hinted)
        utility = cp.new_int_var(0, share_utility(SHARE_SCALE), f"drf_utility[{gang.index}]")
        v.upper[utility.index] = share_utility(SHARE_SCALE)
        for slope, offset in utility_pieces():
            cp.add(_at_most(utility, slope * share + offset))
        cp.add_hint(utility, share_utility(hinted))
        terms.append((utility, 1))
    return [make_level("DRF among elastic jobs", terms, upper_of=v.upper, measure=drf_value)]


def drf_value(problem: Problem, assignment: Assignment) -> int:
    totals = problem.total or res.total(node.allocatable for node in problem.nodes if node.schedulable)
    value = 0
    for gang, name, held in _drf_jobs(problem):
        r = problem.resource_index(name)
        added = sum(
            assignment.count.get(c, 0) * problem.shapes[problem.classes[c].shape].request[r] for c in gang.classes
        )
        value += share_utility(min(SHARE_SCALE, SHARE_SCALE * (held + added) // totals[name]))
    return value


def elastic(gang: Gang, problem: Problem) -> bool:
    return sum(len(problem.classes[c].pods) for c in gang.classes) > max(1, gang.need)
