"""Our PodGroups without pods carried from snapshot to snapshot (``adapters/live/unadmitted.py``)
equal a fresh walk after any sequence of snapshots sharing objects, and the decision applied with
their admissions (the scheduler's ``_with_admissions``) is the one a walk over every group gives."""

from __future__ import annotations

import random

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.adapters.live.scheduler import _with_admissions
from vcsat.adapters.live.unadmitted import Unadmitted, waits_for_pods
from vcsat.model import Decision, Pod, PodGroup, PodGroupOutcome, Policy, Snapshot, SolverStats
from vcsat.solver import changes
from vcsat.solver.enqueue import DEFAULT_SCHEDULER

POLICY = Policy(time_limit_s=1.0)
QUEUES = [b.queue("q")]


class _Cluster:
    """PodGroups with 0–2 pods each; a step replaces, removes and adds some, keeping the rest."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.made = 0
        self.groups: dict[str, PodGroup] = {}
        self.pods: dict[str, Pod] = {}
        for _ in range(rng.randint(0, 6)):
            self._add()

    def _group(self, key: str) -> PodGroup:
        rng = self.rng
        group = b.group(key, queue="q", phase=rng.choice(["", "Pending", "Inqueue", "Running"]))
        return group.model_copy(update={"scheduler_name": rng.choice([None, POLICY.scheduler_name, "other"])})

    def _pod(self, key: str, group: str) -> Pod:
        rng = self.rng
        pod = b.pod(key, group=group, node="n1" if rng.random() < 0.3 else None)
        return pod.model_copy(update={"phase": "Succeeded"}) if rng.random() < 0.3 else pod

    def _add(self) -> None:
        key = f"ns/g{self.made:03d}"
        self.made += 1
        self.groups[key] = self._group(key)
        for k in range(self.rng.randint(0, 2)):
            self.pods[f"{key}-{k}"] = self._pod(f"{key}-{k}", key)

    def snapshot(self) -> Snapshot:
        return b.snapshot(nodes=[b.node("n1")], pods=self.pods.values(), groups=self.groups.values(), queues=QUEUES)

    def step(self) -> None:
        rng = self.rng
        for key in list(self.groups):
            roll = rng.random()
            if roll < 0.1:
                del self.groups[key]
            elif roll < 0.3:
                self.groups[key] = self._group(key)
        for key, pod in list(self.pods.items()):
            roll = rng.random()
            if roll < 0.15:
                del self.pods[key]
            elif roll < 0.35:
                self.pods[key] = self._pod(key, pod.group or "")
        for _ in range(rng.randint(0, 2)):
            self._add()


def _decision(rng: random.Random, snapshot: Snapshot) -> Decision:
    keys = [group.key for group in snapshot.podgroups]
    chosen = rng.sample(keys, k=min(len(keys), rng.randint(0, 2)))
    return Decision(
        podgroups=[PodGroupOutcome(podgroup=key, phase="Pending") for key in sorted(chosen)],
        solver=SolverStats(status="WITHIN_GAP"),
    )


def _walk(seed: int, steps: int) -> None:
    changes.forget()
    rng = random.Random(seed)
    cluster = _Cluster(rng)
    unadmitted = Unadmitted()
    for number in range(steps):
        snapshot = cluster.snapshot()
        name = POLICY.scheduler_name
        fresh = {g.key for g in snapshot.podgroups if waits_for_pods(g, snapshot, name, DEFAULT_SCHEDULER)}
        assert unadmitted.of(snapshot, POLICY.scheduler_name) == fresh, number
        decision = _decision(rng, snapshot)
        assert _with_admissions(decision, snapshot, POLICY, unadmitted) == _with_admissions(
            decision, snapshot, POLICY
        ), number
        if rng.random() < 0.1:
            cluster = _Cluster(rng)  # any snapshot may follow any other: nothing shared
        else:
            cluster.step()


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_carried_over_a_sequence(seed: int) -> None:
    _walk(seed, 8)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), steps=st.integers(1, 8))
def test_any_sequence_of_snapshots(seed: int, steps: int) -> None:
    _walk(seed, steps)


def test_a_group_whose_pod_goes_waits_again() -> None:
    changes.forget()
    group = b.group("ns/a", queue="q")
    pod = b.pod("ns/a-0", group="ns/a")
    unadmitted = Unadmitted()
    assert unadmitted.of(b.snapshot(pods=[pod], groups=[group], queues=QUEUES), POLICY.scheduler_name) == set()
    assert unadmitted.of(b.snapshot(groups=[group], queues=QUEUES), POLICY.scheduler_name) == {"ns/a"}


def test_two_groups_of_one_key_are_asked_afresh() -> None:
    changes.forget()
    unadmitted = Unadmitted()
    one = b.group("ns/a", queue="q", phase="Running")
    unadmitted.of(b.snapshot(groups=[one], queues=QUEUES), POLICY.scheduler_name)
    twice = b.snapshot(groups=[one, b.group("ns/a", queue="q")], queues=QUEUES)
    assert unadmitted.of(twice, POLICY.scheduler_name) == {"ns/a"}
