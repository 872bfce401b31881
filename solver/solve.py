"""One scheduling cycle as a pure function: ``solve(snapshot, policy) -> Decision``.

The steps are design.md's: prefilter and aggregate (:mod:`problem`), greedy warm start
(:mod:`greedy`), an LP bound (:mod:`bound`), a neighbourhood search around the warm start and then
the exact search on the full model from the better of the two (:mod:`neighbourhood`, :mod:`exact`),
when its decision is further from the bound than ``Policy.relative_gap`` a neighbourhood search
around it in what the search budget left, then a queue's lower-priority gangs, and then any queue's,
traded for waiting higher-priority ones, and small pods on whole nodes for a queue below its fair
share, and last, pods moved off a confined waiting gang's nodes, where that ranks higher
(:mod:`exchange`, :mod:`relocation`), decode into pods, nodes
and GPU indices (:mod:`decode`), and the reason for every PodGroup left waiting (:mod:`explain`).
The greedy decision stands (``FALLBACK``) when the search finds nothing at least as good in time.

``solver.objective`` is the placed work (dominant-share thousandths, summed over every priority);
``solver.bound`` sums, per priority level, the tighter of CP-SAT's bound and the LP's, each proven
with the more important levels held at the decision's values.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, replace

from vcsat.model import (
    Binding,
    Decision,
    Eviction,
    LevelBound,
    Nomination,
    Pod,
    PodGroupOutcome,
    Policy,
    Snapshot,
    SolverStats,
)
from vcsat.solver.assignment import Assignment
from vcsat.solver.deadline import (
    EVICTION_BUDGET,
    EVICTIONS,
    EXCHANGE,
    EXCHANGE_ACROSS,
    EXCHANGE_FAIR,
    NEIGHBOURHOOD,
    SEARCH,
    SECOND_FILL,
    THIRD_FILL,
    TOP_UP,
    WHOLE_BOUND,
    WHOLE_FILL,
    WallPlan,
)
from vcsat.solver.explain import outcomes
from vcsat.solver.greedy import greedy, greedy_by_gain, greedy_keeping_whole, greedy_largest_first
from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.objectives.fairness import level_name as fair_level_name
from vcsat.solver.objectives.placement import level_name
from vcsat.solver.pauses import no_gc_pauses
from vcsat.solver.placement.decode import bindings, gpu_bindings
from vcsat.solver.podgroup_entries import per_podgroup
from vcsat.solver.preemption.antiaffinity import AntiAffinity, evictions_may_cure, modelled_gangs
from vcsat.solver.preemption.preempt import MAX_PREEMPTORS, eviction_run_sizes, preempt_and_reclaim
from vcsat.solver.preemption.spread import SpreadRules
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.rules.attach import slots_taken
from vcsat.solver.rules.interpod_tracker import broken
from vcsat.solver.rules.spread import SpreadState
from vcsat.solver.search import cp_sat, staged
from vcsat.solver.search.bound import LpBounds, lp_bounds
from vcsat.solver.search.exact import ExactResult, fits, solve_exact
from vcsat.solver.search.exchange import exchange, trading_queues, trading_ranks, trading_tiers
from vcsat.solver.search.neighbourhood import improve
from vcsat.solver.search.staged import SearchClock, workers_for
from vcsat.solver.search.stop import skip_search, within_tolerance
from vcsat.solver.search.top_up import top_up
from vcsat.solver.search.whole_bound import whole_bounds
from vcsat.solver.shares.deserved import queue_usage
from vcsat.solver.sure import Prepared

SEARCH_SHARE = 0.65
"""Of the time limit, what the allocate search may spend in CP-SAT (deterministic seconds), less
:data:`OVERHEAD_PER_NODE`: the time limit covers the whole cycle, not the search alone."""
EVICTION_SHARE = 0.15
"""Of the time limit, what the preempt and reclaim models may spend in CP-SAT."""
OVERHEAD_PER_NODE = 5e-4
"""Seconds per node the cycle spends outside CP-SAT (aggregating, the greedy, building the
model, decoding, explaining), calibrated on the 1,000- and 5,000-node benchmarks. Estimated from
the snapshot's size, never read off the clock, so that the budgets, and with them the decision,
are the same whatever the machine's load."""
AFTER_SEARCH_PER_NODE = 2e-4
"""Wall seconds per node the allocate search's deadline keeps back for what follows it (decode,
explanations, the eviction models' set-up), at least; the wall plan's reserve for the decode, the
explanations and the validator when that is more (:mod:`vcsat.solver.deadline`)."""
NEIGHBOURHOOD_ROUNDS = 3
"""At most this many neighbourhood searches follow one another, each around the last one's
improvement (:mod:`vcsat.solver.search.neighbourhood`)."""
NEIGHBOURHOOD_FIRST_SHARE = 0.6
"""Of the allocate search's budget, what the neighbourhood of the warm start may use before the
staged search on the full model (:func:`_search`)."""
AFTER_EVICTIONS_SECONDS = 0.05
"""Wall seconds the eviction searches' deadline keeps back for assembling the decision."""


