"""The typed read of a JSON List (adapters/convert/typed_json.py): the snapshot it gives is the one
the full parse gives; it keeps every key a reader looks up; it declines what it cannot decode exactly."""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert import instance_file, typed_json
from vcsat.adapters.convert import snapshot as snapshot_module
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.errors import InputError
from vcsat.adapters.generate.generator import generate_instance
from vcsat.adapters.generate.options import GeneratorOptions

INSTANCES = sorted((Path(__file__).parent.parent / "instances").glob("*.yaml"))


def _k8s(kind: str, api: str, name: str, namespace: str | None = None, **fields: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, **fields.pop("metadata", {})}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": api, "kind": kind, "metadata": metadata, **fields}


# Fields the instances and the generator do not write, so that every reader's lookups are met.
RARE = [
    _k8s(
        "Node",
        "v1",
        "n9",
        spec={"unschedulable": True, "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
        status={"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"}},
    ),
    _k8s(
        "Queue",
        "scheduling.volcano.sh/v1beta1",
        "root-child",
        spec={"weight": 2, "guarantee": {"resource": {"cpu": "1"}}},
    ),
    _k8s("Queue", "scheduling.volcano.sh/v1beta1", "leaf", spec={"parent": "root-child", "capability": {"cpu": "4"}}),
    _k8s(
        "PodGroup",
        "scheduling.volcano.sh/v1beta1",
        "pg",
        "ns",
        spec={
            "minMember": 2,
            "queue": "leaf",
            "minTaskMember": {"w": 1},
            "networkTopology": {"mode": "soft", "highestTierAllowed": 2},
            "subGroupPolicy": [{"name": "a"}],
        },
        status={"phase": "Inqueue", "conditions": [{"type": "Inqueued", "status": "True"}]},
    ),
    _k8s(
        "Pod",
        "v1",
        "odd",
        "ns",
        metadata={
            "annotations": {"scheduling.k8s.io/group-name": "pg", "volcano.sh/task-spec": "w"},
            "deletionTimestamp": "2025-06-01T08:00:00Z",
            "ownerReferences": [{"kind": "Job", "name": "j"}],
        },
        spec={
            "schedulerName": "vcsat",
            "initContainers": [
                {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                {"name": "init", "image": "x", "resources": {"limits": {"memory": "1Gi"}}},
            ],
            "containers": [{"name": "c", "image": "y", "ports": [{"hostPort": 8080, "protocol": "UDP"}]}],
            "overhead": {"cpu": "100m"},
            "schedulingGates": [{"name": "gate"}],
            "resourceClaims": [{"name": "gpu"}],
            "volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}],
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {}}
            ],
        },
        status={"phase": "Pending", "nominatedNodeName": "n9", "conditions": [{"type": "PodScheduled"}]},
    ),
    _k8s("CSIDriver", "storage.k8s.io/v1", "ebs", spec={"storageCapacity": True}),
    _k8s(
        "CSIStorageCapacity",
        "storage.k8s.io/v1",
        "cap",
        "ns",
        storageClassName="zonal",
        capacity="10Gi",
        maximumVolumeSize="5Gi",
        nodeTopology={"matchLabels": {"zone": "z1"}},
    ),
]


def _instance_objects(path: Path) -> list[dict[str, Any]]:
    return instance_file.read_objects(path)


def _generated(seed: int, anti: float = 0.3, spread: float = 0.3) -> list[dict[str, Any]]:
    options = GeneratorOptions(
        nodes=24, pending_jobs=30, seed=seed, anti_affinity_share=anti, spread_job_share=spread, rack_size=4
    )
    items: list[dict[str, Any]] = generate_instance(options)["items"]
    return items


def _write_list(tmp_path: Path, objects: list[dict[str, Any]], name: str = "in.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": objects}, indent=1))
    return path


def _both_ways(path: Path) -> tuple[str, str]:
    """The snapshot of the file read the typed way (``read_snapshot``) and the full parse's."""
    typed = instance_file.read_snapshot(path).model_dump_json()
    full = snapshot_from_objects(instance_file.read_objects(path), source=str(path)).model_dump_json()
    return typed, full


