"""Incremental conversion (``adapters/convert/reuse.py``): across calls with one memo, unchanged
objects keep their converted values, and every snapshot equals a fresh conversion of the same
objects, whatever was added, changed or deleted in between."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert.pods import pod_context as real_context
from vcsat.adapters.convert.reuse import ConversionMemo, same_object
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.errors import InputError
from vcsat.model import Snapshot


def _meta(name: str, version: int | None, namespace: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if namespace is not None:
        metadata["namespace"] = namespace
    if version is not None:
        metadata["resourceVersion"] = str(version)
    return metadata


def _node(name: str, version: int | None = 1, cpu: str = "8") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {**_meta(name, version), "labels": {"rack": "r1"}},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "nvidia.com/gpu": "4", "pods": "110"}},
    }


def _pod(
    name: str, version: int | None = 1, *, group: str | None = None, node: str | None = None, gpus: int = 0
) -> dict[str, Any]:
    metadata = _meta(name, version, "ns")
    if group:
        metadata["annotations"] = {"scheduling.k8s.io/group-name": group}
    requests: dict[str, Any] = {"cpu": "1"}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    spec: dict[str, Any] = {
        "schedulerName": "vcsat",
        "priorityClassName": "high",
        "containers": [{"name": "c", "resources": {"requests": requests}}],
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _podgroup(name: str, version: int | None = 1, queue: str = "q") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": _meta(name, version, "ns"),
        "spec": {"minMember": 1, "queue": queue, "priorityClassName": "high"},
    }


def _queue(name: str, version: int | None = 1) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": _meta(name, version)}


def _priority_class(value: int, version: int | None = 1) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": _meta("high", version),
        "value": value,
    }


def _hypernode(nodes: list[str], version: int | None = 1) -> dict[str, Any]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": _meta("rack", version),
        "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]},
    }


def _fresh(objects: list[dict[str, Any]]) -> Snapshot:
    return snapshot_from_objects(objects, strict=False, now=1.0)


def _with_memo(objects: list[dict[str, Any]], memo: ConversionMemo) -> Snapshot:
    return snapshot_from_objects(objects, strict=False, now=1.0, memo=memo)


def _start() -> list[dict[str, Any]]:
    return [
        _node("a"),
        _node("b"),
        _queue("q"),
        _priority_class(100),
        _podgroup("g"),
        _hypernode(["a", "b"]),
        _pod("p0", group="g", gpus=1),
        _pod("p1", group="g", node="a", gpus=2),
        _pod("p2", node="b"),
    ]


def _relisted(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same objects as new dicts (an informer's relist): same uid and resourceVersion."""
    return copy.deepcopy(objects)