def _placed(problem: Problem, assignment: Assignment) -> dict[int, int]:
    """Placed work per objective rank, the first objective levels: each rank's
    :func:`vcsat.solver.objectives.placement.placed_work`, summed in one walk over the placed
    classes rather than one per rank (each rank's sum adds the same terms in the same order): the
    exchange ranks every trade this way."""
    values = dict.fromkeys({g.rank for g in problem.candidates}, 0)
    gangs, classes = problem.gangs, problem.classes
    for c, k in assignment.count.items():
        pod_class = classes[c]
        rank = gangs[pod_class.gang].rank
        if rank in values:
            values[rank] += k * pod_class.value
    return values


def _ranked(values: dict[int, int]) -> tuple[int, ...]:
    return tuple(values[rank] for rank in sorted(values, reverse=True))


def _lexicographic(problem: Problem, assignment: Assignment) -> tuple[int, ...]:
    """The objective's first levels in their order: queue fair shares (tier 0 first), then placed
    work by priority (highest first); compared as tuples."""
    fair = fair_share_values(problem, assignment)
    return (*(fair[tier] for tier in sorted(fair)), *_ranked(_placed(problem, assignment)))


@dataclass(frozen=True)
class WarmStart:
    """The greedy decision the search starts from, its placed work and fair shares per level,
    the LP's bounds per level at its values, and its proven bound."""

    hint: Assignment
    values: dict[int, int]
    fair: dict[int, int]
    first: LpBounds
    bound: int
    aside: Assignment | None = None
    """A decision of the greedy's third or fourth fill ranking higher than ``hint``, not started
    from (:func:`warm_start`): the cycle ends with it where its own decision ranks lower."""


def warm_start(problem: Problem, first: Assignment, plan: WallPlan | None = None) -> WarmStart:
    """The greedy's decision, or, when it is not already within the policy's tolerance of its
    bound and the search is on, the greedy's other way of filling the fair-share levels
    (:func:`vcsat.solver.greedy.greedy_by_gain`) if the objective's first levels rank it higher.
    Tried only then: where the first fill is within the tolerance the cycle stops there anyway,
    and a second greedy costs as much as the first; nor when the ``plan`` has no time left for it.

    Then, where the ``plan`` leaves time for it, a third fill, each queue's work at a fair-share
    level tried largest first (:func:`vcsat.solver.greedy.greedy_largest_first`): kept aside as
    :attr:`WarmStart.aside` where it ranks higher than the decision chosen, not started from. The
    exchange's trades start from the chosen one, as they did before the third fill existed: started
    from the third fill's decision, they ended lower on a third of the files where it ranks higher
    (the exchange had other trades to make from the first two fills' decisions, and a decision
    within the tolerance at the start made none; benchmarks/RESULTS.md, session 45). The cycle
    keeps whichever of the two ranks higher at its end (:func:`_higher_aside`).

    Then, where the ``plan`` leaves time for one more, a fourth fill keeping wholly free nodes whole
    (:func:`vcsat.solver.greedy.greedy_keeping_whole`), kept aside instead of the third's where it
    ranks higher than both (on a tie, the third's): it places a queue's whole-node pods that the
    small multi-pod gangs of earlier levels leave no node for, which no order within one level
    does."""
    start = _warm_start(problem, first)
    policy = problem.policy
    if not policy.search or within_tolerance(sum(start.values.values()), start.bound, policy.relative_gap):
        return start
    if plan is not None and not plan.allows(SECOND_FILL, plan.second_fill_cost()):
        return start
    levels = (*(start.fair[tier] for tier in sorted(start.fair)), *_ranked(start.values))
    other = greedy_by_gain(problem)
    if other is not None:
        other_levels = _lexicographic(problem, other)
        if other_levels > levels:
            start, levels = _warm_start(problem, other, start.first), other_levels
    if plan is not None and not plan.allows(THIRD_FILL, plan.second_fill_cost()):
        return start
    aside: Assignment | None = None
    third = greedy_largest_first(problem)
    if third is not None:
        third_levels = _lexicographic(problem, third)
        if third_levels > levels:
            aside, levels = third, third_levels
    if plan is None or plan.allows(WHOLE_FILL, plan.second_fill_cost()):
        whole = greedy_keeping_whole(problem)
        if _lexicographic(problem, whole) > levels:
            aside = whole
    return start if aside is None else replace(start, aside=aside)


