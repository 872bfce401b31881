"""Pods that must not be placed whatever the room (scheduling gates, ``spec.resourceClaims``) and
lone pods' queues (``scheduling.volcano.sh/queue-name``): through the converter, the solve (model,
greedy and decode) and the validator."""

from __future__ import annotations

from typing import Any

import pytest
from builders import bind, decision, group, node, pod, queue, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st
from test_objects import k8s_node, k8s_pod, k8s_podgroup, k8s_queue

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.errors import InputError
from vcsat.model import Decision, Policy, Snapshot
from vcsat.solver.greedy import greedy
from vcsat.solver.problem import build_problem
from vcsat.solver.solve import solve
from vcsat.solver.validator.check import check

POLICY = Policy(time_limit_s=5)


def run(snap: Snapshot) -> tuple[Decision, dict[str, tuple[str, str, str]]]:
    result = solve(snap, POLICY)
    assert check(snap, result, POLICY) == []
    return result, {o.podgroup: (o.phase, o.reason, o.message) for o in result.podgroups}


def placed(result: Decision) -> list[str]:
    return sorted(b.pod for b in result.bindings)


# --- scheduling gates -------------------------------------------------------------------------


def test_a_gated_lone_pod_waits_and_names_its_gates() -> None:
    snap = snapshot(nodes=[node("n1")], pods=[pod("ns/p", gates=["example.com/quota", "kueue.x-k8s.io/admission"])])
    result, outcomes = run(snap)
    assert placed(result) == []
    phase, reason, message = outcomes["ns/p"]
    assert (phase, reason) == ("Pending", "SchedulingGated")
    assert "example.com/quota" in message and "kueue.x-k8s.io/admission" in message


@pytest.mark.parametrize(
    ("gated", "min_member", "expected", "reason"),
    [
        (1, 3, [], "SchedulingGated"),  # two free pods cannot make a gang of three
        (1, 2, ["ns/g-1", "ns/g-2"], ""),  # the two free pods make the gang; the gated one waits
        (0, 3, ["ns/g-0", "ns/g-1", "ns/g-2"], ""),
        (3, 1, [], "SchedulingGated"),
    ],
)
def test_gated_pods_count_for_no_gang(gated: int, min_member: int, expected: list[str], reason: str) -> None:
    pods = [pod(f"ns/g-{i}", group="ns/g", gates=["hold"] if i < gated else []) for i in range(3)]
    snap = snapshot(nodes=[node("n1", cpu="16")], pods=pods, groups=[group("ns/g", min_member)])
    result, outcomes = run(snap)
    assert placed(result) == expected
    assert outcomes["ns/g"][1] == reason


def test_the_greedy_never_places_a_gated_pod() -> None:
    snap = snapshot(nodes=[node("n1")], pods=[pod("ns/a", gates=["g"]), pod("ns/b")])
    problem = build_problem(snap, POLICY)
    hint = greedy(problem)
    names = {p.key for c, k in hint.count.items() if k for p in problem.classes[c].pods}
    assert names == {"ns/b"}


def test_admission_leaves_gated_pods_out_of_the_need() -> None:
    """Volcano deducts gated pods from what a group reserves: a 6-cpu group with 4 cpu gated asks
    only 2 of a 4-cpu cluster, so it is admitted."""
    pods = [pod("ns/g-0", cpu="2", group="ns/g"), pod("ns/g-1", cpu="4", group="ns/g", gates=["g"])]
    snap = snapshot(nodes=[node("n1", cpu="4")], pods=pods, groups=[group("ns/g", 1, min_resources={"cpu": "6"})])
    from vcsat.solver.enqueue import admit

    assert admit(snap, Policy(overcommit_factor=1.0))["ns/g"].admitted


# --- resource claims --------------------------------------------------------------------------


def test_a_pod_with_resource_claims_is_not_placed_and_says_why() -> None:
    snap = snapshot(nodes=[node("n1")], pods=[pod("ns/dra", resource_claims=["gpu-claim"]), pod("ns/plain")])
    result, outcomes = run(snap)
    assert placed(result) == ["ns/plain"]
    phase, reason, message = outcomes["ns/dra"]
    assert (phase, reason) == ("Pending", "Unschedulable")
    assert "resourceClaims" in message and "gpu-claim" in message and "not supported by vcsat" in message


# --- the validator ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("held", "rule"),
    [
        (pod("ns/p", gates=["g"]), "SchedulingGated"),
        (pod("ns/p", resource_claims=["c"]), "ResourceClaimsUnsupported"),
    ],
)
def test_check_rejects_placing_a_held_pod(held: Any, rule: str) -> None:
    snap = snapshot(nodes=[node("n1")], pods=[held])
    made = decision(snap, bindings=[bind("ns/p", "n1")])
    assert rule in {v.rule for v in check(snap, made)}


def test_check_rejects_a_lone_pod_over_its_annotated_queue() -> None:
    snap = snapshot(
        nodes=[node("n1")],
        pods=[pod("ns/a", cpu="2", queue_name="small"), pod("ns/b", cpu="2", queue_name="small")],
        queues=[queue("small", capability={"cpu": "3"})],
    )
    made = decision(snap, bindings=[bind("ns/a", "n1"), bind("ns/b", "n1")])
    assert [v.rule for v in check(snap, made)] == ["QueueOverCapability"]
    assert check(snap, decision(snap, bindings=[bind("ns/a", "n1")])) == []


# --- lone pods' queue -------------------------------------------------------------------------


