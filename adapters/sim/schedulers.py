"""The schedulers a simulation can run, by name: vcsat itself and the baselines.

vcsat is ``vcsat.solver.solve`` with a Policy whose time limit the caller picks per cycle (the
default, 2 s, is the per-cycle target of the core engine at 1,000 nodes). It runs the actions of
Volcano's default ``volcano-scheduler.conf`` (Helm chart: ``enqueue, allocate, backfill``), the
configuration the ``volcano`` baseline models: no preempt, no reclaim, like every baseline here, so
that a comparison measures placement and ordering, not whether a scheduler may evict. ``vcsat-evict``
is vcsat with its preempt and reclaim phases on (the Policy's defaults): an eviction restarts the
victim's whole job, which the simulator charges in full.

Ablations show what each part of vcsat's own gain comes from: ``vcsat-no-fit`` admits as Volcano's
enqueue does (``Policy.admit_by_fit`` off), ``vcsat-no-timeout`` never sends an admitted group back
to Pending (``Policy.inqueue_timeout_s`` None, as Volcano, which has no such timeout), and
``vcsat-greedy`` runs no CP-SAT search (``Policy.search`` off: its greedy warm start with the LP
bound), so the search's own share is vcsat against ``vcsat-greedy``. Each baseline comes from
:data:`vcsat.solver.baselines.BASELINES`; FGD can be given the workload's task distribution up front,
as the FGD paper gives it the trace's.

vcsat and its variants run here on their deterministic budgets only (``solve(..., wall=False)``):
a simulated cycle's decision must not depend on how busy the machine running the simulation is, or
a benchmark measured on a shared machine would compare the load, not the schedulers; the cycle
columns still report the wall time each decision took.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from vcsat.adapters.errors import InputError
from vcsat.adapters.sim.engine import Scheduler
from vcsat.model import Pod, Policy
from vcsat.solver import solve
from vcsat.solver.baselines import BASELINES, check_policy
from vcsat.solver.baselines.fgd import FGD, typical_tasks

VCSAT = "vcsat"
VCSAT_EVICTING = "vcsat-evict"
ABLATIONS: dict[str, dict[str, object]] = {
    "vcsat-no-fit": {"admit_by_fit": False},
    "vcsat-no-timeout": {"inqueue_timeout_s": None},
    "vcsat-greedy": {"search": False},
}
"""vcsat with one part turned off: the Policy fields each one changes."""
NAMES = (VCSAT, *ABLATIONS, *BASELINES, VCSAT_EVICTING)
DEFAULT_NAMES = (VCSAT, *ABLATIONS, *BASELINES)
"""What ``vcsat bench`` runs unless told otherwise: schedulers under the same actions."""
DEFAULT_TIME_LIMIT_S = 2.0


def proves_bounds(name: str) -> bool:
    """Whether the scheduler called ``name`` reports a proven bound (vcsat and its variants); a
    baseline's decision carries none, so it has no gap."""
    return name == VCSAT or name.startswith(f"{VCSAT}-")


def make_scheduler(
    name: str,
    *,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    workload_pods: Iterable[Pod] | None = None,
    seed: int = 0,
) -> Scheduler:
    """The scheduler called ``name``; ``workload_pods`` tells FGD what the workload looks like."""
    if name in (VCSAT, VCSAT_EVICTING, *ABLATIONS):
        evicting = name == VCSAT_EVICTING
        policy = Policy(time_limit_s=time_limit_s, random_seed=seed, preempt=evicting, reclaim=evicting)
        policy = policy.model_copy(update=ABLATIONS.get(name, {}))
        deterministic = partial(solve, wall=False)
        return Scheduler(name, deterministic, policy, policy, inqueue_timeout_s=policy.inqueue_timeout_s)
    baseline = BASELINES.get(name)
    if baseline is None:
        raise InputError(f"unknown scheduler {name!r} (one of {', '.join(NAMES)})", field="--schedulers")
    policy = Policy(random_seed=seed)
    solve_fn = baseline.solve
    if name == "fgd" and workload_pods is not None:
        solve_fn = FGD(typical_tasks(workload_pods))
    return Scheduler(name, solve_fn, policy, check_policy(baseline, policy))
