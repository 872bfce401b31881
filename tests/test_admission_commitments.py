"""Admission's per-queue commitments and the cluster's reservation carried across passes
(``solver/admission_commitments.py``): over any sequence of PodGroup and pod changes, with unchanged
objects kept as the very same objects, the carried sums equal a fresh pass group by group, and the
whole admission equals that of a process that sees the snapshot first."""

from __future__ import annotations

import random
from collections.abc import Iterator

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_admission_groups import _group

from vcsat.model import Pod, Policy, Snapshot
from vcsat.solver import admission_commitments, admission_groups, pod_sums
from vcsat.solver.enqueue import _State, admit, is_ours
from vcsat.solver.shares import deserved

POLICY = Policy(time_limit_s=1.0, overcommit_factor=1.2)
NODES = [b.node(f"n{i}", cpu="8", memory="32Gi", gpus=4) for i in range(3)]
QUEUES = [b.queue("q"), b.queue("r", weight=2)]


@pytest.fixture(autouse=True)
def _carrying() -> Iterator[None]:
    """Sums carried across snapshots, as the live scheduler runs them; off again after."""
    pod_sums.carry()
    yield
    pod_sums.carry(False)


def _pod(rng: random.Random, key: str, group: str) -> Pod:
    bound = rng.random() < 0.5
    return b.pod(
        key,
        cpu=str(rng.choice([1, 2, 3])),
        gpus=rng.choice([0, 1, 2]),
        group=group,
        node=rng.choice(NODES).name if bound else None,
        managed=rng.random() < 0.85,
        created=float(rng.randrange(100)),
    )


def _parts(snap: Snapshot) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """The carried commitments, and (checked equal) a fresh pass's over the same state."""
    ours = {g.key for g in snap.podgroups if is_ours(g, snap, POLICY.scheduler_name)}
    state = _State.of(snap, POLICY, ours)
    carried = admission_commitments.commitments(snap, state.need, state.held, state.reserving, POLICY.scheduler_name)
    assert carried == admission_commitments._fresh(snap.podgroups, state.need, state.held, state.reserving)
    return carried


PART_CASES = [
    # (reserving, need, held, expected commits, expected reserves)
    (True, {"cpu": 4000}, {"cpu": 1000}, {"cpu": 4000}, {"cpu": 3000}),
    (True, {"cpu": 4000}, {"cpu": 5000}, {"cpu": 4000}, {"cpu": 0}),
    (False, {"cpu": 4000, "memory": 8}, {"cpu": 1000}, {"cpu": 1000, "memory": 0}, None),
    (False, {"cpu": 4000}, {}, {}, None),
    (True, {}, {}, {}, {}),
]


@pytest.mark.parametrize(("reserving", "need", "held", "commits", "reserves"), PART_CASES)
def test_part_cases(
    reserving: bool,
    need: dict[str, int],
    held: dict[str, int],
    commits: dict[str, int],
    reserves: dict[str, int] | None,
) -> None:
    assert admission_commitments.part(b.group("ns/g", queue="q"), need, held, reserving) == ("q", commits, reserves)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 100_000), steps=st.integers(1, 6))
def test_carried_commitments_equal_a_fresh_pass(seed: int, steps: int) -> None:
    rng = random.Random(seed)
    admission_groups.forget()
    admission_commitments.forget()
    groups = {f"ns/g{i}": _group(rng, f"ns/g{i}") for i in range(rng.randint(1, 8))}
    pods = {f"ns/g{i}-{k}": _pod(rng, f"ns/g{i}-{k}", f"ns/g{i}") for i in range(len(groups)) for k in range(2)}
    made = len(groups)
    for _ in range(steps):
        snap = b.snapshot(nodes=NODES, pods=pods.values(), groups=groups.values(), queues=QUEUES)
        _parts(snap)
        carried = admit(snap, POLICY)
        admission_groups.forget()
        admission_commitments.forget()
        pod_sums.forget()
        deserved._SUMS.clear()
        deserved._SHARES.clear()
        assert carried == admit(snap, POLICY)
        for key in list(groups):
            roll = rng.random()
            if roll < 0.15:
                del groups[key]
            elif roll < 0.35:
                groups[key] = _group(rng, key)
        for key in list(pods):
            roll = rng.random()
            if roll < 0.15:
                del pods[key]
            elif roll < 0.4:
                pods[key] = _pod(rng, key, pods[key].group or "")
        for _ in range(rng.randint(0, 2)):
            key = f"ns/g{made}"
            made += 1
            groups[key] = _group(rng, key)
            pods[f"{key}-0"] = _pod(rng, f"{key}-0", key)


def test_another_scheduler_name_starts_afresh() -> None:
    """The parts depend on whose groups are ours: a pass for another scheduler's name is summed anew."""
    admission_groups.forget()
    admission_commitments.forget()
    group = b.group("ns/g", queue="q", phase="Inqueue")
    pod = b.pod("ns/g-0", cpu="2", group="ns/g")
    snap = b.snapshot(nodes=NODES, pods=[pod], groups=[group], queues=QUEUES)
    mine = _State.of(snap, POLICY, {"ns/g"})
    assert mine.reserved == {"cpu": 2000, "memory": 1024**3, "pods": 1}
    other = Policy(time_limit_s=1.0, scheduler_name="other")
    theirs = _State.of(snap, other, set())
    assert theirs.reserved == {}
