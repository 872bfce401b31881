"""The memo keeps the very same model object when an object changes only in what no reader reads
(``adapters/convert/reuse.py``): a status the scheduler wrote, a heartbeat, a new version alone.
Any change to what the model holds gives a new object; every snapshot equals a fresh conversion."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert.reuse import ConversionMemo, same_value
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.model import Snapshot

_Change = Callable[[dict[str, Any]], None]


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "labels": {"rack": "r1"}},
        "spec": {},
        "status": {
            "allocatable": {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "4", "pods": "110"},
            "conditions": [
                {"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-01T00:00:00Z"},
                {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2026-01-01T00:00:00Z"},
            ],
        },
    }


def _podgroup(name: str, phase: str = "Pending") -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if phase == "Inqueue":
        status["conditions"] = [
            {"type": "Inqueued", "status": "True", "reason": "Admitted", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ]
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"minMember": 2, "queue": "q"},
        "status": status,
    }


def _pod(name: str, group: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "vcsat",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}}],
    }
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "resourceVersion": "1",
        "labels": {"app": "x"},
        "annotations": {"scheduling.k8s.io/group-name": group},
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }
    status: dict[str, Any] = {"phase": "Pending"}
    if node is not None:
        spec["nodeName"] = node
        metadata["annotations"]["vcsat.io/gpu-ids"] = "0"
        status["phase"] = "Running"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def _queue() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q", "uid": "uid-q", "resourceVersion": "1"},
        "spec": {"weight": 1},
        "status": {"state": "Open"},
    }


def _start() -> list[dict[str, Any]]:
    return [
        _node("a"),
        _queue(),
        _podgroup("waiting"),
        _podgroup("admitted", "Inqueue"),
        _podgroup("running", "Running"),
        _pod("w0", "waiting"),
        _pod("r0", "running", node="a"),
    ]


def _set(path: str, value: Any) -> _Change:
    """Sets ``a.b.c`` (creating mappings on the way)."""

    def change(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = obj
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = value

    return change


def _condition(kind: str, status: str, reason: str, message: str, since: str) -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": since}


_UNSCHEDULABLE = _condition("PodScheduled", "False", "Unschedulable", "no room", "2026-01-01T00:01:00Z")
_SCHEDULED = _condition("Scheduled", "True", "Scheduled", "2 pod(s) placed", "2026-01-01T00:01:00Z")

# (object, change, whether the model value is the same object after it)
TABLE: dict[str, tuple[str, _Change, bool]] = {
    # what no reader reads: the same object
    "pod-version-only": ("w0", lambda obj: None, True),
    "pod-unschedulable-condition": ("w0", _set("status.conditions", [_UNSCHEDULABLE]), True),
    "pod-managed-fields": ("w0", _set("metadata.managedFields", [{"manager": "vcsat"}]), True),
    "pod-ip": ("r0", _set("status.podIP", "10.0.0.1"), True),
    "podgroup-running-count": ("running", _set("status.running", 2), True),
    "podgroup-scheduled-condition": ("running", _set("status.conditions", [_SCHEDULED]), True),
    "podgroup-pending-unschedulable": (
        "waiting",
        _set("status.conditions", [_condition("Unschedulable", "True", "NotEnoughResources", "x", "t")]),
        True,
    ),
    "podgroup-inqueue-message": (
        "admitted",
        _set(
            "status.conditions",
            [_condition("Inqueued", "True", "Admitted", "another message", "2026-01-01T00:00:00Z")],
        ),
        True,
    ),
    "podgroup-generation": ("running", _set("metadata.generation", 3), True),
    "node-heartbeat": (
        "a",
        _set("status.conditions", [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-01T00:00:10Z"}]),
        True,
    ),
    "node-images": ("a", _set("status.images", [{"names": ["x"], "sizeBytes": 1}]), True),
    # what the model holds: a new object
    "pod-phase": ("w0", _set("status.phase", "Failed"), False),
    "pod-nominated": ("w0", _set("status.nominatedNodeName", "a"), False),
    "pod-bound": ("w0", _set("spec.nodeName", "a"), False),
    "pod-label": ("w0", _set("metadata.labels", {"app": "y"}), False),
    "pod-group-annotation": ("w0", _set("metadata.annotations", {"scheduling.k8s.io/group-name": "running"}), False),
    "pod-deleting": ("r0", _set("metadata.deletionTimestamp", "2026-01-01T00:02:00Z"), False),
    "pod-gpu-ids": ("r0", lambda obj: obj["metadata"]["annotations"].update({"vcsat.io/gpu-ids": "1"}), False),
    "pod-created": ("w0", _set("metadata.creationTimestamp", "2026-01-01T00:00:01Z"), False),
    "pod-uid": ("w0", _set("metadata.uid", "recreated"), False),
    "podgroup-admitted": ("waiting", _set("status.phase", "Inqueue"), False),
    "podgroup-inqueued-again": (
        "admitted",
        _set("status.conditions", [_condition("Inqueued", "True", "Admitted", "", "2026-01-01T00:05:00Z")]),
        False,
    ),
    "podgroup-min-member": ("running", _set("spec.minMember", 1), False),
    "podgroup-scheduler-name": ("running", _set("metadata.annotations", {"vcsat.io/scheduler-name": "other"}), False),
    "node-not-ready": ("a", _set("status.conditions", [{"type": "Ready", "status": "False"}]), False),
    "node-resized": ("a", _set("status.allocatable", {"cpu": "4", "pods": "110"}), False),
    "node-label": ("a", _set("metadata.labels", {"rack": "r2"}), False),
    "node-tainted": ("a", _set("spec.taints", [{"key": "k", "effect": "NoSchedule"}]), False),
}


def _changed(objects: list[dict[str, Any]], name: str, change: _Change, version: str) -> list[dict[str, Any]]:
    """The objects with ``name`` replaced by a changed copy with a new resourceVersion, as a watch shows it."""
    out = []
    for obj in objects:
        if obj["metadata"]["name"] == name:
            obj = copy.deepcopy(obj)
            change(obj)
            obj["metadata"]["resourceVersion"] = version
        out.append(obj)
    return out


def _values(snapshot: Snapshot) -> dict[str, Any]:
    """The memo's model values of the snapshot by name: nodes, pods, groups (queues and priority
    classes, a handful, are read afresh every call)."""
    out: dict[str, Any] = {node.name: node for node in snapshot.nodes}
    out.update({pod.name: pod for pod in snapshot.pods})
    out.update({group.name: group for group in snapshot.podgroups})
    return out


def _convert(objects: list[dict[str, Any]], memo: ConversionMemo | None = None) -> Snapshot:
    return snapshot_from_objects(objects, strict=False, now=1.0e9, memo=memo)


@pytest.mark.parametrize("case", sorted(TABLE))
def test_a_change_keeps_the_model_object_exactly_when_the_model_value_is_the_same(case: str) -> None:
    name, change, kept = TABLE[case]
    memo = ConversionMemo()
    objects = _start()
    first = _values(_convert(objects, memo))
    changed = _changed(objects, name, change, "2")
    snapshot = _convert(changed, memo)
    fresh = _convert(changed)
    assert snapshot == fresh
    assert snapshot.model_dump_json() == fresh.model_dump_json()
    after = _values(snapshot)
    assert (after[name] is first[name]) == kept, case
    # Everything else is kept as well: the change reaches no other object.
    assert all(after[other] is first[other] for other in after if other != name), case


def test_same_value_compares_fields_and_their_types() -> None:
    snapshot = _convert(_start())
    node = snapshot.nodes[0]
    assert same_value(node, node.model_copy())
    assert same_value(None, None)
    assert not same_value(node, None)
    assert not same_value(node, node.model_copy(update={"labels": {"rack": "r2"}}))
    pod = snapshot.pods[0]
    assert not same_value(pod, pod.model_copy(update={"priority": 0.0}))  # prints as 0.0, not 0
    assert not same_value(pod, snapshot.podgroups[0])
    assert not same_value([1], [1])  # no model value: never stands for another


# --- random status writes, heartbeats and real changes, cycle after cycle --------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(sorted(TABLE)), max_size=5), max_size=6))
def test_the_memos_snapshot_is_a_fresh_conversion_and_keeps_every_equal_value(cycles: list[list[str]]) -> None:
    """Changes of the table one after the other, several per cycle: the snapshot prints as a fresh
    conversion's, and a value equal to last cycle's is last cycle's very object."""
    memo = ConversionMemo()
    objects = _start()
    last = _values(_convert(objects, memo))
    version = 1
    for steps in cycles:
        for case in steps:
            version += 1
            name, change, _ = TABLE[case]
            objects = _changed(objects, name, change, str(version))
        snapshot = _convert(objects, memo)
        fresh = _convert(objects)
        assert snapshot.model_dump_json() == fresh.model_dump_json()
        now, fresh_values = _values(snapshot), _values(fresh)
        for key, value in now.items():
            before = last.get(key)
            if before is not None and same_value(before, fresh_values[key]):
                assert value is before, key
        last = now
