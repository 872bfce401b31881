"""A file's pod objects are freed all at once after the pods are read (adapters/convert/snapshot.py).

Freed one by one as each is read, each pod's values would fill the holes its object left in the
parsed file's memory; freed after the loop, the pods' values are made with nothing freed between
them and lie together in the order the solver walks them. Checked here: while the pods are read no
pod object has been freed yet, once the notices are read every one has, and the snapshot is the one
a kept list of objects gives.
"""

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


@pytest.mark.pure_only
@pytest.mark.parametrize("seed", [5, 6])
def test_no_pod_object_is_freed_while_the_pods_are_read(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    options = GeneratorOptions(nodes=16, pending_jobs=20, seed=seed, rack_size=4)
    objects = [_Weak(obj) for obj in generate_instance(options)["items"]]
    pods = [weakref.ref(obj) for obj in objects if obj["kind"] == "Pod"]
    alive_at_reads: list[int] = []
    alive_at_notices: list[int] = []
    read_pod = snapshot_module.read_pod
    notices = snapshot_module.conversion_notices

    def counting_read(*args: Any) -> Any:
        alive_at_reads.append(sum(ref() is not None for ref in pods))
        return read_pod(*args)

    def counting_notices(*args: Any, **kwargs: Any) -> Any:
        alive_at_notices.append(sum(ref() is not None for ref in pods))
        return notices(*args, **kwargs)

    expected = snapshot_from_objects([dict(obj) for obj in objects]).model_dump_json()
    monkeypatch.setattr(snapshot_module, "read_pod", counting_read)
    monkeypatch.setattr(snapshot_module, "conversion_notices", counting_notices)
    handed = instance_file._handed_over(objects)
    del objects
    assert snapshot_from_objects(handed).model_dump_json() == expected
    assert len(alive_at_reads) == len(pods) > 0
    assert set(alive_at_reads) == {len(pods)}  # every pod object still there at every read
    assert alive_at_notices == [0]  # and none once the pods are read
