"""``KubeObject.checked_strings``: a string map read in place, checked as ``string_map`` checks it.

A reader that only looks values up (a pod's annotations) takes the input's own dict instead of a
copy; anything but a plain dict of strings takes ``string_map``'s way, with its one-line errors.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from vcsat.adapters.convert.reader import KubeObject
from vcsat.adapters.errors import InputError

CASES = [
    pytest.param(None, id="absent"),
    pytest.param({}, id="empty dict"),
    pytest.param({"a": "1", "b.io/c": ""}, id="plain dict of strings"),
    pytest.param(MappingProxyType({"a": "1"}), id="another mapping"),
    pytest.param({"a": 1}, id="number value"),
    pytest.param({"a": None}, id="null value"),
    pytest.param({"a": ["x"]}, id="list value"),
    pytest.param({1: "x"}, id="number key"),
    pytest.param(["a"], id="a list"),
    pytest.param("a=b", id="text"),
]


def _obj(annotations: Any) -> tuple[KubeObject, dict[str, Any]]:
    metadata: dict[str, Any] = {"name": "p", "namespace": "ns"}
    if annotations is not None:
        metadata["annotations"] = annotations
    return KubeObject({"kind": "Pod", "metadata": metadata}, "Pod", "t.yaml", 0), metadata


def _outcome(read: Any) -> tuple[str, Any]:
    try:
        return "value", dict(read())
    except InputError as error:
        return "error", str(error)


@pytest.mark.parametrize("annotations", CASES)
def test_reads_and_fails_as_string_map(annotations: Any) -> None:
    obj, metadata = _obj(annotations)
    path = "metadata.annotations"
    got = _outcome(lambda: obj.checked_strings(metadata, "annotations", path))
    assert got == _outcome(lambda: obj.string_map(metadata, "annotations", path))
    if got[0] == "error":
        assert got[1].startswith("t.yaml: Pod ns/p: metadata.annotations") and "\n" not in got[1]


def test_a_plain_dict_of_strings_is_not_copied() -> None:
    annotations = {"a": "1"}
    obj, metadata = _obj(annotations)
    assert obj.checked_strings(metadata, "annotations", "metadata.annotations") is annotations
