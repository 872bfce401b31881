"""The scarcity level's per-node cost table (vcsat.solver.objectives.scarcity.costs) holds the
same numbers as its per-node definition (``cost``), for pods asking GPUs, shares and none, on
clusters with and without nodes that have no GPUs (where CPU-only pods are priced by the room they
strand), and after a bound pod took part of a node."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import node, pod, snapshot
from tests.test_scarcity import MODELS, clusters, confined, cpu_node, gpu_node
from vcsat.model import Policy, Snapshot
from vcsat.solver.objectives.scarcity import cost, costs
from vcsat.solver.pricing import scarcity
from vcsat.solver.problem import build_problem


def assert_table_matches(snap: Snapshot) -> int:
    problem = build_problem(snap, Policy(search=False))
    scarce = scarcity.for_problem(problem)
    if scarce is None:
        return 0
    for shape in problem.shapes:
        table = costs(problem, scarce, shape)
        assert table.shape == (len(problem.nodes),)
        assert [int(x) for x in table] == [cost(problem, scarce, shape, n) for n in range(len(problem.nodes))]
    return sum(int(costs(problem, scarce, shape).sum()) for shape in problem.shapes)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=clusters())
def test_the_table_is_the_definition(snap: Snapshot) -> None:
    assert_table_matches(snap)


CASES = {
    "CPU pods strand GPU room on GPU nodes": snapshot(
        nodes=[gpu_node("g", "G2", gpus=4, cpu="16"), gpu_node("h", "G2", gpus=2, cpu="3"), cpu_node("c")],  # type: ignore[list-item]
        pods=[pod("ns/a", cpu="5"), pod("ns/b", cpu="2", memory="80Gi"), pod("ns/run", cpu="2", node="h")],
    ),
    "confined GPU pods price the others": snapshot(
        nodes=[gpu_node("t4", "T4", gpus=2), gpu_node("g2", "G2", gpus=8), cpu_node("c")],  # type: ignore[list-item]
        pods=[confined("ns/t", "T4", gpus=1), pod("ns/u", gpus=2), pod("ns/s", cpu="1", gpu_milli=300)],
    ),
}


def test_priced_cases_match_and_price_something() -> None:
    for name, snap in CASES.items():
        assert assert_table_matches(snap) > 0, name


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cpu=st.sampled_from(("1", "3", "7", "15")), model=st.sampled_from(MODELS))
def test_cpu_pods_of_any_size(cpu: str, model: str) -> None:
    snap = snapshot(
        nodes=[gpu_node("g", model, gpus=4, cpu="8"), node("c", cpu="2", memory="8Gi")],  # type: ignore[list-item]
        pods=[pod("ns/a", cpu=cpu)],
    )
    assert_table_matches(snap)
