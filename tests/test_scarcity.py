"""Scarce GPU pools (vcsat.solver.pricing.scarcity): pods that could run anywhere keep off the GPU model
that other pods can only get there, and the price never costs placed work."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import node, pod, snapshot
from vcsat.model import Decision, Policy, Snapshot
from vcsat.solver import check, solve
from vcsat.solver.pricing import scarcity
from vcsat.solver.problem import build_problem

MODEL = "nvidia.com/gpu.product"
SEARCH = Policy(time_limit_s=5.0, num_workers=1)
GREEDY = Policy(search=False)


def gpu_node(name: str, model: str, gpus: int = 1, cpu: str = "16") -> object:
    return node(name, cpu=cpu, memory="64Gi", gpus=gpus, labels={MODEL: model})


def confined(key: str, models: str, gpus: int = 1, **kw: object) -> object:
    return pod(key, gpus=gpus, affinity=f"{MODEL} in ({models})", **kw)  # type: ignore[arg-type]


@contextmanager
def unpriced() -> Iterator[None]:
    """Solve as if no pool were scarce (the measure turned off)."""
    with mock.patch.object(scarcity, "measure", lambda problem: None):
        yield


def placed_on(decision: Decision) -> dict[str, str]:
    return {b.pod: b.node for b in decision.bindings}


def solve_checked(snap: Snapshot, policy: Policy) -> Decision:
    decision = solve(snap, policy)
    assert check(snap, decision, policy) == []
    return decision


# Each case: nodes (listed so that best fit / node order alone would pick the scarce one first),
# bound pods (the demand seen), pending pods, and where the pod ``ns/free`` must (not) go.
CASES = {
    "an unconfined pod keeps off the T4 that confined pods want": (
        [gpu_node("t4", "T4"), gpu_node("g2", "G2")],
        [confined("ns/seen", "T4", node="t4-busy")],
        [pod("ns/free", gpus=1)],
        "g2",
    ),
    "the confined pod itself takes its model": (
        [gpu_node("g2", "G2"), gpu_node("t4", "T4")],
        [confined("ns/seen", "T4", node="t4-busy")],
        [confined("ns/free", "T4")],
        "t4",
    ),
    "a pod accepting two models takes the one with more slack": (
        [gpu_node("v16", "V100M16"), gpu_node("v32a", "V100M32"), gpu_node("v32b", "V100M32")],
        [confined("ns/a", "V100M16", node="v16-busy"), confined("ns/b", "V100M32", node="v32-busy")],
        [confined("ns/free", "V100M16, V100M32")],
        "v32a",
    ),
    "a GPU share keeps off the scarce model too": (
        [gpu_node("t4", "T4", gpus=2), gpu_node("g2", "G2", gpus=2)],
        [confined("ns/seen", "T4", node="t4-busy"), pod("ns/s0", gpu_milli=300, node="g2-busy")],
        [pod("ns/free", gpu_milli=500)],
        "g2",
    ),
}


def _cluster(nodes: list[object], bound: list[object], pending: list[object]) -> Snapshot:
    # The bound pods' nodes: full nodes of the same models, so the demand seen takes no room here.
    busy = []
    for p in bound:
        name = p.node_name  # type: ignore[attr-defined]
        model = {"t4": "T4", "v16": "V100M16", "v32": "V100M32", "g2": "G2"}[name.split("-")[0]]
        busy.append(gpu_node(name, model, gpus=max(1, p.gpus)))  # type: ignore[attr-defined]
    return snapshot(nodes=[*nodes, *busy], pods=[*bound, *pending])  # type: ignore[list-item]


@pytest.mark.parametrize("policy", [SEARCH, GREEDY], ids=["search", "greedy"])
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_where_the_pod_goes(case: str, policy: Policy) -> None:
    nodes, bound, pending, expected = CASES[case]
    decision = solve_checked(_cluster(nodes, bound, pending), policy)
    assert placed_on(decision)["ns/free"] == expected


@pytest.mark.pure_only
def test_without_confined_pods_nothing_is_priced() -> None:
    snap = snapshot(nodes=[gpu_node("t4", "T4"), gpu_node("g2", "G2")], pods=[pod("ns/free", gpus=1)])
    assert scarcity.measure(build_problem(snap, SEARCH)) is None
    with unpriced():
        before = placed_on(solve(snap, SEARCH))
    assert placed_on(solve(snap, SEARCH)) == before


@pytest.mark.parametrize("policy", [SEARCH, GREEDY], ids=["search", "greedy"])
def test_a_confined_pod_that_only_fits_a_t4_stays_placeable_when_an_unconfined_one_comes_first(
    policy: Policy,
) -> None:
    # Cycle 1: only the unconfined pod is pending; T4 demand was seen before (a bound T4 pod).
    nodes = [gpu_node("t4", "T4"), gpu_node("g2", "G2")]
    seen = confined("ns/seen", "T4", node="t4-busy")
    first = _cluster(nodes, [seen], [pod("ns/early", gpus=1, created=1.0)])
    decision = solve_checked(first, policy)
    where = placed_on(decision)
    assert where == {"ns/early": "g2"}
    # Cycle 2: the T4 pod arrives; its node is still free.
    early = pod("ns/early", gpus=1, node=where["ns/early"], created=1.0)
    second = _cluster(nodes, [seen], [early, confined("ns/late", "T4", created=2.0)])
    assert placed_on(solve_checked(second, policy)) == {"ns/late": "t4"}


@pytest.mark.pure_only
def test_a_cpu_only_pod_strands_fewer_scarce_gpus() -> None:
    # Both nodes are T4 (wanted by confined pods); the CPU-rich one loses less of its GPUs' use
    # to a 4-core pod than the one with 8 cores.
    nodes = [gpu_node("t4-small", "T4", gpus=2, cpu="8"), gpu_node("t4-big", "T4", gpus=2, cpu="64")]
    # The G2 node (unpriced) has no cpu left: the pod goes to a T4 node either way.
    bound = [confined("ns/seen", "T4", node="g2-busy"), pod("ns/any", cpu="15", gpus=1, node="g2-busy")]
    snap = snapshot(
        nodes=[*nodes, gpu_node("g2-busy", "G2", gpus=2)],  # type: ignore[list-item]
        pods=[*bound, pod("ns/free", cpu="4")],  # type: ignore[list-item]
    )
    problem = build_problem(snap, GREEDY)
    measure = scarcity.measure(problem)
    assert measure is not None
    small, big = (problem.nodes.index(next(n for n in problem.nodes if n.name == x)) for x in ("t4-small", "t4-big"))
    free_pod_key = build_problem(snap, GREEDY).shapes[0].eligibility
    cheap = scarcity.price(measure, big, free_pod_key, 0, 2000, (4000, 64000))
    dear = scarcity.price(measure, small, free_pod_key, 0, 2000, (4000, 8000))
    assert 0 < cheap < dear
    assert placed_on(solve_checked(snap, GREEDY))["ns/free"] == "t4-big"


def test_pressure_grows_as_the_pool_fills() -> None:
    def pressure(t4_free: int) -> float:
        nodes = [gpu_node(f"t4-{i}", "T4") for i in range(5)] + [gpu_node(f"g2-{i}", "G2") for i in range(4)]
        bound = [confined(f"ns/t{i}", "T4", node=f"t4-{i}") for i in range(5 - t4_free)]
        pods = [*bound, pod("ns/p", gpus=1), pod("ns/any", gpus=1, node="g2-0")]
        problem = build_problem(snapshot(nodes=nodes, pods=pods), SEARCH)  # type: ignore[arg-type]
        measure = scarcity.measure(problem)
        assert measure is not None
        return measure.pressure[measure.pool_of[4]]

    values = [pressure(free) for free in (4, 3, 2, 1)]
    assert values == sorted(values) and values[0] < values[-1]
    assert all(0 < v <= 1 for v in values)


def test_a_model_no_confined_pod_asked_for_yet_is_a_pool_of_its_own() -> None:
    # Only T4 pods were confined so far: G2 and G3 are told apart by the label T4 pods select on,
    # so the small G3 pool, half taken, is dearer than the roomy G2 one (best fit would pick G3).
    nodes = [gpu_node("g3", "G3", gpus=2), gpu_node("g2", "G2", gpus=8), gpu_node("t4", "T4")]
    bound = [confined("ns/seen", "T4", node="t4"), pod("ns/any", gpus=1, node="g3")]
    snap = snapshot(nodes=nodes, pods=[*bound, pod("ns/free", gpus=1)])  # type: ignore[list-item]
    problem = build_problem(snap, GREEDY)
    measure = scarcity.measure(problem)
    assert measure is not None
    g3, g2, t4 = (
        measure.pool_of[problem.nodes.index(next(n for n in problem.nodes if n.name == x))] for x in ("g3", "g2", "t4")
    )
    assert len({g3, g2, t4}) == 3
    assert measure.pressure[g3] > measure.pressure[g2] > 0
    for policy in (SEARCH, GREEDY):
        assert placed_on(solve_checked(snap, policy))["ns/free"] == "g2"


def test_selected_labels_are_the_keys_pods_select_nodes_by() -> None:
    snap = snapshot(
        nodes=[gpu_node("t4", "T4")],
        pods=[confined("ns/a", "T4"), pod("ns/b", gpus=1, selector={"zone": "a"})],  # type: ignore[list-item]
    )
    problem = build_problem(snap, GREEDY)
    keys = [shape.eligibility for shape in problem.shapes]
    assert scarcity.selected_labels(keys) == (MODEL, "zone")


# --- pods asking no GPU keep off GPU nodes ---------------------------------------------------------


def cpu_node(name: str, cpu: str = "16") -> object:
    return node(name, cpu=cpu, memory="64Gi")


# Each case: nodes (GPU nodes listed first, so node order alone would pick one), pods (``ns/c`` the
# CPU-only pod whose node is asserted), and where it must go.
CPU_CASES = {
    "a CPU pod takes a node without GPUs": (
        [gpu_node("gpu", "G2", gpus=4), cpu_node("cpu")],
        [pod("ns/c", cpu="8")],
        "cpu",
    ),
    "so it does while GPU pods are pending": (
        [gpu_node("gpu", "G2", gpus=4), cpu_node("cpu")],
        [pod("ns/c", cpu="8"), pod("ns/g", cpu="1", gpus=1, created=2.0)],
        "cpu",
    ),
    "and while GPU pods run": (
        [gpu_node("gpu", "G2", gpus=4), gpu_node("gpu2", "G2", gpus=4), cpu_node("cpu")],
        [pod("ns/c", cpu="8"), pod("ns/g", cpu="1", gpus=1, node="gpu2")],
        "cpu",
    ),
    "with confined pods too": (
        [gpu_node("t4", "T4", gpus=2), gpu_node("g2", "G2", gpus=2), cpu_node("cpu")],
        [pod("ns/c", cpu="8"), confined("ns/t", "T4", node="t4")],
        "cpu",
    ),
    "too big for the nodes without GPUs, it strands the fewest GPUs": (
        [gpu_node("small", "G2", gpus=2, cpu="16"), gpu_node("big", "G2", gpus=2, cpu="64"), cpu_node("cpu", "4")],
        [pod("ns/c", cpu="12")],
        "big",
    ),
}


@pytest.mark.parametrize("policy", [SEARCH, GREEDY], ids=["search", "greedy"])
@pytest.mark.parametrize("case", list(CPU_CASES), ids=list(CPU_CASES))
def test_where_a_cpu_pod_goes(case: str, policy: Policy) -> None:
    nodes, pods, expected = CPU_CASES[case]
    snap = snapshot(nodes=nodes, pods=pods)  # type: ignore[arg-type]
    assert placed_on(solve_checked(snap, policy))["ns/c"] == expected


def test_a_cpu_pod_that_may_not_leave_the_gpu_nodes_pays_nothing() -> None:
    # Its node selector accepts GPU nodes only: there is nowhere else to keep it, so no price.
    nodes = [gpu_node("gpu", "G2", gpus=4), cpu_node("cpu")]
    snap = snapshot(nodes=nodes, pods=[pod("ns/c", cpu="8", selector={MODEL: "G2"})])  # type: ignore[list-item]
    problem = build_problem(snap, GREEDY)
    measure = scarcity.measure(problem)
    assert measure is not None and measure.plain
    gpu = problem.nodes.index(next(n for n in problem.nodes if n.name == "gpu"))
    assert measure.rate(gpu, problem.shapes[0].eligibility, gpu=False) == 0
    assert measure.rate(gpu, problem.shapes[0].eligibility, gpu=True) == 0


def test_gpu_nodes_only_price_nothing() -> None:
    snap = snapshot(nodes=[gpu_node("a", "G2"), gpu_node("b", "G2")], pods=[pod("ns/c", cpu="8")])  # type: ignore[list-item]
    assert scarcity.measure(build_problem(snap, SEARCH)) is None


# --- the price never costs placed work -------------------------------------------------------------

MODELS = ("T4", "G2", "P100")


@st.composite
def clusters(draw: st.DrawFn) -> Snapshot:
    nodes = []
    for i in range(draw(st.integers(2, 5))):
        model = draw(st.sampled_from(MODELS))
        nodes.append(
            gpu_node(f"n{i}", model, gpus=draw(st.sampled_from((1, 2, 4))), cpu=str(draw(st.sampled_from((4, 16)))))
        )
    for i in range(draw(st.integers(0, 2))):  # nodes without GPUs: CPU-only pods are priced off GPU nodes
        nodes.append(cpu_node(f"c{i}", cpu=str(draw(st.sampled_from((2, 4))))))
    pods = []
    for i in range(draw(st.integers(1, 8))):
        gpus = draw(st.sampled_from((0, 1, 1, 2)))
        cpu = str(draw(st.sampled_from((1, 2, 4))))
        models = draw(st.sets(st.sampled_from(MODELS), max_size=2))
        created = float(i)
        if models:
            pods.append(confined(f"ns/p{i}", ", ".join(sorted(models)), gpus=max(1, gpus), cpu=cpu, created=created))
        else:
            pods.append(pod(f"ns/p{i}", cpu=cpu, gpus=gpus, created=created))
    return snapshot(nodes=nodes, pods=pods)  # type: ignore[list-item]


@pytest.mark.pure_only
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=clusters())
def test_the_price_never_costs_placed_work(snap: Snapshot) -> None:
    priced = solve_checked(snap, SEARCH)
    with unpriced():
        plain = solve(snap, SEARCH)
    if priced.solver.status == "OPTIMAL" and plain.solver.status == "OPTIMAL":
        # Placed work is counted in dominant shares, not pods: two decisions of equal work may
        # bind different numbers of pods (one 2-CPU pod where the other binds two 1-CPU pods).
        assert priced.solver.objective == plain.solver.objective


@pytest.mark.pure_only
def test_equal_work_may_bind_a_different_number_of_pods() -> None:
    """The case Hypothesis found: both decisions fill every CPU, with six pods or with seven."""
    nodes = [gpu_node("n0", "T4", cpu="4"), gpu_node("n1", "T4", cpu="4"), gpu_node("n2", "G2", cpu="4")]
    cpus = ("1", "1", "2", "2", None, "2", "1", "1")
    pods = [
        confined(f"ns/p{i}", "T4", cpu="4", created=float(i))
        if cpu is None
        else pod(f"ns/p{i}", cpu=cpu, created=float(i))
        for i, cpu in enumerate(cpus)
    ]
    snap = snapshot(nodes=nodes, pods=pods)  # type: ignore[list-item]
    priced = solve_checked(snap, SEARCH)
    with unpriced():
        plain = solve(snap, SEARCH)
    assert priced.solver.status == plain.solver.status == "OPTIMAL"
    assert priced.solver.objective == plain.solver.objective
    assert placed_on(priced)["ns/p4"] in {"n0", "n1"}


def test_a_small_model_keeps_its_last_pods_worth_of_room() -> None:
    # Everything in proportion to the models' sizes (G2 32 GPUs, G3 4): GPUs free (16 and 2),
    # confined demand seen (8 and 1) and unconfined work bound (8 and 1), so the expected need over
    # free room is the same in both pools. G3's two free GPUs are only two pods' worth against G2's
    # sixteen: one pod more than expected already finds no G3 room, so its margin is the larger
    # one. Best fit alone would take G3's room.
    nodes = [
        gpu_node("g3", "G3", gpus=2),
        gpu_node("g2a", "G2", gpus=8),
        gpu_node("g2b", "G2", gpus=8),
        gpu_node("g2-busy", "G2", gpus=16),
        gpu_node("g3-busy", "G3", gpus=2),
    ]
    bound = [confined(f"ns/g2-{i}", "G2", node="g2-busy") for i in range(8)] + [confined("ns/g3", "G3", node="g3-busy")]
    bound += [pod(f"ns/any-{i}", gpus=1, node="g2-busy") for i in range(8)] + [pod("ns/any", gpus=1, node="g3-busy")]
    snap = snapshot(nodes=nodes, pods=[*bound, pod("ns/free", gpus=1)])  # type: ignore[list-item]
    problem = build_problem(snap, GREEDY)
    measure = scarcity.measure(problem)
    assert measure is not None
    names = [n.name for n in problem.nodes]
    g3, g2 = (measure.pool_of[names.index(x)] for x in ("g3", "g2a"))
    assert 1 > measure.pressure[g3] > measure.pressure[g2] > 0
    for policy in (SEARCH, GREEDY):
        assert placed_on(solve_checked(snap, policy))["ns/free"] == "g2a"


@pytest.mark.pure_only
def test_a_models_big_nodes_are_kept_for_its_pods_that_need_them_whole() -> None:
    # T4 nodes of two sizes: pods asking four T4s fit only the 4-GPU ones, pods asking one fit both.
    # The big nodes are then a pool of their own, dear with the 4-GPU demand seen, so a 1-GPU T4 pod
    # takes the small node; without the price, best fit ties (two GPUs free on each) and node order
    # sends it to the big one, where the next 4-GPU T4 pod would no longer fit.
    nodes = [
        gpu_node("t4-big", "T4", gpus=4),
        gpu_node("t4-small", "T4", gpus=2),
        gpu_node("t4-busy", "T4", gpus=4),
        gpu_node("g2", "G2", gpus=8),
    ]
    bound = [
        confined("ns/held", "T4", gpus=2, node="t4-big"),
        confined("ns/four", "T4", gpus=4, node="t4-busy"),
        pod("ns/any", gpus=4, node="g2"),
    ]
    snap = snapshot(nodes=nodes, pods=[*bound, confined("ns/one", "T4")])  # type: ignore[list-item]
    problem = build_problem(snap, GREEDY)
    measure = scarcity.measure(problem)
    assert measure is not None
    names = [n.name for n in problem.nodes]
    big, small, busy = (measure.pool_of[names.index(x)] for x in ("t4-big", "t4-small", "t4-busy"))
    assert big == busy != small
    assert measure.pressure[big] > measure.pressure[small]
    for policy in (SEARCH, GREEDY):
        assert placed_on(solve_checked(snap, policy))["ns/one"] == "t4-small"
        with unpriced():
            assert placed_on(solve(snap, policy))["ns/one"] == "t4-big"


def test_a_size_alone_makes_no_pool() -> None:
    # Pods asking eight GPUs fit only the 8-GPU nodes, but ask for no kind of node: nothing is priced.
    nodes = [gpu_node("small", "G2", gpus=2), gpu_node("big", "G2", gpus=8)]
    pods = [pod("ns/eight", gpus=8, node="big"), pod("ns/one", gpus=1)]
    problem = build_problem(snapshot(nodes=nodes, pods=pods), GREEDY)  # type: ignore[arg-type]
    assert scarcity.measure(problem) is None
