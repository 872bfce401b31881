"""Priming (``solver/prime.py``): the carries a cycle with pending pods leaves, made from a snapshot
with none, so the live scheduler's first batch after a cold start carries them like any later one.

A table of the resources guessed from our bound pods; a table of which path the first build after
priming takes (its node rooms carried or made afresh, the fragmentation tally's pods asked), by
whether the new pods ask what was guessed; and a Hypothesis property: a decision after priming is
the one made without it, and the one made with every carry empty."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Policy, Snapshot
from vcsat.model import resources as res
from vcsat.solver import (
    admission_commitments,
    admission_groups,
    admission_ours,
    changes,
    idle,
    node_side,
    pod_facts,
    pod_indexes,
    pod_sums,
    solve,
)
from vcsat.solver.pricing import fragmentation, scarcity
from vcsat.solver.pricing.pod_tally import Tally
from vcsat.solver.prime import likely_resources, prime
from vcsat.solver.problem import build_problem, problem_resources

POLICY = Policy(time_limit_s=1.0)
CARRIED = (
    changes,
    node_side,
    admission_groups,
    admission_commitments,
    admission_ours,
    pod_sums,
    pod_indexes,
    pod_facts,
    idle,
)


def _forget_all() -> None:
    for module in CARRIED:
        module.forget()
    scarcity._DEMAND = Tally(scarcity._pod_demand)
    fragmentation._TASKS = Tally(fragmentation._task_of)


@pytest.fixture(autouse=True)
def _carrying() -> Iterator[None]:
    """Every carry starts empty and carries across snapshots, as the live scheduler runs them."""
    _forget_all()
    pod_sums.carry()
    yield
    pod_sums.carry(False)
    _forget_all()


CPU_ONLY = {"cpu": "1", "memory": "0"}

# (what, pods, resources guessed)
GUESSES: list[tuple[str, list[Any], list[str]]] = [
    ("nothing bound: the pod count only", [b.pod("ns/w", gpus=1)], [res.PODS]),
    ("bound cpu pods", [b.pod("ns/a", node="n0", **CPU_ONLY)], [res.CPU, res.PODS]),
    (
        "bound cpu, memory and GPU pods",
        [b.pod("ns/a", node="n0"), b.pod("ns/g", gpus=1, node="n1")],
        [res.CPU, res.MEMORY, res.GPU, res.PODS],
    ),
    (
        "a pending GPU pod is not read",
        [b.pod("ns/a", node="n0", **CPU_ONLY), b.pod("ns/w", gpus=1, **CPU_ONLY)],
        [res.CPU, res.PODS],
    ),
    (
        "another scheduler's bound pods are not read",
        [b.pod("ns/a", node="n0", **CPU_ONLY), b.pod("ns/f", gpus=1, node="n1", managed=False)],
        [res.CPU, res.PODS],
    ),
    (
        "a bound GPU share: GPU thousandths watched",
        [b.pod("ns/s", node="n0", gpu_milli=500, **CPU_ONLY)],
        [res.CPU, res.GPU_MILLI, res.PODS],
    ),
]


@pytest.mark.parametrize(("what", "pods", "expected"), GUESSES, ids=[g[0] for g in GUESSES])
def test_likely_resources_are_what_our_bound_pods_ask(what: str, pods: list[Any], expected: list[str]) -> None:
    snap = b.snapshot(nodes=[b.node("n0", gpus=2), b.node("n1", gpus=2)], pods=pods)
    assert likely_resources(snap) == sorted(expected)
    # The same formula a build uses for its pending pods: pods like the bound ones ask the same.
    like = [pod.model_copy(update={"node_name": None, "phase": "Pending"}) for pod in pods]
    assert likely_resources(snap) == problem_resources([p for p in like if p.managed and p.key in _bound(snap)])


def _bound(snap: Snapshot) -> set[str]:
    return {pod.key for pod in snap.pods if pod.bound}


def _cold(nodes: int = 6) -> Snapshot:
    """A cluster with our pods bound (cpu, memory and GPUs) and nothing pending."""
    made = [b.node(f"n{i}", cpu="16", gpus=4) for i in range(nodes)]
    groups = [b.group(f"ns/g{i}", min_member=1, queue="q") for i in range(nodes)]
    pods = [b.pod(f"ns/p{i}", cpu="2", gpus=i % 2, group=f"ns/g{i}", node=f"n{i}") for i in range(nodes)]
    return b.snapshot(nodes=made, pods=pods, groups=groups, queues=[b.queue("q")])


def _arrive(snap: Snapshot, **requests: Any) -> Snapshot:
    """``snap``'s very objects, plus a new gang of two pending pods asking ``requests``."""
    group = b.group("ns/new", min_member=2, queue="q")
    pods = [b.pod(f"ns/new{i}", group="ns/new", **requests) for i in range(2)]
    return b.snapshot(nodes=snap.nodes, pods=[*snap.pods, *pods], groups=[*snap.podgroups, group], queues=snap.queues)


