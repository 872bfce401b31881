"""The staged CP-SAT search both exact models run: solve each stage in turn, keep what it won.

A lexicographic objective is solved stage by stage (:mod:`vcsat.solver.search.levels`): maximise the
stage, then hold it at what was found so that later stages cannot give it back, hint the next
stage with the whole solution, go on. The allocate search (:mod:`exact`) and the preempt/reclaim
models (:mod:`preempt`) differ only in how they split their time between stages and what they do
between two stages; the loop itself, the solver's parameters and the clocks are here.

Two clocks bound every solve:

- the **deterministic** budget: each stage gets a share of what the phase has left, counted in
  CP-SAT's deterministic seconds, never read off the wall clock, so that the same input gives the
  same decision whatever the machine's load, and a replay of a dumped cycle decides the same;
- the **wall deadline** of the whole cycle, the outer stop: CP-SAT's ``max_time_in_seconds`` is
  at most what is left until it. On an idle machine the deterministic limits end every solve
  first; on a loaded one the deadline may, and then the run says so (:attr:`SearchClock.wall_stopped`)
  because its decision may differ from a replay's.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vcsat.model import Policy
from vcsat.solver.search.levels import Stage

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

WALL_SLACK_SECONDS = 1.0
"""A solve's wall limit is twice its deterministic one plus this (when the deadline is further):
a safety net loose enough that an idle machine never reaches it first."""
MIN_WALL_SECONDS = 0.01
"""Below this much wall time left no solve starts: it would be stopped before its first solution."""
WALL_STOP = True
"""Whether a cycle's searches stop at its wall deadline when the caller does not say
(``solve(..., wall=None)``). The unit tests turn it off (tests/conftest.py): they assert what a
decision is, and on a machine busy with other work a wall stop would make it depend on the load."""
MAX_AUTO_WORKERS = 8
"""With ``Policy.num_workers`` unset, the search uses the cores this process may run on less one,
at most this."""


def workers_for(policy: Policy) -> int:
    """CP-SAT workers: the policy's, or (unset) the cores this process may run on less one, at
    least one and at most :data:`MAX_AUTO_WORKERS`.

    One core is left to the rest of the cycle and of the process (the live scheduler's applier,
    informers and conversion run beside the search): on two cores a second worker only competes
    with them, and interleaved workers have a fixed cost per solve that small models feel most
    (benchmarks/RESULTS.md, session 10: on 2 cores one worker decided as well or better, in less
    wall time, on every instance measured)."""
    if policy.num_workers is not None:
        return policy.num_workers
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_AUTO_WORKERS, cores - 1))


@dataclass
class SearchClock:
    """The two clocks of one cycle's searches, and what they did."""

    deadline: float | None = None
    """``time.monotonic()`` at which every search must have stopped; None: no wall stop but the
    safety net."""
    spent: float = 0.0
    """Deterministic seconds CP-SAT used, over every solve of the cycle."""
    wall_stopped: bool = False
    """Some solve ended on the wall clock (or was not started for want of it) before its
    deterministic limit: the decision may differ from a replay's."""
    workers: int = 1
    wall: bool = True
    """False: no wall limit at all, not even the safety net; the deterministic budgets alone stop
    the search (benchmarks measuring what a budget buys on a machine busy with other work)."""

    def left(self) -> float | None:
        """Wall seconds until the deadline (None without one)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def wall_limit(self, deterministic: float) -> float:
        """The wall limit of a solve given ``deterministic`` seconds: the safety net, or what is
        left until the deadline when that is less."""
        if not self.wall:
            return math.inf
        net = 2 * deterministic + WALL_SLACK_SECONDS
        left = self.left()
        return net if left is None else max(0.0, min(net, left))

    def out_of_time(self) -> bool:
        """The deadline is (all but) reached: no further solve starts, and the run says so."""
        left = self.left()
        if self.wall and left is not None and left < MIN_WALL_SECONDS:
            self.wall_stopped = True
            return True
        return False


def new_solver(policy: Policy, clock: SearchClock, *, lean_presolve: bool = False) -> cp_model.CpSolver:
    """A CP-SAT solver with the policy's seed and the clock's workers. Several workers are
    interleaved (``interleave_search``): CP-SAT then schedules their work in a fixed order, which
    with deterministic limits keeps the same input giving the same decision for a given number
    of workers. ``lean_presolve``: one presolve pass and no probing, for models already
    aggregated and symmetry-broken by construction (every fraction of a second presolve spends
    is taken from the search)."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = clock.workers
    solver.parameters.random_seed = policy.random_seed
    solver.parameters.interleave_search = clock.workers > 1
    if lean_presolve:
        solver.parameters.cp_model_presolve = False
        solver.parameters.max_presolve_iterations = 1
        solver.parameters.cp_model_probing_level = 0
        solver.parameters.symmetry_level = 0
    return solver


