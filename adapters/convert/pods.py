"""Pod objects → :class:`~vcsat.model.Pod`: everything kube-scheduler's filters and vcsat's gangs read.

The pod's group (annotation), priority, phase, node, requests (:mod:`.pod_requests`), node
affinity (:mod:`.node_selectors`), inter-pod terms (:mod:`.pod_affinity`), spread constraints
(:mod:`.spread`), tolerations, host ports, volumes, gates and GPU indices (:mod:`.gpu_ids`). Parts
that the pods of one job spell alike are built once (:meth:`~.reader.Conversion.shared`). A pod
bound to a node that is not in the input, or naming a missing PodGroup, is an error in a file;
live, the first is left out and the second kept and not placed (``PodGroupNotFound``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from vcsat.adapters.convert import storage_objects as storage
from vcsat.adapters.convert.clock import parse_text_clock
from vcsat.adapters.convert.fields import MAPPING_TYPES
from vcsat.adapters.convert.gpu_ids import GPU_IDS_ANNOTATION, parse_gpu_ids
from vcsat.adapters.convert.node_selectors import read_preferred_affinity, read_required_affinity
from vcsat.adapters.convert.nodes import EFFECT_NAMES, TAINT_EFFECTS
from vcsat.adapters.convert.pod_affinity import NO_POD_RULES, read_pod_affinity_rules
from vcsat.adapters.convert.pod_requests import pod_requests_key, read_pod_requests, request_path
from vcsat.adapters.convert.priority_classes import PriorityClasses
from vcsat.adapters.convert.reader import Conversion, KubeObject, all_strings, construct, construct_complete, field_path
from vcsat.adapters.convert.spelling import spelling, spelling_seen
from vcsat.adapters.convert.spread import read_spread_constraints
from vcsat.adapters.errors import InputError
from vcsat.model import resources as res
from vcsat.model.cluster import (
    HostPort,
    Node,
    Pod,
    PodGroup,
    PodPhase,
    TaintEffect,
    Toleration,
)

GROUP_NAME_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
DEFAULT_SCHEDULER = "default-scheduler"


_GROUP_ANNOTATION, _VOLCANO_GROUP_ANNOTATION = GROUP_NAME_ANNOTATIONS
_GROUP_PATH = field_path("metadata", "annotations", GROUP_NAME_ANNOTATIONS[0])
_PREEMPTABLE_PATH = field_path("metadata", "annotations", PREEMPTABLE_ANNOTATION)
_POD_PHASES = frozenset({"Pending", "Running", "Succeeded", "Failed", "Unknown"})
_PARSE_BOOL = {
    # Go's strconv.ParseBool, as Volcano reads volcano.sh/preemptable
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}
_PROTOCOLS = frozenset({"TCP", "UDP", "SCTP"})


def read_pod(
    conversion: Conversion,
    obj: KubeObject,
    classes: PriorityClasses,
    podgroups: Mapping[str, PodGroup | None],
    nodes: Mapping[str, Node],
) -> Pod | None:
    raw = obj.raw
    metadata = raw["metadata"]
    spec = raw.get("spec")
    if not isinstance(spec, MAPPING_TYPES):
        obj.fail("spec", "missing" if spec is None else "must be a mapping")
    status = raw.get("status")
    if type(status) is not dict:  # the parser's own dict is the common case: read as it is
        status = obj.mapping(raw, "status", "status")
    # The annotations are read, not kept; the labels are kept (a copy). Plain dicts of strings,
    # the common case, are checked here in one pass each; anything else the reader checks.
    annotations = metadata.get("annotations")
    if type(annotations) is not dict or not all_strings(annotations):
        annotations = obj.checked_strings(metadata, "annotations", "metadata.annotations")
    labels = metadata.get("labels")
    if type(labels) is dict and all_strings(labels):
        labels = labels.copy()
    else:
        labels = obj.string_map(metadata, "labels", "metadata.labels")

    node_name = spec.get("nodeName")
    if type(node_name) is not str:
        node_name = obj.string(spec, "nodeName", "spec.nodeName")
    node_name = node_name or None
    if node_name is not None and node_name not in nodes:
        if conversion.strict:
            obj.fail("spec.nodeName", f"unknown Node {node_name!r}")
        return None  # its node is gone: it holds room nowhere we know

    key = _spec_key(conversion, spec, labels)
    parts = conversion.parts
    same = parts.get(key) if key is not None else None
    if same is None and key is not None:
        # A new spec: most repeat an earlier spec but for their containers (a job's sizes), and
        # then only what the containers decide is read (:func:`_other_containers`).
        rest_key = _rest_key(spec, key)
        same = _other_containers(conversion, obj, spec, parts.get(rest_key))
        if same is not None:
            parts[key] = same
        else:
            pod = _read_spec(
                conversion, obj, metadata, spec, status, annotations, labels, node_name, classes, podgroups
            )
            values = dict(pod.__dict__)  # its fields, before any derived value joins them
            # What the spec alone decides is the same for every pod read alike: its pods start with
            # it (the model's own derived values, read off this pod), not each computing it again.
            for name in _SPEC_DERIVED:
                values[name] = getattr(pod, name)
            parts[key] = values
            parts.setdefault(rest_key, values)
            return pod
    if same is not None:
        return _like(conversion, obj, metadata, spec, status, annotations, labels, node_name, podgroups, same)
    return _read_spec(conversion, obj, metadata, spec, status, annotations, labels, node_name, classes, podgroups)


_SPEC_DERIVED = ("gpus", "gpu_milli", "held")
"""Derived values of a pod (:class:`vcsat.model.Pod`) read off fields that ``_like`` takes from the
first pod of the spec (requests, scheduling gates, resource claims), never off its own."""


def _read_spec(
    conversion: Conversion,
    obj: KubeObject,
    metadata: Mapping[str, Any],
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
    annotations: Mapping[str, str],
    labels: dict[str, str],
    node_name: str | None,
    classes: PriorityClasses,
    podgroups: Mapping[str, PodGroup | None],
) -> Pod:
    """The pod read field by field: the first pod of each spec, in the order its errors are found."""
    requests_key = pod_requests_key(spec)
    if requests_key is None:
        requests = read_pod_requests(obj, spec)
    else:
        requests = dict(conversion.shared(("requests", requests_key), lambda: read_pod_requests(obj, spec)))
    gpu_milli = requests.get(res.GPU_MILLI)
    if gpu_milli is not None:
        if not 1 <= gpu_milli <= 1000:
            obj.fail(
                request_path(spec, res.GPU_MILLI),
                f"must be 1 to 1000 (thousandths of a GPU), not {gpu_milli}",
            )
        if requests.get(res.GPU):
            obj.fail(request_path(spec, res.GPU_MILLI), f"a GPU share cannot be asked together with {res.GPU}")

    priority_class = obj.string(spec, "priorityClassName", "spec.priorityClassName")
    class_priority = classes.value_of(obj, priority_class, "spec.priorityClassName")
    priority = obj.integer(spec, "priority", "spec.priority", class_priority)

    managed = obj.string(spec, "schedulerName", "spec.schedulerName", DEFAULT_SCHEDULER) == conversion.scheduler_name
    group, preemptable, phase = _own_fields(conversion, obj, status, annotations, labels, podgroups)

    affinity_raw = spec.get("affinity")
    pod_rules_raw = (
        (affinity_raw.get("podAffinity"), affinity_raw.get("podAntiAffinity"))
        if isinstance(affinity_raw, MAPPING_TYPES)
        else (None, None)
    )
    if pod_rules_raw == (None, None):
        pod_affinity, pod_anti_affinity = NO_POD_RULES, NO_POD_RULES
    else:
        # matchLabelKeys read the pod's own labels: equal text and equal labels, equal value.
        pod_affinity, pod_anti_affinity = conversion.shared(
            ("pod-affinity", spelling((pod_rules_raw, sorted(labels.items())))),
            lambda: (
                read_pod_affinity_rules(obj, spec, "podAffinity", labels),
                read_pod_affinity_rules(obj, spec, "podAntiAffinity", labels),
            ),
        )

    # The parts' keys are spellings (:mod:`.spelling`): equal spelling, equal value, as ``repr``
    # keyed them, at a fraction of its cost on nested specs.
    affinity_key = spelling(affinity_raw)
    gpu_ids = None
    holds_room = node_name is not None and phase not in ("Succeeded", "Failed")
    if holds_room and GPU_IDS_ANNOTATION in annotations:
        # Only a pod that holds room holds devices; on any other the annotation is history.
        gpu_ids = parse_gpu_ids(obj, annotations[GPU_IDS_ANNOTATION], requests)

    return construct(
        Pod,
        namespace=obj.namespace,
        name=obj.name,
        uid=obj.string(metadata, "uid", "metadata.uid"),
        labels=labels,
        managed=managed,
        node_name=node_name,
        phase=cast("PodPhase", phase),
        requests=requests,
        priority=priority,
        priority_class=priority_class,
        node_selector=obj.string_map(spec, "nodeSelector", "spec.nodeSelector"),
        affinity=conversion.shared(("affinity", affinity_key), lambda: read_required_affinity(obj, spec)),
        tolerations=conversion.shared(
            ("tolerations", spelling(spec.get("tolerations"))),
            lambda: tuple(
                _toleration(obj, raw, f"spec.tolerations[{index}]")
                for index, raw in enumerate(obj.sequence(spec, "tolerations", "spec.tolerations"))
            ),
        ),
        terminating=metadata.get("deletionTimestamp") is not None,
        group=group,
        task=annotations.get(TASK_SPEC_ANNOTATION, ""),
        preemptable=preemptable,
        gpu_ids=gpu_ids,
        nominated_node=_nominated_node(obj),
        created=obj.created(),
        claims=storage.pod_claims(obj, spec),
        scheduling_gates=_names(obj, spec, "schedulingGates"),
        resource_claims=_names(obj, spec, "resourceClaims"),
        queue_name=annotations.get(QUEUE_NAME_ANNOTATION) or None,
        preferred_affinity=conversion.shared(("preferred", affinity_key), lambda: read_preferred_affinity(obj, spec)),
        pod_affinity=pod_affinity,
        pod_anti_affinity=pod_anti_affinity,
        host_ports=conversion.shared(("host-ports", _ports_key(spec)), lambda: _host_ports(obj, spec)),
        spread_constraints=conversion.shared(
            ("spread", spelling(spec.get("topologySpreadConstraints"))), lambda: read_spread_constraints(obj, spec)
        ),
    )


def _spec_key(conversion: Conversion, spec: Mapping[str, Any], labels: Mapping[str, str]) -> tuple[Any, ...] | None:
    """What a pod's spec-derived fields depend on: the spelling of all of ``spec`` but
    ``nodeName``, and the labels when inter-pod terms read them (matchLabelKeys); None when the
    spec is no plain dict. Not the namespace: no spec-derived field reads it (the pods of one
    job template in several namespaces share one reading; ``namespace`` and the claims, which
    name the pod, are the pod's own fields)."""
    if type(spec) is not dict:
        return None
    if "nodeName" in spec:
        spec = spec.copy()
        del spec["nodeName"]
    affinity = spec.get("affinity")
    if affinity and type(affinity) is dict and ("podAffinity" in affinity or "podAntiAffinity" in affinity):
        return ("pod-spec", spelling(spec), spelling(labels))
    return ("pod-spec", spelling_seen(spec, conversion.clean))


_CONTAINER_FIELDS = frozenset({"containers", "initContainers", "overhead", "resources", "nodeName"})
"""The spec's fields that only the requests and host ports read (and the node, the pod's own)."""


def _rest_key(spec: Mapping[str, Any], key: tuple[Any, ...]) -> tuple[Any, ...]:
    """What a pod's spec-derived fields but its requests and host ports depend on: :func:`_spec_key`
    (``key``) of the spec without :data:`_CONTAINER_FIELDS`."""
    rest = {name: value for name, value in spec.items() if name not in _CONTAINER_FIELDS}
    return ("pod-rest", spelling(rest), *key[2:])


def _other_containers(
    conversion: Conversion, obj: KubeObject, spec: Mapping[str, Any], rest: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The spec-derived values of a pod whose spec is spelled as an earlier pod's (``rest``: its
    values) but for the containers: that pod's, with the requests and host ports read from this
    spec (each distinct spelling of them once, as a full reading does). None when there is no such
    pod, or the containers are not read cleanly: then the full reading reads the pod, and names
    the first error in its own order (the containers' errors come before and after other fields')."""
    if rest is None:
        return None
    requests_key = pod_requests_key(spec)
    if requests_key is None:
        return None
    try:
        requests = dict(conversion.shared(("requests", requests_key), lambda: read_pod_requests(obj, spec)))
        host_ports = conversion.shared(("host-ports", _ports_key(spec)), lambda: _host_ports(obj, spec))
    except InputError:
        return None
    gpu_milli = requests.get(res.GPU_MILLI)
    if gpu_milli is not None and (not 1 <= gpu_milli <= 1000 or requests.get(res.GPU)):
        return None
    values = rest.copy()
    values["requests"] = requests
    values["host_ports"] = host_ports
    # The derived values read off the requests (:data:`_SPEC_DERIVED`), as the model derives them.
    values["gpus"] = requests.get(res.GPU, 0)
    values["gpu_milli"] = requests.get(res.GPU_MILLI, 0)
    return values


def _like(
    conversion: Conversion,
    obj: KubeObject,
    metadata: Mapping[str, Any],
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
    annotations: Mapping[str, str],
    labels: dict[str, str],
    node_name: str | None,
    podgroups: Mapping[str, PodGroup | None],
    same: dict[str, Any],
) -> Pod:
    """A pod whose spec is spelled as an earlier pod's (``same``: that pod's fields): the
    spec-derived fields are that pod's (its reading checked them); the object's own fields are read
    and checked here, in the order a full reading checks them. The spec-derived dicts (requests,
    node selector) are that pod's own objects, shared: models are frozen and nothing changes a
    field's dict in place."""
    # The object's own fields, checked in the order a full reading checks them (_own_fields', then
    # the GPU indices, uid, nominated node, creation time and claims), written out here: every pod
    # but the first of each spec takes this path, and the calls were much of its cost.
    namespace = obj.namespace
    group = None
    group_name = annotations.get(_GROUP_ANNOTATION) or annotations.get(_VOLCANO_GROUP_ANNOTATION) or None
    if group_name is not None:
        group = f"{namespace}/{group_name}"
        if conversion.strict and group not in podgroups:
            obj.fail(_GROUP_PATH, f"unknown PodGroup {group!r}")
    preemptable = True
    preemptable_text = annotations.get(PREEMPTABLE_ANNOTATION, labels.get(PREEMPTABLE_ANNOTATION))
    if preemptable_text is not None:
        parsed = _PARSE_BOOL.get(preemptable_text)
        if parsed is None:
            obj.fail(_PREEMPTABLE_PATH, "must be true or false")
        preemptable = parsed
    phase = status.get("phase")
    if phase is None:
        phase = "Pending"
    elif type(phase) is not str:
        phase = obj.string(status, "phase", "status.phase", "Pending")
    if phase not in _POD_PHASES:
        obj.fail("status.phase", f"must be one of {', '.join(sorted(_POD_PHASES))}, not {phase!r}")
    gpu_ids = None
    if node_name is not None and phase not in ("Succeeded", "Failed") and GPU_IDS_ANNOTATION in annotations:
        gpu_ids = parse_gpu_ids(obj, annotations[GPU_IDS_ANNOTATION], same["requests"])
    uid = metadata.get("uid")
    if type(uid) is not str:
        uid = obj.string(metadata, "uid", "metadata.uid")
    values = same.copy()
    values["namespace"] = namespace
    values["name"] = name = obj.name
    # Its key (namespace/name, as the model derives it) made now, not on a first read: a new
    # string, not the object's own (which, made while the file was parsed, would keep the
    # parse's memory from being returned).
    values["key"] = f"{namespace}/{name}"
    values["uid"] = uid
    values["labels"] = labels
    values["node_name"] = node_name
    values["phase"] = phase
    values["terminating"] = terminating = metadata.get("deletionTimestamp") is not None
    # The pod's states (:meth:`vcsat.model.Pod._states`), made here while its values are at hand:
    # the GPU indices' resolution reads ``bound`` of every pod right after, and the solver reads
    # all four of most pods; each first read would otherwise run the model's method, per pod.
    finished = phase == "Succeeded" or phase == "Failed"
    values["finished"] = finished
    values["bound"] = node_name is not None and not finished
    values["gang_ready"] = node_name is not None and phase != "Failed"
    values["pending"] = values["managed"] and node_name is None and not finished and not terminating
    values["group"] = group
    values["task"] = annotations.get(TASK_SPEC_ANNOTATION, "")
    values["preemptable"] = preemptable
    values["gpu_ids"] = gpu_ids
    values["nominated_node"] = None if status.get("nominatedNodeName") is None else _nominated_node(obj)
    stamp = metadata.get("creationTimestamp")
    try:
        values["created"] = parse_text_clock(stamp) if type(stamp) is str else obj.created()
    except ValueError:
        values["created"] = obj.created()  # raises the error a full reading raises, naming the field
    values["claims"] = storage.pod_claims(obj, spec) if spec.get("volumes") else ()
    values["queue_name"] = annotations.get(QUEUE_NAME_ANNOTATION) or None
    return construct_complete(Pod, values)


