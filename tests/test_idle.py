"""A cycle with nothing to place (``solver/idle.py``): its decision is ``solve``'s, made once per
policy and node count and handed out again for other snapshots with nothing pending; a snapshot
with a pod of ours pending (gated ones included) is not one; the live scheduler's follow-up
cycles build no problem."""

from __future__ import annotations

import importlib
import importlib.util
import json
from collections.abc import Callable
from typing import Any

import pytest
from builders import group, node, pod, queue, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.scripts import load_script
from vcsat.model import Decision, Policy, Snapshot
from vcsat.solver import idle, solve

POLICIES = {
    "default": Policy(time_limit_s=1.0),
    "long": Policy(time_limit_s=10.0),
    "search off": Policy(time_limit_s=1.0, search=False),
    "gap 0": Policy(time_limit_s=1.0, relative_gap=0.0),
    "no evictions": Policy(time_limit_s=1.0, preempt=False, reclaim=False),
    "gang off": Policy(time_limit_s=1.0, gang=False),
    "enqueue off": Policy(time_limit_s=1.0, enqueue=False),
}


def _unhurried(snap: Snapshot, policy: Policy, **kwargs: Any) -> Decision:
    return solve(snap, policy, wall=False, **kwargs)


def _same(a: Decision, b: Decision) -> dict[str, Any]:
    """The decision without its seconds, for comparing."""
    data = json.loads(a.model_dump_json())
    data["solver"].pop("seconds")
    other = json.loads(b.model_dump_json())
    other["solver"].pop("seconds")
    assert data == other
    return data


def _bound_only(nodes: int = 2) -> Snapshot:
    return snapshot(
        [node(f"n{i}", cpu="8", gpus=2) for i in range(nodes)],
        [
            pod("ns/a-0", cpu="2", group="ns/a", node="n0"),
            pod("ns/a-1", cpu="2", gpus=1, group="ns/a", node="n1"),
            pod("ns/lone", cpu="1", node="n0", priority=5),
        ],
        [group("ns/a", 2, queue="q", phase="Running")],
        [queue("q")],
    )


CLUSTERS: dict[str, Callable[[], Snapshot]] = {
    "bound pods only": _bound_only,
    "an Inqueue group without pods": lambda: snapshot(
        [node("n0", cpu="4")],
        [pod("ns/b-0", cpu="1", group="ns/b", node="n0")],
        [group("ns/b", 1, queue="q", phase="Running"), group("ns/empty", 2, queue="q", phase="Inqueue")],
        [queue("q")],
    ),
    "another scheduler's pod pending": lambda: snapshot(
        [node("n0", cpu="4"), node("n1", cpu="4")],
        [pod("ns/theirs", cpu="1", managed=False), pod("ns/ours", cpu="3", node="n1")],
    ),
    "a full cluster": lambda: snapshot(
        [node("n0", cpu="2")],
        [pod("ns/x", cpu="2", node="n0"), pod("ns/done", cpu="1", phase="Succeeded")],
    ),
    "no pods": lambda: snapshot([node("n0", cpu="2"), node("n1", cpu="2"), node("n2", cpu="2")]),
}


@pytest.fixture(autouse=True)
def _forgotten() -> Any:
    idle.forget()
    yield
    idle.forget()


@pytest.mark.parametrize("policy_name", sorted(POLICIES))
@pytest.mark.parametrize("cluster", sorted(CLUSTERS))
def test_the_decision_is_solves(cluster: str, policy_name: str) -> None:
    snap, policy = CLUSTERS[cluster](), POLICIES[policy_name]
    assert idle.nothing_to_place(snap)
    first = idle.decision(snap, policy, fresh=_unhurried)
    again = idle.decision(snap, policy, fresh=_unhurried)
    data = _same(first, _unhurried(snap, policy))
    _same(again, first)
    assert data["bindings"] == data["evictions"] == data["nominations"] == data["podgroups"] == []


def _counting() -> tuple[list[Snapshot], Callable[..., Decision]]:
    calls: list[Snapshot] = []

    def fresh(snap: Snapshot, policy: Policy, **kwargs: Any) -> Decision:
        calls.append(snap)
        return _unhurried(snap, policy, **kwargs)

    return calls, fresh