def _warm_start(problem: Problem, hint: Assignment, lp: LpBounds | None = None) -> WarmStart:
    values = _placed(problem, hint)
    fair = fair_share_values(problem, hint)
    first = lp_bounds(problem, values, fair) if lp is None else lp.again(values, fair)
    bound = _bound(problem, hint, WarmStart(hint, values, fair, first, 0), {}).bound
    return WarmStart(hint, values, fair, first, bound)


@dataclass(frozen=True)
class Bounded:
    """A decision's placed work per priority and fair-share values per level, its proven bound,
    each placed-work level's bound, and the LP behind them (which bounds the fair-share levels
    too, when asked: :func:`_levels`)."""

    values: dict[int, int]
    fair: dict[int, int]
    bound: int
    placed: dict[int, int]
    """Per priority, the level's proven bound (what ``bound`` sums)."""
    lp: LpBounds


def _higher_aside(problem: Problem, start: WarmStart, assignment: Assignment) -> Assignment | None:
    """The greedy's third or fourth fill's decision kept aside (:attr:`WarmStart.aside`) where it ranks
    higher than the cycle's own at its end, else None: so those fills never lower a decision,
    and raises it where the trades (or the search) from the first fills' decision did not reach
    as high in the time they had."""
    aside = start.aside
    if aside is None or _lexicographic(problem, aside) <= _lexicographic(problem, assignment):
        return None
    return aside


def _bound(problem: Problem, assignment: Assignment, start: WarmStart, search_bounds: dict[str, int]) -> Bounded:
    """The decision's placed work per priority, its proven bound (per level, the tighter of the
    LP's and the search's, ``search_bounds`` per level name, never below the decision's own) and
    the LP's bounds per level.

    Each level's bound holds the levels above it at the decision's own values: the first bounds
    (at the warm start's) are those when the decision kept the warm start's values, and only
    looser when it raised them (a fair share raised above the warm start's leaves less room for
    placed work). The warm start's values are not measured again on its own assignment."""
    values = dict(start.values) if assignment is start.hint else _placed(problem, assignment)
    fair = dict(start.fair) if assignment is start.hint else fair_share_values(problem, assignment)
    same = fair == {rank: start.fair.get(rank, 0) for rank in fair} and values == {
        rank: start.values.get(rank, 0) for rank in values
    }
    lp = start.first if same else start.first.again(values, fair)
    placed: dict[int, int] = {}
    for rank, value in values.items():
        proven = [b for b in (lp.placed.get(rank), search_bounds.get(level_name(rank))) if b is not None]
        placed[rank] = max(value, min(proven)) if proven else value
    return Bounded(values, fair, sum(placed.values()), placed, lp)


def _levels(problem: Problem, bounded: Bounded, *, optimal: bool) -> list[LevelBound]:
    """Every level of the objective, most important first, with the decision's value and bound
    (:attr:`vcsat.model.SolverStats.levels`); an ``optimal`` decision's bounds are its values (the
    search proved every level). The fair-share levels' bounds are solved here, once a cycle."""
    shares = {} if optimal else bounded.lp.fair_bounds()
    levels = [
        LevelBound(level=fair_level_name(problem, rank), value=value, bound=shares.get(rank, value))
        for rank, value in sorted(bounded.fair.items())
    ]
    for rank, value in sorted(bounded.values.items(), reverse=True):
        bound = value if optimal else bounded.placed[rank]
        levels.append(LevelBound(level=level_name(rank), value=value, bound=bound))
    return levels


def keep_for_exchange(problem: Problem, plan: WallPlan, assignment: Assignment) -> None:
    """Keep back, from the steps before the exchange (the search, its top-up and the
    neighbourhood rounds), the predicted cost of the exchange's first step on ``assignment``
    (its queues' own trades, else its trades across queues), when the cycle has a deadline: on a
    short limit those steps would otherwise take every second up to it, and the exchange, which
    places in a few trades what no search on a short budget finds, would never start. A step that
    no longer fits is skipped and named, so a replay skips it too; none, without a deadline."""
    if plan.deadline is None or not problem.policy.search:
        return
    queues = trading_queues(problem, assignment)
    trades = len(queues) if queues else 2 * len(trading_ranks(problem, assignment))
    plan.ahead = plan.exchange_cost(trades)


