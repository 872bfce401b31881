"""The scheduling cycle as a pure function, and the validator that checks its every decision.

``solve(snapshot, policy) -> Decision`` builds and solves one CP-SAT model; ``check(snapshot,
decision, policy) -> list[Violation]`` verifies the hard rules of contract §3 without reusing any
of the solver's model; ``solve_checked`` does both, the validator partly beside the cycle's last steps
on a second core (:mod:`vcsat.solver.checked`). Imports ``vcsat.model`` and ortools only.
"""

from vcsat.solver.checked import solve_checked
from vcsat.solver.solve import solve
from vcsat.solver.validator.check import Violation, check

__all__ = ["Violation", "check", "solve", "solve_checked"]