@pytest.mark.parametrize("instance", INSTANCES, ids=lambda path: path.stem)
def test_each_instance_as_json_gives_the_same_snapshot(tmp_path: Path, instance: Path) -> None:
    path = _write_list(tmp_path, _instance_objects(instance))
    assert typed_json.decode_list(path.read_bytes()) is not None  # the typed path is taken
    typed, full = _both_ways(path)
    assert typed == full
    assert full == instance_file.read_snapshot(instance).model_dump_json()  # and the YAML's


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(min_value=0, max_value=10**6),
    anti=st.sampled_from([0.0, 0.5]),
    spread=st.sampled_from([0.0, 0.5]),
)
def test_generated_clusters_give_the_same_snapshot(tmp_path: Path, seed: int, anti: float, spread: float) -> None:
    path = _write_list(tmp_path, _generated(seed, anti, spread))
    typed, full = _both_ways(path)
    assert typed == full


def test_unread_fields_are_left_out(tmp_path: Path) -> None:
    path = _write_list(tmp_path, RARE)
    pruned = {obj["metadata"]["name"]: obj for obj in instance_file.read_objects(path, pruned=True)}
    full = {obj["metadata"]["name"]: obj for obj in instance_file.read_objects(path)}
    assert "ownerReferences" in full["odd"]["metadata"]
    assert "ownerReferences" not in pruned["odd"]["metadata"]
    assert [sorted(c) for c in pruned["odd"]["spec"]["containers"]] == [["ports"]]
    assert pruned["odd"]["status"] == {
        "phase": "Pending",
        "nominatedNodeName": "n9",
        "conditions": [{"type": "PodScheduled"}],
    }
    assert pruned["cap"] == full["cap"]  # every field of a CSIStorageCapacity is read
    # Maps are the file's, in its order.
    assert list(pruned["odd"]["metadata"]["annotations"]) == list(full["odd"]["metadata"]["annotations"])


class _Recording(dict[str, Any]):
    """A dict that records the keys looked up in it, by the level of the object it is."""

    seen: ClassVar[set[tuple[str, str]]] = set()

    def __init__(self, level: str, value: dict[str, Any]) -> None:
        super().__init__(value)
        self.level = level

    def get(self, key: str, default: Any = None) -> Any:
        self.seen.add((self.level, key))
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.seen.add((self.level, key))
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.seen.add((self.level, str(key)))
        return super().__contains__(key)


