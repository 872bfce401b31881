"""The fast path of reading a pod: a plainly well-formed pod whose spec an earlier pod spelled alike.

Most pods of a large cluster repeat the spec of another pod of their job, and their own fields
(names, labels, annotations, phase, times) are plain strings. For such a pod this module builds
the :class:`~vcsat.model.Pod` from the earlier pod's spec-derived fields in one pass over its own
fields, with the checks inlined rather than through :class:`~.reader.KubeObject`'s per-field
readers. It only ever *accepts*: whatever is not plainly well-formed (a field of the wrong type, an
unknown phase, a time it cannot parse, a pod on a node not in the input, a missing PodGroup) goes
to the reference reading, :func:`~.pods.read_pod`, which reports the first error in its own order
or reads the odd case. The one check it makes that can fail (GPU indices, then volumes) comes
after every other check passed, in the reference's order, so the error is the one the reference
gives. Equal results on every input: tests/test_pod_fast.py compares the two.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vcsat.adapters.convert import storage_objects as storage
from vcsat.adapters.convert.clock import parse_clock
from vcsat.adapters.convert.gpu_ids import GPU_IDS_ANNOTATION, parse_gpu_ids
from vcsat.adapters.convert.pods import (
    _PARSE_BOOL,
    _POD_PHASES,
    GROUP_NAME_ANNOTATIONS,
    PREEMPTABLE_ANNOTATION,
    QUEUE_NAME_ANNOTATION,
    TASK_SPEC_ANNOTATION,
    _read_spec,
    _spec_key,
)
from vcsat.adapters.convert.pods import read_pod as read_pod_reference
from vcsat.adapters.convert.priority_classes import PriorityClasses
from vcsat.adapters.convert.reader import Conversion, KubeObject, _all_strings, construct_from
from vcsat.model.cluster import Node, Pod, PodGroup

_GROUP_KEY, _VOLCANO_GROUP_KEY = GROUP_NAME_ANNOTATIONS
_EMPTY: dict[str, Any] = {}
_TERMINAL = ("Succeeded", "Failed")


def read_pod(
    conversion: Conversion,
    obj: KubeObject,
    classes: PriorityClasses,
    podgroups: Mapping[str, PodGroup | None],
    nodes: Mapping[str, Node],
) -> Pod | None:
    """The pod, as :func:`~.pods.read_pod` reads it (same value, same error), faster."""
    raw = obj.raw
    metadata = raw["metadata"]
    spec = raw.get("spec")
    status = raw.get("status")
    if status is None:
        status = _EMPTY
    if type(spec) is not dict or type(status) is not dict or type(metadata) is not dict:
        return read_pod_reference(conversion, obj, classes, podgroups, nodes)
    annotations = metadata.get("annotations")
    if annotations is None:
        annotations = {}
    elif type(annotations) is not dict or not _all_strings(annotations):  # only read: no copy
        return read_pod_reference(conversion, obj, classes, podgroups, nodes)
    labels = metadata.get("labels")
    if labels is None:
        labels = {}
    elif type(labels) is dict and _all_strings(labels):
        labels = dict(labels)
    else:
        return read_pod_reference(conversion, obj, classes, podgroups, nodes)
    node_name = spec.get("nodeName")
    if node_name is not None:
        if type(node_name) is not str:
            return read_pod_reference(conversion, obj, classes, podgroups, nodes)
        if not node_name:
            node_name = None
        elif node_name not in nodes:
            return read_pod_reference(conversion, obj, classes, podgroups, nodes)

    key = _spec_key(obj, spec, labels)
    same = conversion.parts.get(key) if key is not None else None
    if same is None:
        # The first pod of its spec: read field by field (what the reference does from here on).
        pod = _read_spec(conversion, obj, metadata, spec, status, annotations, labels, node_name, classes, podgroups)
        if key is not None:
            conversion.parts[key] = dict(pod.__dict__)
        return pod

    # The pod's own fields, each plainly well-formed or the reference reads the pod.
    namespace = obj.namespace
    group = None
    group_name = annotations.get(_GROUP_KEY) or annotations.get(_VOLCANO_GROUP_KEY) or None
    if group_name is not None:
        group = f"{namespace}/{group_name}"
        if conversion.strict and group not in podgroups:
            return read_pod_reference(conversion, obj, classes, podgroups, nodes)
    preemptable_text = annotations.get(PREEMPTABLE_ANNOTATION, labels.get(PREEMPTABLE_ANNOTATION))
    preemptable = True if preemptable_text is None else _PARSE_BOOL.get(preemptable_text)
    phase = status.get("phase", "Pending")
    if phase is None:
        phase = "Pending"
    uid = metadata.get("uid", "")
    if uid is None:
        uid = ""
    nominated = status.get("nominatedNodeName")
    if nominated == "":
        nominated = None
    stamp = metadata.get("creationTimestamp")
    created = 0.0 if stamp is None else _clock(conversion, stamp)
    if (
        preemptable is None
        or type(phase) is not str
        or phase not in _POD_PHASES
        or type(uid) is not str
        or (nominated is not None and type(nominated) is not str)
        or created is None
    ):
        return read_pod_reference(conversion, obj, classes, podgroups, nodes)

    gpu_ids = None
    if node_name is not None and phase not in _TERMINAL and GPU_IDS_ANNOTATION in annotations:
        gpu_ids = parse_gpu_ids(obj, annotations[GPU_IDS_ANNOTATION], same["requests"])
    values = {
        **same,
        "namespace": namespace,
        "name": obj.name,
        "uid": uid,
        "labels": labels,
        "node_name": node_name,
        "phase": phase,
        "requests": dict(same["requests"]),
        "node_selector": dict(same["node_selector"]),
        "terminating": metadata.get("deletionTimestamp") is not None,
        "group": group,
        "task": annotations.get(TASK_SPEC_ANNOTATION, ""),
        "preemptable": preemptable,
        "gpu_ids": gpu_ids,
        "nominated_node": nominated,
        "created": created,
        "claims": storage.pod_claims(obj, spec) if spec.get("volumes") else (),
        "queue_name": annotations.get(QUEUE_NAME_ANNOTATION) or None,
    }
    return construct_from(Pod, values, complete=True)


def _clock(conversion: Conversion, stamp: Any) -> float | None:
    """Epoch seconds of a creation time, remembered per text for this conversion; None when it is
    not a plain time string (the reference reading then reports it)."""
    clocks = conversion.clocks
    found = clocks.get(stamp) if type(stamp) is str else None
    if found is not None:
        return found
    if type(stamp) is not str:
        return None
    try:
        found = clocks[stamp] = parse_clock(stamp)
    except ValueError:
        return None
    return found
