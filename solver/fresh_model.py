"""A CP-SAT model object that reference counting frees, not the cyclic collector.

OR-Tools' ``CpModel.__init__`` gives every model its pre-PEP 8 method names (``NewBoolVar``,
``AddLinearConstraint``, ...) as instance attributes: closures over the model's own bound methods.
Each model is therefore a reference cycle of about 400 objects, and with it the model's proto (the
whole problem, many megabytes at 10,000 nodes) stays allocated after the search until the cyclic
collector happens to run, or, in a process that freezes its survivors (the live scheduler, see
:mod:`vcsat.adapters.live.gc_tenure`) or whose collector is off (``vcsat solve``), until a full
collection or the exit. The solver uses only the PEP 8 names, so the aliases are dropped at once:
the model then dies when its last reference does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


def new_cp_model() -> cp_model.CpModel:
    """An empty ``CpModel`` without the pre-PEP 8 aliases that make it a reference cycle."""
    from ortools.sat.python import cp_model

    cp = cp_model.CpModel()
    # The aliases are the instance's own attributes, capitalised; every method the solver calls is
    # the class's (snake_case), so nothing reachable through ``cp.<name>`` is lost but the aliases.
    for name in [name for name in vars(cp) if name[:1].isupper()]:
        delattr(cp, name)
    return cp