def exchange_due(search: bool, status: str, within: bool) -> bool:
    """Whether the cycle tries the exchange (:mod:`exchange`) on the decision that stands: with the
    search on (``Policy.search``), the decision not proven optimal and outside the policy's
    tolerance (``within`` false), whether a search ran and improved on the greedy, ran and did not
    (``FALLBACK``), or was skipped for time: the trade keeps only a decision that ranks strictly
    higher, so it never costs the decision anything, while a greedy decision the search had no
    time to improve is the one furthest from the bound."""
    return search and status != "OPTIMAL" and not within


def model_slots(problem: Problem) -> int:
    """The (bucket, node) slots of the whole problem's CP-SAT model: what building it costs."""
    return sum(len(bucket.nodes) for bucket in problem.buckets)


def model_size(problem: Problem) -> tuple[int, int]:
    """The whole problem's CP-SAT model's slots and gangs to place: what building it costs."""
    return model_slots(problem), len(problem.candidates)


def search_cost(problem: Problem, search: float) -> float:
    """Predicted CPU seconds of the allocate search up to a first solution (:func:`_search`): one
    model of the whole problem built, two where the neighbourhood of the warm start (built over
    every slot too) goes first."""
    builds = 2 if fits(problem, search * (1 - NEIGHBOURHOOD_FIRST_SHARE)) else 1
    return builds * WallPlan.model_cost(*model_size(problem))


def spread_broken(problem: Problem, placed: list[Binding]) -> bool:
    """Whether these bindings leave a topology spread constraint beyond its maxSkew."""
    state = SpreadState(problem.spread)
    class_of = {pod.key: c for c in state.of_class for pod in problem.classes[c].pods}
    node_of = {node.name: n for n, node in enumerate(problem.nodes)}
    for binding in placed:
        c = class_of.get(binding.pod)
        if c is not None:
            state.add(c, node_of[binding.node], 1)
    return bool(state.broken())


def solve(
    snapshot: Snapshot,
    policy: Policy | None = None,
    *,
    started: float | None = None,
    wall: bool | None = None,
    prepared: Prepared | None = None,
    skip: Collection[str] = (),
) -> Decision:
    """The cycle's decision. ``started``: the ``time.monotonic()`` at which the cycle began (e.g.
    before reading its input), from which ``Policy.time_limit_s`` is counted; now by default.
    ``wall=False`` takes every wall limit away (the deterministic budgets alone stop the search):
    for benchmarks that measure what a budget buys on a machine busy with other work; None:
    :data:`vcsat.solver.search.staged.WALL_STOP`. ``prepared``: this snapshot's problem and greedy
    assignment for this policy, already computed (:func:`vcsat.solver.sure.prepare`). ``skip``:
    optional steps not to run whatever the time left (a replay of a cycle that skipped them for
    time: its ``SolverStats.skipped``); with the wall stop on, any optional step that would end
    after the time limit is skipped too (:mod:`vcsat.solver.deadline`)."""
    policy = policy or Policy()
    if prepared is not None and (prepared.snapshot is not snapshot or prepared.policy != policy):
        raise ValueError("prepared for another snapshot or policy")
    with no_gc_pauses():
        return _solve(
            snapshot,
            policy,
            time.monotonic() if started is None else started,
            staged.WALL_STOP if wall is None else wall,
            prepared,
            frozenset(skip),
        )


