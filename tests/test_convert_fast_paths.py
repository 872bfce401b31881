"""The reader's fast paths give what the careful paths give (adapters/convert, session 31).

Three paths of ``read_snapshot`` take the common case in fewer steps: a List's items checked at C
speed (``instance_file._plain_items``), an object identified in one call
(``_SnapshotConverter._identify``, the careful reading kept as ``_identify_checked``), and a pod
spelled like an earlier one read in one call (``pods._like``, whose own fields a full reading reads
with ``_own_fields``); and a spec's spelling skips its search for ``null`` when the same text was
found without one before (``spelling.spelling_seen``). Each is compared here with its careful
counterpart: the item loop as it was (kept below as the oracle), the checked identification, the
pod read alone, and :func:`~vcsat.adapters.convert.spelling.spelling`.
"""

from __future__ import annotations

import copy
import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_objects import k8s_node, k8s_pod, k8s_podgroup, k8s_queue
from vcsat.adapters.convert.instance_file import _plain_items
from vcsat.adapters.convert.snapshot import _SnapshotConverter, snapshot_from_objects
from vcsat.adapters.convert.spelling import spelling, spelling_seen
from vcsat.adapters.errors import InputError

Obj = dict[str, Any]


def _plain_items_loop(items: list[Any]) -> bool:
    """``_plain_items`` as it was before session 31: one Python step per item (the oracle)."""
    for item in items:
        if type(item) is not dict:
            return False
        kind = item.get("kind")
        api_version = item.get("apiVersion")
        if type(kind) is not str or not kind or kind == "List" or type(api_version) is not str or not api_version:
            return False
    return True


_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
PLAIN_CASES = [
    pytest.param([], id="empty"),
    pytest.param([_POD, {**_POD, "kind": "Node"}], id="plain"),
    pytest.param([_POD, {"apiVersion": "v1"}], id="no-kind"),
    pytest.param([_POD, {"kind": "Pod"}], id="no-apiVersion"),
    pytest.param([_POD, {**_POD, "kind": ""}], id="empty-kind"),
    pytest.param([_POD, {**_POD, "apiVersion": ""}], id="empty-apiVersion"),
    pytest.param([_POD, {**_POD, "kind": ["Pod"]}], id="unhashable-kind"),
    pytest.param([_POD, {**_POD, "apiVersion": {"v": 1}}], id="unhashable-apiVersion"),
    pytest.param([_POD, {**_POD, "kind": 3}], id="number-kind"),
    pytest.param([_POD, {**_POD, "kind": "List", "items": []}], id="nested-list"),
    pytest.param([_POD, [_POD]], id="list-item"),
    pytest.param([_POD, None], id="null-item"),
    pytest.param([_POD, type("D", (dict,), {})(_POD)], id="dict-subclass"),
]


@pytest.mark.parametrize("items", PLAIN_CASES)
def test_plain_items_answers_as_the_item_loop(items: list[Any]) -> None:
    assert _plain_items(items) == _plain_items_loop(items)


_TEXT = st.sampled_from(["", "Pod", "Node", "List", "v1", "x/v1"])
_VALUE = st.one_of(st.none(), _TEXT, st.integers(-1, 1), st.lists(_TEXT, max_size=1))
_ITEM = st.one_of(
    st.dictionaries(st.sampled_from(["kind", "apiVersion", "metadata"]), _VALUE, max_size=3),
    st.none(),
    st.lists(st.none(), max_size=1),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ITEM, max_size=6))
def test_plain_items_answers_as_the_item_loop_on_any_items(items: list[Any]) -> None:
    assert _plain_items(items) == _plain_items_loop(items)


def _outcome(identify: Any, raw: Any) -> Any:
    """What an identification gives: None, the error's line, or the object's fields."""
    try:
        obj = identify(raw, 3)
    except InputError as error:
        return ("error", str(error))
    if obj is None:
        return None
    # Every slot of the class and its bases: a slot added later and left unset by the fast path
    # (which makes the object without ``__init__``) fails here, by an AttributeError.
    fields = [name for cls in type(obj).__mro__ for name in getattr(cls, "__slots__", ())]
    return (*(getattr(obj, name) for name in fields), obj.label)


