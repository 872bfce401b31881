"""Node objects → :class:`~vcsat.model.Node`: allocatable, labels, taints, readiness, GPU topology.

A node whose ``Ready`` condition is present and not ``"True"`` takes nothing new; one with no
``Ready`` condition (a hand-written instance) counts as ready. Without ``status.allocatable`` the
node uses ``status.capacity``, as the API server defaults it. An invalid ``vcsat.io/gpu-topology``
is an error in a file and, live, a node whose GPUs count as uniformly connected.
"""

from __future__ import annotations

from typing import Any, cast

from vcsat.adapters.convert.fields import MAPPING_TYPES
from vcsat.adapters.convert.reader import Conversion, KubeObject, construct
from vcsat.adapters.convert.spelling import spelling
from vcsat.model import resources as res
from vcsat.model.cluster import (
    Node,
    Taint,
    TaintEffect,
)
from vcsat.model.gpu_topology import gpu_topology

GPU_TOPOLOGY_ANNOTATION = "vcsat.io/gpu-topology"
TAINT_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})
EFFECT_NAMES = "NoSchedule, PreferNoSchedule, NoExecute"


def read_node(conversion: Conversion, obj: KubeObject) -> Node:
    metadata = obj.raw["metadata"]
    spec = obj.mapping(obj.raw, "spec", "spec")
    status = obj.mapping(obj.raw, "status", "status")
    annotations = obj.checked_strings(metadata, "annotations", "metadata.annotations")  # read, not kept
    taints = tuple(
        _taint(obj, taint, f"spec.taints[{index}]")
        for index, taint in enumerate(obj.sequence(spec, "taints", "spec.taints"))
    )
    field = "status.allocatable" if status.get("allocatable") is not None else "status.capacity"
    key = field.rpartition(".")[2]
    raw_allocatable = status.get(key)
    if type(raw_allocatable) is dict:
        # Nodes of one machine type spell it alike: read once, the dict shared (models are frozen).
        allocatable = conversion.shared(
            (f"allocatable {field}", spelling(raw_allocatable)),
            lambda: obj.amounts(obj.nanos_map(status, key, field), field),
        )
    else:
        allocatable = obj.amounts(obj.nanos_map(status, key, field), field)
    ready = True
    for index, condition in enumerate(obj.sequence(status, "conditions", "status.conditions")):
        if not isinstance(condition, MAPPING_TYPES):
            obj.fail(f"status.conditions[{index}]", "must be a mapping")
        if condition.get("type") == "Ready":
            ready = obj.string(condition, "status", f"status.conditions[{index}].status") == "True"
    topology = annotations.get(GPU_TOPOLOGY_ANNOTATION)
    if topology is not None:
        try:
            gpu_topology(topology, allocatable.get(res.GPU, 0))
        except ValueError as error:
            if conversion.strict:
                obj.fail(f'metadata.annotations["{GPU_TOPOLOGY_ANNOTATION}"]', str(error))
            topology = None  # live: the node counts as uniformly connected until fixed
    return construct(
        Node,
        name=obj.name,
        labels=obj.string_map(metadata, "labels", "metadata.labels"),
        taints=taints,
        unschedulable=obj.boolean(spec, "unschedulable", "spec.unschedulable", False),
        ready=ready,
        allocatable=allocatable,
        gpu_topology=topology,
    )


def _taint(obj: KubeObject, raw: Any, path: str) -> Taint:
    if not isinstance(raw, MAPPING_TYPES):
        obj.fail(path, "must be a mapping")
    key = obj.string(raw, "key", f"{path}.key")
    if not key:
        obj.fail(f"{path}.key", "missing")
    effect = obj.string(raw, "effect", f"{path}.effect")
    if effect not in TAINT_EFFECTS:
        obj.fail(f"{path}.effect", f"must be one of {EFFECT_NAMES}, not {effect!r}")
    value = obj.string(raw, "value", f"{path}.value")
    return Taint.model_construct(key=key, value=value, effect=cast("TaintEffect", effect))
