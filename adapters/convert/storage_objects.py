"""Storage and disruption objects → model types, for the one converter (``adapters/convert/snapshot.py``).

PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes, CSIDrivers,
CSIStorageCapacities and PodDisruptionBudgets keep only the fields kube-scheduler's volume plugins
and DefaultPreemption read (see :mod:`vcsat.model.storage` and :mod:`vcsat.model.disruption`).
Like the rest of the converter, bad input fails in one line naming the object and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

from vcsat.adapters.convert.fields import type_name
from vcsat.model.cluster import NodeSelectorRequirement, NodeSelectorTerm
from vcsat.model.disruption import PodDisruptionBudget
from vcsat.model.quantity import NANO, parse_nanos
from vcsat.model.selectors import LabelRequirement, LabelSelector, label_selector
from vcsat.model.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from vcsat.adapters.convert.reader import KubeObject as Reader

BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"
ACCESS_MODES = frozenset({"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"})
_VOLUME_MODES = frozenset({"Filesystem", "Block"})
_BINDING_MODES = frozenset({"Immediate", "WaitForFirstConsumer"})
_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


def _annotations(obj: Reader) -> dict[str, str]:
    return obj.string_map(obj.raw["metadata"], "annotations", "metadata.annotations")


def _storage_class_of(obj: Reader, spec: Mapping[str, Any]) -> str:
    annotations = _annotations(obj)
    if BETA_CLASS_ANNOTATION in annotations:
        return annotations[BETA_CLASS_ANNOTATION]
    return obj.string(spec, "storageClassName", "spec.storageClassName")


def _bytes(obj: Reader, parent: Mapping[str, Any], path: str, *, round_up: bool) -> int:
    amount = parent.get("storage")
    if amount is None:
        return 0
    try:
        nanos = parse_nanos(amount)
    except ValueError as error:
        obj.fail(path, str(error))
    if nanos < 0:
        obj.fail(path, f"must not be negative ({amount})")
    whole, rest = divmod(nanos, NANO)
    return whole + 1 if round_up and rest else whole


def _access_modes(obj: Reader, spec: Mapping[str, Any]) -> tuple[str, ...]:
    modes = obj.sequence(spec, "accessModes", "spec.accessModes")
    for index, mode in enumerate(modes):
        if mode not in ACCESS_MODES:
            obj.fail(f"spec.accessModes[{index}]", f"must be one of {', '.join(sorted(ACCESS_MODES))}, not {mode!r}")
    return tuple(modes)


def _volume_mode(obj: Reader, spec: Mapping[str, Any]) -> Literal["Filesystem", "Block"]:
    mode = obj.string(spec, "volumeMode", "spec.volumeMode", "Filesystem")
    if mode not in _VOLUME_MODES:
        obj.fail("spec.volumeMode", f"must be Filesystem or Block, not {mode!r}")
    return cast('Literal["Filesystem", "Block"]', mode)


def read_label_selector(obj: Reader, parent: Mapping[str, Any], key: str, path: str) -> LabelSelector | None:
    """A ``metav1.LabelSelector``; None when absent."""
    raw = parent.get(key)
    if raw is None:
        return None
    selector = obj.mapping(parent, key, path)
    labels = obj.string_map(selector, "matchLabels", f"{path}.matchLabels")
    expressions = []
    for index, entry in enumerate(obj.sequence(selector, "matchExpressions", f"{path}.matchExpressions")):
        where = f"{path}.matchExpressions[{index}]"
        if not isinstance(entry, Mapping):
            obj.fail(where, f"must be a mapping, not {type_name(entry)}")
        label = obj.string(entry, "key", f"{where}.key")
        if not label:
            obj.fail(f"{where}.key", "missing")
        operator = obj.string(entry, "operator", f"{where}.operator")
        if operator not in _LABEL_OPERATORS:
            obj.fail(f"{where}.operator", f"must be one of In, NotIn, Exists, DoesNotExist, not {operator!r}")
        values = obj.sequence(entry, "values", f"{where}.values")
        for position, value in enumerate(values):
            if not isinstance(value, str):
                obj.fail(f"{where}.values[{position}]", f"must be a string, not {type_name(value)}")
        if operator in ("In", "NotIn") and not values:
            obj.fail(f"{where}.values", f"{operator} needs at least one value")
        if operator in ("Exists", "DoesNotExist") and values:
            obj.fail(f"{where}.values", f"{operator} takes no values")
        expressions.append(
            LabelRequirement(
                key=label,
                operator=cast('Literal["In", "NotIn", "Exists", "DoesNotExist"]', operator),
                values=tuple(values),
            )
        )
    return label_selector(labels, expressions)


def claim(obj: Reader) -> PersistentVolumeClaim:
    spec = obj.mapping(obj.raw, "spec", "spec")
    status = obj.mapping(obj.raw, "status", "status")
    annotations = _annotations(obj)
    resources = obj.mapping(spec, "resources", "spec.resources")
    requests = obj.mapping(resources, "requests", "spec.resources.requests")
    return PersistentVolumeClaim(
        namespace=obj.namespace,
        name=obj.name,
        storage_class=_storage_class_of(obj, spec),
        volume_name=obj.string(spec, "volumeName", "spec.volumeName"),
        bind_completed=BIND_COMPLETED_ANNOTATION in annotations,
        access_modes=_access_modes(obj, spec),
        request_bytes=_bytes(obj, requests, "spec.resources.requests.storage", round_up=True),
        volume_mode=_volume_mode(obj, spec),
        selector=read_label_selector(obj, spec, "selector", "spec.selector"),
        lost=obj.string(status, "phase", "status.phase") == "Lost",
        deleting=obj.raw["metadata"].get("deletionTimestamp") is not None,
        selected_node=annotations.get(SELECTED_NODE_ANNOTATION) or None,
    )


def volume(obj: Reader, requirements: Callable[..., tuple[NodeSelectorRequirement, ...]]) -> PersistentVolume:
    spec = obj.mapping(obj.raw, "spec", "spec")
    status = obj.mapping(obj.raw, "status", "status")
    capacity = obj.mapping(spec, "capacity", "spec.capacity")
    node_affinity = obj.mapping(spec, "nodeAffinity", "spec.nodeAffinity")
    terms: tuple[NodeSelectorTerm, ...] | None = None
    if node_affinity.get("required") is not None:
        base = "spec.nodeAffinity.required"
        required = obj.mapping(node_affinity, "required", base)
        found = []
        for index, raw in enumerate(obj.sequence(required, "nodeSelectorTerms", f"{base}.nodeSelectorTerms")):
            path = f"{base}.nodeSelectorTerms[{index}]"
            if not isinstance(raw, Mapping):
                obj.fail(path, f"must be a mapping, not {type_name(raw)}")
            found.append(
                NodeSelectorTerm(
                    match_expressions=requirements(obj, raw, "matchExpressions", path),
                    match_fields=requirements(obj, raw, "matchFields", path),
                )
            )
        terms = tuple(found)
    claim_ref = obj.mapping(spec, "claimRef", "spec.claimRef")
    claim_key = None
    if claim_ref:
        name = obj.string(claim_ref, "name", "spec.claimRef.name")
        if not name:
            obj.fail("spec.claimRef.name", "missing")
        claim_key = f"{obj.string(claim_ref, 'namespace', 'spec.claimRef.namespace', 'default')}/{name}"
    csi = obj.mapping(spec, "csi", "spec.csi")
    return PersistentVolume(
        name=obj.name,
        labels=obj.string_map(obj.raw["metadata"], "labels", "metadata.labels"),
        storage_class=_storage_class_of(obj, spec),
        capacity_bytes=_bytes(obj, capacity, "spec.capacity.storage", round_up=False),
        access_modes=_access_modes(obj, spec),
        volume_mode=_volume_mode(obj, spec),
        node_affinity=terms,
        claim=claim_key,
        phase=obj.string(status, "phase", "status.phase", "Available"),
        deleting=obj.raw["metadata"].get("deletionTimestamp") is not None,
        csi_driver=obj.string(csi, "driver", "spec.csi.driver"),
        csi_handle=obj.string(csi, "volumeHandle", "spec.csi.volumeHandle"),
    )


def storage_class(obj: Reader) -> StorageClass:
    raw = obj.raw
    mode = obj.string(raw, "volumeBindingMode", "volumeBindingMode", "Immediate")
    if mode not in _BINDING_MODES:
        obj.fail("volumeBindingMode", f"must be Immediate or WaitForFirstConsumer, not {mode!r}")
    terms = []
    for index, entry in enumerate(obj.sequence(raw, "allowedTopologies", "allowedTopologies")):
        path = f"allowedTopologies[{index}]"
        if not isinstance(entry, Mapping):
            obj.fail(path, f"must be a mapping, not {type_name(entry)}")
        found = []
        expressions = obj.sequence(entry, "matchLabelExpressions", f"{path}.matchLabelExpressions")
        for position, expression in enumerate(expressions):
            where = f"{path}.matchLabelExpressions[{position}]"
            if not isinstance(expression, Mapping):
                obj.fail(where, f"must be a mapping, not {type_name(expression)}")
            key = obj.string(expression, "key", f"{where}.key")
            if not key:
                obj.fail(f"{where}.key", "missing")
            values = obj.sequence(expression, "values", f"{where}.values")
            if not values or not all(isinstance(v, str) for v in values):
                obj.fail(f"{where}.values", "must be a non-empty list of strings")
            found.append(NodeSelectorRequirement(key=key, operator="In", values=tuple(values)))
        if found:
            terms.append(NodeSelectorTerm(match_expressions=tuple(found)))
    return StorageClass(
        name=obj.name,
        provisioner=obj.string(raw, "provisioner", "provisioner"),
        binding_mode=cast('Literal["Immediate", "WaitForFirstConsumer"]', mode),
        allowed_topologies=tuple(terms),
    )


def csinode(obj: Reader) -> CSINode:
    spec = obj.mapping(obj.raw, "spec", "spec")
    limits: dict[str, int] = {}
    for index, driver in enumerate(obj.sequence(spec, "drivers", "spec.drivers")):
        path = f"spec.drivers[{index}]"
        if not isinstance(driver, Mapping):
            obj.fail(path, f"must be a mapping, not {type_name(driver)}")
        name = obj.string(driver, "name", f"{path}.name")
        if not name:
            obj.fail(f"{path}.name", "missing")
        allocatable = obj.mapping(driver, "allocatable", f"{path}.allocatable")
        count = obj.integer(allocatable, "count", f"{path}.allocatable.count", minimum=0)
        if count is not None:
            limits[name] = count
    return CSINode(name=obj.name, limits=limits)


def csi_driver(obj: Reader) -> CSIDriver:
    spec = obj.mapping(obj.raw, "spec", "spec")
    capacity = spec.get("storageCapacity")
    if capacity is not None and not isinstance(capacity, bool):
        obj.fail("spec.storageCapacity", f"must be a boolean, not {type_name(capacity)}")
    return CSIDriver(name=obj.name, storage_capacity=bool(capacity))


def storage_capacity(obj: Reader) -> CSIStorageCapacity:
    raw = obj.raw

    def amount(key: str) -> int | None:
        if raw.get(key) is None:
            return None
        return _bytes(obj, {"storage": raw[key]}, key, round_up=True)

    return CSIStorageCapacity(
        namespace=obj.namespace,
        name=obj.name,
        storage_class=obj.string(raw, "storageClassName", "storageClassName"),
        node_topology=read_label_selector(obj, raw, "nodeTopology", "nodeTopology"),
        capacity_bytes=amount("capacity"),
        maximum_volume_size_bytes=amount("maximumVolumeSize"),
    )


def disruption_budget(obj: Reader) -> PodDisruptionBudget:
    spec = obj.mapping(obj.raw, "spec", "spec")
    status = obj.mapping(obj.raw, "status", "status")
    return PodDisruptionBudget(
        namespace=obj.namespace,
        name=obj.name,
        selector=read_label_selector(obj, spec, "selector", "spec.selector"),
        disruptions_allowed=obj.integer(status, "disruptionsAllowed", "status.disruptionsAllowed", 0, minimum=0),
    )


def pod_claims(obj: Reader, spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The claim names of a pod's ``spec.volumes``: ``persistentVolumeClaim.claimName``, and for a
    generic ephemeral volume the claim Kubernetes creates for it, ``<pod>-<volume>``."""
    out: list[str] = []
    for index, entry in enumerate(obj.sequence(spec, "volumes", "spec.volumes")):
        path = f"spec.volumes[{index}]"
        if not isinstance(entry, Mapping):
            obj.fail(path, f"must be a mapping, not {type_name(entry)}")
        if entry.get("persistentVolumeClaim") is not None:
            source = obj.mapping(entry, "persistentVolumeClaim", f"{path}.persistentVolumeClaim")
            name = obj.string(source, "claimName", f"{path}.persistentVolumeClaim.claimName")
            if not name:
                obj.fail(f"{path}.persistentVolumeClaim.claimName", "missing")
            out.append(name)
        elif entry.get("ephemeral") is not None:
            volume_name = obj.string(entry, "name", f"{path}.name")
            if not volume_name:
                obj.fail(f"{path}.name", "missing")
            out.append(f"{obj.name}-{volume_name}")
    return tuple(out)
