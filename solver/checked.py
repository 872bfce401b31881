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
from functools import partial

from vcsat.model import Binding, Decision, Eviction, Nomination, Policy, Snapshot
from vcsat.solver.beside import Beside, ChildCost
from vcsat.solver.solve import solve
from vcsat.solver.validator.check import PlacedCheck, Violation, check_outcomes, check_placements


class Checked:
    """A cycle's decision, and the validator's verdict on it (:meth:`violations`), which a caller
    asks for when it needs it: what it does in between (writing the output out, not yet printed)
    runs beside the validator's child too."""

    def __init__(self, snapshot: Snapshot, policy: Policy, decision: Decision, rules: Beside[PlacedCheck]) -> None:
        self.decision = decision
        self.beside = rules.forked
        """Whether the rules over the placements run (or ran) in a forked child."""
        self.waited = 0.0
        """Wall seconds :meth:`violations` took: the child awaited (or the placements' rules run
        here) and the rest of the rules."""
        self.waited_cpu = 0.0
        """This process's CPU seconds over the same span."""
        self._snapshot, self._policy, self._rules = snapshot, policy, rules
        self._violations: list[Violation] | None = None

    @property
    def child(self) -> ChildCost | None:
        """The child's wall, CPU and peak memory, once its result is read."""
        return self._rules.cost

    def violations(self) -> list[Violation]:
        """What :func:`vcsat.solver.validator.check.check` reports on the decision."""
        if self._violations is None:
            started, cpu = time.perf_counter(), time.process_time()
            self._violations = check_outcomes(self._snapshot, self.decision, self._rules.result(), self._policy)
            self.waited = round(time.perf_counter() - started, 4)
            self.waited_cpu = round(time.process_time() - cpu, 4)
        return self._violations

    def close(self) -> None:
        """Stop the validator's child if its verdict is no longer wanted."""
        self._rules.close()


def solve_checked(
    snapshot: Snapshot,
    policy: Policy,
    *,
    started: float | None = None,
    skip: Collection[str] = (),
    fork: bool | None = None,
) -> Checked:
    """:func:`vcsat.solver.solve.solve`, and :func:`vcsat.solver.validator.check.check` of its
    decision to be asked for (:meth:`Checked.violations`), the placements' rules beside the cycle's
    last steps when ``fork`` (default: :func:`vcsat.solver.beside.may_fork`), else run when asked."""
    side: list[Beside[PlacedCheck]] = []

    def placed(bindings: list[Binding], nominations: list[Nomination], evictions: list[Eviction]) -> None:
        side.append(Beside(partial(check_placements, snapshot, bindings, nominations, evictions, policy), fork=fork))

    try:
        decision = solve(snapshot, policy, started=started, skip=skip, final=placed)
    except BaseException:
        for work in side:
            work.close()
        raise
    rules = side[0] if side else Beside(partial(_placements_of, snapshot, decision, policy), fork=False)
    return Checked(snapshot, policy, decision, rules)


def _placements_of(snapshot: Snapshot, decision: Decision, policy: Policy) -> PlacedCheck:
    return check_placements(snapshot, decision.bindings, decision.nominations, decision.evictions, policy)
