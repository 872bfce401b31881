"""A JSON cluster dump decoded straight into the fields the converter reads (msgspec, typed).

``vcsat solve FILE.json`` reads the file only to build a snapshot. A general parser builds every
field as Python objects (owner references, container images and commands, managed fields, status
details) that no reader looks at, and the cycle pays to allocate and free them. msgspec decodes the
bytes against typed dicts (``TypedDict``) in one C call: the keys listed below are kept, every
other key is skipped without building its value, and what a kept key holds is decoded as a general
parser would (``Any``: plain dicts, lists, strings, numbers; maps keep their order). The result is
the same plain dicts the converter reads from any other source, so the converter is one and the
same for this path, the careful JSON path, YAML and the live cluster.

The kept keys, by level: :data:`OBJECT_KEYS` (an object's top level, for every kind the converter
reads), :data:`METADATA_KEYS`, :data:`SPEC_KEYS` and :data:`STATUS_KEYS` (the union over kinds),
:data:`CONTAINER_KEYS` (a pod's containers and init containers). A test records every key the
readers look up while converting the test instances and checks that each is kept here: a reader
that starts reading a new field fails it until the field is listed.

Only a strict JSON ``v1`` ``List`` of plain objects (no nested List) takes this path. Anything
msgspec refuses or cannot match exactly (a value of another type where a mapping or a list is
expected, ``null`` there, NaN, a number beyond a double, a lone surrogate, bad UTF-8, trailing
text) makes :func:`decode_list` return None, and the file is read the careful way, which reports
what is wrong as before, naming the file, the object and the field.
"""

from __future__ import annotations

from typing import Any, TypedDict

import msgspec

METADATA_KEYS = frozenset(
    {"name", "namespace", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "labels", "annotations"}
)
"""``metadata``: names, stamps, labels, annotations (not ``managedFields``, ``ownerReferences``, ...)."""

CONTAINER_KEYS = frozenset({"resources", "ports", "restartPolicy"})
"""A container's requests and limits, host ports, and whether an init container is a sidecar."""

SPEC_KEYS = frozenset(
    {
        # Pod
        "containers", "initContainers", "overhead", "resources", "nodeName", "priority", "priorityClassName",
        "schedulerName", "affinity", "tolerations", "nodeSelector", "topologySpreadConstraints", "volumes",
        "schedulingGates", "resourceClaims",
        # Node
        "taints", "unschedulable",
        # PodGroup (and Volcano's sub-gangs, which a notice names)
        "minMember", "minTaskMember", "minResources", "queue", "networkTopology", "subGroupPolicy",
        # Queue
        "weight", "capability", "deserved", "guarantee", "reclaimable", "parent",
        # HyperNode
        "tier", "members",
        # PersistentVolumeClaim, PersistentVolume
        "accessModes", "storageClassName", "volumeMode", "volumeName", "selector", "capacity", "claimRef",
        "csi", "nodeAffinity",
        # CSINode, CSIDriver
        "drivers", "storageCapacity",
    }
)  # fmt: skip
"""``spec``: what the readers of every kind read (one key set: msgspec types a level, not a kind)."""

STATUS_KEYS = frozenset(
    {"phase", "nominatedNodeName", "conditions", "allocatable", "capacity", "state", "disruptionsAllowed"}
)
"""``status``: pods' and PodGroups' phase, nodes' room and conditions, queues' state, budgets."""

OBJECT_KEYS = frozenset(
    {
        "apiVersion", "kind", "metadata", "spec", "status",
        # PriorityClass
        "value", "globalDefault",
        # StorageClass
        "provisioner", "volumeBindingMode", "allowedTopologies",
        # CSIStorageCapacity
        "storageClassName", "nodeTopology", "capacity", "maximumVolumeSize",
    }
)  # fmt: skip
"""An object's top level."""

# The typed dicts msgspec decodes into, built from the key sets above so that the two never differ.
_Container = TypedDict("_Container", dict.fromkeys(sorted(CONTAINER_KEYS), Any), total=False)  # type: ignore[misc]
_Metadata = TypedDict("_Metadata", dict.fromkeys(sorted(METADATA_KEYS), Any), total=False)  # type: ignore[misc]
_Status = TypedDict("_Status", dict.fromkeys(sorted(STATUS_KEYS), Any), total=False)  # type: ignore[misc]
_Spec = TypedDict(
    "_Spec",
    {**dict.fromkeys(sorted(SPEC_KEYS), Any), "containers": list[_Container], "initContainers": list[_Container]},  # type: ignore[misc]
    total=False,
)
_Object = TypedDict(
    "_Object",
    {**dict.fromkeys(sorted(OBJECT_KEYS), Any), "metadata": _Metadata, "spec": _Spec, "status": _Status},  # type: ignore[misc]
    total=False,
)


class _List(TypedDict, total=False):
    apiVersion: Any
    kind: Any
    metadata: Any
    items: list[_Object]


_DECODER = msgspec.json.Decoder(_List)


def decode_list(data: bytes) -> Any:
    """The ``List`` in ``data`` with its items' unread fields left out, or None when ``data`` is not
    a strict JSON List of plain objects that msgspec decodes exactly (then read it the careful way)."""
    try:
        document = _DECODER.decode(data)
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return None
    if document.get("kind") != "List" or "items" not in document:
        return None  # one object (its fields were typed as a List's) or a List without items
    for item in document["items"]:
        kind = item.get("kind")
        api_version = item.get("apiVersion")
        if type(kind) is not str or not kind or kind == "List" or type(api_version) is not str or not api_version:
            return None  # a nested List (its items were left out) or an item the careful path names
    return document
