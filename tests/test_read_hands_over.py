"""A file's read hands its objects over to the converter, which frees each pod's object once read
(adapters/convert/instance_file.py ``_handed_over``, adapters/convert/snapshot.py): the parsed file
and the whole snapshot are never both in memory, and the snapshot is the one a kept list gives."""

from __future__ import annotations

import weakref
from typing import Any

import pytest

from vcsat.adapters.convert import instance_file
from vcsat.adapters.convert import snapshot as snapshot_module
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.generator import generate_instance
from vcsat.adapters.generate.options import GeneratorOptions


class _Weak(dict[str, Any]):
    """A plain object that a weak reference can follow."""


@pytest.mark.parametrize("seed", [3, 4])
def test_each_pod_object_is_freed_before_the_snapshot_is_done(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    options = GeneratorOptions(nodes=24, pending_jobs=30, seed=seed, anti_affinity_share=0.3, rack_size=4)
    objects = [_Weak(obj) for obj in generate_instance(options)["items"]]
    pods = [weakref.ref(obj) for obj in objects if obj["kind"] == "Pod"]
    others = [weakref.ref(obj) for obj in objects if obj["kind"] != "Pod"]
    held: list[tuple[int, int]] = []

    def notices(by_kind: Any, snapshot: Any, scheduler_name: str, **_: Any) -> tuple[()]:
        held.append((sum(ref() is not None for ref in pods), sum(ref() is not None for ref in others)))
        return ()

    monkeypatch.setattr(snapshot_module, "conversion_notices", notices)
    expected = snapshot_from_objects([dict(obj) for obj in objects], strict=False).model_dump_json()
    handed = instance_file._handed_over(objects)
    del objects
    assert snapshot_from_objects(handed, strict=False).model_dump_json() == expected
    assert pods and held[-1][0] == 0  # every pod's object is gone while the notices are read
    assert held[-1][1] > 0  # the nodes' and PodGroups' objects are not (the notices read them)


def test_the_callers_list_is_emptied_once_taken() -> None:
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"pods": "4"}}}
    ]
    snapshot = snapshot_from_objects(instance_file._handed_over(objects))
    assert objects == []
    assert [node.name for node in snapshot.nodes] == ["n"]
