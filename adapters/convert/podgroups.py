"""Volcano PodGroup objects → :class:`~vcsat.model.PodGroup`: gang size, queue, priority, topology, admission.

A group whose queue is missing is an error in a file; live it is kept and waits
(``QueueNotFound``). An Inqueue group's admission time is its ``Inqueued`` condition's
``lastTransitionTime`` (see :mod:`vcsat.adapters.convert.clock`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from vcsat.adapters.convert.clock import INQUEUED_CONDITION, parse_text_clock
from vcsat.adapters.convert.fields import MAPPING_TYPES, type_name
from vcsat.adapters.convert.priority_classes import PriorityClasses
from vcsat.adapters.convert.reader import (
    Conversion,
    KubeObject,
    child,
    construct,
    construct_complete,
    epoch_seconds,
)
from vcsat.adapters.convert.spelling import spelling, spelling_seen
from vcsat.model.cluster import (
    DEFAULT_QUEUE,
    NetworkTopology,
    PodGroup,
    Queue,
)

SCHEDULER_NAME_ANNOTATION = "vcsat.io/scheduler-name"


def read_podgroup(
    conversion: Conversion, obj: KubeObject, classes: PriorityClasses, queues: Mapping[str, Queue]
) -> PodGroup | None:
    """The group; groups whose specs are spelled alike are read once (:mod:`.spelling`)."""
    raw = obj.raw
    spec = raw.get("spec")
    if type(spec) is not dict:  # the parser's own dict is the common case: read as it is
        spec = obj.mapping(raw, "spec", "spec")
    status = raw.get("status")
    if type(status) is not dict:
        status = obj.mapping(raw, "status", "status")
    key = ("podgroup-spec", spelling_seen(spec, conversion.clean)) if type(spec) is dict else None
    same = conversion.parts.get(key) if key is not None else None
    if same is None:
        group = _read_spec(conversion, obj, spec, status, classes, queues)
        if key is not None:
            conversion.parts[key] = dict(group.__dict__)  # its fields, before any cached property joins them
        return group
    # A spec spelled as an earlier group's: its fields are that group's (checked when it was read),
    # its dicts shared (models are frozen, nothing changes a field's dict in place).
    # Written out (no call for the creation time, none for an admission time a group not Inqueue
    # has not): every group but the first of each spec takes this path.
    values = same.copy()
    values["namespace"] = namespace = obj.namespace
    values["name"] = name = obj.name
    # Its key (namespace/name, as the model derives it) made now, not on a first read: a new
    # string, not the object's own (which, made while the file was parsed, would keep the
    # parse's memory from being returned).
    values["key"] = f"{namespace}/{name}"
    phase = status.get("phase")
    if type(phase) is not str:
        phase = obj.string(status, "phase", "status.phase")
    values["phase"] = phase
    metadata = raw["metadata"]
    stamp = metadata.get("creationTimestamp")
    try:
        values["created"] = parse_text_clock(stamp) if type(stamp) is str else obj.created()
    except ValueError:
        values["created"] = obj.created()  # raises the error a full reading raises, naming the field
    values["inqueue_since"] = _inqueue_since(obj, status, phase) if phase == "Inqueue" else None
    values["scheduler_name"] = (metadata.get("annotations") or {}).get(SCHEDULER_NAME_ANNOTATION)
    return construct_complete(PodGroup, values)


def _read_spec(
    conversion: Conversion,
    obj: KubeObject,
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
    classes: PriorityClasses,
    queues: Mapping[str, Queue],
) -> PodGroup:
    """The group read field by field: the first group of each spec, in the order its errors are found."""
    queue = obj.string(spec, "queue", "spec.queue") or DEFAULT_QUEUE
    if queue not in queues and conversion.strict:
        obj.fail("spec.queue", f"unknown Queue {queue!r}")
    # Live, a missing queue is kept: the group waits with QueueNotFound until it shows up.
    min_task_member = obj.mapping(spec, "minTaskMember", "spec.minTaskMember")
    for task in min_task_member:
        if not isinstance(task, str):
            obj.fail("spec.minTaskMember", f"task name {task!r} must be a string")
        obj.integer(min_task_member, task, child("spec.minTaskMember", task), 0, minimum=0)
    priority_class = obj.string(spec, "priorityClassName", "spec.priorityClassName")
    topology = None
    topology_spec = obj.mapping(spec, "networkTopology", "spec.networkTopology")
    if spec.get("networkTopology") is not None:
        mode = obj.string(topology_spec, "mode", "spec.networkTopology.mode", "hard")
        if mode not in ("hard", "soft"):
            obj.fail("spec.networkTopology.mode", f"must be hard or soft, not {mode!r}")
        tier = topology_spec.get("highestTierAllowed")
        if tier is not None:
            tier = obj.integer(
                topology_spec, "highestTierAllowed", "spec.networkTopology.highestTierAllowed", 0, minimum=0
            )
        topology = NetworkTopology.model_construct(
            mode=cast('Literal["hard", "soft"]', mode), highest_tier_allowed=tier
        )
    return construct(
        PodGroup,
        namespace=obj.namespace,
        name=obj.name,
        min_member=obj.integer(spec, "minMember", "spec.minMember", 1, minimum=0),
        min_task_member=dict(min_task_member),
        queue=queue,
        priority=classes.value_of(obj, priority_class, "spec.priorityClassName"),
        priority_class=priority_class,
        min_resources=_min_resources(conversion, obj, spec),
        network_topology=topology,
        phase=(phase := obj.string(status, "phase", "status.phase")),
        created=obj.created(),
        inqueue_since=_inqueue_since(obj, status, phase),
        scheduler_name=(obj.raw.get("metadata", {}).get("annotations") or {}).get(SCHEDULER_NAME_ANNOTATION),
    )


def _min_resources(conversion: Conversion, obj: KubeObject, spec: Mapping[str, Any]) -> dict[str, int]:
    """``spec.minResources`` as amounts; the groups of one job size spell it alike across specs
    that differ elsewhere (gang size, queue, priority), so each distinct spelling is read once and
    its dict shared (models are frozen)."""
    raw = spec.get("minResources")
    if type(raw) is not dict:
        return obj.amounts(obj.nanos_map(spec, "minResources", "spec.minResources"), "spec.minResources")
    return conversion.shared(
        ("min-resources", spelling(raw)),
        lambda: obj.amounts(obj.nanos_map(spec, "minResources", "spec.minResources"), "spec.minResources"),
    )


def _inqueue_since(obj: KubeObject, status: Mapping[str, Any], phase: str) -> float | None:
    """When an Inqueue group was admitted: its ``Inqueued`` condition's ``lastTransitionTime``."""
    if phase != "Inqueue":
        return None
    for index, condition in enumerate(obj.sequence(status, "conditions", "status.conditions")):
        path = f"status.conditions[{index}]"
        if not isinstance(condition, MAPPING_TYPES):
            obj.fail(path, f"must be a mapping, not {type_name(condition)}")
        if condition.get("type") == INQUEUED_CONDITION and condition.get("status") == "True":
            stamp = condition.get("lastTransitionTime")
            return None if stamp is None else epoch_seconds(obj, stamp, f"{path}.lastTransitionTime")
    return None
