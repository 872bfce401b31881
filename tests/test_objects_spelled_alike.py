"""Objects that spell their specs alike are read once: each must still come out as if read alone.

The converter reads the first pod (PodGroup) of each spec spelling field by field and gives the
others its spec-derived fields (:mod:`vcsat.adapters.convert.spelling`); what is the object's own
(names, labels, annotations, node, phase, times, GPU indices, ephemeral claims) is read per object.
"""

from __future__ import annotations

import copy
import datetime
from typing import Any

import pytest

from tests.test_objects import k8s_node, k8s_pod, k8s_podgroup, k8s_queue
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.convert.spelling import spelling
from vcsat.adapters.errors import InputError

Obj = dict[str, Any]

DIFFERENT_VALUES = [
    pytest.param(1, 1.0, id="int-float"),
    pytest.param(1, True, id="int-bool"),
    pytest.param("1", 1, id="text-number"),
    pytest.param(None, float("nan"), id="null-nan"),
    pytest.param(None, float("inf"), id="null-inf"),
    pytest.param({"a": None}, {"a": float("nan")}, id="nested-null-nan"),
    pytest.param("2025-06-01T08:00:00+00:00", datetime.datetime(2025, 6, 1, 8, tzinfo=datetime.UTC), id="time"),
    pytest.param("2025-06-01", datetime.date(2025, 6, 1), id="date"),
    pytest.param([1, 2], [2, 1], id="order"),
    pytest.param({"1": 1}, {1: 1}, id="key-type"),
    pytest.param(2**70, float(2**70), id="big-int"),
]


@pytest.mark.parametrize(("a", "b"), DIFFERENT_VALUES)
def test_different_values_are_spelled_differently(a: Any, b: Any) -> None:
    assert spelling(a) != spelling(b)
    assert spelling(a) == spelling(copy.deepcopy(a))


