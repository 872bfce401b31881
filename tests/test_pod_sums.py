"""The pods' sums carried across snapshots (``solver/pod_sums.py``, ``solver/ledger.py``): over any
sequence of pod, PodGroup, node and queue changes, with unchanged objects kept as the very same
objects (as the live scheduler's converter keeps them), every snapshot's sums equal a fresh pass
over its pods, key sets included, and its Ready nodes' allocatable a fresh total of them; and so do
the fair shares and admissions built on them."""

from __future__ import annotations

import random
from collections.abc import Iterator

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Node, Pod, PodGroup, Policy, Queue, Snapshot
from vcsat.model import resources as res
from vcsat.model.conformance import protection
from vcsat.solver import admission_commitments, admission_groups, enqueue, pod_sums
from vcsat.solver.enqueue import admit
from vcsat.solver.ledger import Ledger
from vcsat.solver.shares import deserved

POLICY = Policy(time_limit_s=1.0, overcommit_factor=1.0)


@pytest.fixture(autouse=True)
def _carrying() -> Iterator[None]:
    """Sums carried across snapshots, as the live scheduler runs them; off again after."""
    pod_sums.carry()
    yield
    pod_sums.carry(False)


# --- the fresh passes the carried sums must equal ---------------------------------------------


def _fresh_queue_sums(snap: Snapshot) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    closed = {q.name for q in snap.queues if not q.open}
    usage: dict[str, dict[str, int]] = {q.name: {} for q in snap.queues}
    demand: dict[str, dict[str, int]] = {q.name: {} for q in snap.queues}
    for pod in snap.pods:
        if not pod.bound and not pod.pending:
            continue
        queue = snap.queue_of(pod)
        if queue is None or (not pod.bound and queue in closed):
            continue
        targets = [demand.setdefault(queue, {})]
        if pod.bound:
            targets.append(usage.setdefault(queue, {}))
        for vector in targets:
            for name, amount in pod.requests.items():
                vector[name] = vector.get(name, 0) + amount
    return usage, demand


def _fresh_on(snap: Snapshot, nodes: set[str], *, foreign: bool) -> dict[str, int]:
    return res.total(
        p.requests for p in snap.pods if p.bound and p.node_name in nodes and (not foreign or not p.managed)
    )


# --- the ledger: a table of small cases ---------------------------------------------------------

LEDGER_CASES = [
    # (operations, expected sums): ("put", key, bucket, vector) or ("drop", key)
    ([("put", 1, "a", {"cpu": 1})], {"a": {"cpu": 1}}),
    ([("put", 1, "a", {"cpu": 1}), ("put", 2, "a", {"cpu": 2, "gpu": 1})], {"a": {"cpu": 3, "gpu": 1}}),
    ([("put", 1, "a", {"cpu": 1}), ("put", 2, "a", {"gpu": 1}), ("drop", 2)], {"a": {"cpu": 1}}),
    # A resource named with zero stays named, as a fresh total keeps it.
    ([("put", 1, "a", {"cpu": 0})], {"a": {"cpu": 0}}),
    ([("put", 1, "a", {"cpu": 2}), ("put", 2, "a", {"cpu": -2})], {"a": {"cpu": 0}}),
    # An empty vector still makes its bucket present; dropping the last entry removes it.
    ([("put", 1, "a", {})], {"a": {}}),
    ([("put", 1, "a", {"cpu": 1}), ("drop", 1)], {}),
    # Putting a key again moves it (here to another bucket).
    ([("put", 1, "a", {"cpu": 1}), ("put", 1, "b", {"cpu": 5})], {"b": {"cpu": 5}}),
    ([("drop", 9)], {}),
]


UNNAMED_CASES = [
    # Without the count a resource whose entries went stays at zero; the amounts are the same.
    ([("put", 1, "a", {"cpu": 1}), ("put", 2, "a", {"gpu": 1}), ("drop", 2)], {"a": {"cpu": 1, "gpu": 0}}),
    ([("put", 1, "a", {"cpu": 1}), ("put", 1, "a", {"cpu": 3})], {"a": {"cpu": 3}}),
    ([("put", 1, "a", {"cpu": 1}), ("drop", 1)], {}),
]


