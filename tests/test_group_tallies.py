"""The metrics' PodGroup tallies carried from snapshot to snapshot (``adapters/live/group_tallies.py``)
equal a fresh count after any sequence of snapshots sharing objects; the queue rows made from them
equal those made by walking every group; and the Volcano-named series that read them show exactly
what a walk over every group each cycle shows (the same exposition after every cycle)."""

from __future__ import annotations

import random
from typing import Any

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest

from vcsat.adapters.kube.apply_state import ApplyReport
from vcsat.adapters.live import group_tallies
from vcsat.adapters.live.group_tallies import GroupTallies, Tallies
from vcsat.adapters.live.queue_view import queue_rows
from vcsat.adapters.live.volcano_metrics import VolcanoMetrics
from vcsat.model import Decision, PodGroup, PodGroupOutcome, Snapshot, SolverStats
from vcsat.solver import changes

QUEUES = [b.queue("q"), b.queue("r", weight=2)]
PHASES = ["", "Pending", "Inqueue", "Running", "Completed"]


def _group(rng: random.Random, key: str) -> PodGroup:
    return b.group(key, queue=rng.choice(["q", "r", "gone"]), phase=rng.choice(PHASES))


class _Cluster:
    """PodGroups (some with a pod) by key; a step replaces, removes and adds some and keeps the
    others as the very objects."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.made = 0
        self.groups: dict[str, PodGroup] = {}
        self.pods: dict[str, Any] = {}
        for _ in range(rng.randint(0, 6)):
            self._add()

    def _add(self) -> None:
        key = f"ns/g{self.made:03d}"
        self.made += 1
        self.groups[key] = _group(self.rng, key)
        if self.rng.random() < 0.7:
            self.pods[key] = self._pod(key)

    def _pod(self, key: str) -> Any:
        rng = self.rng
        pod = b.pod(f"{key}-0", group=key, node="n1" if rng.random() < 0.5 else None)
        return pod.model_copy(update={"scheduling_gates": ["gate"]}) if rng.random() < 0.2 else pod

    def snapshot(self) -> Snapshot:
        return b.snapshot(
            nodes=[b.node("n1")], pods=self.pods.values(), groups=self.groups.values(), queues=QUEUES, generation=1
        )

    def step(self) -> None:
        rng = self.rng
        for key, group in list(self.groups.items()):
            roll = rng.random()
            if roll < 0.15:
                del self.groups[key]
                self.pods.pop(key, None)
            elif roll < 0.35:
                self.groups[key] = group.model_copy(update={"phase": rng.choice(PHASES)})
            elif roll < 0.45:
                self.groups[key] = group.model_copy(update={"queue": rng.choice(["q", "r", "gone"])})
            elif roll < 0.5:
                self.groups[key] = group.model_copy()
            elif roll < 0.7 and key in self.pods:
                self.pods[key] = self._pod(key)  # bound, pending or held anew
        for _ in range(rng.randint(0, 3)):
            self._add()


def _decision(rng: random.Random, snapshot: Snapshot) -> Decision:
    keys = [group.key for group in snapshot.podgroups] + ["ns/nobody"]
    chosen = rng.sample(keys, k=min(len(keys), rng.randint(0, 3)))
    return Decision(
        podgroups=[
            PodGroupOutcome(podgroup=key, phase=rng.choice(["Pending", "Inqueue", "Running"])) for key in chosen
        ],
        solver=SolverStats(status="WITHIN_GAP"),
    )


def _same(carried: Tallies, fresh: Tallies) -> bool:
    return carried.labels == fresh.labels and carried.phases == fresh.phases and carried.waiting == fresh.waiting


def _series(registry: CollectorRegistry) -> list[str]:
    """The exposition's lines but when each series was made (a clock reading)."""
    return [line for line in generate_latest(registry).decode().splitlines() if "_created" not in line]


class _Cycle:
    def __init__(self, snapshot: Snapshot, decision: Decision) -> None:
        self.snapshot, self.decision = snapshot, decision
        self.seconds, self.snapshot_seconds = 0.5, 0.1
        self.report = ApplyReport()


def _walk(seed: int, steps: int) -> None:
    """Tallies, queue rows and the series of a carrying and a counting-afresh observer, every step."""
    changes.forget()
    rng = random.Random(seed)
    cluster = _Cluster(rng)
    tallies = GroupTallies()
    carried, fresh = CollectorRegistry(), CollectorRegistry()
    observer, counter = VolcanoMetrics(carried), VolcanoMetrics(fresh)
    counter._tallies.of = group_tallies._fresh  # type: ignore[method-assign]
    for number in range(steps):
        snapshot = cluster.snapshot()
        assert _same(tallies.of(snapshot), group_tallies._fresh(snapshot)), number
        decision = _decision(rng, snapshot)
        assert queue_rows(snapshot, decision, tallies.of(snapshot).phases) == queue_rows(snapshot, decision)
        observer.observe(_Cycle(snapshot, decision), now=100.0)
        counter.observe(_Cycle(snapshot, decision), now=100.0)
        assert _series(carried) == _series(fresh), number
        if rng.random() < 0.1:
            cluster = _Cluster(rng)  # any snapshot may follow any other: nothing shared
        else:
            cluster.step()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_tallies_rows_and_series_over_a_sequence(seed: int) -> None:
    _walk(seed, 8)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), steps=st.integers(1, 8))
def test_any_sequence_of_snapshots(seed: int, steps: int) -> None:
    _walk(seed, steps)


CASES = {
    "a group's phase changes": lambda g: {**g, "ns/a": g["ns/a"].model_copy(update={"phase": "Running"})},
    "a group moves to another queue": lambda g: {**g, "ns/a": g["ns/a"].model_copy(update={"queue": "r"})},
    "a group goes": lambda g: {k: v for k, v in g.items() if k != "ns/a"},
    "a group comes": lambda g: {**g, "ns/c": b.group("ns/c", queue="r", phase="Inqueue")},
    "a group replaced by an equal copy": lambda g: {**g, "ns/a": g["ns/a"].model_copy()},
    "nothing changes": lambda g: g,
}


@pytest.mark.parametrize("change", list(CASES.values()), ids=list(CASES))
def test_one_change(change: Any) -> None:
    changes.forget()
    groups = {"ns/a": b.group("ns/a", queue="q"), "ns/b": b.group("ns/b", queue="q", phase="Running")}
    tallies = GroupTallies()
    tallies.of(b.snapshot(groups=groups.values(), queues=QUEUES))
    after = b.snapshot(groups=change(groups).values(), queues=QUEUES)
    assert _same(tallies.of(after), group_tallies._fresh(after))


def test_two_groups_of_one_key_are_counted_afresh() -> None:
    changes.forget()
    one = b.group("ns/a", queue="q")
    tallies = GroupTallies()
    tallies.of(b.snapshot(groups=[one], queues=QUEUES))
    twice = b.snapshot(groups=[one, b.group("ns/a", queue="r", phase="Running")], queues=QUEUES)
    assert tallies.of(twice).phases == {("q", "Pending"): 1, ("r", "Running"): 1}
