"""The exact search: build the CP-SAT model, warm-start it, solve in stages, refine until exact.

The model object is ``cp``. Constraint and objective modules each add their part; this module
wires them, runs the stages of :mod:`vcsat.solver.search.levels` within the time budget, and turns the
counts into an exact assignment: the decode resolves buckets into real shapes, and where a bucket's
relaxation was too loose the bucket is split and the search runs again (warm-started from the best
exact assignment so far). Out of time, :mod:`vcsat.solver.placement.repair` makes the last answer exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vcsat.solver.assignment import Assignment
from vcsat.solver.constraints.attach import add_attach_limits
from vcsat.solver.constraints.capacity import add_capacity
from vcsat.solver.constraints.gang import add_gang
from vcsat.solver.constraints.interpod import InterpodVars, add_interpod, hint_values
from vcsat.solver.constraints.quota import add_quota
from vcsat.solver.constraints.share_room import add_share_room
from vcsat.solver.constraints.spread import SpreadVars, add_spread, spread_hint_values
from vcsat.solver.constraints.symmetry import add_symmetry_breaking, order_like_model, weight
from vcsat.solver.constraints.topology import add_topology, domain_counts
from vcsat.solver.fresh_model import new_cp_model
from vcsat.solver.objectives.fairness import drf_levels, fairness_levels
from vcsat.solver.objectives.interpod import preference_levels as interpod_preference_levels
from vcsat.solver.objectives.locality import locality_levels
from vcsat.solver.objectives.packing import packing_levels
from vcsat.solver.objectives.placement import age_level, placement_levels
from vcsat.solver.objectives.preference import preference_levels
from vcsat.solver.objectives.scarcity import scarcity_levels
from vcsat.solver.objectives.spread import spread_levels
from vcsat.solver.placement.decode import resolve
from vcsat.solver.placement.repair import repair
from vcsat.solver.problem import Bucket, Problem, split_bucket
from vcsat.solver.rules.candidates import restrict_isolated
from vcsat.solver.search.levels import Level, Stage, plan_stages
from vcsat.solver.search.staged import SearchClock, StageResult, new_solver, solve_stages, workers_for
from vcsat.solver.search.variables import Variables, create_variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

FIRST_STAGE_SHARE = 0.7
"""Of a search's time, what its most important stage may use; later stages share the rest."""
MAX_REFINEMENTS = 6
MIN_STAGE_SECONDS = 0.05
FIRST_SOLUTION_PER_SIZE_SQUARED = 8e-11
"""Deterministic seconds CP-SAT needs before the first solution of the first stage, per squared
variable (:func:`_model_size`): its root LP grows faster than the model (calibrated on the
benchmark instances, benchmarks/RESULTS.md). A first stage given less ends UNKNOWN, so the model is
not even built and the greedy decision stands."""
TAIL_SHARE = 0.25
"""Of a search's budget, what the stages below the last placed-work level may use together."""


@dataclass
class ExactResult:
    assignment: Assignment | None
    """Resolved (``shape_slots`` only); None when CP-SAT found nothing at least as good as the hint."""
    optimal: bool
    """Every stage proven optimal and the decode kept the model's packing."""
    levels: list[Level] = field(default_factory=list)
    bounds: dict[str, int] = field(default_factory=dict)
    """Per level name: the upper bound CP-SAT proved (levels of stages never reached have none)."""
    notes: list[str] = field(default_factory=list)
    """How each search and stage ended, for logs."""
    skipped: bool = False
    """The budget was too small for a model of this size to reach a first solution: no search."""


@dataclass
class _Search:
    assignment: Assignment | None
    optimal: bool
    levels: list[Level]
    bounds: dict[str, int]
    spent: float = 0.0
    """Deterministic seconds CP-SAT used."""