SPEC: Obj = {
    "containers": [
        {"name": "w", "image": "img", "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "1"}}},
    ],
    "schedulerName": "vcsat",
    "tolerations": [{"operator": "Exists"}],
    "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}],
}


def _pod(name: str, **extra: Any) -> Obj:
    pod = k8s_pod(name, **extra)
    pod["spec"] = {**copy.deepcopy(SPEC), **pod["spec"]}
    pod["spec"].pop("containers", None)
    pod["spec"]["containers"] = copy.deepcopy(SPEC["containers"])
    return pod


OWN_FIELDS = [
    _pod("plain"),
    _pod("bound", node="n2", annotations={"vcsat.io/gpu-ids": "1"}, status={"phase": "Running"}),
    _pod("grouped", group="pg", annotations={"volcano.sh/task-spec": "worker"}),
    _pod("labelled", metadata__labels={"app": "x"}, metadata__uid="u-1"),
    _pod("not-preemptable", annotations={"volcano.sh/preemptable": "false"}),
    _pod("queued", annotations={"scheduling.volcano.sh/queue-name": "q"}),
    _pod("old", created="2025-06-01T08:00:00Z", metadata__deletionTimestamp="2025-06-02T08:00:00Z"),
    _pod("nominated", status={"nominatedNodeName": "n1"}),
    _pod("finished", node="n1", status={"phase": "Succeeded"}, annotations={"vcsat.io/gpu-ids": "0"}),
]
CONTEXT = [k8s_node("n1", gpus=2), k8s_node("n2", gpus=2), k8s_podgroup("pg", queue="q"), k8s_queue("q")]


def test_pods_spelled_alike_come_out_as_each_read_alone() -> None:
    together = snapshot_from_objects([*CONTEXT, *copy.deepcopy(OWN_FIELDS)], source="t.yaml")
    for raw in OWN_FIELDS:
        alone = snapshot_from_objects([*CONTEXT, copy.deepcopy(raw)], source="t.yaml")
        key = f"ns/{raw['metadata']['name']}"
        assert together.pod_by_key[key] == alone.pod_by_key[key]
        assert together.pod_by_key[key].claims == (f"{raw['metadata']['name']}-scratch",)


def test_pods_spelled_alike_share_their_spec_dicts_and_keep_their_own_labels() -> None:
    together = snapshot_from_objects([*CONTEXT, *copy.deepcopy(OWN_FIELDS)], source="t.yaml")
    first, *others = together.pods
    for pod in others:
        assert pod.requests is first.requests and pod.node_selector is first.node_selector
        assert pod.labels is not first.labels


def test_pod_affinity_terms_are_read_with_each_pods_own_labels() -> None:
    term = {"labelSelector": {}, "topologyKey": "kubernetes.io/hostname", "matchLabelKeys": ["app"]}
    pods = [
        _pod(
            name,
            metadata__labels={"app": name},
            spec__affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        )
        for name in ("a", "b")
    ]
    together = snapshot_from_objects([*CONTEXT, *copy.deepcopy(pods)], source="t.yaml")
    for raw in pods:
        alone = snapshot_from_objects([*CONTEXT, copy.deepcopy(raw)], source="t.yaml")
        key = f"ns/{raw['metadata']['name']}"
        assert together.pod_by_key[key] == alone.pod_by_key[key]
    assert together.pod_by_key["ns/a"].pod_affinity != together.pod_by_key["ns/b"].pod_affinity


OWN_ERRORS = [
    pytest.param(_pod("p2", status={"phase": "Bogus"}), "status.phase", id="phase"),
    pytest.param(_pod("p2", annotations={"volcano.sh/preemptable": "maybe"}), "preemptable", id="preemptable"),
    pytest.param(_pod("p2", node="n1", annotations={"vcsat.io/gpu-ids": "0,1"}), "gpu-ids", id="gpu-ids"),
    pytest.param(_pod("p2", group="missing"), "unknown PodGroup", id="group"),
    pytest.param(_pod("p2", node="gone"), "unknown Node", id="node"),
    pytest.param(_pod("p2", metadata__uid=7), "metadata.uid", id="uid"),
    pytest.param(_pod("p2", created="yesterday"), "creationTimestamp", id="created"),
    pytest.param(_pod("p2", metadata__labels={"a": 1}), "metadata.labels", id="labels"),
    pytest.param(_pod("p2", annotations={"volcano.sh/task-spec": 3}), "metadata.annotations", id="annotations"),
]


@pytest.mark.parametrize(("bad", "field"), OWN_ERRORS)
def test_a_pod_spelled_like_a_good_one_still_fails_on_its_own_fields(bad: Obj, field: str) -> None:
    with pytest.raises(InputError) as alone:
        snapshot_from_objects([*CONTEXT, copy.deepcopy(bad)], source="t.yaml")
    with pytest.raises(InputError) as after_a_good_one:
        snapshot_from_objects([*CONTEXT, _pod("p1"), copy.deepcopy(bad)], source="t.yaml")
    assert str(after_a_good_one.value) == str(alone.value)
    assert "Pod ns/p2" in str(alone.value) and field in str(alone.value)


def test_podgroups_spelled_alike_come_out_as_each_read_alone() -> None:
    groups = [
        k8s_podgroup("a", queue="q", minMember=2),
        {**k8s_podgroup("b", queue="q", minMember=2), "status": {"phase": "Running"}},
        {
            **k8s_podgroup("c", queue="q", minMember=2),
            "status": {
                "phase": "Inqueue",
                "conditions": [{"type": "Inqueued", "status": "True", "lastTransitionTime": "2025-06-01T08:00:00Z"}],
            },
        },
        _with(
            k8s_podgroup("d", queue="q", minMember=2),
            metadata={
                "name": "d",
                "namespace": "other",
                "annotations": {"vcsat.io/scheduler-name": "other"},
                "creationTimestamp": "2025-06-01T09:00:00Z",
            },
        ),
    ]
    together = snapshot_from_objects([k8s_queue("q"), *copy.deepcopy(groups)], source="t.yaml")
    for raw in groups:
        alone = snapshot_from_objects([k8s_queue("q"), copy.deepcopy(raw)], source="t.yaml")
        assert alone.podgroups[0] in together.podgroups


def test_a_podgroup_spelled_like_a_good_one_still_fails_on_its_own_status() -> None:
    bad = {**k8s_podgroup("b", queue="q"), "status": {"phase": 3}}
    with pytest.raises(InputError, match=r"PodGroup ns/b: status\.phase"):
        snapshot_from_objects([k8s_queue("q"), k8s_podgroup("a", queue="q"), bad], source="t.yaml")


def _with(obj: Obj, **fields: Any) -> Obj:
    return {**obj, **fields}


NODES = [
    k8s_node("a"),
    k8s_node("b"),
    k8s_node("c", gpus=2),
    k8s_node("d", status={"allocatable": None, "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}),
    k8s_node("e", metadata__labels={"zone": "z1"}, spec={"unschedulable": True}),
    k8s_node("f", status={"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110", "zero": "0"}}),
]


def test_nodes_spelled_alike_come_out_as_each_read_alone() -> None:
    together = snapshot_from_objects(copy.deepcopy(NODES), source="t.yaml")
    by_name = {node.name: node for node in together.nodes}
    for raw in NODES:
        alone = snapshot_from_objects([copy.deepcopy(raw)], source="t.yaml")
        assert by_name[raw["metadata"]["name"]] == alone.nodes[0]
    assert by_name["b"].allocatable is by_name["a"].allocatable
    assert by_name["c"].allocatable != by_name["a"].allocatable


@pytest.mark.parametrize(
    ("allocatable", "field"),
    [
        pytest.param({"cpu": "eight"}, "status.allocatable.cpu: not a quantity", id="quantity"),
        pytest.param({"cpu": "-1"}, "status.allocatable.cpu: must not be negative", id="negative"),
        pytest.param(["cpu"], "status.allocatable: must be a mapping", id="not a mapping"),
    ],
)
def test_a_node_after_good_ones_still_fails_on_its_own_allocatable(allocatable: Any, field: str) -> None:
    bad = k8s_node("z", status={"allocatable": allocatable})
    with pytest.raises(InputError) as alone:
        snapshot_from_objects([copy.deepcopy(bad)], source="t.yaml")
    with pytest.raises(InputError) as after_good_ones:
        snapshot_from_objects([*copy.deepcopy(NODES), copy.deepcopy(bad)], source="t.yaml")
    assert str(after_good_ones.value) == str(alone.value)
    assert "Node z" in str(alone.value) and field in str(alone.value) and "\n" not in str(alone.value)