def _assumed(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """p0 shown bound while its binding is in flight: a copy with nodeName and GPU ids, same version."""
    out = []
    for obj in objects:
        if obj["metadata"]["name"] == "p0":
            obj = copy.deepcopy(obj)
            obj["spec"]["nodeName"] = "b"
            obj["metadata"].setdefault("annotations", {})["vcsat.io/gpu-ids"] = "0"
        out.append(obj)
    return out


def _unversioned(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """New dicts without resourceVersion (objects from a file), p2 moved to node a."""
    out = copy.deepcopy(objects)
    for obj in out:
        obj["metadata"].pop("resourceVersion", None)
    for obj in out:
        if obj["metadata"]["name"] == "p2":
            obj["spec"]["nodeName"] = "a"
    return out


def _class_changed(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [_priority_class(7, 2) if obj["kind"] == "PriorityClass" else obj for obj in objects]


def _queue_gone(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] != "Queue"]


def _node_gone(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["metadata"]["name"] != "a"]


def _group_gone(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] != "PodGroup"]


CASES = {
    # change: (objects after it, pods that are last call's very objects). A pod is converted again
    # when it or what its conversion reads changed, and kept when the value comes out the same
    # (p1, a bound GPU pod without vcsat.io/gpu-ids, takes the same indices: the same copy).
    "relist": (_relisted, {"ns/p0", "ns/p1", "ns/p2"}),
    "assumed-binding": (_assumed, {"ns/p1", "ns/p2"}),
    "unversioned-copies": (_unversioned, {"ns/p0", "ns/p1"}),
    "priority-class-changed": (_class_changed, set()),
    "queue-deleted": (_queue_gone, {"ns/p0", "ns/p1", "ns/p2"}),
    "node-deleted": (_node_gone, {"ns/p0", "ns/p2"}),
    "podgroup-deleted": (_group_gone, {"ns/p0", "ns/p1", "ns/p2"}),
}


def test_cases_equal_a_fresh_conversion_and_reuse_what_is_unchanged() -> None:
    for name, (change, reused) in CASES.items():
        memo = ConversionMemo()
        objects = _start()
        first = _with_memo(objects, memo)
        assert first == _fresh(objects), name
        changed = change(objects)
        again = _with_memo(changed, memo)
        assert again == _fresh(changed), name
        before = {pod.key: pod for pod in first.pods}
        assert {pod.key for pod in again.pods if pod is before.get(pod.key)} == reused, name


def test_the_memo_forgets_deleted_objects() -> None:
    memo = ConversionMemo()
    objects = _start()
    _with_memo(objects, memo)
    _with_memo([obj for obj in objects if obj["kind"] != "Pod"], memo)
    assert not any(kind == "Pod" for kind, _ in memo.values)
    assert len(memo.identified) == len(objects) - 3
    assert not any(found[1] is not None and found[1].kind == "Pod" for found in memo.identified.values())


def test_same_object_needs_uid_version_node_and_annotations() -> None:
    pod = _pod("p", 5, group="g")
    assert same_object(pod, pod)
    assert same_object(pod, copy.deepcopy(pod))
    assert not same_object(pod, _pod("p", 6, group="g"))
    assert not same_object(pod, _pod("p", 5, group="g", node="a"))
    assert not same_object(pod, _pod("p", 5, group="h"))
    assert not same_object(_pod("p", None), _pod("p", None))
    other_uid = copy.deepcopy(pod)
    other_uid["metadata"]["uid"] = "another"
    assert not same_object(pod, other_uid)


# --- random add / change / delete sequences ------------------------------------------------------

_NAMES = ["p0", "p1", "p2", "p3", "p4"]
_step = st.one_of(
    st.tuples(
        st.just("pod"),
        st.sampled_from(_NAMES),
        st.sampled_from([None, "g", "h"]),
        st.sampled_from([None, "a", "b"]),
        st.integers(0, 2),
    ),
    st.tuples(st.just("delete-pod"), st.sampled_from(_NAMES)),
    st.tuples(st.just("assume"), st.sampled_from(_NAMES), st.sampled_from(["a", "b"])),
    st.tuples(st.just("node"), st.sampled_from(["a", "b"]), st.sampled_from([None, "4", "8"])),
    st.tuples(st.just("podgroup"), st.sampled_from(["g", "h"]), st.sampled_from([None, "q", "r"])),
    st.tuples(st.just("queue"), st.sampled_from(["q", "r"]), st.booleans()),
    st.tuples(st.just("class"), st.sampled_from([None, 1, 100])),
    st.tuples(st.just("hypernode"), st.booleans()),
    st.tuples(st.just("relist")),
    st.tuples(st.just("broken"), st.sampled_from(_NAMES)),
)


class _Cluster:
    """An informer's cache: objects by (kind, name), replaced (never edited) on every change."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.version = 1

    def put(self, obj: dict[str, Any]) -> None:
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)
        self.objects[(obj["kind"], obj["metadata"]["name"])] = obj

    def apply(self, step: tuple[Any, ...]) -> None:
        kind = step[0]
        if kind == "pod":
            _, name, group, node, gpus = step
            self.put(_pod(name, group=group, node=node, gpus=gpus))
        elif kind == "delete-pod":
            self.objects.pop(("Pod", step[1]), None)
        elif kind == "assume":
            found = self.objects.get(("Pod", step[1]))
            if found is not None and not found["spec"].get("nodeName"):
                shown = copy.deepcopy(found)  # same version: only the scheduler's view changed
                shown["spec"]["nodeName"] = step[2]
                self.objects[("Pod", step[1])] = shown
        elif kind == "node":
            if step[2] is None:
                self.objects.pop(("Node", step[1]), None)
            else:
                self.put(_node(step[1], cpu=step[2]))
        elif kind == "podgroup":
            if step[2] is None:
                self.objects.pop(("PodGroup", step[1]), None)
            else:
                self.put(_podgroup(step[1], queue=step[2]))
        elif kind == "queue":
            if step[2]:
                self.put(_queue(step[1]))
            else:
                self.objects.pop(("Queue", step[1]), None)
        elif kind == "class":
            if step[1] is None:
                self.objects.pop(("PriorityClass", "high"), None)
            else:
                self.put(_priority_class(step[1]))
        elif kind == "hypernode":
            if step[1]:
                self.put(_hypernode(["a", "b"]))
            else:
                self.objects.pop(("HyperNode", "rack"), None)
        elif kind == "broken":  # a malformed pod: the call fails until it is replaced or deleted
            pod = _pod(step[1])
            pod["spec"]["priority"] = "high"
            self.put(pod)
        elif kind == "relist":
            self.objects = {key: copy.deepcopy(obj) for key, obj in self.objects.items()}


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(_step, max_size=4), min_size=1, max_size=6), st.booleans())
def test_any_sequence_of_changes_gives_a_fresh_conversions_snapshot(
    cycles: list[list[tuple[Any, ...]]], strict: bool
) -> None:
    _run(cycles, strict)


# --- the steady pod walk: last call's pod objects keep their values, the new ones are read -------

SEQUENCES: dict[str, list[list[tuple[Any, ...]]]] = {
    # name: cycles of steps (``_Cluster.apply``), converted after each cycle with one memo
    "pod-added": [[("pod", "p3", "g", None, 0)]],
    "pod-modified": [[("pod", "p2", None, "a", 0)]],
    "pod-deleted": [[("delete-pod", "p1")]],
    "binding-assumed": [[("assume", "p0", "b")]],
    "node-added-under-a-pod": [[("pod", "p3", None, "c", 0)], [("node", "c", "8")]],
    "node-deleted-under-a-pod": [[("node", "a", None)]],
    "node-modified": [[("node", "a", "4")]],
    "podgroup-added": [[("pod", "p3", "h", None, 0)], [("podgroup", "h", "q")]],
    "podgroup-deleted": [[("podgroup", "g", None)]],
    # carried pods naming a PodGroup and a node that both came in one call (both name sets read)
    "podgroup-and-node-added-at-once": [[("pod", "p3", "h", "c", 0)], [("podgroup", "h", "q"), ("node", "c", "8")]],
    # the node of a carried pod goes while a PodGroup comes: that pod is read again, others carried
    "node-gone-podgroup-added": [[("pod", "p3", "h", None, 0)], [("node", "a", None), ("podgroup", "h", "q")]],
    "queue-deleted": [[("queue", "q", False)]],
    "class-changed": [[("class", 1)]],
    "class-deleted": [[("class", None)]],
    "relist": [[("relist",)], []],
    # a call that fails after reading p1 with its node gone; the node is back for the next one
    "failed-call-between": [[("node", "a", None), ("broken", "p4")], [("node", "a", "8"), ("delete-pod", "p4")]],
    "failed-call-then-relist": [[("broken", "p4")], [("relist",), ("delete-pod", "p4")]],
}


def _run(cycles: list[list[tuple[Any, ...]]], strict: bool) -> None:
    """Each cycle's conversion with one memo equals a fresh one (strict: a file's reading, where a
    pod naming a missing PodGroup is an error, so a PodGroup's existence changes the outcome)."""

    def fresh(objects: list[dict[str, Any]]) -> Snapshot:
        return snapshot_from_objects(objects, strict=strict, now=1.0)

    cluster = _Cluster()
    for obj in _start():
        cluster.put(obj)
    memo = ConversionMemo()
    for steps in [[], [], *cycles, []]:  # two unchanged calls first, one last
        for step in steps:
            cluster.apply(step)
        objects = list(cluster.objects.values())
        try:
            converted = snapshot_from_objects(objects, strict=strict, now=1.0, memo=memo)
        except InputError as error:
            with pytest.raises(InputError) as fresh_error:
                fresh(objects)
            assert str(fresh_error.value) == str(error)
            continue
        assert converted == fresh(objects)
        # What the memo keeps is this call's objects, no more (deleted and replaced ones pruned).
        assert {id(found[0]) for found in memo.identified.values()} == set(map(id, objects))


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("name", list(SEQUENCES))
def test_event_sequences_equal_a_fresh_conversion(name: str, strict: bool) -> None:
    _run(SEQUENCES[name], strict)


@pytest.mark.pure_only
def test_a_steady_call_reads_only_the_new_pods(monkeypatch: pytest.MonkeyPatch) -> None:
    from vcsat.adapters.convert import snapshot as snapshot_module

    read: list[str] = []
    real = snapshot_module.pod_references

    def counted(obj: Any) -> Any:
        read.append(obj.key)
        return real(obj)

    monkeypatch.setattr(snapshot_module, "pod_references", counted)
    monkeypatch.setattr(snapshot_module, "pod_context", lambda *args: pytest.fail("a context was looked at"))
    cluster = _Cluster()
    for obj in _start():
        cluster.put(obj)
    memo = ConversionMemo()
    with monkeypatch.context() as first:
        first.setattr(snapshot_module, "pod_context", real_context)
        _with_memo(list(cluster.objects.values()), memo)
    assert sorted(read) == ["ns/p0", "ns/p1", "ns/p2"]
    read.clear()
    before = _with_memo(list(cluster.objects.values()), memo)  # nothing changed: nothing read
    assert read == []
    cluster.apply(("pod", "p2", None, "a", 0))
    table, values = memo.identified, memo.values
    with monkeypatch.context() as changed:
        changed.setattr(snapshot_module, "pod_context", real_context)
        after = _with_memo(list(cluster.objects.values()), memo)
    assert read == ["ns/p2"]
    # the replaced dict of p2 is pruned in place: the table is not rebuilt by a walk over it
    assert memo.identified is table
    assert memo.values is values  # every object of the call counted, carried ones too: no walk
    assert len(table) == len(cluster.objects)
    assert after == _fresh(list(cluster.objects.values()))
    assert [pod for pod in after.pods if pod.key != "ns/p2"] == [pod for pod in before.pods if pod.key != "ns/p2"]


@pytest.mark.pure_only
def test_a_call_with_new_podgroups_rereads_only_the_pods_that_name_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # A live binding cycle: a batch of jobs arrives (PodGroups and their pods). Only the new pods
    # and the pods naming a PodGroup or node that came or went are read; the others are carried.
    from vcsat.adapters.convert import snapshot as snapshot_module

    looked_at: list[str] = []

    def counted(references: tuple[Any, Any], podgroups: Any, nodes: Any) -> tuple[bool, bool]:
        looked_at.append(f"{references[0]}@{references[1]}")
        return real_context(references, podgroups, nodes)

    monkeypatch.setattr(snapshot_module, "pod_context", counted)
    cluster = _Cluster()
    for obj in _start():
        cluster.put(obj)
    cluster.apply(("pod", "p3", "h", None, 0))  # waits for PodGroup h
    cluster.apply(("pod", "p4", None, "c", 0))  # bound to node c, not there yet: left out
    memo = ConversionMemo()
    _with_memo(list(cluster.objects.values()), memo)
    _with_memo(list(cluster.objects.values()), memo)
    looked_at.clear()
    for step in [("podgroup", "h", "q"), ("node", "c", "8"), ("pod", "p0", "g", None, 1)]:
        cluster.apply(step)
    objects = list(cluster.objects.values())
    converted = _with_memo(objects, memo)
    assert sorted(looked_at) == ["None@c", "ns/g@None", "ns/h@None"]  # p4, p0 (new), p3
    assert converted == _fresh(objects)
    assert "ns/p4" in {pod.key for pod in converted.pods}


@pytest.mark.parametrize("strict", [False, True])
def test_an_object_listed_twice_fails_with_a_memo_as_without(strict: bool) -> None:
    # The memo identifies and sorts the objects by kind in one walk: a key met twice (a second
    # dict of one pod) is refused there as the walk without a memo refuses it.
    memo = ConversionMemo()
    objects = _start()
    snapshot_from_objects(objects, strict=strict, now=1.0, memo=memo)
    twice = [*objects, _pod("p2", 7, node="a")]
    with pytest.raises(InputError, match="duplicate object") as fresh_error:
        snapshot_from_objects(twice, strict=strict, now=1.0)
    with pytest.raises(InputError) as memo_error:
        snapshot_from_objects(twice, strict=strict, now=1.0, memo=memo)
    assert str(memo_error.value) == str(fresh_error.value)
    # and the next call, with the duplicate gone, is a fresh conversion's
    again = snapshot_from_objects(objects, strict=strict, now=1.0, memo=memo)
    assert again == snapshot_from_objects(objects, strict=strict, now=1.0)