def solve_exact(
    problem: Problem,
    hint: Assignment,
    *,
    budget: float,
    targets: dict[str, int] | None = None,
    restrict: bool | None = None,
    clock: SearchClock | None = None,
    free_nodes: frozenset[int] | None = None,
) -> ExactResult:
    """Search within ``budget`` deterministic seconds of CP-SAT; ``targets`` (per level name, an
    upper bound proven elsewhere) let a stage stop as soon as its solution reaches them.

    Every limit is cut from ``budget`` by what CP-SAT reports it spent in deterministic time,
    never by the wall clock: the same input gives the same decision whatever the machine's load.
    The ``clock``'s wall deadline is the outer stop (:mod:`vcsat.solver.search.staged`); it records
    whether it cut a solve short.

    ``restrict`` keeps isolated classes' slots on their candidate nodes (:mod:`candidates`): by
    default only when the full model is too large for ``budget``.

    ``free_nodes`` searches a neighbourhood of ``hint`` (:mod:`vcsat.solver.search.neighbourhood`):
    every (bucket, node) slot of any other node is fixed at the hint's, while which gangs' pods
    fill the slots stays free; like a restricted model it proves no bound."""
    buckets = list(problem.buckets)
    size = _model_size(problem, buckets)
    restricted = False
    if problem.isolated and (restrict if restrict is not None else not _fits(problem, budget, size)):
        # Isolated classes' slots on every eligible node outgrow the budget: keep them on their
        # candidate nodes only, and report no bound from the restricted model.
        buckets, restricted = restrict_isolated(problem, buckets, hint)
        size = _model_size(problem, buckets)
    if free_nodes is not None:
        # Fixed slots cost the search nothing: the model's size is what the free nodes hold.
        size = sum(1 for bucket in buckets for node in bucket.nodes if node in free_nodes)
    if not _fits(problem, budget, size):
        note = f"search skipped: {budget:.2f}s is too little for a model of about {size} variables"
        return ExactResult(None, False, notes=[note], skipped=True)
    clock = clock if clock is not None else SearchClock(workers=workers_for(problem.policy))
    best = hint
    notes: list[str] = []
    last: _Search | None = None
    spent = 0.0
    for refinement in range(MAX_REFINEMENTS + 1):
        left = budget - spent
        if left <= MIN_STAGE_SECONDS and refinement > 0:
            break
        last_one = refinement == MAX_REFINEMENTS or free_nodes is not None  # a neighbourhood is not refined
        share = left if last_one else left * (0.6 if refinement == 0 else 0.5)
        search = _search(
            problem, buckets, best, share, notes, targets or {}, clock, restricted=restricted, free_nodes=free_nodes
        )
        spent += search.spent
        if not search.levels:
            return ExactResult(Assignment(), True, [], {}, notes)
        last = search
        if search.assignment is None:
            break
        resolution = resolve(problem, search.assignment, buckets)
        if not resolution.short:
            exact = _resolved(search.assignment, resolution.shape_slots, resolution.gang_slots)
            if resolution.moved:
                notes.append(f"decode: {resolution.moved} pods placed outside their bucket's slots")
            optimal = search.optimal and not resolution.moved
            return ExactResult(exact, optimal, search.levels, search.bounds, notes)
        repaired, fixed = repair(problem, search.assignment, buckets)
        candidate = _resolved(repaired, fixed.shape_slots, fixed.gang_slots)
        if _rank(problem, search.levels, candidate) > _rank(problem, search.levels, best):
            best = candidate
        notes.append(f"refine: {sum(resolution.short.values())} pods short in buckets {sorted(resolution.short)}")
        if clock.wall_stopped or clock.out_of_time():
            break  # no time left for another search: the repaired answer stands
        buckets = _refine(problem, buckets, resolution.short, search.assignment)
    if last is None or best is hint:
        return ExactResult(None, False, [] if last is None else last.levels, {} if last is None else last.bounds, notes)
    return ExactResult(best, False, last.levels, last.bounds, notes)


def _refine(problem: Problem, buckets: list[Bucket], short: dict[int, int], assignment: Assignment) -> list[Bucket]:
    """The buckets for the next search: the relaxed buckets found short, split. Where all of those
    are exact (a shortage the relaxation did not cause directly, e.g. a topology gang's pods handed
    out first), the relaxed buckets holding slots are split instead, so that the next search runs
    on a tighter model rather than on the same one. Unchanged when every bucket involved is exact
    (the next search then differs by its warm start alone)."""
    chosen = [index for index in short if not buckets[index].exact]
    if not chosen:
        used = {b for (b, _node), k in assignment.bucket_slots.items() if k > 0}
        chosen = [index for index in used if not buckets[index].exact]
    for index in sorted(chosen, reverse=True):
        buckets = split_bucket(problem, buckets, index)
    return buckets