def test_a_lone_pods_annotated_queue_caps_it() -> None:
    pods = [pod(f"ns/p{i}", cpu="1", queue_name="small") for i in range(3)]
    snap = snapshot(nodes=[node("n1")], pods=pods, queues=[queue("small", capability={"cpu": "2"})])
    result, outcomes = run(snap)
    assert len(placed(result)) == 2
    assert sorted(reason for _, reason, _ in outcomes.values()) == ["", "", "QueueOverused"]


def test_a_lone_pods_annotated_queue_that_is_closed_places_nothing() -> None:
    snap = snapshot(nodes=[node("n1")], pods=[pod("ns/p", queue_name="shut")], queues=[queue("shut", open=False)])
    result, outcomes = run(snap)
    assert placed(result) == [] and outcomes["ns/p"][1] == "QueueClosed"


def test_a_lone_pod_naming_a_missing_queue_waits_as_volcano_leaves_it() -> None:
    snap = snapshot(nodes=[node("n1")], pods=[pod("ns/p", queue_name="nope")])
    result, outcomes = run(snap)
    assert placed(result) == []
    _, reason, message = outcomes["ns/p"]
    assert reason == "QueueNotFound" and "scheduling.volcano.sh/queue-name" in message and "nope" in message


def test_a_lone_pods_queue_is_its_usage() -> None:
    from vcsat.solver.shares.deserved import queue_usage

    snap = snapshot(nodes=[node("n1")], pods=[pod("ns/p", cpu="2", node="n1", queue_name="q")], queues=[queue("q")])
    assert queue_usage(snap)["q"]["cpu"] == 2000


# --- through the converter --------------------------------------------------------------------


def test_the_converter_reads_gates_claims_and_the_queue_annotation() -> None:
    objects = [
        k8s_node(),
        k8s_queue("q"),
        k8s_pod(
            "p",
            annotations={"scheduling.volcano.sh/queue-name": "q"},
            spec__schedulingGates=[{"name": "a"}, {"name": "b"}],
            spec__resourceClaims=[{"name": "gpu", "resourceClaimName": "c"}],
        ),
    ]
    (converted,) = snapshot_from_objects(objects, source="t.yaml").pods
    assert converted.scheduling_gates == ("a", "b")
    assert converted.resource_claims == ("gpu",)
    assert converted.queue_name == "q"


@pytest.mark.parametrize(
    ("gates", "field"),
    [
        ([{"nom": "x"}], "spec.schedulingGates[0].name"),
        (["x"], "spec.schedulingGates[0]"),
        ({}, "spec.schedulingGates"),
    ],
)
def test_the_converter_refuses_malformed_gates(gates: Any, field: str) -> None:
    with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
        snapshot_from_objects([k8s_node(), k8s_pod("p", spec__schedulingGates=gates)], source="t.yaml")


def test_a_gated_pod_from_a_file_is_not_bound() -> None:
    objects = [
        k8s_node(),
        k8s_podgroup("g", minMember=1),
        k8s_pod("p", group="g", spec__schedulingGates=[{"name": "wait"}]),
    ]
    snap = snapshot_from_objects(objects, source="t.yaml")
    result, outcomes = run(snap)
    assert result.bindings == [] and outcomes["ns/g"][1] == "SchedulingGated"


# --- property ---------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    marks=st.lists(st.sampled_from(["", "gate", "claim"]), min_size=1, max_size=8),
    sizes=st.lists(st.integers(1, 3), min_size=1, max_size=4),
    min_members=st.lists(st.integers(1, 3), min_size=4, max_size=4),
    cap=st.integers(1, 6),
)
def test_held_pods_are_never_placed_and_decisions_check(
    marks: list[str], sizes: list[int], min_members: list[int], cap: int
) -> None:
    pods = []
    groups = []
    index = 0
    for g, size in enumerate(sizes):
        key = f"ns/g{g}"
        groups.append(group(key, min(size, min_members[g])))
        for i in range(size):
            mark = marks[index % len(marks)]
            index += 1
            pods.append(
                pod(
                    f"{key}-{i}",
                    group=key,
                    gates=["g"] if mark == "gate" else [],
                    resource_claims=["c"] if mark == "claim" else [],
                )
            )
    lone = [
        pod(f"ns/lone{i}", queue_name="capped", gates=["g"] if marks[i % len(marks)] == "gate" else [])
        for i in range(3)
    ]
    snap = snapshot(
        nodes=[node("n1", cpu="4"), node("n2", cpu="4")],
        pods=[*pods, *lone],
        groups=groups,
        queues=[queue("capped", capability={"cpu": cap})],
    )
    result = solve(snap, POLICY)
    assert check(snap, result, POLICY) == []
    held = {p.key for p in snap.pods if p.held}
    assert not held & {b.pod for b in result.bindings}


def test_a_file_with_lone_pods_in_a_capped_queue_keeps_the_cap() -> None:
    """The issue's case as a user writes it: three 1-cpu lone pods annotated for a queue capped at
    2 cpu; two are placed, not three."""
    annotation = {"scheduling.volcano.sh/queue-name": "small"}
    objects = [
        k8s_node(),
        k8s_queue("small", capability={"cpu": "2"}),
        *(k8s_pod(f"p{i}", annotations=annotation) for i in range(3)),
    ]
    snap = snapshot_from_objects(objects, source="t.yaml")
    result, outcomes = run(snap)
    assert len(result.bindings) == 2
    assert sorted(reason for _, reason, _ in outcomes.values()) == ["", "", "QueueOverused"]
