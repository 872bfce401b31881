"""Rule 3's static check (``admission_static.Placeable``) answers exactly as the node-by-node scan
it replaced (``tests/admission_reference.py``): on random clusters with cordoned and NotReady
nodes, taints, selectors, and resources some nodes lack, and on a table of plain cases."""

from __future__ import annotations

import random

from admission_reference import ScanPlaceable
from builders import group, node, pod
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Node, Pod
from vcsat.solver.admission_static import Placeable


def _nodes(rng: random.Random, count: int) -> list[Node]:
    return [
        node(
            f"n{i}",
            cpu=rng.choice(["2", "4", "8"]),
            memory=rng.choice(["4Gi", "16Gi"]),
            gpus=rng.choice([0, 0, 2, 8]),
            labels={"pool": rng.choice(["a", "b"])} if rng.random() < 0.7 else {},
            taints=["dedicated=gpu:NoSchedule"] if rng.random() < 0.2 else [],
            unschedulable=rng.random() < 0.2,
            ready=rng.random() < 0.8,
            extra={"example.com/fpga": "1"} if rng.random() < 0.2 else None,
        )
        for i in range(count)
    ]


def _pods(rng: random.Random, count: int, nodes: list[Node]) -> list[Pod]:
    pods = []
    for i in range(count):
        bound = nodes and rng.random() < 0.1
        pods.append(
            pod(
                f"ns/p{i}",
                cpu=rng.choice(["1", "3", "6", "12"]),
                memory=rng.choice(["1Gi", "8Gi", "32Gi"]),
                gpus=rng.choice([0, 1, 4, 16]),
                gpu_milli=rng.choice([0, 0, 500]),
                selector={"pool": rng.choice(["a", "b", "c"])} if rng.random() < 0.4 else None,
                tolerations=["dedicated=gpu:NoSchedule"] if rng.random() < 0.3 else [],
                extra={"example.com/fpga": "1"} if rng.random() < 0.15 else None,
                node=rng.choice(nodes).name if bound else None,
                task=rng.choice(["a", "b"]),
                group="ns/g",
            )
        )
    return pods


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), nodes=st.integers(0, 12), pods=st.integers(1, 25))
def test_could_ever_answers_as_the_scan(seed: int, nodes: int, pods: int) -> None:
    rng = random.Random(seed)
    cluster = _nodes(rng, nodes)
    candidates = _pods(rng, pods, cluster)
    fast, scan = Placeable(cluster), ScanPlaceable(cluster)
    for p in candidates + candidates:  # asked twice: the remembered answers too
        assert fast.could_ever(p) == scan.could_ever(p), p.key


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    min_member=st.integers(0, 8),
    min_a=st.integers(0, 4),
)
def test_gang_verdict_matches_the_scan_count(seed: int, min_member: int, min_a: int) -> None:
    """The verdict follows the scan's count of pods that could ever run, per group and per task."""
    rng = random.Random(seed)
    cluster = _nodes(rng, rng.randint(1, 8))
    pods = _pods(rng, rng.randint(1, 8), cluster)
    g = group("ns/g", min_member=min_member, min_task_member={"a": min_a} if min_a else None)
    scan = ScanPlaceable(cluster)
    verdict = Placeable(cluster).gang_never_fits(g, pods)
    alive = [p for p in pods if not p.finished]
    of_a = [p for p in alive if p.task == "a"]
    expect_bad = len(alive) >= min_member and (
        sum(map(scan.could_ever, alive)) < min_member
        or (min_a and len(of_a) >= min_a and sum(map(scan.could_ever, of_a)) < min_a)
    )
    assert (verdict is not None) == bool(expect_bad)


CASES = [
    # (what, node, pod, could ever run)
    ("fits", node("n", cpu="4"), pod("ns/p", cpu="2"), True),
    ("too big for the allocatable", node("n", cpu="4"), pod("ns/p", cpu="6"), False),
    ("a NotReady node still counts", node("n", ready=False), pod("ns/p"), True),
    ("a cordoned node still counts", node("n", unschedulable=True), pod("ns/p"), True),
    ("a resource no node has", node("n"), pod("ns/p", extra={"example.com/fpga": "1"}), False),
    ("GPU shares are not room", node("n", gpus=0), pod("ns/p", gpu_milli=500), True),
    ("an untolerated taint", node("n", taints=["k=v:NoSchedule"]), pod("ns/p"), False),
    ("a tolerated taint", node("n", taints=["k=v:NoSchedule"]), pod("ns/p", tolerations=["k=v:NoSchedule"]), True),
    ("a selector no node matches", node("n", labels={"pool": "a"}), pod("ns/p", selector={"pool": "b"}), False),
    ("a bound pod has run", node("n", cpu="1"), pod("ns/p", cpu="6", node="n"), True),
]


def test_table() -> None:
    for what, n, p, expected in CASES:
        assert Placeable([n]).could_ever(p) is expected, what
        assert ScanPlaceable([n]).could_ever(p) is expected, what