def fits(problem: Problem, budget: float) -> bool:
    """Whether the full model (every bucket on every eligible node) fits ``budget``: its first
    stage would reach a first solution (:func:`_fits`)."""
    return _fits(problem, budget, _model_size(problem, list(problem.buckets)))


def _fits(problem: Problem, budget: float, size: int) -> bool:
    """Whether the first stage's share of ``budget`` is enough for a model of ``size`` variables to
    reach a first solution (always, without gangs to place)."""
    return not problem.candidates or budget * FIRST_STAGE_SHARE >= FIRST_SOLUTION_PER_SIZE_SQUARED * size**2


def _model_size(problem: Problem, buckets: list[Bucket]) -> int:
    """About how many variables the model gets, before building it: the (bucket, node) slots and,
    for each topology-priced gang, at most one count per finest-tier domain."""
    slots = sum(len(bucket.nodes) for bucket in buckets)
    domains = problem.domains
    racks = len(domains.members[domains.tiers[0]]) if domains is not None else 0
    return slots + len(problem.topology_gangs) * racks


def _rank(problem: Problem, levels: list[Level], assignment: Assignment) -> tuple[int, ...]:
    """An assignment's level values, most important first: compared lexicographically."""
    return tuple(level.measure(problem, assignment) for level in levels)


def _resolved(
    assignment: Assignment,
    shape_slots: dict[tuple[int, int], int],
    gang_slots: dict[tuple[int, int, int], int],
) -> Assignment:
    return Assignment(
        placed=set(assignment.placed),
        count={c: k for c, k in assignment.count.items() if k > 0},
        shape_slots={key: k for key, k in shape_slots.items() if k > 0},
        gang_slots={key: k for key, k in gang_slots.items() if k > 0 and key[0] in assignment.placed},
    )


