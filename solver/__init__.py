"""The scheduling cycle as a pure function, and the validator that checks its every decision.

``solve(snapshot, policy) -> Decision`` builds and solves one CP-SAT model; ``check(snapshot,
decision, policy) -> list[Violation]`` verifies the hard rules of contract §3 without reusing any
of the solver's model. Imports ``vcsat.model`` and ortools only.
"""

from vcsat.solver.solve import solve
from vcsat.solver.validator.check import Violation, check

__all__ = ["Violation", "check", "solve"]