def _solve(
    snapshot: Snapshot, policy: Policy, started: float, wall: bool, prepared: Prepared | None, skip: frozenset[str]
) -> Decision:
    deadline = started + policy.time_limit_s
    plan = WallPlan(deadline if wall else None, len(snapshot.nodes), skip=skip)
    problem = prepared.problem if prepared is not None else build_problem(snapshot, policy)
    plan.nodes = len(problem.nodes)
    # The allocate search stops in time for the eviction phase and the work after the search.
    after = max(AFTER_SEARCH_PER_NODE * len(problem.nodes), plan.reserve)
    evicting = policy.preempt or policy.reclaim
    clock = SearchClock(
        deadline=deadline - after - (policy.time_limit_s * EVICTION_SHARE if evicting else 0.0),
        workers=workers_for(policy),
        wall=wall,
    )
    if prepared is not None:
        first = prepared.hint
        plan.greedy_cpu = prepared.greedy_cpu
    else:
        greedy_started = time.process_time()
        first = greedy(problem)
        plan.greedy_cpu = time.process_time() - greedy_started
    start = warm_start(problem, first, plan)
    hint, hint_values = start.hint, start.values
    greedy_bound = start.bound
    if not within_tolerance(sum(hint_values.values()), greedy_bound, policy.relative_gap):
        # After the second fill, which the exchange does not replace (on capped and over-served
        # shapes it brings the warm start within the tolerance where no trade does).
        keep_for_exchange(problem, plan, hint)
    if wall and plan.ahead:
        # The search, its top-up and the neighbourhood rounds stop in time for the exchange.
        clock.deadline = min(clock.deadline or deadline, deadline - plan.reserve - plan.ahead * plan.slowdown())
    targets = {level_name(rank): bound for rank, bound in start.first.placed.items()}
    search = max(0.0, policy.time_limit_s * SEARCH_SHARE - OVERHEAD_PER_NODE * len(problem.nodes))
    budget = search if policy.search else 0.0
    if policy.search and skip_search(sum(hint_values.values()), greedy_bound, policy.relative_gap):
        # The stop rule (:mod:`vcsat.solver.search.stop`): the greedy decision is already proven
        # within the policy's tolerance, so no model is built and no search runs.
        result = ExactResult(None, False, notes=["greedy decision within the relative gap: no search"], skipped=True)
    elif policy.search and not plan.allows(SEARCH, search_cost(problem, search)):
        # Building the model alone would take the cycle past its deadline: the greedy's decision.
        result = ExactResult(None, False, notes=["search skipped: no time left to build its model"], skipped=True)
    elif policy.search:
        # A model is built from here on. Loading CP-SAT's module leaves the time the plan has left
        # as it was (:meth:`WallPlan.set_aside`), so asking first decides as loading first would.
        deadline += _load_cp_sat(plan, clock)
        result = _search(problem, hint, search, targets, clock)
    else:
        result = ExactResult(None, False, notes=["search off (Policy.search)"], skipped=True)

    if result.assignment is not None and not result.optimal and plan.allows(TOP_UP, plan.fill_cost()):
        # The search's later stages may have ended short of what the room it leaves still takes.
        result.assignment = top_up(problem, result.assignment)
    if (
        result.assignment is not None
        and _lexicographic(problem, result.assignment) >= _lexicographic(problem, hint)
        and not broken(problem, result.assignment.shape_slots)
    ):
        assignment, status = result.assignment, ("OPTIMAL" if result.optimal else "FEASIBLE")
    else:
        assignment, status = hint, "FALLBACK"
    # The decision's pods on their nodes, decoded once, for the decision the cycle ends with
    # (None until then): a decision the exchange or a kept-aside fill replaces is never decoded.
    now: list[Binding] | None = None
    if assignment is not hint and problem.spread:
        now = bindings(problem, assignment, assignment.shape_slots)
        if spread_broken(problem, now):
            # The decode or the repair moved or dropped a pod the spread counts read: the greedy
            # decision keeps every constraint by construction.
            assignment, status, now = hint, "FALLBACK", None
    bounded = _bound(problem, assignment, start, result.bounds)
    values, bound = bounded.values, bounded.bound
    objective = sum(values.values())
    rounds = NEIGHBOURHOOD_ROUNDS if policy.search and not result.skipped and status != "OPTIMAL" else 0
    while rounds and not within_tolerance(objective, bound, policy.relative_gap) and bound > objective:
        # The decision is further from the bound than the policy accepts: search around it, again
        # around each improvement while the search budget lasts.
        rounds -= 1
        if not plan.allows(NEIGHBOURHOOD, WallPlan.model_cost(*model_size(problem)) + plan.fill_cost()):
            break  # its model would not be built (and topped up) before the deadline
        around = {level_name(rank): b for rank, b in bounded.lp.placed.items()}
        left = search - clock.spent
        better = improve(problem, assignment, budget=left, targets=around, clock=clock, rank=_lexicographic)
        if better is None:
            break
        placed = bindings(problem, better.assignment, better.assignment.shape_slots)
        if problem.spread and spread_broken(problem, placed):
            break
        assignment, status, now = better.assignment, "FEASIBLE", placed
        # The main search's bounds held the levels above at its own decision's values.
        bounded = _bound(problem, assignment, start, {})
        values, bound = bounded.values, bounded.bound
        objective = sum(values.values())
    plan.ahead = 0.0  # the exchange's own time, from here on
    restate = False
    if exchange_due(policy.search, status, within_tolerance(objective, bound, policy.relative_gap)):
        # Still short of the bound, after a search or where it was skipped (for time, or its
        # model not built): a queue's lower-priority gangs traded for its waiting higher-priority
        # ones, which no search on a short budget finds (:mod:`exchange`).
        # The trades run one at a time, each asked whether it ends in time (:mod:`deadline`), the
        # first refused ending the exchange: a short limit gets the first trades instead of none.
        # A replay of an older cycle that skipped one kind of trade whole skips it too.
        queues = [] if plan.replays(EXCHANGE) else trading_queues(problem, assignment)
        ranks = [] if plan.replays(EXCHANGE_ACROSS) else trading_ranks(problem, assignment)
        tiers = [] if plan.replays(EXCHANGE_FAIR) else trading_tiers(problem, assignment)
        traded = assignment
        if queues or ranks or tiers:
            traded = exchange(
                problem,
                assignment,
                _lexicographic,
                queues,
                ranks,
                tiers,
                go=plan.allows_trade,
                look=plan.not_a_trade,
                may_look=plan.allows_look,
            )
        if traded is not assignment:
            assignment, status, restate = traded, "FEASIBLE", True
    aside = _higher_aside(problem, start, assignment)
    if aside is not None:
        assignment, status, restate = aside, "FALLBACK", True
    if restate:  # the exchange's decision or the third fill's stands: its bound, once
        now = None
        bounded = _bound(problem, assignment, start, {})
        values, bound = bounded.values, bounded.bound
        objective = sum(values.values())
    if status != "OPTIMAL" and policy.search and not within_tolerance(objective, bound, policy.relative_gap):
        # The decision stands: where the LP's gap is over the tolerance, the same rows over whole
        # numbers may prove it within (on saturated clusters the LP is the loose side).
        # The eviction phase (which decides) keeps the time of one run on its whole budget.
        kept = plan.evictions_cost([MAX_PREEMPTORS], policy.time_limit_s * EVICTION_SHARE) if evicting else 0.0
        tighter = _whole_bound(bounded, plan, clock, kept)
        if tighter is not None:
            deadline += tighter[1]
            bounded = tighter[0]
            bound = bounded.bound
    if status == "OPTIMAL":
        bound = objective  # every level proven: the looser LP bounds of some levels say nothing more
    if status == "FALLBACK" and bound == objective and not result.levels and not result.skipped:
        status = "OPTIMAL"  # nothing to search: the greedy decision is the whole answer
    if status != "OPTIMAL" and policy.search and within_tolerance(objective, bound, policy.relative_gap):
        status = "WITHIN_GAP"  # proven within the tolerance, where the search stops or never starts
    if now is None:
        now = bindings(problem, assignment, assignment.shape_slots)
    levels = _levels(problem, bounded, optimal=status == "OPTIMAL")
    podgroups = outcomes(problem, assignment)
    nominations: list[Nomination] = []
    evictions: list[Eviction] = []
    if evicting:
        # The last optional step: only the validator and the output follow it.
        clock.deadline = deadline - max(AFTER_EVICTIONS_SECONDS, plan.tail)
        now, nominations, evictions, podgroups, given = _preempt(
            problem, assignment, now, podgroups, policy.time_limit_s * EVICTION_SHARE, clock, plan
        )
        budget += given
    stats = SolverStats(
        status=status,
        objective=float(objective),
        bound=float(bound),
        seconds=round(time.monotonic() - started, 3),
        workers=clock.workers,
        deterministic_budget=round(budget, 3),
        deterministic_time=round(clock.spent, 3),
        wall_stopped=clock.wall_stopped or plan.out_of_time,
        skipped=list(plan.skipped),
        levels=levels,
    )
    if not policy.gang:
        podgroups = per_podgroup(snapshot, podgroups)
    return Decision(bindings=now, nominations=nominations, evictions=evictions, podgroups=podgroups, solver=stats)


