"""The live scheduler reuses last cycle's conversion of unchanged objects (``memo``): the snapshot
must be exactly what a fresh conversion of the same objects gives, whatever changed between."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from vcsat.adapters.convert.reuse import ConversionMemo
from vcsat.adapters.convert.snapshot import snapshot_from_objects


def _node(name: str, cpu: str = "8") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def _pod(name: str, *, group: str | None = None, node: str | None = None, priority_class: str = "") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    if group:
        metadata["annotations"] = {"scheduling.k8s.io/group-name": group}
    spec: dict[str, Any] = {
        "schedulerName": "vcsat",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
    }
    if node:
        spec["nodeName"] = node
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _podgroup(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"minMember": 1},
    }


def _priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def _start() -> list[dict[str, Any]]:
    return [
        _node("a"),
        _node("b"),
        _podgroup("g"),
        _priority_class("high", 100),
        _pod("p0", group="g"),
        _pod("p1", group="g", node="a"),
        _pod("p2", node="b", priority_class="high"),
        _pod("p3", priority_class="high"),
    ]


def _replace(objects: list[dict[str, Any]], name: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Replace the object named ``name`` by a changed copy (as an informer cache does)."""
    for index, obj in enumerate(objects):
        if obj["metadata"]["name"] == name:
            fresh = copy.deepcopy(obj)
            change(fresh)
            objects[index] = fresh
            return
    raise AssertionError(name)


def _drop(objects: list[dict[str, Any]], name: str) -> None:
    objects[:] = [obj for obj in objects if obj["metadata"]["name"] != name]


CHANGES: dict[str, Callable[[list[dict[str, Any]]], None]] = {
    "nothing": lambda objects: None,
    "pod-bound": lambda objects: _replace(objects, "p0", lambda pod: pod["spec"].update(nodeName="b")),
    "podgroup-deleted": lambda objects: _drop(objects, "g"),
    "node-deleted": lambda objects: _drop(objects, "a"),
    "node-resized": lambda objects: _replace(objects, "b", lambda node: node["status"]["allocatable"].update(cpu="2")),
    "priority-changed": lambda objects: _replace(objects, "high", lambda pc: pc.update(value=5)),
    "priority-class-deleted": lambda objects: _drop(objects, "high"),
    "pod-deleted": lambda objects: _drop(objects, "p3"),
    "pod-added": lambda objects: objects.append(_pod("p4", group="g")),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_reused_conversion_equals_a_fresh_one(change: str) -> None:
    memo = ConversionMemo()
    objects = _start()
    first = snapshot_from_objects(objects, strict=False, memo=memo)
    assert first == snapshot_from_objects(objects, strict=False)
    CHANGES[change](objects)
    again = snapshot_from_objects(objects, strict=False, memo=memo)
    assert again == snapshot_from_objects(objects, strict=False)
    # And back: the memo holds only what the last call saw.
    assert snapshot_from_objects(_start(), strict=False, memo=memo) == first


def test_unchanged_objects_are_not_converted_again() -> None:
    memo = ConversionMemo()
    objects = _start()
    first = snapshot_from_objects(objects, strict=False, memo=memo)
    _replace(objects, "p0", lambda pod: pod["spec"].update(nodeName="b"))
    again = snapshot_from_objects(objects, strict=False, memo=memo)
    before = {pod.key: pod for pod in first.pods}
    for pod in again.pods:
        assert (pod is before[pod.key]) == (pod.key != "ns/p0")
