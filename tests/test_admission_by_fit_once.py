"""A group admitted by fit (enqueue rule 6) holds its gang's room once.

Its gang is taken from the free room when it is tested; the admission must not queue it to be taken
again by the next candidate's catch-up, or it holds twice its room and refuses later groups that fit
the room actually left. A table of small clusters where that second take decided, and a property that
no gang is ever taken twice, with every gang admitted by fit on the room exactly once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_enqueue_fit import POLICY, gang, stalled
from test_enqueue_index import SLOW_OK, TIGHT, overcommitted_clusters

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.model import Pod, PodGroup, Policy, Snapshot
from vcsat.solver import admission_room, enqueue


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        # 2 GPUs free on each of two nodes: the first gang takes one node's, the second the other's.
        (
            [gang("c/first", 1, 2, created=1), gang("c/second", 1, 2, created=2)],
            {"c/first": True, "c/second": True},
        ),
        # A gang of two 1-GPU pods finds the 2 GPUs the first gang left on the other node.
        (
            [gang("c/first", 1, 2, created=1), gang("c/pair", 2, 1, created=2)],
            {"c/first": True, "c/pair": True},
        ),
        # The 4 free GPUs held by two gangs: a third finds none (refused by the room, not the share).
        (
            [gang("c/first", 1, 2, created=1), gang("c/second", 1, 2, created=2), gang("c/third", 1, 1, created=3)],
            {"c/first": True, "c/second": True, "c/third": False},
        ),
    ],
    ids=["second-fits", "pair-fits", "third-finds-none"],
)
def test_a_gang_admitted_by_fit_holds_its_room_once(
    groups: list[tuple[PodGroup, list[Pod]]], expected: dict[str, bool]
) -> None:
    # Queue c's deserved share is above 4 GPUs only with the other queues' weights low.
    result = enqueue.admit(stalled(*groups, weights=(1, 1, 4)), POLICY)
    for key, admitted in expected.items():
        verdict = result[key]
        assert verdict.admitted == admitted, (key, verdict)
        if not admitted:
            assert verdict.reason == "ClusterOverused"
            assert "does not fit" in verdict.message


def _takes(snap: Snapshot, policy: Policy, monkeypatch: pytest.MonkeyPatch) -> tuple[Counter[str], set[str]]:
    """Per group key, how many times its gang was taken from the room; and the groups admitted by fit."""
    taken: Counter[str] = Counter()
    by_fit: set[str] = set()
    take, fits = admission_room.FreeRoom.take, enqueue._State.fits_idle_room

    def counted(room: admission_room.FreeRoom, pods: Sequence[Pod] | None) -> bool:
        done = take(room, pods)
        if done and pods:
            taken[pods[0].group or pods[0].key] += 1
        return done

    def noted(state: enqueue._State, group: PodGroup) -> str | None:
        why = fits(state, group)
        if why is None:
            by_fit.add(group.key)
        return why

    with monkeypatch.context() as patch:
        patch.setattr(admission_room.FreeRoom, "take", counted)
        patch.setattr(enqueue._State, "fits_idle_room", noted)
        enqueue.admit(snap, policy)
    return taken, by_fit


def _once(snap: Snapshot, policy: Policy, monkeypatch: pytest.MonkeyPatch) -> None:
    taken, by_fit = _takes(snap, policy, monkeypatch)
    assert all(count == 1 for count in taken.values()), taken
    assert all(taken[key] == 1 for key in by_fit if any(not p.bound for p in snap.pods_of_group.get(key, ())))


@pytest.mark.pure_only
@settings(max_examples=40, deadline=None, suppress_health_check=SLOW_OK)
@given(snap=overcommitted_clusters())
def test_no_gang_is_taken_twice_on_overcommitted_clusters(snap: Snapshot, monkeypatch: pytest.MonkeyPatch) -> None:
    _once(snap, TIGHT, monkeypatch)


@pytest.mark.pure_only
@settings(max_examples=10, deadline=None, suppress_health_check=SLOW_OK)
@given(seed=st.integers(0, 10_000), busy=st.sampled_from([0.5, 0.8, 0.95]))
def test_no_gang_is_taken_twice_on_generated_clusters(seed: int, busy: float, monkeypatch: pytest.MonkeyPatch) -> None:
    options = GeneratorOptions(nodes=30, pending_jobs=80, seed=seed, busy_gpu_fraction=busy)
    _once(snapshot_from_objects(generate_instance(options)["items"], source="generated"), TIGHT, monkeypatch)
