"""Greedy schedulers to compare vcsat with, each a faithful re-implementation of the one it names.

Every baseline is a pure function with the solver's interface, ``(snapshot, policy) -> Decision``,
whose decisions pass :func:`vcsat.solver.validator.check` (the default-Kubernetes one with ``gang`` off, as
it keeps no gangs). Each module's docstring says what it re-implements, from which source, and
where it differs. :data:`BASELINES` names them for the simulator and ``vcsat bench``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vcsat.model import Decision, Policy, Snapshot
from vcsat.solver.baselines import bestfit, fgd, firstfit, kube_default, volcano

SolveFn = Callable[[Snapshot, Policy], Decision]


@dataclass(frozen=True)
class Baseline:
    name: str
    solve: SolveFn
    gang: bool
    """Whether its decisions keep gangs; validate with ``policy.gang`` set to this."""
    summary: str


BASELINES: dict[str, Baseline] = {
    b.name: b
    for b in (
        Baseline(volcano.NAME, volcano.solve, True, "Volcano allocate, default conf (drf, binpack)"),
        Baseline(volcano.GPU_NAME, volcano.solve_gpu, True, "Volcano allocate, binpack weighting nvidia.com/gpu"),
        Baseline(kube_default.NAME, kube_default.solve, False, "default kube-scheduler: pod by pod, spread"),
        Baseline(bestfit.NAME, bestfit.solve, True, "best fit on cpu and GPU, FIFO, gangs whole"),
        Baseline(firstfit.NAME, firstfit.solve, True, "first fit in node order, FIFO, gangs whole"),
        Baseline(fgd.NAME, fgd.solve, True, "fragmentation gradient descent (ATC'23), FIFO, gangs whole"),
    )
}


def check_policy(baseline: Baseline, policy: Policy) -> Policy:
    """The policy a baseline's decision is validated under."""
    return policy.model_copy(update={"gang": policy.gang and baseline.gang})


__all__ = ["BASELINES", "Baseline", "SolveFn", "check_policy"]