@pytest.mark.parametrize(
    ("operations", "expected", "named"),
    [(*case, True) for case in LEDGER_CASES] + [(*case, False) for case in UNNAMED_CASES],
)
def test_ledger_cases(operations: list[tuple[object, ...]], expected: dict[str, dict[str, int]], named: bool) -> None:
    ledger: Ledger[int, str] = Ledger(named=named)
    for operation in operations:
        if operation[0] == "put":
            _, key, bucket, vector = operation
            ledger.put(key, bucket, vector)  # type: ignore[arg-type]
        else:
            ledger.drop(operation[1])  # type: ignore[arg-type]
    assert {bucket: dict(total) for bucket, total in ledger.sums.items()} == expected


@settings(max_examples=60, deadline=None)
@given(
    st.booleans(),
    st.lists(
        st.tuples(
            st.integers(0, 6),
            st.sampled_from("abc"),
            st.dictionaries(st.sampled_from(["cpu", "memory", "gpu"]), st.integers(-3, 5), max_size=3),
            st.booleans(),
        ),
        max_size=40,
    ),
)
def test_ledger_equals_a_fresh_total(named: bool, operations: list[tuple[int, str, dict[str, int], bool]]) -> None:
    ledger: Ledger[int, str] = Ledger(named=named)
    entries: dict[int, tuple[str, dict[str, int]]] = {}
    for key, bucket, vector, drop in operations:
        if drop:
            ledger.drop(key)
            entries.pop(key, None)
        else:
            ledger.put(key, bucket, vector)
            entries[key] = (bucket, vector)
        fresh: dict[str, dict[str, int]] = {}
        for bucket_of, vector_of in entries.values():
            fresh[bucket_of] = res.add(fresh.get(bucket_of, {}), vector_of)
        sums = {name: dict(total) for name, total in ledger.sums.items()}
        if named:
            assert sums == fresh
        else:
            assert {k: _nonzero(v) for k, v in sums.items()} == {k: _nonzero(v) for k, v in fresh.items()}
        assert len(ledger) == len(entries)


# --- the pods' sums over changing snapshots ---------------------------------------------------


def _node(rng: random.Random, i: int) -> Node:
    # Resources named by some nodes only (GPUs, an extended resource): a fresh total names them
    # while one Ready node does.
    return b.node(
        f"n{i}",
        cpu=rng.choice(["16", "32"]),
        memory="64Gi",
        gpus=rng.choice([0, 4]),
        ready=rng.random() < 0.8,
        extra={"example.com/fpga": "1"} if rng.random() < 0.2 else None,
    )


def _changed_nodes(rng: random.Random, nodes: dict[str, Node], made: int) -> int:
    """Some nodes replaced (maybe turning NotReady or Ready), some gone, some new; the rest the
    very same objects. How many node names were made so far."""
    for name in list(nodes):
        roll = rng.random()
        if roll < 0.1:
            del nodes[name]
        elif roll < 0.3:
            nodes[name] = _node(rng, int(name[1:]))
    for _ in range(rng.randint(0, 2)):
        nodes[f"n{made}"] = _node(rng, made)
        made += 1
    return made


def _queues(rng: random.Random) -> list[Queue]:
    return [b.queue(name, open=rng.random() < 0.75) for name in ("default", "q", "r")]


def _group(rng: random.Random, key: str) -> PodGroup:
    return b.group(
        key,
        min_member=rng.choice([1, 2]),
        queue=rng.choice(["q", "r", "s"]),
        phase=rng.choice(["", "Inqueue", "Running"]),
    )


def _random_snapshot(rng: random.Random, nodes: list[Node], most_pods: int) -> Snapshot:
    """Up to ``most_pods`` random pods of three PodGroups on these nodes, random queues."""
    return b.snapshot(
        nodes=nodes,
        pods=[_pod(rng, f"ns/p{i}", 3, len(nodes)) for i in range(rng.randint(0, most_pods))],
        groups=[_group(rng, f"ns/g{i}") for i in range(3)],
        queues=_queues(rng),
    )