def _search(
    problem: Problem,
    buckets: list[Bucket],
    hint: Assignment,
    budget: float,
    notes: list[str],
    targets: dict[str, int],
    clock: SearchClock,
    *,
    restricted: bool = False,
    free_nodes: frozenset[int] | None = None,
) -> _Search:
    """One search over ``buckets``. A ``restricted`` model (:mod:`vcsat.solver.rules.candidates`) lacks
    some of the full problem's solutions: CP-SAT's bounds and proofs of optimality on it prove
    nothing, so it reports no bound (the LP's stand alone) and a stage is proven only when its
    solution reaches the bounds proven elsewhere (``targets``)."""
    from ortools.sat.python import cp_model

    from vcsat.solver.search.target_stop import StopAtTargets

    policy = problem.policy
    # A neighbourhood lacks most of the model's solutions: its bounds prove nothing either.
    restricted = restricted or free_nodes is not None
    cp = new_cp_model()
    v = create_variables(cp, problem, buckets)
    add_gang(cp, problem, v)
    add_capacity(cp, problem, v, buckets)
    add_attach_limits(cp, problem, v, buckets, hint)  # shared CSI volumes: one attach slot per node
    add_share_room(cp, problem, v)  # valid cuts: a GPU share fits only where that much is left on one GPU
    add_quota(cp, problem, v)
    spread = add_spread(cp, problem, v, buckets)
    interpod = add_interpod(cp, problem, v, buckets)
    classes = add_symmetry_breaking(cp, problem, v)
    topo = add_topology(cp, problem, v, buckets, hint)
    levels = [
        *fairness_levels(cp, problem, v, hint),
        *placement_levels(problem, v),
        *drf_levels(cp, problem, v, hint),
        *locality_levels(problem, v, topo),
        *preference_levels(problem, v),
        *spread_levels(cp, problem, v, buckets),
        *interpod_preference_levels(problem, v, buckets),
        *scarcity_levels(problem, v),
    ]
    if policy.packing_weight > 0:
        levels += packing_levels(cp, problem, v, hint)
    levels.append(age_level(problem, v))
    stages = plan_stages(levels)
    levels = [level for stage in stages for level in stage.levels]
    if not stages:
        return _Search(None, True, [], {})
    hinted = _hint(cp, problem, v, hint, buckets, classes, interpod, spread)
    if free_nodes is not None:
        _fix_slots(cp, v, hinted, free_nodes)

    solver = new_solver(policy, clock, lean_presolve=True)
    optimal = True
    bounds: dict[str, int] = {}
    held: dict[int, int] | None = None
    spent_before = clock.spent
    last_reported = max((i for i, stage in enumerate(stages) if any(lv.reported for lv in stage.levels)), default=-1)

    def plan(number: int, stage: Stage) -> float | None:
        nonlocal optimal, held
        met = _meets(problem, stage, hint, targets, policy.relative_gap)
        if met is not None:
            # The warm start already reaches bounds proven elsewhere: no search can do better
            # (or better enough) on these levels, so keep what it has and go on to the next stage.
            reached, hint_value = met
            notes.append(f"{stage.names}: the greedy decision meets the LP bound")
            bounds.update({level.name: targets.get(level.name, level.upper) for level in stage.levels})
            optimal = optimal and reached
            cp.add(stage.expression() >= hint_value)
            held = _hinted(cp)
            return None
        left = budget - (clock.spent - spent_before)
        if left < 2 * MIN_STAGE_SECONDS and number > last_reported:
            # Out of time: the tie-breaks below placed work (topology, packing, age) keep what the
            # stages above left them rather than overrun the cycle's time limit.
            notes.append(f"{stage.names}: skipped, out of time")
            optimal = False
            return None
        if free_nodes is not None and number > last_reported:
            # A neighbourhood is kept for its first levels alone: its time goes to them.
            notes.append(f"{stage.names}: skipped in a neighbourhood")
            optimal = False
            return None
        searched = last_reported + 1 if free_nodes is not None else len(stages)
        share = FIRST_STAGE_SHARE if number == 0 and searched > 1 else 1.0 / max(1, searched - number)
        limit = left * share
        if number > last_reported:
            # Tie-breaks below placed work (topology, packing, age) share a small part of the
            # budget: the cycle's time goes to the levels that decide what runs.
            limit = min(limit, TAIL_SHARE * budget / (len(stages) - 1 - last_reported))
        return max(limit, MIN_STAGE_SECONDS)

    stoppers: dict[int, StopAtTargets] = {}

    def stopper(stage: Stage) -> StopAtTargets:
        stoppers[id(stage)] = StopAtTargets(stage, targets, policy.relative_gap, own_bound=not restricted)
        # Only placed work stops at the policy's tolerance (on the decision's gap, in the
        # callback): CP-SAT's own relative gap, of a weighted stage its first level dominates,
        # would stop the fair-share and tie-break stages short of what no reported gap measures.
        solver.parameters.relative_gap_limit = 0.0
        return stoppers[id(stage)]

    def done(number: int, stage: Stage, result: StageResult) -> bool:
        nonlocal optimal
        notes.append(f"{stage.names}: {result.name} in {result.wall_seconds:.2f}s")
        if not result.solved:
            optimal = False
            return False
        if not restricted:  # the LP's bounds (``targets``, recomputed by ``solve``) stand alone
            proven = stage.level_bounds(result.found, result.bound)
            bounds.update({level.name: b for level, b in zip(stage.levels, proven, strict=True)})
        # With ``relative_gap_limit`` CP-SAT says OPTIMAL once the gap is within it: proven only
        # when its bound meets the objective (integers). A stage stopped at bounds proven
        # elsewhere is as proven as one CP-SAT closed itself.
        closed = not restricted and result.status == cp_model.OPTIMAL and result.bound <= result.objective
        optimal = optimal and (closed or (stoppers[id(stage)].reached and stoppers[id(stage)].alone))
        return True

    values, complete = solve_stages(cp, solver, stages, clock, plan=plan, done=done, stopper=stopper)
    optimal = optimal and complete
    spent = clock.spent - spent_before
    if values is None:
        values = held
    if values is None:
        return _Search(None, False, levels, bounds, spent)
    found_assignment = _assignment(problem, v, values)
    found_assignment.domain_counts = domain_counts(values, topo)
    return _Search(found_assignment, optimal, levels, bounds, spent)