def pod_references(obj: KubeObject) -> tuple[Any, Any]:
    """The PodGroup key (``namespace/name``) and the node name a raw pod names, as they are spelled
    (not checked: a reading does that); None for none."""
    metadata = obj.raw.get("metadata") or {}
    annotations = metadata.get("annotations")
    group = None
    if isinstance(annotations, MAPPING_TYPES):
        name = next((annotations[key] for key in GROUP_NAME_ANNOTATIONS if annotations.get(key)), None)
        group = f"{obj.namespace}/{name}" if isinstance(name, str) else name
    spec = obj.raw.get("spec")
    node_name = spec.get("nodeName") if isinstance(spec, MAPPING_TYPES) else None
    return group, node_name


def pod_context(
    references: tuple[Any, Any], podgroups: Mapping[str, Any], nodes: Mapping[str, Node]
) -> tuple[bool, bool]:
    """What a pod's conversion reads besides the pod and the priority classes (``references``:
    :func:`pod_references`): whether its PodGroup and its node exist (a reused conversion must be
    the one these would give now)."""
    group, node_name = references
    return (
        group is None or (isinstance(group, str) and group in podgroups),
        node_name is None or (isinstance(node_name, str) and node_name in nodes),
    )


def _ports_key(spec: Mapping[str, Any]) -> bytes | str:
    """What host ports are read from, spelled (:mod:`.spelling`): the init containers' and the
    containers' ``ports`` (and restart policies), None for a list that is absent."""
    parts: list[list[Any] | None] = []
    for field in ("initContainers", "containers"):
        containers = spec.get(field)
        if isinstance(containers, list):
            parts.append(
                [(c.get("ports"), c.get("restartPolicy")) if isinstance(c, MAPPING_TYPES) else c for c in containers]
            )
        else:
            parts.append(None)
    return spelling(parts)


