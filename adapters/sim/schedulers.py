"""The schedulers a simulation can run, by name: vcsat itself and the baselines.

vcsat is ``vcsat.solver.solve`` with a Policy whose time limit the caller picks per cycle (the
default, 2 s, is the per-cycle target of the core engine at 1,000 nodes). Each baseline comes from
:data:`vcsat.solver.baselines.BASELINES`; FGD can be given the workload's task distribution up front,
as the FGD paper gives it the trace's.
"""

from __future__ import annotations

from collections.abc import Iterable

from vcsat.adapters.errors import InputError
from vcsat.adapters.sim.engine import Scheduler
from vcsat.model import Pod, Policy
from vcsat.solver import solve
from vcsat.solver.baselines import BASELINES, check_policy
from vcsat.solver.baselines.fgd import FGD, typical_tasks

VCSAT = "vcsat"
NAMES = (VCSAT, *BASELINES)
DEFAULT_TIME_LIMIT_S = 2.0


def make_scheduler(
    name: str,
    *,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    workload_pods: Iterable[Pod] | None = None,
    seed: int = 0,
) -> Scheduler:
    """The scheduler called ``name``; ``workload_pods`` tells FGD what the workload looks like."""
    if name == VCSAT:
        policy = Policy(time_limit_s=time_limit_s, random_seed=seed)
        return Scheduler(VCSAT, solve, policy, policy)
    baseline = BASELINES.get(name)
    if baseline is None:
        raise InputError(f"unknown scheduler {name!r} (one of {', '.join(NAMES)})", field="--schedulers")
    policy = Policy(random_seed=seed)
    solve_fn = baseline.solve
    if name == "fgd" and workload_pods is not None:
        solve_fn = FGD(typical_tasks(workload_pods))
    return Scheduler(name, solve_fn, policy, check_policy(baseline, policy))