FPGA = "example.com/fpga"
# (what, the new pods' requests, primed?, node rooms made in the first build, tally pods asked)
FIRST_BUILDS: list[tuple[str, dict[str, Any], bool, int, int]] = [
    ("not primed: every room and every pod afresh", {"cpu": "1", "gpus": 1}, False, 6, 8),
    ("primed, the same resources: only the new pods asked", {"cpu": "1", "gpus": 1}, True, 0, 2),
    ("primed, no GPU asked: rooms afresh, tally carried", {"cpu": "1"}, True, 6, 2),
    (
        "primed, an extra resource: rooms afresh, tally carried",
        {"cpu": "1", "extra": {"example.com/fpga": 1}},
        True,
        6,
        2,
    ),
]


@pytest.mark.pure_only
@pytest.mark.parametrize(
    ("what", "requests", "primed", "rooms", "asked"), FIRST_BUILDS, ids=[f[0] for f in FIRST_BUILDS]
)
def test_the_first_build_after_priming_carries_what_was_primed(
    what: str, requests: dict[str, Any], primed: bool, rooms: int, asked: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold = _cold()
    solve(cold, POLICY, wall=False)  # the cold cycle: nothing to place
    if primed:
        prime(cold)
    made: list[str] = []
    original = node_side.node_room
    monkeypatch.setattr(node_side, "node_room", lambda node, *a, **k: made.append(node.name) or original(node, *a, **k))
    tasks: list[str] = []
    monkeypatch.setattr(
        fragmentation._TASKS, "_contribution", lambda pod: tasks.append(pod.key) or fragmentation._task_of(pod)
    )
    after = _arrive(cold, **requests)
    problem = build_problem(after, POLICY)
    fragmentation.workload_of(after)  # the greedy's chooser reads it
    assert len(made) == rooms
    assert len(tasks) == asked
    on_node = after.pods_on_node
    fresh = [original(n, on_node.get(n.name, ()), problem.resources) for n in after.nodes]
    assert node_side.node_rooms(after, problem.resources) == fresh


def _digest(snap: Snapshot) -> str:
    decision = solve(snap, POLICY, wall=False)
    return decision.model_copy(update={"solver": decision.solver.model_copy(update={"seconds": 0.0})}).model_dump_json()


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000), nodes=st.integers(1, 6), batches=st.integers(1, 3))
def test_a_decision_after_priming_is_the_one_without(seed: int, nodes: int, batches: int) -> None:
    rng = random.Random(seed)
    cold = _cold(nodes)
    snaps = [cold]
    for n in range(batches):
        last = snaps[-1]
        group = b.group(f"ns/b{n}", min_member=rng.randint(1, 2), queue="q")
        new = [
            b.pod(f"ns/b{n}-{i}", cpu=str(rng.randint(1, 8)), gpus=rng.choice([0, 0, 1, 2]), group=group.key)
            for i in range(rng.randint(1, 3))
        ]
        snaps.append(
            b.snapshot(nodes=last.nodes, pods=[*last.pods, *new], groups=[*last.podgroups, group], queues=last.queues)
        )
    runs = []
    for priming in (False, True):
        _forget_all()
        solve(cold, POLICY, wall=False)
        if priming:
            prime(cold)
        runs.append([_digest(snap) for snap in snaps[1:]])
    fresh = []
    for snap in snaps[1:]:
        _forget_all()
        fresh.append(_digest(snap))
    assert runs[0] == runs[1] == fresh