def _pod(rng: random.Random, key: str, groups: int, nodes: int) -> Pod:
    bound = rng.random() < 0.5
    return b.pod(
        key,
        cpu=str(rng.choice([0, 1, 2])),
        memory=rng.choice(["0", "1Gi"]),
        gpus=rng.choice([0, 0, 1]),
        # A group that may not exist (yet), or none at all.
        group=f"ns/g{rng.randrange(groups + 2)}" if rng.random() < 0.85 else None,
        node=f"n{rng.randrange(nodes)}" if bound and nodes else None,  # every node may be gone
        managed=rng.random() < 0.8,
        phase=rng.choice([None, None, None, "Succeeded"]),
    )


def _nonzero(vector: dict[str, int]) -> dict[str, int]:
    return {name: amount for name, amount in vector.items() if amount}


def _check(snap: Snapshot) -> None:
    assert pod_sums.carrying()
    assert pod_sums.queue_sums(snap) == _fresh_queue_sums(snap)
    # Exactly, key set included: admission and the fair shares go through every resource named.
    assert pod_sums.ready_allocatable(snap) == res.total(node.allocatable for node in snap.nodes if node.ready)
    everything = {node.name for node in snap.nodes}
    ready = {node.name for node in snap.nodes if node.ready}
    for nodes in (everything, ready, set(), {name for name in everything if name not in ready}):
        # Read by resource name: a resource at zero may stay named (an unnamed ledger).
        assert _nonzero(pod_sums.bound_on(snap, nodes)) == _nonzero(_fresh_on(snap, nodes, foreign=False))
        assert _nonzero(pod_sums.foreign_on(snap, nodes)) == _nonzero(_fresh_on(snap, nodes, foreign=True))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), steps=st.integers(1, 8))
