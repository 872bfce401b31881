"""Size classes (vcsat.solver.pricing.size_classes): work that fits common nodes keeps off the last
nodes big enough for a kind of pod already seen, and the pods confined to those nodes pay nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_scarcity import placed_on, solve_checked

from tests.builders import node, pod, snapshot
from vcsat.model import Policy, Snapshot
from vcsat.solver import solve
from vcsat.solver.pricing import rarity, scarcity, size_classes
from vcsat.solver.problem import Problem, build_problem

MODEL = "nvidia.com/gpu.product"
SEARCH = Policy(time_limit_s=5.0, num_workers=1)
GREEDY = Policy(search=False)
COMMON = 40
"""8-GPU nodes of 96 cores in every cluster here; the roomy ones (128 cores) are a few of them, more
than the rare share (2%) of the GPU nodes."""


def gpu_node(name: str, model: str, cpu: str, memory: str, gpus: int = 8) -> object:
    return node(name, cpu=cpu, memory=memory, gpus=gpus, labels={MODEL: model})


def roomy(name: str) -> object:
    return gpu_node(name, "G3", cpu="128", memory="768Gi")


def common(name: str) -> object:
    return gpu_node(name, "G2", cpu="96", memory="384Gi")


def big(key: str, **kw: object) -> object:
    """The kind of pod only the roomy nodes take: 8 GPUs, 120 cores, 700 GiB."""
    return pod(key, gpus=8, cpu="120", memory="700Gi", **kw)  # type: ignore[arg-type]


BUSY = 10
"""Common nodes holding an unconfined 8-GPU pod: most demand seen is unconfined, so both pools'
pressures are low and the roomy pool's about 1.3 times the common one's (as traced at full size)."""


def cluster(free_roomy: int, pods: list[object], seen_big: bool = True) -> Snapshot:
    """``free_roomy`` free roomy nodes first (node order alone would take them), then the common
    nodes; one roomy node holds a big pod (the class seen, unless ``seen_big`` is False: then a
    small one), one common node a pod confined to G2 (so the GPU nodes make pools), :data:`BUSY`
    common nodes an unconfined 8-GPU pod."""
    nodes = [
        *(roomy(f"g3-{i}") for i in range(free_roomy)),
        roomy("g3-busy"),
        *(common(f"g2-{i:02d}") for i in range(COMMON)),
        common("g2-busy"),
        *(common(f"g2-run-{i:02d}") for i in range(BUSY)),
    ]
    seen = [
        big("ns/seen-big", node="g3-busy") if seen_big else pod("ns/seen-small", gpus=8, node="g3-busy"),
        pod("ns/seen-g2", gpus=8, affinity=f"{MODEL} in (G2)", node="g2-busy"),
        *(pod(f"ns/run-{i:02d}", gpus=8, node=f"g2-run-{i:02d}") for i in range(BUSY)),
    ]
    return snapshot(nodes=nodes, pods=[*seen, *pods])  # type: ignore[list-item]


@contextmanager
def no_size_classes() -> Iterator[None]:
    """Solve as before this price."""
    with mock.patch.object(scarcity, "size_classes", lambda *args: None):
        yield


def index_of(problem: Problem, name: str) -> int:
    return next(i for i, n in enumerate(problem.nodes) if n.name == name)


def measured(snap: Snapshot) -> tuple[Problem, scarcity.Scarcity]:
    problem = build_problem(snap, GREEDY)
    measure = scarcity.measure(problem)
    assert measure is not None
    return problem, measure


def unit_price(snap: Snapshot, pod_name: str, node_name: str) -> float:
    """The rate (per GPU thousandth) a pending pod pays on a node."""
    problem, measure = measured(snap)
    shape = next(problem.shapes[c.shape] for c in problem.classes if any(p.key == pod_name for p in c.pods))
    return measure.rate(index_of(problem, node_name), shape.eligibility)


SMALL = pod("ns/small", gpus=1, cpu="16", memory="64Gi")
"""An unconfined 1-GPU pod of 16 cores: a smaller share of a roomy node's cores, so the pools'
price alone makes a free roomy node the cheaper one (the case traced at full size)."""


@pytest.mark.parametrize("policy", [SEARCH, GREEDY], ids=["search", "greedy"])
def test_a_small_pod_keeps_off_the_last_roomy_nodes(policy: Policy) -> None:
    for free in (1, 3):
        assert placed_on(solve_checked(cluster(free, [SMALL]), policy))["ns/small"].startswith("g2-")


@pytest.mark.pure_only
def test_without_the_price_the_greedy_takes_a_roomy_node() -> None:
    """The case above fails on the code before this price, in the greedy (and the decode), which
    price the room a pod strands (its share of the node's free cores); the search's level prices a
    pod's own GPU thousandths, where the roomy pool's higher pressure already keeps the pod off."""
    with no_size_classes():
        assert placed_on(solve_checked(cluster(3, [SMALL]), GREEDY))["ns/small"].startswith("g3-")
        assert placed_on(solve_checked(cluster(3, [SMALL]), SEARCH))["ns/small"].startswith("g2-")


@pytest.mark.parametrize("policy", [SEARCH, GREEDY], ids=["search", "greedy"])
def test_the_big_pod_still_goes_to_a_roomy_node(policy: Policy) -> None:
    decision = solve_checked(cluster(2, [big("ns/big"), SMALL]), policy)
    assert placed_on(decision)["ns/big"].startswith("g3-")
    assert placed_on(decision)["ns/small"].startswith("g2-")


# Unit prices: (free roomy nodes, pending pods, pod, node, the class's part of the rate).
PRICES = {
    "the last free roomy node costs a full pool": (1, [SMALL], "ns/small", "g3-0", 1.0),
    "with four free, each costs a quarter": (4, [SMALL], "ns/small", "g3-2", 0.25),
    "a common node costs only its pool's pressure": (2, [SMALL], "ns/small", "g2-00", 0.0),
    "a pod confined to the roomy nodes pays nothing for them": (
        2,
        [pod("ns/g3", gpus=1, affinity=f"{MODEL} in (G3)")],
        "ns/g3",
        "g3-0",
        0.0,
    ),
}


@pytest.mark.pure_only
@pytest.mark.parametrize("case", list(PRICES), ids=list(PRICES))
def test_unit_price(case: str) -> None:
    free, pending, who, where, rate = PRICES[case]
    snap = cluster(free, pending)
    with no_size_classes():
        pressure = unit_price(snap, who, where)
    assert unit_price(snap, who, where) == pytest.approx(pressure + rate * (1 - pressure))


def test_a_roomy_node_in_use_costs_no_more() -> None:
    # 40 cores taken on g3-1: the big pod no longer fits there, g3-0 is the last free for it.
    snap = cluster(2, [pod("ns/there", gpus=1, cpu="40", node="g3-1"), SMALL])
    problem, measure = measured(snap)
    pressure = measure.pressure[measure.pool_of[index_of(problem, "g3-1")]]
    assert unit_price(snap, "ns/small", "g3-0") == pytest.approx(1.0)
    assert unit_price(snap, "ns/small", "g3-1") == pytest.approx(pressure)
    assert measure.sized is not None and measure.sized.tag(index_of(problem, "g3-0")) != measure.sized.tag(
        index_of(problem, "g3-1")
    )  # priced apart, so not interchangeable for symmetry breaking


# When no size class is made: (the cluster, why).
NO_CLASS = {
    "no pod seen is confined by its size": cluster(3, [SMALL], seen_big=False),
    "no pod confined by its node rules: no pools, nothing priced": snapshot(
        nodes=[roomy("g3-0"), roomy("g3-busy"), *(common(f"g2-{i:02d}") for i in range(COMMON))],  # type: ignore[list-item]
        pods=[big("ns/seen", node="g3-busy"), SMALL],  # type: ignore[list-item]
    ),
}


@pytest.mark.parametrize("case", list(NO_CLASS), ids=list(NO_CLASS))
def test_no_class(case: str) -> None:
    measure = scarcity.measure(build_problem(NO_CLASS[case], GREEDY))
    assert measure is None or measure.sized is None


def test_a_pod_missing_only_a_few_nodes_is_not_confined() -> None:
    # 100 cores fit the roomy nodes and half the common ones (48 of them 104-core): more than half
    # of the 8-GPU nodes take it, so it is no size class.
    nodes = [
        *(roomy(f"g3-{i}") for i in range(3)),
        *(gpu_node(f"g2b-{i:02d}", "G2", cpu="104", memory="384Gi") for i in range(48)),
        *(common(f"g2-{i:02d}") for i in range(COMMON)),
        common("g2-busy"),
    ]
    seen = [
        pod("ns/wide", gpus=8, cpu="100", memory="300Gi", node="g3-0"),
        pod("ns/seen-g2", gpus=8, affinity=f"{MODEL} in (G2)", node="g2-busy"),
    ]
    measure = scarcity.measure(build_problem(snapshot(nodes=nodes, pods=[*seen, SMALL]), GREEDY))  # type: ignore[list-item]
    assert measure is not None and measure.sized is None


def test_a_class_of_rare_nodes_only_is_left_to_the_rarity_price() -> None:
    # One roomy node among the GPU nodes (below the rare share): the rarity price keeps it.
    nodes = [roomy("g3-0"), roomy("g3-busy"), *(common(f"g2-{i:03d}") for i in range(120)), common("g2-busy")]
    seen = [big("ns/seen", node="g3-busy"), pod("ns/seen-g2", gpus=8, affinity=f"{MODEL} in (G2)", node="g2-busy")]
    measure = scarcity.measure(build_problem(snapshot(nodes=nodes, pods=[*seen, SMALL]), GREEDY))  # type: ignore[list-item]
    assert measure is not None and measure.sized is None and measure.rare is not None


# --- the measure on arrays ---------------------------------------------------------------------------


def room(
    gpus: list[int], cpu: list[int], free_cpu: list[int], free_gpus: list[int] | None = None
) -> size_classes.NodeRoom:
    count = len(gpus)
    whole = np.array(free_gpus if free_gpus is not None else gpus, dtype=np.int64)
    return size_classes.NodeRoom(
        gpus=np.array(gpus, dtype=np.int64),
        cpu=np.array(cpu, dtype=np.int64),
        memory=np.full(count, 1 << 40, dtype=np.int64),
        free_gpus=whole,
        free_milli=whole * 1000,
        free_cpu=np.array(free_cpu, dtype=np.int64),
        free_memory=None,
        ready=np.ones(count, dtype=np.bool_),
    )


def test_classes_from_sizes() -> None:
    # Nodes: two roomy 8-GPU (128 cores), three 8-GPU of 96 cores, one 4-GPU roomy; node 1 busy.
    r = room([8, 8, 8, 8, 8, 4], [128, 128, 96, 96, 96, 128], [128, 20, 96, 96, 96, 128])
    sizes = [(8, 0, 120, 0), (8, 0, 64, 0), (1, 0, 100, 0), (1, 0, 100, 0)]
    found = size_classes.size_classes(r, sizes, rare_nodes=0)
    assert found is not None
    # 8 GPUs of 120 cores: nodes 0 and 1 (2 of 5 with 8 GPUs), free on node 0 only.
    # 1 GPU of 100 cores: nodes 0, 1 and 5 (3 of 6), free on 0 and 5.
    # 8 GPUs of 64 cores fits every 8-GPU node: no class.
    assert sorted(zip(found.members, found.rate_of, strict=True)) == [(0b000011, 1.0), (0b100011, 0.5)]
    assert found.rate(0, eligible=0b111111) == pytest.approx(rarity.either(1.0, 0.5))
    assert found.rate(5, eligible=0b111111) == 0.5
    assert found.rate(5, eligible=0b100011) == 0.0  # its own work
    assert found.rate(1, eligible=0b111111) == 0.0  # taken: nothing more
    # A class whose nodes are all of rare types is left to the rarity price.
    kept = size_classes.size_classes(r, sizes, rare_nodes=0b000011)
    assert kept is not None and kept.members == (0b100011,)
    assert size_classes.size_classes(r, sizes[:1], rare_nodes=0b000011) is None


@st.composite
def node_rooms(draw: st.DrawFn) -> tuple[size_classes.NodeRoom, list[size_classes.PodSize], int]:
    count = draw(st.integers(1, 12))
    gpus = draw(st.lists(st.sampled_from((0, 1, 4, 8)), min_size=count, max_size=count))
    cpu = draw(st.lists(st.sampled_from((32, 96, 128)), min_size=count, max_size=count))
    free_cpu = [draw(st.integers(0, c)) for c in cpu]
    free_gpus = [draw(st.integers(0, g)) for g in gpus]
    sizes = draw(
        st.lists(st.tuples(st.sampled_from((1, 2, 8)), st.just(0), st.sampled_from((8, 64, 100, 120)), st.just(0)))
    )
    eligible = draw(st.integers(0, (1 << count) - 1))
    return room(gpus, cpu, free_cpu, free_gpus), sizes, eligible


@settings(max_examples=200, deadline=None)
@given(case=node_rooms())
def test_rates_are_shares_and_the_array_is_the_definition(
    case: tuple[size_classes.NodeRoom, list[size_classes.PodSize], int],
) -> None:
    r, sizes, eligible = case
    found = size_classes.size_classes(r, sizes, rare_nodes=0)
    if found is None:
        return
    table = found.rates(eligible)
    for n in range(len(r.gpus)):
        assert table[n] == found.rate(n, eligible)
        assert 0.0 <= table[n] <= 1.0
    for kind, rate in enumerate(found.rate_of):
        free = found.free[kind]
        assert rate == pytest.approx(1.0 / free.sum())
        assert not (free & (r.gpus == 0)).any()  # only GPU nodes
        members = np.array([(found.members[kind] >> n) & 1 for n in range(len(r.gpus))], dtype=np.bool_)
        assert not (free & ~members).any()  # free nodes are the class's nodes


def sized_clusters() -> st.SearchStrategy[Snapshot]:
    @st.composite
    def make(draw: st.DrawFn) -> Snapshot:
        pods = []
        for i in range(draw(st.integers(1, 4))):
            kind = draw(st.sampled_from(("small", "big", "g3", "wide")))
            kw: dict[str, object] = {"created": float(i)}
            if kind == "small":
                pods.append(pod(f"ns/p{i}", gpus=1, cpu=draw(st.sampled_from(("4", "16", "40"))), **kw))  # type: ignore[arg-type]
            elif kind == "big":
                pods.append(big(f"ns/p{i}", **kw))
            elif kind == "g3":
                pods.append(pod(f"ns/p{i}", gpus=2, affinity=f"{MODEL} in (G3)", **kw))  # type: ignore[arg-type]
            else:
                pods.append(pod(f"ns/p{i}", gpus=8, cpu="90", **kw))  # type: ignore[arg-type]
        return cluster(draw(st.integers(1, 3)), pods)

    return make()


@pytest.mark.pure_only
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=sized_clusters())
def test_the_price_never_costs_placed_work(snap: Snapshot) -> None:
    priced = solve_checked(snap, SEARCH)
    with no_size_classes():
        plain = solve(snap, SEARCH)
    if priced.solver.status == "OPTIMAL" and plain.solver.status == "OPTIMAL":
        assert priced.solver.objective == plain.solver.objective


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=sized_clusters())
def test_the_scarcity_rate_counts_the_classes_with_either(snap: Snapshot) -> None:
    problem = build_problem(snap, GREEDY)
    measure = scarcity.measure(problem)
    if measure is None or measure.sized is None:
        return
    without = dataclasses.replace(measure, sized=None, _rates={})
    for shape in problem.shapes:
        gpu = scarcity.shape_milli(problem, shape) > 0
        eligible = measure.index.mask(shape.eligibility) & measure.gpu_nodes
        table = measure.rates(shape.eligibility, gpu)
        for n in range(len(problem.nodes)):
            rate = measure.rate(n, shape.eligibility, gpu)
            assert table[n] == rate
            assert rate == rarity.either(without.rate(n, shape.eligibility, gpu), measure.sized.rate(n, eligible))