def test_reused_for_the_same_policy_and_node_count_only() -> None:
    calls, fresh = _counting()
    policy = Policy(time_limit_s=1.0)
    two, other_two, three = _bound_only(2), CLUSTERS["another scheduler's pod pending"](), _bound_only(3)
    idle.decision(two, policy, fresh=fresh)
    _same(idle.decision(other_two, policy, fresh=fresh), _unhurried(other_two, policy))
    assert calls == [two]
    _same(idle.decision(three, policy, fresh=fresh), _unhurried(three, policy))
    assert calls == [two, three]
    longer = Policy(time_limit_s=10.0)
    _same(idle.decision(three, longer, fresh=fresh), _unhurried(three, longer))
    assert calls == [two, three, three]


@pytest.mark.parametrize(
    "waiting",
    [
        pod("ns/p", cpu="1"),
        pod("ns/gated", cpu="1", gates=["example.com/wait"]),
        pod("ns/g-0", cpu="1", group="ns/g"),
    ],
    ids=["a pending pod", "a gated pod", "a gang's pod"],
)
def test_a_pending_pod_of_ours_is_something_to_place(waiting: Any) -> None:
    snap = snapshot([node("n0", cpu="4")], [waiting], [group("ns/g", 1)])
    assert not idle.nothing_to_place(snap)
    with pytest.raises(ValueError):
        idle.decision(snap, Policy(time_limit_s=1.0))


@settings(max_examples=25, deadline=None)
@given(
    st.integers(min_value=1, max_value=4),
    st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4), st.integers(0, 1)), max_size=6),
    st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4), st.integers(0, 1)), max_size=6),
    st.sampled_from(sorted(POLICIES)),
)
def test_any_cluster_with_nothing_pending_gets_solves_decision(
    nodes: int, first: list[tuple[int, int, int]], second: list[tuple[int, int, int]], policy_name: str
) -> None:
    """The decision kept for one cluster is the one solve makes for another of as many nodes."""
    policy = POLICIES[policy_name]

    def cluster(bound: list[tuple[int, int, int]], tag: str) -> Snapshot:
        pods = [
            pod(f"ns/{tag}{i}", cpu=str(cpu), gpus=gpus, node=f"n{where % nodes}", priority=i)
            for i, (where, cpu, gpus) in enumerate(bound)
        ]
        return snapshot([node(f"n{i}", cpu="8", gpus=2) for i in range(nodes)], pods)

    idle.forget()
    idle.decision(cluster(first, "a"), policy, fresh=_unhurried)
    later = cluster(second, "b")
    _same(idle.decision(later, policy, fresh=_unhurried), _unhurried(later, policy))


def _live_cycle() -> Any:
    return load_script("benchmarks/live_cycle.py", "live_cycle")


def test_the_live_schedulers_follow_ups_build_no_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    from vcsat.adapters.live.scheduler import Scheduler

    solve_module = importlib.import_module("vcsat.solver.solve")
    built: list[int] = []
    real = solve_module.build_problem

    def counted(snap: Snapshot, policy: Policy) -> Any:
        built.append(len(snap.pods))
        return real(snap, policy)

    monkeypatch.setattr(solve_module, "build_problem", counted)
    kube = _live_cycle()._AcceptingKube()
    scheduler = Scheduler(kube, policy=Policy(time_limit_s=1.0), early_min_pending=0)
    kube.store = scheduler.store
    objects = {
        "Node": [
            {
                "kind": "Node",
                "apiVersion": "v1",
                "metadata": {"name": f"n{i}", "resourceVersion": "1"},
                "status": {
                    "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
            for i in range(3)
        ],
        "Pod": [
            {
                "kind": "Pod",
                "apiVersion": "v1",
                "metadata": {"name": f"p{i}", "namespace": "ns", "resourceVersion": "1"},
                "spec": {
                    "schedulerName": "vcsat",
                    "nodeName": f"n{i}",
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                },
                "status": {"phase": "Running"},
            }
            for i in range(2)
        ],
    }
    for kind in scheduler.store._kinds:
        scheduler.store.replace(kind, objects.get(kind, []))
    try:
        decisions = [scheduler.run_cycle(wait=True).decision for _ in range(3)]
    finally:
        scheduler.applier.close()
    assert built == [2]  # the first cycle solves, the next two reuse its decision
    snap = scheduler.last.snapshot if scheduler.last is not None else None
    assert snap is not None and idle.nothing_to_place(snap)
    for made in decisions:
        _same(made, solve(snap, scheduler.policy))