def test_carried_sums_equal_a_fresh_pass(seed: int, steps: int) -> None:
    rng = random.Random(seed)
    pod_sums.forget()
    nodes = {f"n{i}": _node(rng, i) for i in range(4)}
    nodes_made = len(nodes)
    queues = _queues(rng)
    groups = {f"ns/g{i}": _group(rng, f"ns/g{i}") for i in range(rng.randint(0, 5))}
    pods = {f"ns/p{i}": _pod(rng, f"ns/p{i}", len(groups), len(nodes)) for i in range(rng.randint(0, 12))}
    made = len(pods)
    for _ in range(steps):
        snap = b.snapshot(nodes=nodes.values(), pods=pods.values(), groups=groups.values(), queues=queues)
        _check(snap)
        _check(snap)  # asked again for the same snapshot
        # The next cluster: unchanged objects stay the same objects; some change, go or come.
        for key in list(pods):
            roll = rng.random()
            if roll < 0.15:
                del pods[key]
            elif roll < 0.35:
                pods[key] = _pod(rng, key, len(groups), len(nodes))
        for _ in range(rng.randint(0, 4)):
            pods[f"ns/p{made}"] = _pod(rng, f"ns/p{made}", len(groups), len(nodes))
            made += 1
        for key in list(groups):
            roll = rng.random()
            if roll < 0.15:
                del groups[key]
            elif roll < 0.35:
                groups[key] = _group(rng, key)  # maybe another queue
        for _ in range(rng.randint(0, 2)):
            key = f"ns/g{rng.randrange(len(groups) + 3)}"
            groups.setdefault(key, _group(rng, key))
        nodes_made = _changed_nodes(rng, nodes, nodes_made)
        if rng.random() < 0.3:
            queues = _queues(rng)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_any_snapshot_may_follow_any_other(seed: int) -> None:
    """Snapshots asked in any order (two schedulers, a replay) still get a fresh pass's sums."""
    rng = random.Random(seed)
    pod_sums.forget()
    made = []
    for _ in range(3):
        nodes = [_node(rng, i) for i in range(3)]
        groups = [_group(rng, f"ns/g{i}") for i in range(3)]
        pods = [_pod(rng, f"ns/p{i}", 3, 3) for i in range(rng.randint(0, 8))]
        made.append(b.snapshot(nodes=nodes, pods=pods, groups=groups, queues=_queues(rng)))
    for index in [rng.randrange(3) for _ in range(8)]:
        _check(made[index])


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 100_000), steps=st.integers(2, 5))
def test_shares_and_admission_equal_a_cold_process(seed: int, steps: int) -> None:
    """What reads the carried sums (the fair shares, the cluster's room, admission) decides as a
    process that sums the snapshot afresh."""
    rng = random.Random(seed)
    pod_sums.forget()
    nodes = {f"n{i}": _node(rng, i) for i in range(4)}
    nodes_made = len(nodes)
    groups = {f"ns/g{i}": _group(rng, f"ns/g{i}") for i in range(4)}
    pods = {f"ns/p{i}": _pod(rng, f"ns/p{i}", 4, 4) for i in range(10)}
    queues = _queues(rng)
    for step in range(steps):
        snap = b.snapshot(nodes=nodes.values(), pods=pods.values(), groups=groups.values(), queues=queues)
        carried = (deserved.compute_fair_shares(snap), deserved.cluster_total(snap), admit(snap, POLICY))
        saved = pod_sums._carried
        pod_sums.carry(False)  # summed afresh: a one-shot solve's path
        admission_groups.forget()
        admission_commitments.forget()
        deserved._SUMS.clear()
        deserved._SHARES.clear()
        cold = (deserved.compute_fair_shares(snap), deserved.cluster_total(snap), admit(snap, POLICY))
        pod_sums.carry()
        assert carried == cold
        pod_sums._carried = saved
        key = rng.choice(list(pods))
        pods[key] = _pod(rng, key, 4, 4)
        pods[f"ns/new{step}"] = _pod(rng, f"ns/new{step}", 4, 4)
        group = rng.choice(list(groups))
        groups[group] = _group(rng, group)
        nodes_made = _changed_nodes(rng, nodes, nodes_made)


def test_a_pod_before_its_podgroup_counts_once_the_group_comes() -> None:
    """A Job controller's pod may show before its PodGroup: it counts for no queue until the group
    arrives, then for the group's queue, and moves with the group's queue, without the pod changing."""
    pod_sums.forget()
    nodes = [b.node("n0")]
    pod = b.pod("ns/p", cpu="2", group="ns/g", node="n0")
    queues = [b.queue("q")]
    held = []
    for groups in ([], [b.group("ns/g", queue="q")], [b.group("ns/g", queue="r")], []):
        snap = b.snapshot(nodes=nodes, pods=[pod], groups=groups, queues=queues)
        usage, demand = pod_sums.queue_sums(snap)
        assert (usage, demand) == _fresh_queue_sums(snap)
        held.append({queue: total.get("cpu") for queue, total in usage.items() if total})
    assert held == [{}, {"q": 2000}, {"r": 2000}, {}]


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_summed_afresh_while_carrying_is_off(seed: int) -> None:
    rng = random.Random(seed)
    pod_sums.carry(False)
    nodes = [_node(rng, i) for i in range(3)]
    snap = _random_snapshot(rng, nodes, most_pods=10)
    assert pod_sums.queue_sums(snap) == _fresh_queue_sums(snap)
    ready = {node.name for node in nodes if node.ready}
    assert pod_sums.bound_on(snap, ready) == _fresh_on(snap, ready, foreign=False)
    assert pod_sums.foreign_on(snap, ready) == _fresh_on(snap, ready, foreign=True)
    assert pod_sums.ready_allocatable(snap) == res.total(node.allocatable for node in nodes if node.ready)
    assert pod_sums._carried.snapshot is None, "nothing is carried"


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 100_000), carrying=st.booleans())
def test_the_ready_room_is_the_three_sums_of_the_ready_nodes(seed: int, carrying: bool) -> None:
    """``ready_room`` (admission's idle room and the shares' total ask for it) is the Ready nodes'
    allocatable, what is bound on them and what other schedulers' pods hold there, whether summed
    afresh (kept for the last snapshot) or carried; each answer is the caller's own dicts."""
    rng = random.Random(seed)
    pod_sums.forget()
    pod_sums.carry(carrying)
    try:
        for _ in range(2):
            nodes = [_node(rng, i) for i in range(4)]
            snap = _random_snapshot(rng, nodes, most_pods=12)
            ready = {node.name for node in nodes if node.ready}
            expected = (
                res.total(node.allocatable for node in nodes if node.ready),
                _nonzero(_fresh_on(snap, ready, foreign=False)),
                _nonzero(_fresh_on(snap, ready, foreign=True)),
            )
            for _ in range(2):  # asked again for the same snapshot
                allocatable, bound, foreign = pod_sums.ready_room(snap)
                assert (allocatable, _nonzero(bound), _nonzero(foreign)) == expected
                allocatable["cpu"] = -1  # the caller's to change: the next answer is unchanged
                bound.clear()
                foreign["cpu"] = -1
    finally:
        pod_sums.carry(False)
        pod_sums.forget()


