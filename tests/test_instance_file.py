"""Instance files: the shapes kubectl writes, and one clear line for everything else."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert import instance_file
from vcsat.adapters.convert.instance_file import read_objects, read_snapshot, read_yaml_mapping
from vcsat.adapters.errors import InputError

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"allocatable": {"pods": "10"}},
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ns"},
    "spec": {"schedulerName": "vcsat", "containers": [{"name": "c"}]},
}

V1_LIST_YAML = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status: {allocatable: {pods: "10"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p, namespace: ns}
  spec: {schedulerName: vcsat, containers: [{name: c}]}
metadata: {resourceVersion: ""}
"""

STREAM_YAML = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {pods: "10"}}
---
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
spec: {schedulerName: vcsat, containers: [{name: c}]}
"""

GOOD = [
    pytest.param("in.yaml", V1_LIST_YAML, id="v1 List in YAML"),
    pytest.param("in.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": [NODE, POD]}), id="List in JSON"),
    pytest.param(
        "in.txt",
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [NODE, POD]}),
        id="JSON by its first brace",
    ),
    pytest.param("in.yaml", STREAM_YAML, id="multi-document stream"),
    pytest.param(
        "in.yaml",
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [{"apiVersion": "v1", "kind": "List", "items": [NODE]}, POD],
            }
        ),
        id="nested List",
    ),
    pytest.param("in.json", json.dumps([NODE, POD]), id="a plain list of objects"),
]


@pytest.mark.parametrize(("name", "text"), GOOD)
def test_reads_what_kubectl_writes(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert [obj["kind"] for obj in read_objects(path)] == ["Node", "Pod"]
    snapshot = read_snapshot(path)
    assert [pod.key for pod in snapshot.pods] == ["ns/p"]
    assert [node.name for node in snapshot.nodes] == ["n1"]


def test_single_object(tmp_path: Path) -> None:
    path = tmp_path / "node.yaml"
    path.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n")
    assert read_objects(path) == [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}]


def test_empty_list(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    assert read_objects(path) == []
    assert [queue.name for queue in read_snapshot(path).queues] == ["default"]


def test_errors_name_the_file_as_given(tmp_path: Path) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text(V1_LIST_YAML.replace('pods: "10"', "pods: ten"))
    with pytest.raises(InputError) as caught:
        read_snapshot(path)
    assert str(caught.value) == f"{path}: Node n1: status.allocatable.pods: not a quantity: 'ten'"


BAD = [
    pytest.param(b"", "file is empty", id="empty"),
    pytest.param(b"  \n\n", "file is empty", id="only whitespace"),
    pytest.param(b"# only a comment\n", "holds no YAML document", id="only a comment"),
    pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary data", id="binary with NUL"),
    pytest.param(b"\xff\xfe\xfa garbage", "not UTF-8 text", id="not UTF-8"),
    pytest.param(b"kind: List\nitems:\n  - a: [1, 2\n", "invalid YAML at line 4, column 1", id="unclosed flow"),
    pytest.param(b"a: b\n c: d\n", "invalid YAML at line 2, column 3", id="bad indentation"),
    pytest.param(b"kind: List\nitems: {a: 1}\n", "items: must be a list, not dict", id="items not a list"),
    pytest.param(
        b"kind: List\nitems:\n- 3\n",
        "items[0]: must be an object (a mapping), not int",
        id="item not a mapping",
    ),
    pytest.param(b"just some words\n", "the top level must be a List or an object, not the text", id="top level text"),
    pytest.param(b"42\n", "the top level must be a List or an object, not int", id="top level number"),
    pytest.param(b"kind: List\nitems:\n- metadata: {name: x}\n", "x: items[0].kind: missing", id="no kind"),
    pytest.param(b"kind: List\nitems:\n- kind: Pod\n", "items[0].apiVersion: missing", id="no apiVersion"),
    pytest.param(b"kind: 3\napiVersion: v1\n", "kind: must be a non-empty string", id="kind not a string"),
    pytest.param(b"kind: Node\napiVersion: v1\n---\n- 1\n", "document 2, [0]: must be an object", id="second document"),
    pytest.param(b'{"kind": "List", "items": [}', "invalid JSON at line 1, column 28", id="bad JSON"),
]


@pytest.mark.parametrize(("content", "message"), BAD)
def test_bad_files(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "in.yaml"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        read_objects(path)
    text = str(caught.value)
    assert text.startswith(f"{path}: ")
    assert message in text
    assert "\n" not in text


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_objects(tmp_path / "nope.yaml")
    with pytest.raises(InputError, match="is a directory"):
        read_objects(tmp_path)


def test_yaml_mapping_for_policies(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("time_limit_s: 2\n")
    assert read_yaml_mapping(path) == {"time_limit_s": 2}
    path.write_text("")
    assert read_yaml_mapping(path) == {}
    path.write_text("- 1\n")
    with pytest.raises(InputError, match="the top level must be a mapping"):
        read_yaml_mapping(path)


_ITEMS = st.sampled_from(
    [
        NODE,
        POD,
        {"apiVersion": "v1", "kind": "List", "items": [NODE]},
        {"apiVersion": "v1", "kind": "List"},
        {"apiVersion": "v1", "metadata": {"name": "x"}},
        {"apiVersion": "v1", "kind": "", "metadata": {"name": "x", "namespace": "ns"}},
        {"apiVersion": "v1", "kind": 3},
        {"kind": "Pod", "metadata": {"name": "p"}},
        {"kind": "Pod", "apiVersion": ""},
        {"kind": "Pod", "apiVersion": 1},
        3,
        "text",
        [NODE],
        None,
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(_ITEMS, max_size=6))
def test_a_list_of_plain_objects_reads_as_item_by_item(tmp_path: Path, items: list[Any]) -> None:
    """The one-pass check of a List's items gives what the item-by-item walk gives: the same
    objects, or the same one-line error naming the item."""
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))

    def outcome() -> tuple[str, Any]:
        try:
            return "objects", read_objects(path)
        except InputError as error:
            return "error", str(error)

    fast = outcome()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(instance_file, "_plain_items", lambda items: False)
        assert outcome() == fast


def _typed(value: Any) -> str:
    """A value's text with its types: 1, 1.0 and True differ, and so do 0.0 and -0.0."""
    return json.dumps(value, ensure_ascii=False)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=80),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(document=_JSON, ascii_only=st.booleans(), indent=st.sampled_from([None, 2]))
