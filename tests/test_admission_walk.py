"""Admission's one walk over every PodGroup (``solver/admission_walk.py``): on any cluster it makes
what the separate passes make (which groups are ours, needs, holdings, who reserves, the per-queue
commitments and the reservation, values and key order), the whole admission is the same with and
without it, and it is taken only where those passes would each start afresh."""

from __future__ import annotations

import random
from unittest import mock

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Pod, PodGroup, Policy, Snapshot
from vcsat.solver import admission_commitments, admission_groups, admission_walk, pod_sums
from vcsat.solver.enqueue import DEFAULT_SCHEDULER, _State, admit, group_need, ours_of

POLICY = Policy(time_limit_s=1.0, overcommit_factor=1.2)
NODES = [b.node(f"n{i}", cpu="8", memory="32Gi", gpus=4) for i in range(3)]
QUEUES = [b.queue("q"), b.queue("r", weight=2)]


def _group(rng: random.Random, key: str) -> PodGroup:
    sized = rng.random() < 0.4
    group = b.group(
        key,
        min_member=rng.choice([0, 1, 2, 3]),
        queue=rng.choice(["q", "r", "gone"]),
        min_resources={"cpu": str(rng.choice([1, 2, 5])), "nvidia.com/gpu": rng.choice([0, 1, 4])} if sized else None,
        created=float(rng.randrange(100)),
        phase=rng.choice(["", "Pending", "Inqueue", "Running", "Completed"]),
    )
    # Some groups named for another scheduler (they are ours only through a pod of ours).
    return group.model_copy(update={"scheduler_name": rng.choice([None, "vcsat", "other"])})


def _pod(rng: random.Random, key: str, group: str) -> Pod:
    bound = rng.random() < 0.5
    return b.pod(
        key,
        cpu=str(rng.choice([1, 2, 3])),
        gpus=rng.choice([0, 1, 2]),
        group=group,
        node=rng.choice(NODES).name if bound else None,
        managed=rng.random() < 0.7,
        gates=["wait"] if not bound and rng.random() < 0.1 else (),
        created=float(rng.randrange(100)),
    )


def _cluster(rng: random.Random) -> Snapshot:
    groups = [_group(rng, f"ns/g{i}") for i in range(rng.randint(0, 9))]
    pods = [
        _pod(rng, f"ns/g{i}-{k}", group.key)
        for i, group in enumerate(groups)
        for k in range(rng.choice([0, 1, 1, 2, 3]))
    ]
    return b.snapshot(nodes=NODES, pods=pods, groups=groups, queues=QUEUES)


def _separate(snap: Snapshot) -> tuple[object, ...]:
    """What the separate passes make, each afresh, in the walk's shape."""
    ours = ours_of(snap, POLICY.scheduler_name)
    pods_of = snap.pods_of_group
    need = {g.key: group_need(g, pods_of.get(g.key, ())) for g in snap.podgroups}
    held = {g.key: admission_groups.holdings(pods_of.get(g.key, ())) for g in snap.podgroups}
    state = _State.of(snap, POLICY, ours)
    own, reserved = admission_commitments._fresh(snap.podgroups, need, held, state.reserving)
    reserving = {
        g.key: state._reserving(g) for g in snap.podgroups if g.phase in admission_commitments.RESERVING_PHASES
    }
    mine = [g for g in snap.podgroups if g.key in ours]
    return ours, mine, need, held, own, reserved, reserving


def _walk(snap: Snapshot) -> admission_walk.Walk:
    admission_groups.forget()
    found = admission_walk.walk(snap, POLICY.scheduler_name, DEFAULT_SCHEDULER, group_need)
    assert found is not None
    return found


def _ordered(value: object) -> object:
    """Dicts as lists of items, nested, so that equality also compares key order."""
    if isinstance(value, dict):
        return [(key, _ordered(item)) for key, item in value.items()]
    if isinstance(value, tuple | list):
        return [_ordered(item) for item in value]
    return value


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_the_walk_makes_what_the_separate_passes_make(seed: int) -> None:
    snap = _cluster(random.Random(seed))
    walked = _walk(snap)
    assert _ordered(tuple(walked)) == _ordered(_separate(snap))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), overcommit=st.booleans())
def test_admission_is_the_same_with_and_without_the_walk(seed: int, overcommit: bool) -> None:
    snap = _cluster(random.Random(seed))
    admission_groups.forget()
    walked = admit(snap, POLICY, overcommit=overcommit)
    admission_groups.forget()
    with mock.patch.object(admission_walk, "walk", return_value=None):
        separate = admit(snap, POLICY, overcommit=overcommit)
    assert list(walked.items()) == list(separate.items())


def test_the_walk_leaves_the_group_sums_for_the_next_pass() -> None:
    snap = _cluster(random.Random(7))
    walked = _walk(snap)
    # The next pass over the same snapshot reuses them, as after a pass of admission_groups.
    assert admission_groups.needs_and_holdings(snap, group_need) == (walked.need, walked.held)
    assert admission_groups._last_snapshot is snap


def _twice_keyed() -> Snapshot:
    first, second = b.group("ns/a", queue="q"), b.group("ns/a", queue="r")
    return b.snapshot(nodes=NODES, groups=[first, second], queues=QUEUES)


@pytest.mark.parametrize(
    ("case", "walks"),
    [
        ("fresh", True),
        ("carrying", False),  # the live scheduler: each pass keeps its own carry
        ("two groups of one key", False),  # the separate passes' own rule for it
        ("group sums worth reusing", False),  # admission_groups carries from the last pass
    ],
)
def test_when_the_walk_is_taken(case: str, walks: bool) -> None:
    admission_groups.forget()
    snap = _twice_keyed() if case == "two groups of one key" else _cluster(random.Random(3))
    if case == "group sums worth reusing":
        admission_groups.needs_and_holdings(snap, group_need)
    if case == "carrying":
        pod_sums.carry()
    try:
        found = admission_walk.walk(snap, POLICY.scheduler_name, DEFAULT_SCHEDULER, group_need)
    finally:
        pod_sums.carry(False)
    assert (found is not None) == walks


@pytest.mark.parametrize(
    ("phase", "bound", "managed", "scheduler", "ours", "reserves"),
    [
        # (group phase, pods bound of 2, pods ours, group's scheduler) -> (ours, reserves)
        ("Inqueue", 0, True, None, True, True),
        ("Running", 2, True, None, True, True),
        ("Running", 1, True, None, True, False),  # gang not all bound: holds what it holds
        ("Running", 2, False, "vcsat", False, False),  # another scheduler's pods: load only
        ("", 0, True, None, True, None),  # Pending: not asked whether it reserves
    ],
)
def test_reserving_cases(
    phase: str, bound: int, managed: bool, scheduler: str | None, ours: bool, reserves: bool | None
) -> None:
    group = b.group("ns/g", min_member=2, queue="q", phase=phase).model_copy(update={"scheduler_name": scheduler})
    pods = [
        b.pod(f"ns/g-{i}", cpu="2", group="ns/g", node="n0" if i < bound else None, managed=managed) for i in range(2)
    ]
    walked = _walk(b.snapshot(nodes=NODES, pods=pods, groups=[group], queues=QUEUES))
    assert ("ns/g" in walked.ours) == ours
    assert walked.reserving.get("ns/g") == reserves
    held_cpu = 2000 * bound if managed else 0
    assert walked.held["ns/g"].get("cpu", 0) == held_cpu
    expected = walked.need["ns/g"]["cpu"] - held_cpu if reserves else 0
    assert walked.reserved.get("cpu", 0) == expected