def _sharing(rng: random.Random, pods: list[Pod]) -> list[Pod]:
    """The pods with their requests dicts shared as the converter shares them (pods of one spec):
    each pod takes the very dict of an earlier pod with equal requests, or one of a few others."""
    kinds: list[dict[str, int]] = []
    out = []
    for pod in pods:
        same = next((kind for kind in kinds if kind == pod.requests), None)
        if same is None and kinds and rng.random() < 0.5:
            same = rng.choice(kinds)  # another spec's requests: the pod asks for them instead
        if same is None:
            kinds.append(pod.requests)
            same = pod.requests
        out.append(pod.model_copy(update={"requests": same}))
    return out


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_pods_sharing_requests_sum_as_one_by_one_keys_in_order(seed: int) -> None:
    """A fresh pass counts the pods of one requests dict together: the sums, and the order their
    queues and resources are first met in, are a pod-by-pod pass's (admission's victims too)."""
    rng = random.Random(seed)
    pod_sums.carry(False)
    pod_sums.forget()
    nodes = [_node(rng, i) for i in range(3)]
    pods = _sharing(rng, [_pod(rng, f"ns/p{i}", 3, 3) for i in range(rng.randint(0, 30))])
    snap = b.snapshot(nodes=nodes, pods=pods, groups=[_group(rng, f"ns/g{i}") for i in range(3)], queues=_queues(rng))

    def ordered(sums: dict[str, dict[str, int]]) -> list[tuple[str, list[tuple[str, int]]]]:
        return [(queue, list(vector.items())) for queue, vector in sums.items()]

    usage, demand = pod_sums.queue_sums(snap)
    want_usage, want_demand = _fresh_queue_sums(snap)
    assert ordered(usage) == ordered(want_usage)
    assert ordered(demand) == ordered(want_demand)
    ready = {node.name for node in nodes if node.ready}
    _, bound, foreign = pod_sums.ready_room(snap)
    assert list(bound.items()) == list(_fresh_on(snap, ready, foreign=False).items())
    assert list(foreign.items()) == list(_fresh_on(snap, ready, foreign=True).items())
    victims = enqueue._State.of(snap, POLICY)._victims()
    by_queue: dict[str, dict[int, dict[str, int]]] = {}
    for pod in snap.pods:
        queue = snap.queue_of(pod)
        if pod.bound and not protection(pod) and queue is not None:
            summed = by_queue.setdefault(queue, {}).setdefault(pod.priority, {})
            for name, amount in pod.requests.items():
                summed[name] = summed.get(name, 0) + amount
    assert [(q, [(p, list(v.items())) for p, v in rows]) for q, rows in victims.by_queue.items()] == [
        (q, [(p, list(v.items())) for p, v in sorted(rows.items())]) for q, rows in by_queue.items()
    ]