def _host_ports(obj: KubeObject, spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """Ports with ``hostPort`` > 0 of the containers and of restartable (sidecar) init containers,
    the ones kube-scheduler's NodePorts counts: an init container that exits frees its port."""
    out: list[HostPort] = []
    for field in ("initContainers", "containers"):
        for index, container in enumerate(obj.sequence(spec, field, f"spec.{field}")):
            path = f"spec.{field}[{index}]"
            if not isinstance(container, MAPPING_TYPES):
                obj.fail(path, "must be a mapping")
            if field == "initContainers" and container.get("restartPolicy") != "Always":
                continue
            for position, port in enumerate(obj.sequence(container, "ports", f"{path}.ports")):
                port_path = f"{path}.ports[{position}]"
                if not isinstance(port, MAPPING_TYPES):
                    obj.fail(port_path, "must be a mapping")
                host_port = obj.integer(port, "hostPort", f"{port_path}.hostPort", 0, minimum=0)
                if host_port > 65535:
                    obj.fail(f"{port_path}.hostPort", f"must be 0 to 65535, not {host_port}")
                if host_port == 0:
                    continue
                protocol = obj.string(port, "protocol", f"{port_path}.protocol") or "TCP"
                if protocol not in _PROTOCOLS:
                    obj.fail(f"{port_path}.protocol", f"must be one of SCTP, TCP, UDP, not {protocol!r}")
                host_ip = obj.string(port, "hostIP", f"{port_path}.hostIP") or "0.0.0.0"
                out.append((protocol, host_ip, host_port))
    return tuple(out)


def _toleration(obj: KubeObject, raw: Any, path: str) -> Toleration:
    if not isinstance(raw, MAPPING_TYPES):
        obj.fail(path, "must be a mapping")
    key = obj.string(raw, "key", f"{path}.key")
    operator = obj.string(raw, "operator", f"{path}.operator", "Equal")
    if operator not in ("Equal", "Exists"):
        obj.fail(f"{path}.operator", f"must be Equal or Exists, not {operator!r}")
    value = obj.string(raw, "value", f"{path}.value")
    if operator == "Exists" and value:
        obj.fail(f"{path}.value", "must be empty when operator is Exists")
    if not key and operator != "Exists":
        obj.fail(f"{path}.operator", "must be Exists when key is empty")
    effect = obj.string(raw, "effect", f"{path}.effect")
    if effect and effect not in TAINT_EFFECTS:
        obj.fail(f"{path}.effect", f"must be one of {EFFECT_NAMES}, not {effect!r}")
    return Toleration.model_construct(
        key=key,
        operator=cast('Literal["Equal", "Exists"]', operator),
        value=value,
        effect=cast('TaintEffect | Literal[""]', effect),
    )


def _names(obj: KubeObject, spec: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """The ``name`` of each entry of a list of named items (``spec.schedulingGates``,
    ``spec.resourceClaims``)."""
    names = []
    for index, raw in enumerate(obj.sequence(spec, key, f"spec.{key}")):
        path = f"spec.{key}[{index}]"
        if not isinstance(raw, MAPPING_TYPES):
            obj.fail(path, "must be a mapping")
        name = obj.string(raw, "name", f"{path}.name")
        if not name:
            obj.fail(f"{path}.name", "missing")
        names.append(name)
    return tuple(names)


def _nominated_node(obj: KubeObject) -> str | None:
    """``status.nominatedNodeName``: where the pod waits for its victims to go."""
    status = obj.raw.get("status")
    if not isinstance(status, MAPPING_TYPES):
        return None
    value = status.get("nominatedNodeName")
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        obj.fail("status.nominatedNodeName", f"expected a string, got {type(value).__name__}")
    return value


def _own_fields(
    conversion: Conversion,
    obj: KubeObject,
    status: Mapping[str, Any],
    annotations: Mapping[str, str],
    labels: dict[str, str],
    podgroups: Mapping[str, PodGroup | None],
) -> tuple[str | None, bool, str]:
    """The pod object's own PodGroup, preemptable flag and phase (never shared between pods of one
    spec), checked in the order a reading reports their errors."""
    group = None
    group_name = annotations.get(GROUP_NAME_ANNOTATIONS[0]) or annotations.get(GROUP_NAME_ANNOTATIONS[1]) or None
    if group_name is not None:
        group = f"{obj.namespace}/{group_name}"
        if conversion.strict and group not in podgroups:
            obj.fail(
                field_path("metadata", "annotations", GROUP_NAME_ANNOTATIONS[0]),
                f"unknown PodGroup {group!r}",
            )
        # Live, a missing PodGroup is kept: not placed (PodGroupNotFound) until it shows up.
    preemptable_text = annotations.get(PREEMPTABLE_ANNOTATION, labels.get(PREEMPTABLE_ANNOTATION))
    preemptable = True
    if preemptable_text is not None:
        if preemptable_text not in _PARSE_BOOL:
            obj.fail(field_path("metadata", "annotations", PREEMPTABLE_ANNOTATION), "must be true or false")
        preemptable = _PARSE_BOOL[preemptable_text]
    phase = obj.string(status, "phase", "status.phase", "Pending")
    if phase not in _POD_PHASES:
        obj.fail("status.phase", f"must be one of {', '.join(sorted(_POD_PHASES))}, not {phase!r}")
    return group, preemptable, phase
