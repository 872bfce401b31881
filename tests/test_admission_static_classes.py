"""Rule 3's static check by allocatable classes (``admission_static``): a (key, request) pair read
on the classes of the nodes passing the key answers as the comparison over every node's column it
replaces, on clusters of a few node types and of more types than the classes are kept for; nodes of
equal allocatable share a class; and pods of one spec (one requests dict, one key object) share one
answer without changing any pod's."""

from __future__ import annotations

import random

from admission_reference import ScanPlaceable
from builders import node, pod
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Node, Pod
from vcsat.solver import admission_static
from vcsat.solver.admission_static import Placeable, without_shares


def _cluster(rng: random.Random, count: int, types: int) -> list[Node]:
    """``count`` nodes of at most ``types`` allocatable kinds (cpu picks the kind), some cordoned,
    NotReady, tainted or labelled, some with a resource the others lack."""
    kinds = [(str(2 + i), rng.choice(["4Gi", "16Gi"]), rng.choice([0, 2, 8])) for i in range(types)]
    nodes = []
    for i in range(count):
        cpu, memory, gpus = rng.choice(kinds)
        nodes.append(
            node(
                f"n{i}",
                cpu=cpu,
                memory=memory,
                gpus=gpus,
                labels={"pool": rng.choice(["a", "b"])} if rng.random() < 0.7 else {},
                taints=["dedicated=gpu:NoSchedule"] if rng.random() < 0.2 else [],
                unschedulable=rng.random() < 0.2,
                ready=rng.random() < 0.8,
                extra={"example.com/fpga": "1"} if rng.random() < 0.2 else None,
            )
        )
    return nodes


def _pods(rng: random.Random, count: int) -> list[Pod]:
    """Pending pods; each spec made once and copied, so copies share its requests dict and key parts
    (as the converter's pods of one spec do)."""
    pods: list[Pod] = []
    for i in range(count):
        if pods and rng.random() < 0.4:
            pods.append(rng.choice(pods).model_copy(update={"name": f"p{i}"}))
            continue
        pods.append(
            pod(
                f"ns/p{i}",
                cpu=rng.choice(["1", "3", "6", "40"]),
                memory=rng.choice(["1Gi", "8Gi", "32Gi"]),
                gpus=rng.choice([0, 1, 4, 16]),
                gpu_milli=rng.choice([0, 0, 500]),
                selector={"pool": rng.choice(["a", "b", "c"])} if rng.random() < 0.4 else None,
                tolerations=["dedicated=gpu:NoSchedule"] if rng.random() < 0.3 else [],
                extra={"example.com/fpga": "1"} if rng.random() < 0.15 else None,
            )
        )
    return pods


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    count=st.integers(0, 50),
    types=st.sampled_from([1, 2, 3, admission_static._MANY_CLASSES + 8]),
    pods=st.integers(1, 30),
)
def test_classes_answer_as_every_node_and_as_the_scan(seed: int, count: int, types: int, pods: int) -> None:
    rng = random.Random(seed)
    cluster = _cluster(rng, count, types)
    candidates = _pods(rng, pods)
    fast, scan = Placeable(cluster), ScanPlaceable(cluster)
    for p in candidates + candidates:  # asked twice: the remembered answers too
        asked = tuple(without_shares(p.requests).items())
        key = fast.keys.of(p)
        assert fast._fits_somewhere(key, asked) == fast._fits_on_columns(key, asked), p.key
        assert fast.could_ever(p) == scan.could_ever(p), p.key


def test_nodes_of_equal_allocatable_share_a_class() -> None:
    nodes = [node("a", cpu="4"), node("b", cpu="8"), node("c", cpu="4"), node("d", cpu="4", gpus=2)]
    names = sorted({name for n in nodes for name in n.allocatable})
    class_of, classes = admission_static._allocatable_classes(nodes, names)
    assert class_of.tolist() == [0, 1, 0, 2]
    assert [dict(zip(names, row, strict=True)) for row in classes] == [
        {name: nodes[0].allocatable.get(name, 0) for name in names},
        {name: nodes[1].allocatable.get(name, 0) for name in names},
        {name: nodes[3].allocatable.get(name, 0) for name in names},
    ]
    empty_of, empty = admission_static._allocatable_classes([], names)
    assert empty_of.tolist() == [] and empty == []


CASES = [
    # (what, nodes, pod, could ever run)
    ("no node", [], pod("ns/p"), False),
    ("the one class holds it", [node("a", cpu="4"), node("b", cpu="4")], pod("ns/p", cpu="4"), True),
    ("only the larger class holds it", [node("a", cpu="4"), node("b", cpu="8")], pod("ns/p", cpu="6"), True),
    ("no class holds it", [node("a", cpu="4"), node("b", cpu="8")], pod("ns/p", cpu="9"), False),
    (
        "the class that holds it fails the key",
        [node("a", cpu="8", labels={"pool": "x"}), node("b", cpu="4", labels={"pool": "y"})],
        pod("ns/p", cpu="6", selector={"pool": "y"}),
        False,
    ),
    (
        "cpu in one class, GPUs in another",
        [node("a", cpu="16"), node("b", cpu="2", gpus=8)],
        pod("ns/p", cpu="8", gpus=1),
        False,
    ),
    ("a resource no node has", [node("a")], pod("ns/p", extra={"example.com/fpga": "1"}), False),
]


def test_table() -> None:
    for what, nodes, p, expected in CASES:
        assert Placeable(nodes).could_ever(p) is expected, what
        assert ScanPlaceable(nodes).could_ever(p) is expected, what


def test_one_requests_dict_under_two_keys() -> None:
    """A copy with the same requests dict but another selector is found under its own key."""
    nodes = [node("a", cpu="8", labels={"pool": "x"}), node("b", cpu="2", labels={"pool": "y"})]
    first = pod("ns/p", cpu="6", selector={"pool": "x"})
    second = first.model_copy(update={"name": "q", "node_selector": {"pool": "y"}})
    assert second.requests is first.requests
    placeable = Placeable(nodes)
    assert placeable.could_ever(first) is True
    assert placeable.could_ever(second) is False
    assert placeable.could_ever(first) is True
