"""The callback that stops a placed-work stage of the exact search once it is proven good enough.

Its own module because it subclasses CP-SAT's solution callback at import: the search imports it
when it runs, so a cycle that builds no CP-SAT model (its greedy decision already within the
policy's gap) never loads OR-Tools' CP-SAT Python module, nor pandas, which that module imports.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from vcsat.solver.search.levels import Stage


class StopAtTargets(cp_model.CpSolverSolutionCallback):
    """Stops a placed-work stage once its solution is proven good enough on the reported levels.

    A reported level's bound is the tighter of the one proven elsewhere (the LP of :mod:`bound`,
    ``targets``) and CP-SAT's own, read level by level off the stage's bound
    (:meth:`Stage.level_bounds`; not on a restricted model, whose bound proves nothing). Only a
    stage made of reported levels alone stops (one that also ranks tie-breaks, such as DRF among a
    queue's jobs, must go on): when every reported level reaches its bound, or, with a relative gap
    allowed, when the reported levels' sum is within it of their bounds' sum: the decision's gap
    (:func:`vcsat.model.relative_gap`), not CP-SAT's gap of the weighted stage, in which the first
    level outweighs all the others.
    """

    def __init__(self, stage: Stage, targets: dict[str, int], relative_gap: float, *, own_bound: bool) -> None:
        super().__init__()
        self.stage = stage
        self.targets = [targets.get(level.name) for level in stage.levels]
        self.reported = [i for i, level in enumerate(stage.levels) if level.reported]
        self.active = bool(self.reported) and stage.levels[0].reported
        self.alone = len(self.reported) == len(stage.levels)
        self.own_bound = own_bound
        self.relative_gap = relative_gap
        self.reached = False
        self.solution: list[int] = []
        """The solution at which the search was stopped: CP-SAT's response may come without it."""

    def on_solution_callback(self) -> None:
        if not self.active:
            return
        values = [sum(coef * self.value(var) for var, coef in level.terms) for level in self.stage.levels]
        bounds = list(self.targets)
        if self.own_bound:
            own = self.stage.level_bounds(values, int(self.best_objective_bound // 1))
            bounds = [b if t is None else min(t, b) for t, b in zip(self.targets, own, strict=True)]
        if any(bounds[i] is None for i in self.reported):
            return
        reached = all(values[i] >= (bounds[i] or 0) for i in self.reported)
        total = sum(values[i] for i in self.reported)
        bound = sum(bounds[i] or 0 for i in self.reported)
        self.reached = reached
        close = self.relative_gap > 0 and bound - total <= self.relative_gap * max(1, bound)
        if self.alone and (reached or close):
            self.solution = list(self.response_proto.solution)
            self.stop_search()