def test_the_fast_parse_reads_what_the_standard_parser_reads(
    document: Any, ascii_only: bool, indent: int | None
) -> None:
    """The fast JSON parse gives the standard parser's values, types included (big integers stay
    integers; repeated strings are shared, which nothing can tell apart), or declines."""
    data = json.dumps(document, ensure_ascii=ascii_only, indent=indent).encode()
    fast = instance_file._fast_json(data, named_json=True)
    if fast is None:  # a document that is null reads as declined: the careful way reads it
        assert json.loads(data) is None
    else:
        assert _typed(fast) == _typed(json.loads(data))


DECLINED = [
    pytest.param(b"[NaN]", id="NaN"),
    pytest.param(b"[-Infinity]", id="infinity"),
    pytest.param(b'["\\ud800"]', id="lone surrogate"),
    pytest.param(b'["a\x01b"]', id="control character"),
    pytest.param(b"[1] [2]", id="two documents"),
    pytest.param(b'["\xff"]', id="not UTF-8"),
    pytest.param(b"[1,]", id="trailing comma"),
    pytest.param(b"[" * 5000 + b"]" * 5000, id="nested deeply"),
]


@pytest.mark.parametrize("data", DECLINED)
def test_the_fast_parse_declines_what_is_not_strict_json(data: bytes) -> None:
    """Anything beyond strict JSON goes the careful way, which reads it or says what is wrong."""
    assert instance_file._fast_json(data, named_json=True) is None


def test_what_the_fast_parse_declines_reads_as_the_standard_parser_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "in.json"
    path.write_bytes(b'{"kind": "List", "apiVersion": "v1", "items": [], "metadata": {"x": NaN, "y": "\\ud800"}}')
    assert read_objects(path) == []
    path.write_bytes(b'{"kind": "List", "apiVersion": "v1", "items": [] } {}')
    with pytest.raises(InputError, match="invalid JSON at line 1, column 52: Extra data"):
        read_objects(path)


def _young_ids() -> set[int]:
    return {id(obj) for generation in (0, 1) for obj in gc.get_objects(generation=generation)}


def test_the_read_snapshot_waits_in_the_oldest_generation(tmp_path: Path) -> None:
    """What a read leaves is moved to the collector's oldest generation: no young collection walks it."""
    path = tmp_path / "in.yaml"
    path.write_text(V1_LIST_YAML)
    assert gc.isenabled()
    snapshot = read_snapshot(path)
    assert gc.isenabled()
    young = _young_ids()
    made = [snapshot, *snapshot.nodes, *snapshot.pods]
    assert all(gc.is_tracked(obj) for obj in made)
    assert not [obj for obj in made if id(obj) in young]
    oldest = {id(obj) for obj in gc.get_objects(generation=2)}
    assert all(id(obj) in oldest for obj in made)


def test_a_read_leaves_objects_frozen_by_the_process_frozen(tmp_path: Path) -> None:
    """``gc.freeze`` of the process's own is kept: the read then leaves its objects where they are."""
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [NODE, POD]}))
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        snapshot = read_snapshot(path)
        assert gc.get_freeze_count() == frozen
        assert [pod.name for pod in snapshot.pods] == ["p"]
    finally:
        gc.unfreeze()