IDENTIFY_CASES = [
    pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "a"}}, id="pod"),
    pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, id="pod-default-namespace"),
    pytest.param({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "namespace": "a"}}, id="node"),
    pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ""}}, id="empty-ns"),
    pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": None}}, id="null-ns"),
    pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": 3}}, id="number-ns"),
    pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": ""}}, id="empty-name"),
    pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {}}, id="no-name"),
    pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": None}, id="null-metadata"),
    pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": []}, id="list-metadata"),
    pytest.param({"apiVersion": "v1", "kind": "Pod"}, id="no-metadata"),
    pytest.param({"kind": "Pod", "metadata": {"name": "p"}}, id="no-apiVersion"),
    pytest.param({"apiVersion": 1, "kind": "Pod", "metadata": {"name": "p"}}, id="number-apiVersion"),
    pytest.param({"apiVersion": "x.io/v1", "kind": "Pod", "metadata": {"name": "p"}}, id="other-api"),
    pytest.param({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}, id="other-kind"),
    pytest.param({"apiVersion": "v1", "kind": 4, "metadata": {"name": "p"}}, id="number-kind"),
    pytest.param(
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"}}, id="pg"
    ),
    pytest.param({"apiVersion": "scheduling.volcano.sh/v1", "kind": "Queue", "metadata": {"name": "q"}}, id="queue"),
    pytest.param([], id="a-list"),
]


@pytest.mark.parametrize("raw", IDENTIFY_CASES)
def test_an_object_is_identified_as_the_checked_identification_does(raw: Any) -> None:
    converter = _SnapshotConverter(scheduler_name="vcsat", source="f.json", strict=True)
    assert _outcome(converter._identify, raw) == _outcome(converter._identify_checked, raw)


_KIND = st.sampled_from(["Pod", "Node", "PodGroup", "Queue", "PersistentVolumeClaim", "Secret", "", 7])
_API = st.sampled_from(["v1", "scheduling.volcano.sh/v1beta1", "storage.k8s.io/v1", "x/v1", "", None, 2])
_NAME = st.sampled_from(["a", "", None, 5, ["a"]])
_METADATA = st.one_of(
    st.fixed_dictionaries({}, optional={"name": _NAME, "namespace": _NAME}),
    st.none(),
    st.just("meta"),
)


@settings(max_examples=400, deadline=None)
@given(st.fixed_dictionaries({}, optional={"kind": _KIND, "apiVersion": _API, "metadata": _METADATA}))
def test_any_object_is_identified_as_the_checked_identification_does(raw: Obj) -> None:
    converter = _SnapshotConverter(scheduler_name="vcsat", source=None, strict=False)
    assert _outcome(converter._identify, raw) == _outcome(converter._identify_checked, raw)


CONTEXT = [
    k8s_node("n1", gpus=4),
    k8s_node("n2", gpus=4),
    k8s_podgroup("pg", queue="q"),
    k8s_podgroup("pg", namespace="other", queue="q"),
    k8s_queue("q"),
]
_OWN = {
    "namespace": st.sampled_from(["ns", "other"]),
    "node": st.sampled_from([None, "n1", "n2", "", "gone"]),
    "group": st.sampled_from([None, "pg", "missing", ""]),
    "phase": st.sampled_from([None, "Pending", "Running", "Succeeded", "Failed", "Bogus", 3]),
    "gpu_ids": st.sampled_from([None, "0", "1", "0,1", "x", "2,2"]),
    "preemptable": st.sampled_from([None, "true", "False", "0", "maybe"]),
    "preemptable_label": st.sampled_from([None, "t", "no"]),
    "queue": st.sampled_from([None, "", "q"]),
    "task": st.sampled_from([None, "worker"]),
    "volcano_group": st.sampled_from([None, "pg"]),
    "uid": st.sampled_from([None, "u-1", 7]),
    "created": st.sampled_from(
        [None, "2025-06-01T08:00:00Z", "2025-06-01T08:59:59Z", "2025-06-01T08:00:00.5Z", "then", 5]
    ),
    "deleted": st.booleans(),
    "nominated": st.sampled_from([None, "", "n2", 4]),
    "labels": st.sampled_from([None, {}, {"app": "x"}, {"app": 1}]),
}