def _whole_bound(bounded: Bounded, plan: WallPlan, clock: SearchClock, kept: float) -> tuple[Bounded, float] | None:
    """``bounded`` with each placed-work level the LP leaves above the decision bounded over
    whole numbers too (:mod:`vcsat.solver.search.whole_bound`), the smaller bound kept, and the
    wall seconds loading CP-SAT's module moved the deadlines by; None when the ``plan`` has no
    time for it besides the ``kept`` CPU seconds a later step needs, or the LP is let go. Where
    the plan has time for some of those levels only, the ones furthest above the decision go
    first."""
    short = sorted((value - bounded.placed[rank], -rank) for rank, value in bounded.values.items())
    loose = [-negative for gap, negative in short if gap < 0]
    left = plan.left()
    if left is not None:
        pace = plan.whole_bound_cost(1) * plan.slowdown()
        loose = loose[: max(1, int((left - kept * plan.slowdown()) // pace))]
    if not loose or not plan.allows(WHOLE_BOUND, plan.whole_bound_cost(len(loose)) + kept, decides=False):
        return None
    rows = bounded.lp.integer_rows()
    if rows is None:
        return None
    moved = _load_cp_sat(plan, clock)
    left = plan.left()
    seconds = None if left is None else max(0.0, left - kept * plan.slowdown()) / len(loose)
    proven = whole_bounds(rows, bounded.values, bounded.fair, loose, seconds=seconds)
    placed = {
        rank: max(bounded.values[rank], min(bound, proven.get(rank, bound))) for rank, bound in bounded.placed.items()
    }
    return replace(bounded, placed=placed, bound=sum(placed.values())), moved


def _load_cp_sat(plan: WallPlan, clock: SearchClock) -> float:
    """Load CP-SAT's module before the cycle's first model, unless this process has (:mod:`cp_sat`),
    and leave the time that took out of the cycle: its deadlines move by it. Returns the wall seconds."""
    wall, cpu = cp_sat.load()
    plan.set_aside(wall, cpu)
    if clock.deadline is not None:
        clock.deadline += wall
    return wall


def _search(
    problem: Problem, hint: Assignment, search: float, targets: dict[str, int], clock: SearchClock
) -> ExactResult:
    """The allocate search: a neighbourhood of the warm start first, then the staged search on the
    full model from what it found, with what the neighbourhood left of ``search``.

    Where the warm start is short of a fair-share tier, the full model's first stage often returns
    it unchanged in a short budget, while the neighbourhood of its holes (a small model) raises the
    tier and has time left for placed work at the new tier; the full search then starts from the
    better of the two. Only when the full model still fits what the neighbourhood may leave of the
    budget: otherwise the full search alone has the whole budget, as before."""
    if not fits(problem, search * (1 - NEIGHBOURHOOD_FIRST_SHARE)):
        return solve_exact(problem, hint, budget=search, targets=targets, clock=clock)
    around = improve(
        problem, hint, budget=search * NEIGHBOURHOOD_FIRST_SHARE, targets=targets, clock=clock, rank=_lexicographic
    )
    start = hint if around is None else around.assignment
    result = solve_exact(problem, start, budget=max(0.0, search - clock.spent), targets=targets, clock=clock)
    if result.assignment is None and around is not None:
        # The full search found nothing better than the neighbourhood's solution: that stands.
        return ExactResult(around.assignment, False, result.levels, {}, [*around.notes, *result.notes])
    return result


def _preempt(
    problem: Problem,
    assignment: Assignment,
    now: list[Binding],
    podgroups: list[PodGroupOutcome],
    budget: float,
    clock: SearchClock,
    plan: WallPlan,
) -> tuple[list[Binding], list[Nomination], list[Eviction], list[PodGroupOutcome], float]:
    """Preempt and reclaim (:mod:`preempt`) over what the allocate phase left, when the ``plan``
    has time for it: with ``budget`` deterministic seconds of CP-SAT when that fits too, else on
    the models' stage minimum alone (:mod:`vcsat.solver.deadline`). Also returns the budget given."""
    left = [gang for gang in problem.gangs if gang.index not in assignment.placed]
    if left and not plan.allows(EVICTIONS, plan.evictions_cost([1]), last=True):
        # Not even one run would end in time: the phase's cheapest form, asked before finding the
        # waiting gangs and their runs (a tenth of a second at 10,000 nodes) only to refuse it then.
        return now, [], [], podgroups, budget
    modelled = modelled_gangs(problem, left)
    waiting = [gang for gang in left if evictions_may_cure(problem, gang, modelled)]
    if not waiting:
        return now, [], [], podgroups, budget
    usage = {queue: dict(held) for queue, held in (problem.queue_usage or queue_usage(problem.snapshot)).items()}
    for c, k in assignment.count.items():
        held = usage.setdefault(problem.gangs[problem.classes[c].gang].queue, {})
        for r, name in enumerate(problem.resources):
            held[name] = held.get(name, 0) + k * problem.shapes[problem.classes[c].shape].request[r]
    # Exact when empty: no run would start; skip the set-up below. Each run priced by its model's size.
    runs = list(eviction_run_sizes(problem, waiting, usage).values())
    if not runs or not plan.allows(EVICTIONS, plan.evictions_cost(runs), last=True):
        return now, [], [], podgroups, budget
    # The eviction models are CP-SAT's: its module is loaded only once the phase is to run, so a
    # cycle that skips the phase for time never pays the import.
    _load_cp_sat(plan, clock)
    # The room allocate left, read only once the phase is to run.
    room = problem.room_left(assignment.shape_slots)
    if problem.attach is not None:
        volumes = [shape.volumes for shape in problem.shapes]
        for (node, r), count in slots_taken(problem.attach, volumes, assignment.shape_slots).items():
            room[node][r] -= count
    anti = None
    if any(c in problem.isolated for gang in waiting for c in gang.classes) or any(
        problem.snapshot.pod_by_key[b.pod].pod_affinity.required for b in now
    ):  # preemptors with rules between pods; bindings whose affinity relies on a bound pod
        node_of = {node.name: i for i, node in enumerate(problem.nodes)}
        by_key = problem.snapshot.pod_by_key
        anti = AntiAffinity(problem, [(by_key[b.pod], node_of[b.node]) for b in now])
    spread = None
    if problem.spread:
        class_of = {pod.key: c for c in problem.isolated for pod in problem.classes[c].pods}
        node_index = {node.name: i for i, node in enumerate(problem.nodes)}
        spread = SpreadRules(problem, [(class_of[b.pod], node_index[b.node], 1) for b in now if b.pod in class_of])
    if not plan.allows(EVICTION_BUDGET, plan.evictions_cost(runs, budget), last=True):
        budget = 0.0  # each stage of each run on its minimum: decided here, so a replay decides the same
    result = preempt_and_reclaim(problem, waiting, room, usage, budget=budget, clock=clock, anti=anti, spread=spread)
    if not result.placed:
        return now, [], [], podgroups, budget

    taken: dict[str, set[int]] = {}
    for binding in now:
        taken.setdefault(binding.node, set()).update(binding.gpus)
    extra: list[Binding] = []
    nominations: list[Nomination] = []
    by_node: dict[int, list[tuple[Pod, bool]]] = {}
    for c, k in sorted(result.count.items()):
        pod_class = problem.classes[c]
        unplaced = list(pod_class.pods[:k])
        for (cc, node), n in sorted(result.on_node.items()):
            if cc != c:
                continue
            for pod in unplaced[:n]:
                by_node.setdefault(node, []).append((pod, pod_class.gang in result.nominated))
            del unplaced[:n]
    for node, pods in sorted(by_node.items()):
        name = problem.nodes[node].name
        free_now = [i for i in problem.free_gpu_ids[node] if i not in taken.get(name, set())]
        freed = [i for victim in result.evicted_on.get(node, []) for i in victim.gpu_ids]
        binding_now = [pod for pod, nominated in pods if not nominated]
        for binding in gpu_bindings(problem, node, binding_now, free_now):
            extra.append(binding)
            free_now = [i for i in free_now if i not in binding.gpus]
        later = [pod for pod, nominated in pods if nominated]
        for binding in gpu_bindings(problem, node, later, sorted([*free_now, *freed])):
            nominations.append(Nomination(pod=binding.pod, node=binding.node, gpus=binding.gpus))
    evictions = [Eviction(pod=key, reason=reason) for key, reason in sorted(result.evicted.items())]
    patched: list[PodGroupOutcome] = []
    placed_by_key = {g.key: g for g in result.placed_gangs(problem)}
    for outcome in podgroups:
        gang = placed_by_key.get(outcome.podgroup)
        if gang is None:
            patched.append(outcome)
        elif gang.index in result.nominated:
            reasons = sorted(set(result.evicted.values()))
            patched.append(
                PodGroupOutcome(
                    podgroup=outcome.podgroup,
                    phase="Inqueue",
                    reason="WaitingForEviction",
                    message=f"nominated; waits for {len(evictions)} evicted pods ({', '.join(reasons)}) to go",
                )
            )
        else:
            patched.append(PodGroupOutcome(podgroup=outcome.podgroup, phase="Running"))
    return (
        sorted([*now, *extra], key=lambda b: b.pod),
        sorted(nominations, key=lambda n: n.pod),
        evictions,
        patched,
        budget,
    )
