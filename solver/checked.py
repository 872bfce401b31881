"""One cycle and its validation, the validator's main part beside the cycle's last steps.

``vcsat solve`` checks every decision before printing it (contract §3). Most of the validator's
work is its rules over the placements and victims (:func:`vcsat.solver.validator.check.check_placements`),
which need only the bindings, nominations and evictions: those are final before the cycle's last
steps (the fair-share levels' bounds, the explanations of waiting groups), which do not read them.
So the cycle hands them over as soon as they are final (``solve(..., final=...)``) and those
rules run in a forked child beside the last steps (:mod:`vcsat.solver.beside`); the rules over the
PodGroup entries and the solver's figures run here once the decision is whole. Serial (the same
rules, in this process, after the cycle, where :func:`vcsat.solver.validator.check.check` runs
them) on one core, with ``VCSAT_SERIAL`` set, or while other threads run.

The decision is the one :func:`vcsat.solver.solve.solve` makes, and the violations those
:func:`vcsat.solver.validator.check.check` reports on it, whichever way it runs.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass
from functools import partial

from vcsat.model import Binding, Decision, Eviction, Nomination, Policy, Snapshot
from vcsat.solver.beside import Beside, ChildCost
from vcsat.solver.solve import solve
from vcsat.solver.validator.check import PlacedCheck, Violation, check_outcomes, check_placements


@dataclass
class Checked:
    """A cycle's decision, what the validator found wrong with it, and how the validation ran."""

    decision: Decision
    violations: list[Violation]
    beside: bool
    """Whether the rules over the placements ran in a forked child."""
    child: ChildCost | None = None
    """That child's wall, CPU and peak memory."""
    waited: float = 0.0
    """Wall seconds from the cycle's decision to the violations: the child awaited (or the
    placements' rules run here) and the rest of the rules."""
    waited_cpu: float = 0.0
    """This process's CPU seconds over the same span."""


def solve_checked(
    snapshot: Snapshot,
    policy: Policy,
    *,
    started: float | None = None,
    skip: Collection[str] = (),
    fork: bool | None = None,
) -> Checked:
    """:func:`vcsat.solver.solve.solve` then :func:`vcsat.solver.validator.check.check` of its
    decision, the placements' rules beside the cycle's last steps when ``fork`` (default:
    :func:`vcsat.solver.beside.may_fork`)."""
    side: list[Beside[PlacedCheck]] = []

    def placed(bindings: list[Binding], nominations: list[Nomination], evictions: list[Eviction]) -> None:
        side.append(Beside(partial(check_placements, snapshot, bindings, nominations, evictions, policy), fork=fork))

    try:
        decision = solve(snapshot, policy, started=started, skip=skip, final=placed)
        solved, solved_cpu = time.perf_counter(), time.process_time()
        rules = (
            side[0].result()
            if side
            else check_placements(snapshot, decision.bindings, decision.nominations, decision.evictions, policy)
        )
        violations = check_outcomes(snapshot, decision, rules, policy)
    finally:
        for work in side:
            work.close()
    beside = bool(side) and side[0].forked
    return Checked(
        decision,
        violations,
        beside,
        side[0].cost if side else None,
        round(time.perf_counter() - solved, 4),
        round(time.process_time() - solved_cpu, 4),
    )