def _own_pod(name: str, own: dict[str, Any]) -> Obj:
    annotations = {
        key: value
        for key, value in (
            ("vcsat.io/gpu-ids", own["gpu_ids"]),
            ("volcano.sh/preemptable", own["preemptable"]),
            ("scheduling.volcano.sh/queue-name", own["queue"]),
            ("volcano.sh/task-spec", own["task"]),
            ("scheduling.volcano.sh/group-name", own["volcano_group"]),
        )
        if value is not None
    }
    pod = k8s_pod(
        name,
        namespace=own["namespace"],
        gpus=1,
        node=own["node"],
        group=own["group"],
        annotations=annotations,
        created=own["created"],
    )
    metadata = pod["metadata"]
    if own["labels"] is not None:
        metadata["labels"] = dict(own["labels"])
    if own["preemptable_label"] is not None:
        metadata.setdefault("labels", {})["volcano.sh/preemptable"] = own["preemptable_label"]
    if own["uid"] is not None:
        metadata["uid"] = own["uid"]
    if own["deleted"]:
        metadata["deletionTimestamp"] = "2025-06-02T08:00:00Z"
    if own["phase"] is not None:
        pod["status"]["phase"] = own["phase"]
    if own["nominated"] is not None:
        pod["status"]["nominatedNodeName"] = own["nominated"]
    return pod


def _read(objects: list[Obj], key: str, strict: bool) -> Any:
    try:
        snapshot = snapshot_from_objects(copy.deepcopy(objects), source="t.json", strict=strict)
    except InputError as error:
        return ("error", str(error).replace("Pod ns/first", "Pod ?").replace("Pod other/first", "Pod ?"))
    return snapshot.pod_by_key.get(key)


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries(_OWN), st.booleans())
def test_a_pod_read_like_an_earlier_one_is_the_pod_read_alone(own: dict[str, Any], strict: bool) -> None:
    """The first pod of a spec is read in full (``_own_fields``); the second, spelled alike, takes
    ``_like``: it must come out as when it is the first, error included."""
    first = k8s_pod("first", namespace="ns", gpus=1)
    second = _own_pod("second", own)
    key = f"{own['namespace']}/second"
    alone = _read([*CONTEXT, second], key, strict)
    after_first = _read([*CONTEXT, first, second], key, strict)
    assert after_first == alone


LIKE_CASES = [
    pytest.param({"group": "missing"}, id="unknown-group"),
    pytest.param({"preemptable": "maybe"}, id="bad-preemptable"),
    pytest.param({"phase": "Bogus"}, id="bad-phase"),
    pytest.param({"phase": 3}, id="number-phase"),
    pytest.param({"node": "n1", "gpu_ids": "0,1"}, id="too-many-gpu-ids"),
    pytest.param({"uid": 7}, id="number-uid"),
    pytest.param({"created": "then"}, id="bad-created"),
    pytest.param({"created": 5}, id="number-created"),
    pytest.param({"created": "2025-06-01T08:00:00.5Z"}, id="fractional-created"),
    pytest.param({"nominated": 4}, id="number-nominated"),
    pytest.param({"volcano_group": "pg", "preemptable_label": "no"}, id="volcano-group-label-preemptable"),
    pytest.param({"node": "n2", "gpu_ids": "1", "phase": "Running", "deleted": True}, id="bound-terminating"),
]


@pytest.mark.parametrize("changes", LIKE_CASES)
@pytest.mark.parametrize("strict", [True, False])
def test_a_pod_read_like_an_earlier_one_is_the_pod_read_alone_table(changes: dict[str, Any], strict: bool) -> None:
    own = {name: None for name in _OWN} | {"namespace": "ns", "deleted": False} | changes
    second = _own_pod("second", own)
    alone = _read([*CONTEXT, second], "ns/second", strict)
    after_first = _read([*CONTEXT, k8s_pod("first", namespace="ns", gpus=1), second], "ns/second", strict)
    assert after_first == alone


SPELLING_CASES = [
    pytest.param([{"a": 1}, {"a": 1}], id="repeat"),
    pytest.param([{"a": None}, {"a": None}], id="null-repeat"),
    pytest.param([{"a": float("nan")}, {"a": None}, {"a": float("nan")}], id="nan-then-null"),
    pytest.param([{"a": 1}, {"a": 1.0}, {"a": True}], id="number-types"),
    pytest.param([{"a": datetime.date(2025, 6, 1)}, {"a": "2025-06-01"}], id="date"),
]


@pytest.mark.parametrize("values", SPELLING_CASES)
def test_a_spelling_seen_before_is_the_spelling(values: list[Any]) -> None:
    clean: set[bytes] = set()
    for value in values:
        assert spelling_seen(value, clean) == spelling(value)
    assert all(b"null" not in text for text in clean)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from([0.0, 1.0, float("nan"), float("inf")]) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_JSON, max_size=8))
def test_spellings_seen_in_any_order_are_the_spellings(values: list[Any]) -> None:
    """Whatever texts were seen before, each value is spelled as :func:`spelling` spells it."""
    clean: set[bytes] = set()
    for value in values:
        assert spelling_seen(value, clean) == spelling(value)
