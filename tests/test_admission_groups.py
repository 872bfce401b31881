"""Admission's per-group sums reused across passes (``solver/admission_groups.py``): over any
sequence of PodGroup and pod additions, changes and deletions, with unchanged objects kept as the
very same objects (as the live scheduler's converter keeps them), each pass's needs, holdings and
admissions equal a fresh pass's; unchanged groups keep their sums, changed ones are summed again."""

from __future__ import annotations

import random

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Pod, PodGroup, Policy, Snapshot
from vcsat.solver import admission_groups, changes
from vcsat.solver.enqueue import admit, group_need

POLICY = Policy(time_limit_s=1.0, overcommit_factor=1.0)
NODES = [b.node(f"n{i}", cpu="8", memory="32Gi", gpus=4) for i in range(3)]
QUEUES = [b.queue("q"), b.queue("r", weight=2)]


def _group(rng: random.Random, key: str) -> PodGroup:
    sized = rng.random() < 0.4
    return b.group(
        key,
        min_member=rng.choice([1, 2, 3]),
        queue=rng.choice(["q", "r"]),
        min_resources={"cpu": str(rng.choice([1, 2, 5])), "nvidia.com/gpu": rng.choice([0, 1, 4])} if sized else None,
        created=float(rng.randrange(100)),
        phase=rng.choice(["", "", "Inqueue", "Running"]),
    )


def _pod(rng: random.Random, key: str, group: str) -> Pod:
    bound = rng.random() < 0.4
    return b.pod(
        key,
        cpu=str(rng.choice([1, 2, 3])),
        gpus=rng.choice([0, 1, 2]),
        group=group,
        node=rng.choice(NODES).name if bound else None,
        managed=rng.random() < 0.9,
        gates=["wait"] if not bound and rng.random() < 0.1 else (),
        created=float(rng.randrange(100)),
    )


def _fresh(snap: Snapshot) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    pods_of = snap.pods_of_group
    need = {g.key: group_need(g, pods_of.get(g.key, ())) for g in snap.podgroups}
    held = {g.key: admission_groups.holdings(pods_of.get(g.key, ())) for g in snap.podgroups}
    return need, held


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), steps=st.integers(1, 6))
def test_reused_sums_equal_a_fresh_pass(seed: int, steps: int) -> None:
    rng = random.Random(seed)
    admission_groups.forget()
    groups = {f"ns/g{i}": _group(rng, f"ns/g{i}") for i in range(rng.randint(1, 8))}
    pods = {f"ns/g{i}-{k}": _pod(rng, f"ns/g{i}-{k}", f"ns/g{i}") for i in range(len(groups)) for k in range(2)}
    made = len(groups)
    for _ in range(steps):
        snap = b.snapshot(nodes=NODES, pods=pods.values(), groups=groups.values(), queues=QUEUES)
        before, before_snapshot = dict(admission_groups._last), admission_groups._last_snapshot
        need, held = admission_groups.needs_and_holdings(snap, group_need)
        assert (need, held) == _fresh(snap)
        found = changes.between(before_snapshot, snap) if before_snapshot is not None else None
        # A pass after one sharing most of its objects carries; after one sharing few, it sums
        # every group afresh (cheaper), and nothing is kept.
        carried = found is not None and found.pods_mostly_kept and found.groups_mostly_kept
        for key, group in groups.items():
            # A group and pods that are the very objects of the last pass keep the very same sums.
            entry = before.get(key) if carried else None
            ours = tuple(snap.pods_of_group.get(key, ()))
            if entry is not None and entry[0] is group and _same(entry[1], ours):
                assert need[key] is entry[2]
        # The whole admission with the last pass's sums at hand equals one without.
        admission_groups._last, admission_groups._last_snapshot = before, before_snapshot
        reused = admit(snap, POLICY)
        admission_groups.forget()
        assert reused == admit(snap, POLICY)
        # The next cluster: some groups and pods changed (new objects, maybe equal), some gone, some new.
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
            elif roll < 0.5:
                pods[key] = pods[key].model_copy()  # equal, but another object: summed again
        for _ in range(rng.randint(0, 2)):
            key = f"ns/g{made}"
            made += 1
            groups[key] = _group(rng, key)
            pods[f"{key}-0"] = _pod(rng, f"{key}-0", key)


def test_groups_sharing_min_resources_share_one_need() -> None:
    """PodGroups of one kind of job share their minResources dict (the converter reads each spelling
    once): their need is made once and is the same read-only dict; GPU shares stay out of it."""
    from vcsat.model import PodGroup
    from vcsat.solver.enqueue import group_need

    minimum = {"cpu": 4000, "nvidia.com/gpu": 1, "vcsat.io/gpu-milli": 500}
    first = PodGroup(namespace="ns", name="a", min_resources=minimum)
    second = first.model_copy(update={"name": "b"})  # the converter's sharing: the same dict
    assert first.min_resources is second.min_resources
    need = group_need(first, [])
    assert need == {"cpu": 4000, "nvidia.com/gpu": 1}
    assert group_need(second, []) is need
    other = PodGroup(namespace="ns", name="c", min_resources=minimum)  # validated: its own dict
    assert other.min_resources is not first.min_resources
    assert group_need(other, []) == need
    assert group_need(other, []) is not need


def _same(before: tuple[object, ...], now: tuple[object, ...]) -> bool:
    """The very objects, in the same order."""
    return len(before) == len(now) and all(a is b for a, b in zip(before, now, strict=True))


# --- small sequences: the carried tables (copied, touched keys summed again or dropped) ----------

G0 = b.group("ns/g0", min_member=1, queue="q")
G1 = b.group("ns/g1", min_member=2, queue="r")
P0 = b.pod("ns/g0-0", group="ns/g0", node="n0")
P1 = b.pod("ns/g1-0", group="ns/g1")
P2 = b.pod("ns/g1-1", group="ns/g1", node="n1")
START = ([G0, G1], [P0, P1, P2])

SEQUENCES: list[tuple[str, list[tuple[list[PodGroup], list[Pod]]]]] = [
    # (what, the (groups, pods) after START's, each passed in turn)
    ("nothing changed", [START]),
    (
        "a group added before the others",
        [([b.group("ns/a", queue="q"), G0, G1], [b.pod("ns/a-0", group="ns/a"), P0, P1, P2])],
    ),
    ("a group removed with its pods", [([G1], [P1, P2])]),
    ("a group removed, its pods left", [([G1], [P0, P1, P2])]),
    ("a pod bound", [([G0, G1], [P0, b.pod("ns/g1-0", group="ns/g1", node="n2"), P2])]),
    ("a group replaced by an equal copy", [([G0.model_copy(), G1], [P0, P1, P2])]),
    ("a pod naming no group added", [([G0, G1], [P0, P1, P2, b.pod("ns/x-0", group="ns/x", node="n0")])]),
    ("two groups of one key", [([G0, G1, b.group("ns/g1", min_member=3, queue="q")], [P0, P1, P2])]),
    ("removed, then back", [([G1], [P1, P2]), START, ([G0], [P0])]),
]


@pytest.mark.parametrize(("what", "sequence"), SEQUENCES, ids=[s[0] for s in SEQUENCES])
def test_carried_tables_equal_a_fresh_pass(what: str, sequence: list[tuple[list[PodGroup], list[Pod]]]) -> None:
    admission_groups.forget()
    changes.forget()
    for groups, pods in [START, *sequence]:
        snap = b.snapshot(nodes=NODES, pods=pods, groups=groups, queues=QUEUES)
        assert admission_groups.needs_and_holdings(snap, group_need) == _fresh(snap), what