@dataclass
class StageResult:
    """How one stage's solve ended."""

    status: cp_model.CpSolverStatus
    objective: int = 0
    bound: int = 0
    """CP-SAT's proven upper bound on the stage's expression (floored)."""
    found: list[int] = field(default_factory=list)
    """Each level's value in the solution, in the stage's order."""
    values: dict[int, int] = field(default_factory=dict)
    """The whole solution, per variable index."""
    wall_seconds: float = 0.0

    @property
    def name(self) -> str:
        return self.status.name

    @property
    def solved(self) -> bool:
        from ortools.sat.python import cp_model

        return self.status in (cp_model.OPTIMAL, cp_model.FEASIBLE)


Plan = Callable[[int, Stage], float | None]
"""Per stage number and stage: its deterministic limit, or None to skip it (the plan says why)."""
Stopper = Callable[[Stage], "cp_model.CpSolverSolutionCallback | None"]
Done = Callable[[int, Stage, StageResult], bool]
"""Told each solved stage's result (before the next is planned); False ends the run."""


def solve_stages(
    cp: cp_model.CpModel,
    solver: cp_model.CpSolver,
    stages: Sequence[Stage],
    clock: SearchClock,
    *,
    plan: Plan,
    done: Done | None = None,
    stopper: Stopper | None = None,
) -> tuple[dict[int, int] | None, bool]:
    """Solve ``stages`` in order on ``cp`` (already hinted): per stage, ``plan`` gives its
    deterministic limit (or skips it), the solve runs within it and the clock's deadline, the stage
    is held at what it found and the next one is hinted with the whole solution.

    Returns the last solution (None if no stage found one) and whether every stage ran to its
    end (a stage that found nothing, or the deadline, ends the run early)."""
    from ortools.sat.python import cp_model

    values: dict[int, int] | None = None
    for number, stage in enumerate(stages):
        limit = plan(number, stage)
        if limit is None:
            continue
        if clock.out_of_time():
            return values, False
        solver.parameters.max_deterministic_time = limit
        wall = clock.wall_limit(limit)
        solver.parameters.max_time_in_seconds = wall
        cp.maximize(stage.expression())
        callback = stopper(stage) if stopper is not None else None
        status = solver.solve(cp, callback) if callback is not None else solver.solve(cp)
        used = solver.response_proto.deterministic_time
        clock.spent += used
        unfinished = status not in (cp_model.OPTIMAL, cp_model.INFEASIBLE)
        if unfinished and used < limit * 0.99 and solver.wall_time >= wall * 0.99:
            clock.wall_stopped = True  # the wall limit, not the deterministic one, ended it
        result = StageResult(status=status, wall_seconds=solver.wall_time)
        if result.solved:
            # A search stopped from a solution callback may end without the solution in its
            # response: the callback then keeps it (``solution``).
            solution = solver.response_proto.solution or getattr(callback, "solution", [])
            result.values = dict(enumerate(solution))
            result.objective = round(solver.objective_value)
            result.bound = int(solver.best_objective_bound // 1)
            result.found = [sum(coef * result.values[var.index] for var, coef in level.terms) for level in stage.levels]
            values = result.values
            # Later stages may not give back what this one won, and start from its solution whole.
            cp.add(stage.expression() >= result.objective)
            rehint(cp, result.values)
        if done is not None and not done(number, stage, result):
            return values, False
        if not result.solved:
            return values, False
    return values, True


def rehint(cp: cp_model.CpModel, values: dict[int, int]) -> None:
    """Hint every variable with a solution, so the next stage starts from it whole."""
    cp.clear_hints()  # type: ignore[no-untyped-call]
    hint = cp.proto.solution_hint
    hint.vars.extend(list(values))
    hint.values.extend(list(values.values()))
