"""FGD's fragmentation measure in vcsat's own decisions: the greedy's choice of node, the decode's
layout and GPU choice for shares, and the share-room cuts that let the exact search work near
saturation. Every decision here is validated (a broken rule fails the test)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import node, pod, snapshot
from vcsat.model import Decision, Pod, Policy, Snapshot
from vcsat.model.gpu_topology import uniform_topology
from vcsat.solver import check, solve
from vcsat.solver.placement.gpu_choice import plan_node
from vcsat.solver.placement.gpu_share import place_shares
from vcsat.solver.pricing import fragmentation
from vcsat.solver.pricing.fragmentation import (
    Fragmentation,
    NodeScore,
    for_problem,
    gpu_lefts,
    gpu_share_workload,
    placement_delta,
    share_gpus,
    task_type,
    typical_tasks,
    workload_of,
)
from vcsat.solver.pricing.pod_tally import Tally
from vcsat.solver.problem import build_problem
from vcsat.solver.rules.predicates import NodeIndex

POLICY = Policy(time_limit_s=5)


def decide(snap: Snapshot) -> Decision:
    decision = solve(snap, POLICY)
    assert check(snap, decision, POLICY) == []
    return decision


def placed(decision: Decision) -> dict[str, tuple[str, list[int]]]:
    return {b.pod: (b.node, b.gpus) for b in decision.bindings}


def history(
    node_name: str, whole: int = 2, shares: Sequence[int] = (300,), cpu: str = "12", memory: str = "1Gi"
) -> list[Pod]:
    """Bound pods that tell vcsat what its workload looks like: 1-GPU pods of ``cpu`` cores and
    ``memory``, and shares."""
    out = [pod(f"hist/w{i}", cpu=cpu, memory=memory, gpus=1, node=node_name, gpu_ids=[i]) for i in range(whole)]
    out += [
        pod(f"hist/s{i}", cpu="1", gpu_milli=milli, node=node_name, gpu_ids=[whole + i])
        for i, milli in enumerate(shares)
    ]
    return out


# --- the workload ---------------------------------------------------------------------------------


def test_workload_is_our_bound_and_pending_pods() -> None:
    snap = snapshot(
        nodes=[node("a", gpus=4)],
        pods=[
            pod("x/bound", gpus=1, node="a", gpu_ids=[0]),
            pod("x/pending", gpu_milli=300),
            pod("x/done", gpus=1, node="a", phase="Succeeded"),
            pod("x/other", gpus=1, managed=False, node="a", gpu_ids=[1]),
            pod("x/cpu-only", cpu="4"),
        ],
    )
    distribution = workload_of(snap)
    # Weighed by GPU demand: the share asks 300 thousandths, the 1-GPU pod 1000; no-GPU pods drop out.
    assert sorted((t.gpu_milli, round(p, 3)) for t, p in distribution) == [(300, 0.231), (1000, 0.769)]
    assert gpu_share_workload(distribution)


def test_a_rare_big_task_weighs_by_the_gpus_it_asks() -> None:
    pods = [pod(f"x/s{i}", gpu_milli=500, node="a", gpu_ids=[i % 8]) for i in range(16)]
    snap = snapshot(nodes=[node("a", gpus=8)], pods=[*pods, pod("x/big", gpus=8)])
    assert sorted((t.gpu_count, round(p, 3)) for t, p in workload_of(snap)) == [(1, 0.5), (8, 0.5)]


def test_vcsat_counts_memory_fgd_counts_cpu_only() -> None:
    pods = [pod("x/a", cpu="4", memory="40Gi", gpus=1), pod("x/b", cpu="4", memory="80Gi", gpus=1)]
    snap = snapshot(nodes=[node("a", gpus=4)], pods=[*pods, pod("x/s", gpu_milli=300)])
    # vcsat's own distribution: the two 1-GPU pods differ by their memory, so they are two types.
    ours = sorted((t.gpu_milli, t.memory) for t, _ in workload_of(snap))
    assert ours == [(300, 2**30), (1000, 40 * 2**30), (1000, 80 * 2**30)]
    # The FGD baseline's distribution, as its paper's, knows cpu only: one 1-GPU type.
    fgds = sorted((t.gpu_milli, t.memory) for t, _ in typical_tasks([*pods, pod("x/s", gpu_milli=300)]))
    assert fgds == [(300, 0), (1000, 0)]


def test_whole_gpu_workloads_keep_best_fit() -> None:
    snap = snapshot(nodes=[node("a", gpus=2)], pods=[pod("x/p", gpus=1)])
    assert not gpu_share_workload(workload_of(snap))
    assert for_problem(build_problem(snap, POLICY)) is None


# --- one pod on one node --------------------------------------------------------------------------


def measure() -> Fragmentation:
    frag = Fragmentation(typical_tasks([pod("x/whole", cpu="12", gpus=1), pod("x/share", gpu_milli=300)]))
    nodes = (node("n", gpus=2),)
    assert frag.access(nodes, NodeIndex(nodes)) == [0]
    return frag


@pytest.mark.parametrize(
    ("lefts", "cpu_before", "cpu_after", "gpus", "share", "expected"),
    [
        # A share on the shared GPU keeps the whole one free: the 1-GPU type loses 300 less, the
        # share type gains the 200 sliver left.
        ([1000, 500], 32000, 31000, 0, 300, 0.5 * -300 + 0.5 * 200),
        # A CPU-only pod leaving 8 cores strands both GPUs for the 12-core 1-GPU type (the 1-core
        # shares still fit).
        ([1000, 1000], 16000, 8000, 0, 0, 0.5 * 2000),
        # The same pod where cpu stays plentiful changes nothing.
        ([1000, 1000], 64000, 56000, 0, 0, 0.0),
        # A whole GPU on a node with one free GPU: nothing left to fragment.
        ([1000], 32000, 20000, 1, 0, 0.0),
        # A whole GPU where none is free does not fit.
        ([500], 32000, 20000, 1, 0, None),
        # A share larger than any room does not fit.
        ([200], 32000, 31000, 0, 300, None),
    ],
)
def test_placement_delta(
    lefts: list[int], cpu_before: int, cpu_after: int, gpus: int, share: int, expected: float | None
) -> None:
    frag = measure()
    # NodeScore, as the solver passes (a plain function would do in pure Python; compiled code
    # checks the declared type).
    delta = placement_delta(NodeScore(frag, 0, cpu_after), lefts, NodeScore(frag, 0, cpu_before), gpus, share)
    assert delta == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize(
    ("memory_left", "expected"),
    [
        (None, 0.0),  # memory not counted: both types fit both GPUs
        (64 * 2**30, 0.0),  # room for the 48 GiB 1-GPU type
        (16 * 2**30, 0.5 * 2000),  # too little memory: the 1-GPU type loses both GPUs, the share type none
        (512 * 2**20, 2000.0),  # not even the 1 GiB share fits
    ],
)
def test_memory_left_strands_gpus(memory_left: int | None, expected: float) -> None:
    pods = [pod("x/whole", cpu="12", memory="48Gi", gpus=1), pod("x/share", memory="1Gi", gpu_milli=300)]
    frag = Fragmentation(tuple((task_type(p, memory=True), 0.5) for p in pods))
    nodes = (node("n", gpus=2),)
    frag.access(nodes, NodeIndex(nodes))
    assert frag.of(0, 32000, [1000, 1000], memory_left) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("whole", "shared", "expected"),
    [(2, [], [1000, 1000]), (1, [300, 900], [1000, 700, 100]), (0, [1000, 400], [600])],
)
def test_gpu_lefts_list_rooms_largest_first(whole: int, shared: list[int], expected: list[int]) -> None:
    assert gpu_lefts(whole, shared) == expected


def test_share_goes_to_the_gpu_that_fragments_least() -> None:
    frag = measure()
    # GPU 0 untouched, GPU 1 with 500 left: the 300 share keeps GPU 0 whole for 1-GPU pods.
    assert share_gpus(lambda rooms: frag.of(0, 32000, rooms), [300], [1000, 500], [1, 0]) == [1]
    assert share_gpus(lambda rooms: frag.of(0, 32000, rooms), [300], [1000, 500], [0, 1]) == [1]


def test_plan_node_falls_back_to_best_fit_when_the_measure_strands_a_share() -> None:
    # A measure that prefers the biggest room first would put the 500 on GPU 0 (900 left) and then
    # find no room for the second 450: best fit places all three.
    def adversarial(rooms: Sequence[int]) -> float:
        return float(max(rooms))

    plan = plan_node(
        uniform_topology(2), [], [], shares=[500, 450, 450], shared={0: 100, 1: 500}, fragmentation=adversarial
    )
    assert plan.shares == tuple(place_shares([500, 450, 450], shared={0: 100, 1: 500}))
    assert None not in plan.shares


# --- whole decisions ------------------------------------------------------------------------------


def test_a_cpu_pod_goes_where_it_strands_no_gpu() -> None:
    # Node a would keep 8 of its 16 cores: too few for the workload's 12-core 1-GPU pods, so both
    # its GPUs would be lost; node b has cores to spare. Best fit alone would take a (listed first).
    snap = snapshot(
        nodes=[
            node("a", cpu="16", memory="64Gi", gpus=2),
            node("b", cpu="64", memory="256Gi", gpus=2),
            node("h", cpu="96", memory="512Gi", gpus=8),
        ],
        pods=[*history("h", whole=4, shares=(300, 300)), pod("x/cpu", cpu="8", memory="8Gi")],
    )
    assert placed(decide(snap))["x/cpu"][0] == "b"


def test_a_pod_goes_where_its_memory_strands_no_gpu() -> None:
    # Both nodes have cores to spare; node a would keep 32 GiB, too little for the workload's 48 GiB
    # 1-GPU pods, so both its GPUs would be lost; node b keeps plenty. A measure that counts cpu
    # only sees no difference and takes a (listed first).
    snap = snapshot(
        nodes=[
            node("a", cpu="64", memory="64Gi", gpus=2),
            node("b", cpu="64", memory="512Gi", gpus=2),
            node("h", cpu="96", memory="512Gi", gpus=8),
        ],
        pods=[*history("h", whole=4, shares=(300, 300), memory="48Gi"), pod("x/cpu", cpu="4", memory="32Gi")],
    )
    assert placed(decide(snap))["x/cpu"][0] == "b"


def test_a_share_joins_a_shared_gpu_rather_than_opening_a_fresh_one() -> None:
    snap = snapshot(
        nodes=[
            node("a", cpu="32", memory="128Gi", gpus=1),
            node("b", cpu="32", memory="128Gi", gpus=1),
            node("h", cpu="96", memory="512Gi", gpus=8),
        ],
        pods=[
            *history("h", whole=2, shares=(300,)),
            pod("x/old", cpu="1", gpu_milli=400, node="b", gpu_ids=[0]),
            pod("x/share", cpu="1", gpu_milli=300),
        ],
    )
    where, gpus = placed(decide(snap))["x/share"]
    assert (where, gpus) in [("b", [0]), ("h", [2])]  # a GPU holding a share, never node a's fresh one


def test_slivers_do_not_count_as_room_for_a_share() -> None:
    # Three GPUs with 200 thousandths left each: 600 in all, yet no 470 share fits on any of them.
    # The exact search must see that (and prove it), not place it and fall back.
    shares = [pod(f"x/s{i}", cpu="1", gpu_milli=800, node="a", gpu_ids=[i]) for i in range(3)]
    snap = snapshot(
        nodes=[node("a", cpu="32", memory="128Gi", gpus=3)],
        pods=[*shares, pod("x/big", cpu="1", gpu_milli=470), pod("x/small", cpu="1", gpu_milli=150, created=1)],
    )
    decision = decide(snap)
    assert decision.solver.status == "OPTIMAL"
    assert list(placed(decision)) == ["x/small"]


@settings(max_examples=60, deadline=None)
@given(
    rooms=st.lists(st.integers(min_value=1, max_value=1000), min_size=1, max_size=6),
    requests=st.lists(st.sampled_from([110, 230, 320, 470, 650, 810]), min_size=1, max_size=8),
)
def test_share_room_cuts_hold_for_every_real_packing(rooms: list[int], requests: list[int]) -> None:
    """Whatever best fit really packs, every cut (shares ≥ m fit only where m is left, left // m of
    them per GPU) counts no more than the rooms hold."""
    shared = {gpu: 1000 - room for gpu, room in enumerate(rooms) if room < 1000}
    free = [gpu for gpu, room in enumerate(rooms) if room == 1000]
    gpus = place_shares(requests, shared=shared, free=free)
    packed = [r for r, gpu in zip(requests, gpus, strict=True) if gpu is not None]
    for size in set(requests):
        assert sum(1 for r in packed if r >= size) <= sum(room // size for room in rooms)


# --- the workload's tally: one contribution per spec ----------------------------------------------


def _plain_tasks(pods: Sequence[Pod]) -> dict[object, int]:
    """The task tally pod by pod, with no memo: what ``_task_of`` must add up to."""
    out: dict[object, int] = {}
    for p in pods:
        if p.managed and (p.bound or p.pending):
            task = task_type(p, memory=True)
            out[task] = out.get(task, 0) + 1
    return out


def _spec_pods(specs: Sequence[Pod], picks: Sequence[tuple[int, int]]) -> list[Pod]:
    """Pods copied from ``specs`` (sharing their requests, selector, affinity and tolerations
    objects, as the converter's pods of one spec do), each bound, pending or finished."""
    out: list[Pod] = []
    for i, (spec, state) in enumerate(picks):
        base = specs[spec % len(specs)]
        update: dict[str, object] = {"name": f"p{i}"}
        if state == 1:
            update |= {"node_name": "a", "phase": "Running"}
        elif state == 2:
            update |= {"node_name": "a", "phase": "Succeeded"}
        out.append(base.model_copy(update=update))
    return out


_SPEC_PODS = [
    pod("x/s", gpu_milli=300, cpu="2"),
    pod("x/w", gpus=1, memory="40Gi"),
    pod("x/z", gpus=2, selector={"zone": "a"}, affinity="model in (h100)", tolerations=["gpu"]),
    pod("x/c", cpu="4"),
    pod("x/o", gpus=1, managed=False),
]
# Another spec with the very requests dict of the second (the converter shares equal requests
# between specs): the selector tells it apart.
_SPEC_PODS.append(_SPEC_PODS[1].model_copy(update={"name": "y", "node_selector": {"zone": "b"}}))


@pytest.mark.parametrize(
    ("picks", "types"),
    [
        ([(0, 0), (0, 1), (0, 0)], 1),  # one spec, pending and bound: one type, one contribution
        ([(0, 0), (1, 0), (2, 1), (3, 0)], 4),
        ([(2, 2), (4, 1)], 0),  # finished, and another scheduler's: nothing
        ([(1, 0), (1, 2), (1, 1)], 1),
        ([(1, 0), (5, 0), (5, 1)], 2),  # one requests dict, two selectors: two types
    ],
)
def test_task_tally_counts_one_contribution_per_spec(picks: list[tuple[int, int]], types: int) -> None:
    pods = _spec_pods(_SPEC_PODS, picks)
    assert Tally(fragmentation._task_of).sums(pods) == _plain_tasks(pods)
    assert len(_plain_tasks(pods)) == types
    counted = [fragmentation._task_of(p) for p in pods if p.managed and (p.bound or p.pending)]
    # Pods of one spec share one contribution object, which is what lets the tally count it once.
    specs = {(id(p.requests), id(p.node_selector)) for p in pods if p.managed and (p.bound or p.pending)}
    assert len({id(c) for c in counted}) == len(specs)


def test_task_tally_tells_apart_specs_spelled_alike() -> None:
    # Equal fields in distinct objects (two specs read apart): equal task types, counted together,
    # each spec its own memo entry.
    first, second = pod("x/a", gpus=1), pod("x/b", gpus=1)
    assert first.requests is not second.requests
    pods = [first, second, first.model_copy(update={"name": "c"})]
    assert Tally(fragmentation._task_of).sums(pods) == _plain_tasks(pods) == {task_type(first, memory=True): 3}
    assert fragmentation._task_of(first) is not fragmentation._task_of(second)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2)), max_size=25))
def test_task_tally_is_the_plain_count(picks: list[tuple[int, int]]) -> None:
    pods = _spec_pods(_SPEC_PODS, picks)
    assert Tally(fragmentation._task_of).sums(pods) == _plain_tasks(pods)