def _fix_slots(cp: cp_model.CpModel, v: Variables, hinted: dict[int, int], free_nodes: frozenset[int]) -> None:
    """Fix every slot of a node outside ``free_nodes`` at its hinted value (on the variable's
    domain: a fixed variable costs the search nothing)."""
    variables = cp.proto.variables
    for (_bucket, node), var in v.slot.items():
        if node not in free_nodes:
            value = hinted.get(var.index, 0)
            domain = variables[var.index].domain
            domain.clear()
            domain.extend([value, value])


def _hinted(cp: cp_model.CpModel) -> dict[int, int]:
    """The model's hint as a solution (every variable is hinted before the first stage)."""
    hint = cp.proto.solution_hint
    return dict(zip(hint.vars, hint.values, strict=True))


def _meets(
    problem: Problem, stage: Stage, hint: Assignment, targets: dict[str, int], relative_gap: float
) -> tuple[bool, int] | None:
    """Whether the hint already reaches the stage's bounds: (exactly, the stage's value), or None.

    A reported level's bound is the proven one in ``targets``; any other level's is its upper end,
    which it must reach exactly; a relative gap, where allowed, applies to reported levels only."""
    values = [level.measure(problem, hint) for level in stage.levels]
    reported_gap = 0
    reported_bound = 0
    reached = True
    for level, value in zip(stage.levels, values, strict=True):
        if level.reported:
            if level.name not in targets:
                return None
            bound = targets[level.name]
            reported_gap += max(0, bound - value)
            reported_bound += bound
            reached = reached and value >= bound
        elif value < level.upper:
            return None
    close = relative_gap > 0 and reported_gap <= relative_gap * max(1, reported_bound)
    if not (reached or close):
        return None
    return reached, stage.value(problem, hint)


def _hint(
    cp: cp_model.CpModel,
    problem: Problem,
    v: Variables,
    hint: Assignment,
    buckets: list[Bucket],
    classes: list[list[int]],
    interpod: InterpodVars | None = None,
    spread: SpreadVars | None = None,
) -> dict[int, int]:
    """Hint the model with ``hint``; returns the hinted value per variable index."""
    bucket_of = {s: b.index for b in buckets for s in b.shapes}
    slots: dict[tuple[int, int], int] = {}
    for (s, node), k in hint.shape_slots.items():
        key = (bucket_of[s], node)
        slots[key] = slots.get(key, 0) + k
    slots = order_like_model(slots, {b.index: weight(b, problem.units) for b in buckets}, classes)
    values: dict[int, int] = {}
    for gang, var in v.placed.items():
        values[var.index] = 1 if gang in hint.placed else 0
    for c, var in v.count.items():
        values[var.index] = hint.count.get(c, 0) if problem.classes[c].gang in hint.placed else 0
    for key, var in v.slot.items():
        values[var.index] = slots.get(key, 0)
    if interpod is not None:
        values.update(hint_values(interpod, values))
    if spread is not None:
        values.update(spread_hint_values(spread, values))
    # In bulk on the proto: ``add_hint`` one variable at a time costs seconds at 5,000 nodes.
    hint_proto = cp.proto.solution_hint
    hint_proto.vars.extend(list(values))
    hint_proto.values.extend(list(values.values()))
    return values


def _assignment(problem: Problem, v: Variables, values: dict[int, int]) -> Assignment:
    assignment = Assignment()
    for gang, var in v.placed.items():
        if values[var.index]:
            assignment.placed.add(gang)
    for c, var in v.count.items():
        if values[var.index] and problem.classes[c].gang in assignment.placed:
            assignment.count[c] = values[var.index]
    for key, var in v.slot.items():
        if values[var.index]:
            assignment.bucket_slots[key] = values[var.index]
    return assignment