def _recording(obj: dict[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    for level in ("metadata", "status"):
        if isinstance(out.get(level), dict):
            out[level] = _Recording(level, out[level])
    spec = out.get("spec")
    if isinstance(spec, dict):
        spec = dict(spec)
        for field in ("containers", "initContainers"):
            if isinstance(spec.get(field), list):
                spec[field] = [_Recording("container", c) if isinstance(c, dict) else c for c in spec[field]]
        out["spec"] = _Recording("spec", spec)
    return _Recording("object", out)


def _all_objects() -> Iterator[list[dict[str, Any]]]:
    for instance in INSTANCES:
        yield _instance_objects(instance)
    yield _generated(1)
    yield RARE


KEPT = {
    "object": typed_json.OBJECT_KEYS,
    "metadata": typed_json.METADATA_KEYS,
    "spec": typed_json.SPEC_KEYS,
    "status": typed_json.STATUS_KEYS,
    "container": typed_json.CONTAINER_KEYS,
}


def test_every_key_the_readers_look_up_is_kept() -> None:
    _Recording.seen = set()
    for objects in _all_objects():
        snapshot_from_objects([_recording(obj) for obj in objects], strict=False)
    assert ("spec", "containers") in _Recording.seen  # the recording sees the readers' lookups
    missing = sorted((level, key) for level, key in _Recording.seen if key not in KEPT[level])
    assert missing == []


def _in_list(items: bytes) -> bytes:
    return b'{"kind": "List", "items": [' + items + b"]}"


_DECLINED = [
    pytest.param(_in_list(b'{"kind": "Pod", "apiVersion": "v1", "x": NaN}'), id="NaN"),
    pytest.param(_in_list(b'{"kind": "Pod", "apiVersion": "v1", "value": 1e400}'), id="beyond a double"),
    pytest.param(_in_list(b'{"kind": "Pod", "apiVersion": "v1", "value": "\\ud800"}'), id="lone surrogate"),
    pytest.param(_in_list(b'{"kind": "Pod", "apiVersion": "v1", "metadata": null}'), id="null metadata"),
    pytest.param(
        _in_list(b'{"kind": "Pod", "apiVersion": "v1", "spec": {"containers": "c"}}'), id="containers not a list"
    ),
    pytest.param(
        _in_list(b'{"kind": "Pod", "apiVersion": "v1", "spec": {"containers": [1]}}'), id="container not a mapping"
    ),
    pytest.param(_in_list(b'{"kind": "List", "apiVersion": "v1", "items": []}'), id="nested List"),
    pytest.param(_in_list(b'{"apiVersion": "v1", "metadata": {"name": "x"}}'), id="item without kind"),
    pytest.param(_in_list(b'{"kind": "Pod", "apiVersion": 1}'), id="apiVersion not text"),
    pytest.param(_in_list(b"3"), id="item not a mapping"),
    pytest.param(b'{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}, "spec": {}}', id="one object"),
    pytest.param(b'[{"kind": "Pod", "apiVersion": "v1"}]', id="a plain list"),
    pytest.param(b'{"kind": "List"}', id="a List without items"),
    pytest.param(b'{"kind": "List", "items": []} []', id="two documents"),
    pytest.param(b'{"kind": "List", "items": [], }', id="trailing comma"),
]


@pytest.mark.parametrize("data", _DECLINED)
def test_what_it_cannot_decode_exactly_is_declined(data: bytes) -> None:
    assert typed_json.decode_list(data) is None


@pytest.mark.parametrize(
    ("item", "message"),
    [
        pytest.param({"metadata": None}, "Pod: objects[0].metadata: missing", id="null metadata"),
        pytest.param(
            {"metadata": {"name": "p"}, "spec": {"containers": "c"}},
            "Pod default/p: spec.containers: must be a list, not a string",
            id="containers not a list",
        ),
        pytest.param(
            {"metadata": {"name": "p"}, "spec": {"containers": [{"resources": {"requests": {"cpu": []}}}]}},
            "Pod default/p: spec.containers[0].resources.requests.cpu:",
            id="a request of the wrong type",
        ),
    ],
)
def test_bad_input_is_named_as_before(tmp_path: Path, item: dict[str, Any], message: str) -> None:
    path = _write_list(tmp_path, [{"kind": "Pod", "apiVersion": "v1", **item}])
    with pytest.raises(InputError) as typed:
        instance_file.read_snapshot(path)
    with pytest.raises(InputError) as full:
        snapshot_from_objects(instance_file.read_objects(path), source=str(path))
    assert str(typed.value) == str(full.value)
    assert message in str(typed.value)


class _Weak(dict[str, Any]):
    """A plain object that a weak reference can follow."""


def test_a_handed_over_read_frees_each_pod_object_before_the_snapshot_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = [_Weak(obj) for obj in _generated(3)]
    pods = [weakref.ref(obj) for obj in objects if obj["kind"] == "Pod"]
    others = [weakref.ref(obj) for obj in objects if obj["kind"] != "Pod"]
    held: list[tuple[int, int]] = []

    def notices(by_kind: Any, snapshot: Any, scheduler_name: str) -> tuple[()]:
        held.append((sum(ref() is not None for ref in pods), sum(ref() is not None for ref in others)))
        return ()

    monkeypatch.setattr(snapshot_module, "conversion_notices", notices)
    expected = snapshot_from_objects([dict(obj) for obj in objects], strict=False).model_dump_json()
    handed = instance_file._handed_over(objects)
    del objects
    assert snapshot_from_objects(handed, strict=False).model_dump_json() == expected
    assert held[-1][0] == 0  # every pod's object is gone while the notices are read
    assert held[-1][1] > 0  # the nodes' and PodGroups' objects are not (the notices read them)
