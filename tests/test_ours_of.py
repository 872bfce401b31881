"""Which PodGroups are ours, found in one pass (``enqueue.ours_of``): the same groups as asking
:func:`~vcsat.solver.enqueue.is_ours` group by group, on a table of small cases and on random
snapshots."""

from __future__ import annotations

import random

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Snapshot
from vcsat.solver.enqueue import is_ours, ours_of


def _one_by_one(snap: Snapshot, name: str) -> set[str]:
    return {g.key for g in snap.podgroups if is_ours(g, snap, name)}


CASES = [
    # (pods as (group, managed), groups as (key, scheduler name), ours)
    ([("ns/a", True)], [("ns/a", None)], {"ns/a"}),
    ([("ns/a", False)], [("ns/a", None)], set()),  # another scheduler's pods
    ([("ns/a", False), ("ns/a", True)], [("ns/a", "other")], {"ns/a"}),  # one pod of ours is enough
    ([], [("ns/a", None)], {"ns/a"}),  # no pod yet, named for nobody: the default scheduler's
    ([], [("ns/a", "vcsat")], {"ns/a"}),
    ([], [("ns/a", "other")], set()),
    ([("ns/b", True)], [("ns/a", "other"), ("ns/b", "other")], {"ns/b"}),
]


@pytest.mark.parametrize(("pods", "groups", "ours"), CASES)
def test_cases(pods: list[tuple[str, bool]], groups: list[tuple[str, str | None]], ours: set[str]) -> None:
    snap = b.snapshot(
        pods=[b.pod(f"ns/p{i}", group=group, managed=managed) for i, (group, managed) in enumerate(pods)],
        groups=[b.group(key).model_copy(update={"scheduler_name": name}) for key, name in groups],
    )
    assert ours_of(snap, "vcsat") == _one_by_one(snap, "vcsat") == ours


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_equals_asking_group_by_group(seed: int) -> None:
    rng = random.Random(seed)
    groups = [
        b.group(f"ns/g{i}").model_copy(update={"scheduler_name": rng.choice([None, "vcsat", "other"])})
        for i in range(rng.randint(0, 6))
    ]
    pods = [
        b.pod(
            f"ns/p{i}",
            group=rng.choice([None, *[f"ns/g{k}" for k in range(8)]]),
            managed=rng.random() < 0.6,
            phase=rng.choice([None, "Succeeded"]),
        )
        for i in range(rng.randint(0, 10))
    ]
    snap = b.snapshot(pods=pods, groups=groups)
    for name in ("vcsat", "other"):
        assert ours_of(snap, name) == _one_by_one(snap, name)
