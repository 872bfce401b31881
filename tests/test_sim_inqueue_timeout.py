"""The simulator gives vcsat's admission its clock: groups carry the simulated time they became
Inqueue, and a cycle runs when an admission times out even if nothing else changed."""

from __future__ import annotations

import pytest

from tests.builders import node
from vcsat.adapters.sim.engine import JobSpec, Scheduler, SimOptions, TaskSpec, Workload, simulate
from vcsat.adapters.sim.schedulers import make_scheduler
from vcsat.model import resources as res

HOST = "kubernetes.io/hostname"


def gpu_job(name: str, arrival: float, gpus: int, *, on: str | None = None) -> JobSpec:
    requests = {res.CPU: 1000, res.MEMORY: 1024 * res.MIB, res.PODS: 1, res.GPU: gpus}
    task = TaskSpec("w", 1, requests, node_selector={HOST: on} if on else {})
    return JobSpec(name=name, tasks=(task,), arrival=arrival, duration=1000.0)


def vcsat_with_timeout(timeout: float | None) -> Scheduler:
    base = make_scheduler("vcsat", time_limit_s=1.0)
    policy = base.policy.model_copy(update={"inqueue_timeout_s": timeout})
    return Scheduler("vcsat", base.solve, policy, policy, inqueue_timeout_s=timeout)


@pytest.mark.parametrize(("timeout", "small_starts"), [(100.0, 110.0), (None, 1000.0)])
def test_a_stalled_admission_times_out_on_the_simulated_clock(timeout: float | None, small_starts: float) -> None:
    # Two 2-GPU nodes, one GPU busy on each until 1000 s. big (2 GPUs, admitted in the cycle at 10 s)
    # fits no node and reserves the cluster's last overcommitted room, so small (1 GPU) waits; nothing
    # else happens until 1000 s. With a 100 s timeout big goes back to Pending in the cycle at 110 s
    # and small is admitted and placed in that same cycle.
    workload = Workload(
        name="stalled",
        nodes=tuple(node(n, cpu="16", memory="64Gi", gpus=2, labels={HOST: n}) for n in ("n1", "n2")),
        jobs=(
            gpu_job("a", 0.0, 1, on="n1"),
            gpu_job("b", 0.0, 1, on="n2"),
            gpu_job("big", 1.0, 2),
            gpu_job("small", 15.0, 1),
        ),
    )
    result = simulate(workload, vcsat_with_timeout(timeout), SimOptions(cycle_period=10.0))
    started = {j.spec.name: j.started for j in result.jobs}
    assert started["a"] == started["b"] == 0.0
    assert started["small"] == small_starts
    assert started["big"] == 1000.0  # a whole node is free only once a ends
    assert result.rejected == 0 and result.errors == 0
