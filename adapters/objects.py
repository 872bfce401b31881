"""The one converter: Kubernetes and Volcano objects → a :class:`~vcsat.model.Snapshot`.

The live scheduler (objects from informers) and ``vcsat solve`` (objects from a dumped file) both
call :func:`snapshot_from_objects`, so a cycle replayed offline sees exactly what the live cycle
saw. It reads only the fields of contract §1 and turns every amount into the exact integer
kube-scheduler compares (cpu millicores, everything else whole units, a fraction rounded up; queue
limits as Volcano compares them, see :mod:`vcsat.model.quantity`).

Bad input raises :class:`~vcsat.adapters.errors.InputError` naming the source, the object and the
field path, one line. ``strict=True`` (files) also refuses dangling references; ``strict=False``
(a live cluster, where informers lag and objects come and go) tolerates them:

- a PodGroup whose queue is missing is kept, and its pods are not placed (``QueueNotFound``); a
  pod whose PodGroup is missing keeps the name of its group and is not placed
  (``PodGroupNotFound``): both wait, saying why, until the object shows up;
- an unknown priority class counts as priority 0; an unknown queue parent is no parent;
- a pod bound to a node not in the input is left out (it holds room on no node we know);
- a bound GPU pod that finds too few free GPU indices takes the lowest ones anyway;
- a node whose ``vcsat.io/gpu-topology`` is invalid counts as uniformly connected.

What it tolerates that keeps work from running or changes a decision (a missing queue or PodGroup,
an invalid GPU topology) is listed in ``Snapshot.notices``, one per object, never silent.

Node readiness: a node whose ``Ready`` condition is present and not ``"True"`` takes nothing new;
a node with no ``Ready`` condition at all (a hand-written instance) counts as ready.
A node without ``status.allocatable`` uses ``status.capacity``, as the API server defaults it; a
node that lists no ``pods`` allocatable can hold no pod, as in Kubernetes.

Speed matters (a 1,000-node, 10,000-pod cluster every cycle): the checks are plain Python and the
model objects are made with ``model_construct`` after them, not validated a second time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any, Literal, NoReturn, TypeVar, cast

from pydantic import BaseModel

from vcsat.adapters import storage_objects as storage
from vcsat.adapters.clock import INQUEUED_CONDITION, parse_clock
from vcsat.adapters.errors import InputError
from vcsat.adapters.fields import EMPTY, MAPPING_TYPES, FieldReader, type_name
from vcsat.model import resources as res
from vcsat.model.cluster import (
    DEFAULT_QUEUE,
    HostPort,
    HyperNode,
    HyperNodeMember,
    NetworkTopology,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Notice,
    Pod,
    PodAffinityRules,
    PodAffinityTerm,
    PodGroup,
    PodPhase,
    PreferredSchedulingTerm,
    Queue,
    SelectorOperator,
    Snapshot,
    Taint,
    TaintEffect,
    Toleration,
    WeightedPodAffinityTerm,
)
from vcsat.model.gpu_topology import gpu_topology
from vcsat.model.hypernodes import resolve_hypernodes
from vcsat.model.quantity import nanos_to_amount, nanos_to_quota, parse_nanos
from vcsat.model.selectors import LabelRequirement, label_selector
from vcsat.model.spread import InclusionPolicy, TopologySpreadConstraint
from vcsat.solver.enqueue import is_ours
from vcsat.solver.pauses import no_gc_pauses

GROUP_NAME_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"
GPU_IDS_ANNOTATION = "vcsat.io/gpu-ids"
GPU_TOPOLOGY_ANNOTATION = "vcsat.io/gpu-topology"
SCHEDULER_NAME_ANNOTATION = "vcsat.io/scheduler-name"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
DEFAULT_SCHEDULER = "default-scheduler"

BUILTIN_PRIORITY_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
"""Kubernetes creates these itself; a file may use them without listing them."""

MAX_AMOUNT = 2**53
"""Largest amount accepted in model units (about 9·10^15: 8 PiB, or 9·10^12 cores in millicores):
exact as a float too, and room for sums without int64 overflow. A queue quota above it is held at
it (it bounds nothing a cluster holds)."""

_KINDS = {
    # kind -> API group; a version is not checked (v1alpha1 and v1beta1 read alike)
    "Node": "",
    "Pod": "",
    "PodGroup": "scheduling.volcano.sh",
    "Queue": "scheduling.volcano.sh",
    "PriorityClass": "scheduling.k8s.io",
    "HyperNode": "topology.volcano.sh",
    "Namespace": "",
    "PersistentVolumeClaim": "",
    "PersistentVolume": "",
    "StorageClass": "storage.k8s.io",
    "CSINode": "storage.k8s.io",
    "PodDisruptionBudget": "policy",
}
_NAMESPACED = frozenset({"Pod", "PodGroup", "PersistentVolumeClaim", "PodDisruptionBudget"})
_TAINT_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})
_EFFECT_NAMES = "NoSchedule, PreferNoSchedule, NoExecute"
_SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
_OPERATOR_NAMES = "In, NotIn, Exists, DoesNotExist, Gt, Lt"
_POD_PHASES = frozenset({"Pending", "Running", "Succeeded", "Failed", "Unknown"})
_POD_LEVEL_RESOURCES = (res.CPU, res.MEMORY)
_PARSE_BOOL = {
    # Go's strconv.ParseBool, as Volcano reads volcano.sh/preemptable
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}
_SIMPLE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_GPU_IDS_PATH = f'metadata.annotations["{GPU_IDS_ANNOTATION}"]'
_EMPTY = EMPTY
_MAPPING = MAPPING_TYPES
_T = TypeVar("_T")
_M = TypeVar("_M", bound=BaseModel)


def snapshot_from_objects(
    objects: Iterable[Mapping[str, Any]],
    *,
    scheduler_name: str = "vcsat",
    source: str | None = None,
    strict: bool = True,
    generation: int = 0,
    memo: dict[Any, Any] | None = None,
    now: float | None = None,
) -> Snapshot:
    """The snapshot of these objects; objects of other kinds are ignored (contract §1).

    ``memo``: a dict kept by the caller across calls with the same options (the live scheduler's
    cycles). Nodes and pods that are the very same dict objects as last time (an informer cache
    replaces an object when it changes, never edits it) are not converted again.
    ``now``: the cycle's clock (``Snapshot.now``; see :mod:`vcsat.adapters.clock`).
    """
    converter = _Converter(scheduler_name=scheduler_name, source=source, strict=strict, memo=memo)
    # Tens of thousands of new objects and no reference cycles among them: the cyclic garbage
    # collector would only rescan the (large) input again and again, about 40% of the time.
    with no_gc_pauses():
        return converter.convert(objects, generation, now)


def field_path(*parts: str | int) -> str:
    """``spec.containers[0].resources.requests.cpu``; keys that are no plain name go in brackets."""
    out = ""
    for part in parts:
        out = child(out, part)
    return out


def child(path: str, key: str | int) -> str:
    """The path of ``key`` below ``path``: ``.name``, ``[3]`` or ``["nvidia.com/gpu"]``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _SIMPLE_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f'{path}["{key}"]'


class _Object(FieldReader):
    """One input object being read: knows how to name itself and its fields in an error."""

    __slots__ = ("kind", "name", "namespace", "raw", "source")

    def __init__(self, raw: Mapping[str, Any], kind: str, source: str | None, index: int) -> None:
        self.raw = raw
        self.kind = kind
        self.source = source
        self.name = ""
        self.namespace = ""
        metadata = raw.get("metadata")
        if not isinstance(metadata, _MAPPING):
            self.fail(f"objects[{index}].metadata", "missing" if metadata is None else "must be a mapping")
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            self.fail(f"objects[{index}].metadata.name", "missing" if name is None else "must be a name")
        self.name = name
        if kind in _NAMESPACED:
            namespace = metadata.get("namespace", "default")
            if not isinstance(namespace, str) or not namespace:
                self.fail("metadata.namespace", "must be a name")
            self.namespace = namespace

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def label(self) -> str:
        return f"{self.kind} {self.key}" if self.name else self.kind

    def string_map(self, parent: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
        value = self.mapping(parent, key, path)
        for entry_key, entry in value.items():
            if not isinstance(entry_key, str):
                self.fail(path, f"key {entry_key!r} must be a string")
            if not isinstance(entry, str):
                self.fail(child(path, entry_key), f"must be a string, not {type_name(entry)}")
        return dict(value)

    def nanos_map(self, parent: Mapping[str, Any], key: str, path: str) -> dict[str, int]:
        """A resource list (``requests``, ``allocatable``, ...) as exact nanos per resource."""
        value = self.mapping(parent, key, path)
        out: dict[str, int] = {}
        for name, amount in value.items():
            if not isinstance(name, str) or not name:
                self.fail(path, f"resource name {name!r} must be a non-empty string")
            try:
                nanos = parse_nanos(amount)
            except ValueError as error:
                self.fail(child(path, name), str(error))
            if nanos < 0:
                self.fail(child(path, name), f"must not be negative ({amount})")
            out[name] = nanos
        return out

    def amounts(self, nanos: Mapping[str, int], path: str) -> dict[str, int]:
        """Requests or allocatable as the model's exact integers (:func:`nanos_to_amount`: what
        kube-scheduler compares). Zeros are dropped."""
        out: dict[str, int] = {}
        for name, amount in nanos.items():
            units = nanos_to_amount(name, amount)
            if units > MAX_AMOUNT:
                self.fail(child(path, name), f"too large ({res.format_amount(name, units)})")
            if units:
                out[name] = units
        return out

    def quota(self, spec: Mapping[str, Any], key: str, path: str) -> dict[str, int] | None:
        """A queue's resource limit as Volcano compares it (:func:`nanos_to_quota`), zeros kept;
        None when not given."""
        if spec.get(key) is None:
            return None
        return {
            name: min(nanos_to_quota(name, amount), MAX_AMOUNT)
            for name, amount in self.nanos_map(spec, key, path).items()
        }

    def created(self) -> float:
        stamp = self.raw["metadata"].get("creationTimestamp")
        return _epoch_seconds(self, stamp, "metadata.creationTimestamp")


class _Converter:
    def __init__(
        self, *, scheduler_name: str, source: str | None, strict: bool, memo: dict[Any, Any] | None = None
    ) -> None:
        self.scheduler_name = scheduler_name
        self.source = source
        self.strict = strict
        self._parts: dict[tuple[str, str], Any] = {}
        self._memo = memo
        self._memo_next: dict[Any, Any] = {}

    def _reuse(self, obj: _Object, context: tuple[Any, ...], make: Callable[[], _T]) -> _T:
        """``make()``, or what it gave last call for the same raw object in the same ``context``
        (what else the conversion depends on: its node and PodGroup existing, priority classes)."""
        if self._memo is None:
            return make()
        key = (obj.kind, obj.key)
        found = self._memo.get(key)
        value = found[2] if found is not None and found[0] is obj.raw and found[1] == context else make()
        self._memo_next[key] = (obj.raw, context, value)  # the raw object kept alive: its id stays its own
        return cast(_T, value)

    def _shared(self, key: tuple[str, str], make: Callable[[], _T]) -> _T:
        """One frozen value for every pod that spells a part (tolerations, affinity) the same way.

        Pods of one job repeat these verbatim (and their containers' resources), and building them
        once instead of 10,000 times is much of the converter's speed. ``key`` holds the part's
        ``repr``: equal text, equal value.
        """
        found = self._parts.get(key)
        if found is None:
            found = self._parts[key] = make()
        return cast(_T, found)

    def convert(self, objects: Iterable[Mapping[str, Any]], generation: int, now: float | None = None) -> Snapshot:
        by_kind: dict[str, dict[str, _Object]] = {kind: {} for kind in _KINDS}
        for index, raw in enumerate(objects):
            obj = self._identify(raw, index)
            if obj is None:
                continue
            seen = by_kind[obj.kind]
            if obj.key in seen:
                obj.fail("metadata.name", "duplicate object (listed twice)")
            seen[obj.key] = obj

        classes = self._priority_classes(by_kind["PriorityClass"].values())
        queues = self._queues(by_kind["Queue"].values())
        nodes = {
            key: self._reuse(obj, (), partial(self._node, obj)) for key, obj in sorted(by_kind["Node"].items())
        }
        podgroups = {}
        for key, obj in sorted(by_kind["PodGroup"].items()):
            group = self._podgroup(obj, classes, queues)
            if group is not None:
                podgroups[key] = group
        classes_key = (tuple(sorted(classes.values.items())), classes.default)
        pods = [
            self._reuse(
                obj,
                _pod_context(obj, classes_key, podgroups, nodes),
                partial(self._pod, obj, classes, podgroups, nodes),
            )
            for _, obj in sorted(by_kind["Pod"].items())
        ]
        claims = self._storage(by_kind["PersistentVolumeClaim"], storage.claim)
        volumes = self._storage(by_kind["PersistentVolume"], partial(storage.volume, requirements=_requirements))
        storage_classes = self._storage(by_kind["StorageClass"], storage.storage_class)
        csinodes = self._storage(by_kind["CSINode"], storage.csinode)
        budgets = self._storage(by_kind["PodDisruptionBudget"], storage.disruption_budget)
        if self._memo is not None:
            self._memo.clear()  # what is gone from the cluster is forgotten
            self._memo.update(self._memo_next)
        placed = _resolve_gpu_ids([pod for pod in pods if pod is not None], nodes, self)
        hypernodes = [self._hypernode(obj) for _, obj in sorted(by_kind["HyperNode"].items())]
        if hypernodes:
            try:
                resolve_hypernodes(hypernodes, list(nodes.values()))
            except ValueError as error:
                if self.strict:
                    raise InputError(str(error), source=self.source) from None
                hypernodes = []  # live: no topology rather than a wrong one

        namespaces = {
            obj.name: obj.string_map(obj.raw["metadata"], "labels", "metadata.labels")
            for _, obj in sorted(by_kind["Namespace"].items())
        }
        snapshot = Snapshot.model_construct(
            nodes=tuple(nodes.values()),
            pods=tuple(placed),
            podgroups=tuple(podgroups.values()),
            queues=tuple(queues[name] for name in sorted(queues)),
            hypernodes=tuple(hypernodes),
            namespaces=namespaces,
            generation=generation,
            now=now,
            claims=claims,
            volumes=volumes,
            storage_classes=storage_classes,
            csinodes=csinodes,
            disruption_budgets=budgets,
        )
        notices = _notices(by_kind, snapshot, self.scheduler_name)
        return snapshot.model_copy(update={"notices": notices}) if notices else snapshot

    def _storage(self, objects: Mapping[str, _Object], read: Callable[[_Object], _T]) -> tuple[_T, ...]:
        """Storage objects and budgets (``adapters/storage_objects.py``), in key order, each converted
        once while the informer keeps the same object."""
        return tuple(self._reuse(obj, (), partial(read, obj)) for _, obj in sorted(objects.items()))

    def _identify(self, raw: Any, index: int) -> _Object | None:
        if not isinstance(raw, _MAPPING):
            raise InputError(f"must be a mapping, not {type_name(raw)}", source=self.source, field=f"objects[{index}]")
        kind = raw.get("kind")
        if kind not in _KINDS:
            if kind is not None and not isinstance(kind, str):
                raise InputError("must be a string", source=self.source, field=f"objects[{index}].kind")
            return None
        api_version = raw.get("apiVersion")
        if api_version is not None:
            # Live objects from the Python client may come without apiVersion; then kind decides.
            if not isinstance(api_version, str):
                raise InputError("must be a string", source=self.source, field=f"objects[{index}].apiVersion")
            group = api_version.rpartition("/")[0]
            if group != _KINDS[kind]:
                return None  # same kind name, another API (not ours to read)
        return _Object(raw, kind, self.source, index)

    # --- PriorityClass ------------------------------------------------------------------------

    def _priority_classes(self, objects: Iterable[_Object]) -> _PriorityClasses:
        values = dict(BUILTIN_PRIORITY_CLASSES)
        defaults: list[tuple[int, str]] = []
        for obj in objects:
            value = obj.raw.get("value")
            if value is None:
                obj.fail("value", "missing")
            values[obj.name] = obj.integer(obj.raw, "value", "value", 0)
            if obj.boolean(obj.raw, "globalDefault", "globalDefault", False):
                defaults.append((values[obj.name], obj.name))
        if len(defaults) > 1 and self.strict:
            names = ", ".join(name for _, name in sorted(defaults, key=lambda entry: entry[1]))
            raise InputError(f"more than one globalDefault PriorityClass: {names}", source=self.source)
        default = max(defaults)[0] if defaults else 0
        return _PriorityClasses(values, default, self.strict)

    # --- Queue --------------------------------------------------------------------------------

    def _queues(self, objects: Iterable[_Object]) -> dict[str, Queue]:
        queues: dict[str, Queue] = {}
        parents: dict[str, tuple[str, _Object]] = {}
        for obj in objects:
            spec = obj.mapping(obj.raw, "spec", "spec")
            status = obj.mapping(obj.raw, "status", "status")
            guarantee_spec = obj.mapping(spec, "guarantee", "spec.guarantee")
            guarantee = obj.quota(guarantee_spec, "resource", "spec.guarantee.resource") or {}
            parent = obj.string(spec, "parent", "spec.parent") or None
            if parent is not None:
                parents[obj.name] = (parent, obj)
            state = obj.string(status, "state", "status.state")
            queues[obj.name] = Queue.model_construct(
                name=obj.name,
                weight=obj.integer(spec, "weight", "spec.weight", 1, minimum=1),
                capability=obj.quota(spec, "capability", "spec.capability"),
                deserved=obj.quota(spec, "deserved", "spec.deserved"),
                guarantee=guarantee,
                reclaimable=obj.boolean(spec, "reclaimable", "spec.reclaimable", True),
                parent=parent,
                open=state not in ("Closed", "Closing"),
                priority=obj.integer(spec, "priority", "spec.priority", 0, minimum=0),
            )
        if DEFAULT_QUEUE not in queues:
            queues[DEFAULT_QUEUE] = Queue.model_construct(name=DEFAULT_QUEUE)
        for name, (parent, obj) in sorted(parents.items()):
            if parent in queues:
                continue
            # Volcano makes the root queue itself; a parent "root" that is not listed is the top.
            if parent == "root" or not self.strict:
                queues[name] = queues[name].model_copy(update={"parent": None})
            else:
                obj.fail("spec.parent", f"unknown Queue {parent!r}")
        self._break_queue_cycles(queues)
        return queues

    def _break_queue_cycles(self, queues: dict[str, Queue]) -> None:
        for start in sorted(queues):
            seen = [start]
            parent = queues[start].parent
            while parent is not None:
                if parent in seen:
                    if self.strict:
                        chain = " -> ".join([*seen, parent])
                        raise InputError(
                            f"queue parents form a cycle: {chain}",
                            source=self.source,
                            obj=f"Queue {start}",
                            field="spec.parent",
                        )
                    queues[seen[-1]] = queues[seen[-1]].model_copy(update={"parent": None})
                    break
                seen.append(parent)
                parent = queues[parent].parent

    # --- Node ---------------------------------------------------------------------------------

    def _node(self, obj: _Object) -> Node:
        metadata = obj.raw["metadata"]
        spec = obj.mapping(obj.raw, "spec", "spec")
        status = obj.mapping(obj.raw, "status", "status")
        annotations = obj.string_map(metadata, "annotations", "metadata.annotations")
        taints = tuple(
            self._taint(obj, taint, f"spec.taints[{index}]")
            for index, taint in enumerate(obj.sequence(spec, "taints", "spec.taints"))
        )
        field = "status.allocatable" if status.get("allocatable") is not None else "status.capacity"
        allocatable = obj.amounts(obj.nanos_map(status, field.rpartition(".")[2], field), field)
        ready = True
        for index, condition in enumerate(obj.sequence(status, "conditions", "status.conditions")):
            if not isinstance(condition, _MAPPING):
                obj.fail(f"status.conditions[{index}]", "must be a mapping")
            if condition.get("type") == "Ready":
                ready = obj.string(condition, "status", f"status.conditions[{index}].status") == "True"
        topology = annotations.get(GPU_TOPOLOGY_ANNOTATION)
        if topology is not None:
            try:
                gpu_topology(topology, allocatable.get(res.GPU, 0))
            except ValueError as error:
                if self.strict:
                    obj.fail(f'metadata.annotations["{GPU_TOPOLOGY_ANNOTATION}"]', str(error))
                topology = None  # live: the node counts as uniformly connected until fixed
        return _construct(
            Node,
            name=obj.name,
            labels=obj.string_map(metadata, "labels", "metadata.labels"),
            taints=taints,
            unschedulable=obj.boolean(spec, "unschedulable", "spec.unschedulable", False),
            ready=ready,
            allocatable=allocatable,
            gpu_topology=topology,
        )

    @staticmethod
    def _taint(obj: _Object, raw: Any, path: str) -> Taint:
        if not isinstance(raw, _MAPPING):
            obj.fail(path, "must be a mapping")
        key = obj.string(raw, "key", f"{path}.key")
        if not key:
            obj.fail(f"{path}.key", "missing")
        effect = obj.string(raw, "effect", f"{path}.effect")
        if effect not in _TAINT_EFFECTS:
            obj.fail(f"{path}.effect", f"must be one of {_EFFECT_NAMES}, not {effect!r}")
        value = obj.string(raw, "value", f"{path}.value")
        return Taint.model_construct(key=key, value=value, effect=cast("TaintEffect", effect))

    # --- PodGroup -----------------------------------------------------------------------------

    def _podgroup(self, obj: _Object, classes: _PriorityClasses, queues: Mapping[str, Queue]) -> PodGroup | None:
        spec = obj.mapping(obj.raw, "spec", "spec")
        status = obj.mapping(obj.raw, "status", "status")
        queue = obj.string(spec, "queue", "spec.queue") or DEFAULT_QUEUE
        if queue not in queues and self.strict:
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
        return _construct(
            PodGroup,
            namespace=obj.namespace,
            name=obj.name,
            min_member=obj.integer(spec, "minMember", "spec.minMember", 1, minimum=0),
            min_task_member=dict(min_task_member),
            queue=queue,
            priority=classes.value_of(obj, priority_class, "spec.priorityClassName"),
            priority_class=priority_class,
            min_resources=obj.amounts(obj.nanos_map(spec, "minResources", "spec.minResources"), "spec.minResources"),
            network_topology=topology,
            phase=(phase := obj.string(status, "phase", "status.phase")),
            created=obj.created(),
            inqueue_since=_inqueue_since(obj, status, phase),
            scheduler_name=(obj.raw.get("metadata", {}).get("annotations") or {}).get(SCHEDULER_NAME_ANNOTATION),
        )

    # --- Pod ----------------------------------------------------------------------------------

    def _pod(
        self,
        obj: _Object,
        classes: _PriorityClasses,
        podgroups: Mapping[str, PodGroup | None],
        nodes: Mapping[str, Node],
    ) -> Pod | None:
        metadata = obj.raw["metadata"]
        spec = obj.raw.get("spec")
        if not isinstance(spec, _MAPPING):
            obj.fail("spec", "missing" if spec is None else "must be a mapping")
        status = obj.mapping(obj.raw, "status", "status")
        annotations = obj.string_map(metadata, "annotations", "metadata.annotations")
        labels = obj.string_map(metadata, "labels", "metadata.labels")

        node_name = obj.string(spec, "nodeName", "spec.nodeName") or None
        if node_name is not None and node_name not in nodes:
            if self.strict:
                obj.fail("spec.nodeName", f"unknown Node {node_name!r}")
            return None  # its node is gone: it holds room nowhere we know

        requests_key = _requests_key(spec)
        if requests_key is None:
            requests = _pod_requests(obj, spec)
        else:
            requests = dict(self._shared(("requests", requests_key), lambda: _pod_requests(obj, spec)))
        gpu_milli = requests.get(res.GPU_MILLI)
        if gpu_milli is not None:
            if not 1 <= gpu_milli <= 1000:
                obj.fail(
                    _request_path(spec, res.GPU_MILLI),
                    f"must be 1 to 1000 (thousandths of a GPU), not {gpu_milli}",
                )
            if requests.get(res.GPU):
                obj.fail(_request_path(spec, res.GPU_MILLI), f"a GPU share cannot be asked together with {res.GPU}")

        priority_class = obj.string(spec, "priorityClassName", "spec.priorityClassName")
        class_priority = classes.value_of(obj, priority_class, "spec.priorityClassName")
        priority = obj.integer(spec, "priority", "spec.priority", class_priority)

        managed = obj.string(spec, "schedulerName", "spec.schedulerName", DEFAULT_SCHEDULER) == self.scheduler_name
        group = None
        group_name = next((annotations[key] for key in GROUP_NAME_ANNOTATIONS if annotations.get(key)), None)
        if group_name is not None:
            group = f"{obj.namespace}/{group_name}"
            if group not in podgroups and self.strict:
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

        affinity_raw = spec.get("affinity")
        pod_rules_raw = (
            (affinity_raw.get("podAffinity"), affinity_raw.get("podAntiAffinity"))
            if isinstance(affinity_raw, _MAPPING)
            else (None, None)
        )
        if pod_rules_raw == (None, None):
            pod_affinity, pod_anti_affinity = _NO_POD_RULES, _NO_POD_RULES
        else:
            # matchLabelKeys read the pod's own labels: equal text and equal labels, equal value.
            pod_affinity, pod_anti_affinity = self._shared(
                ("pod-affinity", repr((pod_rules_raw, sorted(labels.items())))),
                lambda: (
                    _pod_affinity_rules(obj, spec, "podAffinity", labels),
                    _pod_affinity_rules(obj, spec, "podAntiAffinity", labels),
                ),
            )

        gpu_ids = None
        holds_room = node_name is not None and phase not in ("Succeeded", "Failed")
        if holds_room and GPU_IDS_ANNOTATION in annotations:
            # Only a pod that holds room holds devices; on any other the annotation is history.
            gpu_ids = _parse_gpu_ids(obj, annotations[GPU_IDS_ANNOTATION], requests)

        return _construct(
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
            affinity=self._shared(("affinity", repr(spec.get("affinity"))), lambda: _required_affinity(obj, spec)),
            tolerations=self._shared(
                ("tolerations", repr(spec.get("tolerations"))),
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
            preferred_affinity=self._shared(
                ("preferred", repr(spec.get("affinity"))), lambda: _preferred_affinity(obj, spec)
            ),
            pod_affinity=pod_affinity,
            pod_anti_affinity=pod_anti_affinity,
            host_ports=self._shared(("host-ports", _ports_key(spec)), lambda: _host_ports(obj, spec)),
            spread_constraints=self._shared(
                ("spread", repr(spec.get("topologySpreadConstraints"))), lambda: _spread_constraints(obj, spec)
            ),
        )

    # --- HyperNode ----------------------------------------------------------------------------

    def _hypernode(self, obj: _Object) -> HyperNode:
        spec = obj.mapping(obj.raw, "spec", "spec")
        if spec.get("tier") is None:
            obj.fail("spec.tier", "missing")
        members = []
        for index, raw in enumerate(obj.sequence(spec, "members", "spec.members")):
            path = f"spec.members[{index}]"
            if not isinstance(raw, _MAPPING):
                obj.fail(path, "must be a mapping")
            member_type = obj.string(raw, "type", f"{path}.type")
            if member_type not in ("Node", "HyperNode"):
                obj.fail(f"{path}.type", f"must be Node or HyperNode, not {member_type!r}")
            selector = obj.mapping(raw, "selector", f"{path}.selector")
            exact = obj.mapping(selector, "exactMatch", f"{path}.selector.exactMatch")
            regex = obj.mapping(selector, "regexMatch", f"{path}.selector.regexMatch")
            label = obj.mapping(selector, "labelMatch", f"{path}.selector.labelMatch")
            chosen = [name for name in ("exactMatch", "regexMatch", "labelMatch") if selector.get(name) is not None]
            if len(chosen) != 1:
                obj.fail(f"{path}.selector", "must have exactly one of exactMatch, regexMatch, labelMatch")
            exact_name = obj.string(exact, "name", f"{path}.selector.exactMatch.name") or None
            pattern = obj.string(regex, "pattern", f"{path}.selector.regexMatch.pattern") or None
            if chosen == ["exactMatch"] and exact_name is None:
                obj.fail(f"{path}.selector.exactMatch.name", "missing")
            if chosen == ["regexMatch"]:
                if pattern is None:
                    obj.fail(f"{path}.selector.regexMatch.pattern", "missing")
                try:
                    re.compile(pattern)
                except re.error as error:
                    obj.fail(f"{path}.selector.regexMatch.pattern", f"not a regular expression: {error}")
            labels = (
                obj.string_map(label, "matchLabels", f"{path}.selector.labelMatch.matchLabels")
                if chosen == ["labelMatch"]
                else None
            )
            members.append(
                HyperNodeMember.model_construct(
                    type=cast('Literal["Node", "HyperNode"]', member_type),
                    exact_name=exact_name,
                    regex=pattern,
                    labels=labels,
                )
            )
        return HyperNode.model_construct(
            name=obj.name, tier=obj.integer(spec, "tier", "spec.tier", 0, minimum=1), members=tuple(members)
        )


class _PriorityClasses:
    """PriorityClass values by name, and the globalDefault that applies when a pod names none."""

    def __init__(self, values: dict[str, int], default: int, strict: bool) -> None:
        self.values = values
        self.default = default
        self.strict = strict

    def value_of(self, obj: _Object, name: str, path: str) -> int:
        if not name:
            return self.default
        value = self.values.get(name)
        if value is None:
            if self.strict:
                obj.fail(path, f"unknown PriorityClass {name!r}")
            return 0
        return value


# --- Pod helpers (module level: they need no converter state) ----------------------------------


def _pod_context(
    obj: _Object, classes_key: tuple[Any, ...], podgroups: Mapping[str, Any], nodes: Mapping[str, Node]
) -> tuple[Any, ...]:
    """What a pod's conversion reads besides the pod: whether its PodGroup and node exist, and the
    priority classes (a reused conversion must be the one these would give now)."""
    metadata = obj.raw.get("metadata") or {}
    annotations = metadata.get("annotations")
    group = None
    if isinstance(annotations, _MAPPING):
        name = next((annotations[key] for key in GROUP_NAME_ANNOTATIONS if annotations.get(key)), None)
        group = f"{obj.namespace}/{name}" if isinstance(name, str) else name
    spec = obj.raw.get("spec")
    node_name = spec.get("nodeName") if isinstance(spec, _MAPPING) else None
    return (
        classes_key,
        group is None or (isinstance(group, str) and group in podgroups),
        node_name is None or (isinstance(node_name, str) and node_name in nodes),
    )


def _pod_requests(obj: _Object, spec: Mapping[str, Any]) -> dict[str, int]:
    """The pod's requests as kube-scheduler counts them (rounded up once, on the exact total), with
    ``pods: 1``."""
    requests = obj.amounts(_pod_request_nanos(obj, spec), "spec.containers")
    requests[res.PODS] = 1
    return requests


def _requests_key(spec: Mapping[str, Any]) -> str | None:
    """Everything a pod's requests depend on, as text; None when the spec is too odd to key."""
    containers = spec.get("containers")
    init_containers = spec.get("initContainers") or []
    if type(containers) is not list or type(init_containers) is not list:
        return None
    try:
        return repr(
            (
                [container.get("resources") for container in containers],
                [(container.get("resources"), container.get("restartPolicy")) for container in init_containers],
                spec.get("overhead"),
                spec.get("resources"),
            )
        )
    except AttributeError:  # a container that is no mapping: the slow path says where
        return None


def _pod_request_nanos(obj: _Object, spec: Mapping[str, Any]) -> dict[str, int]:
    """Requests as Kubernetes' PodRequests counts them, in exact nanos.

    Containers are summed; restartable init containers (sidecars) run alongside them and add to
    the sum; each ordinary init container runs alone with the sidecars started before it, and the
    pod needs the largest of those moments too. Pod-level ``spec.resources`` replaces the cpu and
    memory total, and ``spec.overhead`` comes on top.
    """
    containers = obj.sequence(spec, "containers", "spec.containers")
    if not containers:
        obj.fail("spec.containers", "missing (a pod has at least one container)")
    total: dict[str, int] = {}
    for index, container in enumerate(containers):
        _add(total, _container_requests(obj, container, f"spec.containers[{index}]"))

    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for index, container in enumerate(obj.sequence(spec, "initContainers", "spec.initContainers")):
        path = f"spec.initContainers[{index}]"
        requests = _container_requests(obj, container, path)
        restart_policy = obj.string(container, "restartPolicy", f"{path}.restartPolicy")
        if restart_policy == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            moment = sidecars
        else:
            moment = dict(requests)
            _add(moment, sidecars)
        for name, amount in moment.items():
            if amount > init_peak.get(name, 0):
                init_peak[name] = amount
    for name, amount in init_peak.items():
        if amount > total.get(name, 0):
            total[name] = amount

    pod_resources = obj.mapping(spec, "resources", "spec.resources")
    if pod_resources:
        pod_requests = _defaulted_requests(obj, pod_resources, "spec.resources")
        for name in _POD_LEVEL_RESOURCES:
            if name in pod_requests:
                total[name] = pod_requests[name]
    _add(total, obj.nanos_map(spec, "overhead", "spec.overhead"))
    return total


def _container_requests(obj: _Object, container: Any, path: str) -> dict[str, int]:
    if not isinstance(container, _MAPPING):
        obj.fail(path, f"must be a mapping, not {type_name(container)}")
    resources = obj.mapping(container, "resources", f"{path}.resources")
    if not resources:
        return {}
    requests = _defaulted_requests(obj, resources, f"{path}.resources")
    for name, amount in requests.items():
        # Kubernetes refuses fractions of countable resources (one GPU, not 0.5).
        if amount % 10**9 and not (name in res.MILLI_UNIT_RESOURCES or res.is_byte_resource(name)):
            obj.fail(_request_field(path, resources, name), "must be a whole number")
    return requests


def _defaulted_requests(obj: _Object, resources: Mapping[str, Any], path: str) -> dict[str, int]:
    """``requests``, with a limit standing in for a request that is not given (as the API server defaults)."""
    requests = obj.nanos_map(resources, "requests", f"{path}.requests")
    limits = obj.nanos_map(resources, "limits", f"{path}.limits")
    for name, amount in limits.items():
        requests.setdefault(name, amount)
    return requests


def _request_field(path: str, resources: Mapping[str, Any], name: str) -> str:
    requests = resources.get("requests")
    where = "requests" if isinstance(requests, _MAPPING) and name in requests else "limits"
    return child(f"{path}.resources.{where}", name)


def _request_path(spec: Mapping[str, Any], name: str) -> str:
    """The first place a pod asks for ``name``, for an error about its total."""
    for list_name in ("containers", "initContainers"):
        containers = spec.get(list_name) or []
        for index, container in enumerate(containers):
            resources = container.get("resources") or {}
            for where in ("requests", "limits"):
                if name in (resources.get(where) or {}):
                    return child(f"spec.{list_name}[{index}].resources.{where}", name)
    return child("spec.overhead", name)


def _add(total: dict[str, int], more: Mapping[str, int]) -> None:
    for name, amount in more.items():
        total[name] = total.get(name, 0) + amount


def _parse_gpu_ids(obj: _Object, text: str, requests: Mapping[str, int]) -> tuple[int, ...]:
    path = _GPU_IDS_PATH
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isascii() and part.isdigit() for part in parts):
        obj.fail(path, f'must be GPU indices separated by commas (like "0,1"), not {text!r}')
    ids = tuple(int(part) for part in parts)
    if len(set(ids)) != len(ids):
        obj.fail(path, f"lists an index twice: {text!r}")
    wanted = 1 if requests.get(res.GPU_MILLI) else requests.get(res.GPU, 0)
    if len(ids) != wanted:
        obj.fail(path, f"lists {len(ids)} GPU indices but the pod holds {wanted} GPU(s)")
    return ids


def _required_affinity(obj: _Object, spec: Mapping[str, Any]) -> tuple[NodeSelectorTerm, ...]:
    base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    affinity = obj.mapping(spec, "affinity", "spec.affinity")
    node_affinity = obj.mapping(affinity, "nodeAffinity", "spec.affinity.nodeAffinity")
    required = obj.mapping(node_affinity, "requiredDuringSchedulingIgnoredDuringExecution", base)
    if not required:
        return ()
    terms = []
    for index, raw in enumerate(obj.sequence(required, "nodeSelectorTerms", f"{base}.nodeSelectorTerms")):
        path = f"{base}.nodeSelectorTerms[{index}]"
        if not isinstance(raw, _MAPPING):
            obj.fail(path, "must be a mapping")
        expressions = _requirements(obj, raw, "matchExpressions", path)
        fields = _requirements(obj, raw, "matchFields", path)
        for position, requirement in enumerate(fields):
            if requirement.key != "metadata.name":
                obj.fail(f"{path}.matchFields[{position}].key", f"must be metadata.name, not {requirement.key!r}")
        if expressions or fields:
            terms.append(NodeSelectorTerm.model_construct(match_expressions=expressions, match_fields=fields))
    if not terms:
        # Kubernetes: an empty term matches no node, and so does a list of only empty terms.
        nothing = NodeSelectorRequirement.model_construct(key="metadata.name", operator="In", values=())
        terms.append(NodeSelectorTerm.model_construct(match_expressions=(), match_fields=(nothing,)))
    return tuple(terms)


def _preferred_affinity(obj: _Object, spec: Mapping[str, Any]) -> tuple[PreferredSchedulingTerm, ...]:
    base = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    affinity = obj.mapping(spec, "affinity", "spec.affinity")
    node_affinity = obj.mapping(affinity, "nodeAffinity", "spec.affinity.nodeAffinity")
    out = []
    for index, raw in enumerate(obj.sequence(node_affinity, "preferredDuringSchedulingIgnoredDuringExecution", base)):
        path = f"{base}[{index}]"
        if not isinstance(raw, _MAPPING):
            obj.fail(path, "must be a mapping")
        weight = obj.integer(raw, "weight", f"{path}.weight", None, minimum=1)
        if weight is None:
            obj.fail(f"{path}.weight", "missing")
        if weight > 100:
            obj.fail(f"{path}.weight", f"must be 1 to 100, not {weight}")
        preference = obj.mapping(raw, "preference", f"{path}.preference")
        expressions = _requirements(obj, preference, "matchExpressions", f"{path}.preference")
        fields = _requirements(obj, preference, "matchFields", f"{path}.preference")
        for position, requirement in enumerate(fields):
            if requirement.key != "metadata.name":
                obj.fail(
                    f"{path}.preference.matchFields[{position}].key", f"must be metadata.name, not {requirement.key!r}"
                )
        term = NodeSelectorTerm.model_construct(match_expressions=expressions, match_fields=fields)
        out.append(PreferredSchedulingTerm.model_construct(weight=weight, preference=term))
    return tuple(out)


_NO_POD_RULES = PodAffinityRules()
_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_PROTOCOLS = frozenset({"TCP", "UDP", "SCTP"})


def _pod_affinity_rules(
    obj: _Object, spec: Mapping[str, Any], kind: str, labels: Mapping[str, str]
) -> PodAffinityRules:
    """``spec.affinity.podAffinity`` or ``podAntiAffinity``, with matchLabelKeys/mismatchLabelKeys
    merged into each term's selector as kube-apiserver does when it admits the pod."""
    base = f"spec.affinity.{kind}"
    affinity = obj.mapping(spec, "affinity", "spec.affinity")
    rules = obj.mapping(affinity, kind, base)
    if not rules:
        return _NO_POD_RULES
    required_path = f"{base}.requiredDuringSchedulingIgnoredDuringExecution"
    required = tuple(
        _pod_affinity_term(obj, raw, f"{required_path}[{index}]", labels)
        for index, raw in enumerate(
            obj.sequence(rules, "requiredDuringSchedulingIgnoredDuringExecution", required_path)
        )
    )
    preferred_path = f"{base}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    for index, raw in enumerate(obj.sequence(rules, "preferredDuringSchedulingIgnoredDuringExecution", preferred_path)):
        path = f"{preferred_path}[{index}]"
        if not isinstance(raw, _MAPPING):
            obj.fail(path, "must be a mapping")
        if raw.get("weight") is None:
            obj.fail(f"{path}.weight", "missing")
        weight = obj.integer(raw, "weight", f"{path}.weight", 0, minimum=1)
        if weight > 100:
            obj.fail(f"{path}.weight", f"must be 1 to 100, not {weight}")
        term_raw = raw.get("podAffinityTerm")
        if term_raw is None:
            obj.fail(f"{path}.podAffinityTerm", "missing")
        term = _pod_affinity_term(obj, term_raw, f"{path}.podAffinityTerm", labels)
        preferred.append(WeightedPodAffinityTerm.model_construct(weight=weight, term=term))
    return PodAffinityRules.model_construct(required=required, preferred=tuple(preferred))


def _pod_affinity_term(obj: _Object, raw: Any, path: str, labels: Mapping[str, str]) -> PodAffinityTerm:
    if not isinstance(raw, _MAPPING):
        obj.fail(path, "must be a mapping")
    topology_key = obj.string(raw, "topologyKey", f"{path}.topologyKey")
    if not topology_key:
        obj.fail(f"{path}.topologyKey", "missing (must be a label key)")
    namespaces = obj.sequence(raw, "namespaces", f"{path}.namespaces")
    for index, name in enumerate(namespaces):
        if not isinstance(name, str) or not name:
            obj.fail(f"{path}.namespaces[{index}]", "must be a namespace name")
    keys: dict[str, tuple[str, ...]] = {}
    for field in ("matchLabelKeys", "mismatchLabelKeys"):
        values = obj.sequence(raw, field, f"{path}.{field}")
        for index, value in enumerate(values):
            if not isinstance(value, str) or not value:
                obj.fail(f"{path}.{field}[{index}]", "must be a label key")
        keys[field] = tuple(values)
    selector = storage.read_label_selector(obj, raw, "labelSelector", f"{path}.labelSelector")
    if selector is not None and (keys["matchLabelKeys"] or keys["mismatchLabelKeys"]):
        merged = [
            *selector.requirements,
            *(
                LabelRequirement(key=k, operator="In", values=(labels[k],))
                for k in keys["matchLabelKeys"]
                if k in labels
            ),
            *(
                LabelRequirement(key=k, operator="NotIn", values=(labels[k],))
                for k in keys["mismatchLabelKeys"]
                if k in labels
            ),
        ]
        selector = label_selector(None, merged)
    return PodAffinityTerm.model_construct(
        label_selector=selector,
        namespaces=tuple(sorted(set(namespaces))),
        namespace_selector=storage.read_label_selector(obj, raw, "namespaceSelector", f"{path}.namespaceSelector"),
        topology_key=topology_key,
        match_label_keys=keys["matchLabelKeys"],
        mismatch_label_keys=keys["mismatchLabelKeys"],
    )


def _ports_key(spec: Mapping[str, Any]) -> str:
    """The text host ports are read from: the containers' and init containers' ``ports``."""
    parts = []
    for field in ("initContainers", "containers"):
        containers = spec.get(field)
        if isinstance(containers, list):
            parts.append(
                repr(
                    [
                        (c.get("ports"), c.get("restartPolicy")) if isinstance(c, _MAPPING) else c
                        for c in containers
                    ]
                )
            )
    return "|".join(parts)


def _host_ports(obj: _Object, spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """Ports with ``hostPort`` > 0 of the containers and of restartable (sidecar) init containers,
    the ones kube-scheduler's NodePorts counts: an init container that exits frees its port."""
    out: list[HostPort] = []
    for field in ("initContainers", "containers"):
        for index, container in enumerate(obj.sequence(spec, field, f"spec.{field}")):
            path = f"spec.{field}[{index}]"
            if not isinstance(container, _MAPPING):
                obj.fail(path, "must be a mapping")
            if field == "initContainers" and container.get("restartPolicy") != "Always":
                continue
            for position, port in enumerate(obj.sequence(container, "ports", f"{path}.ports")):
                port_path = f"{path}.ports[{position}]"
                if not isinstance(port, _MAPPING):
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


def _requirements(obj: _Object, term: Mapping[str, Any], key: str, base: str) -> tuple[NodeSelectorRequirement, ...]:
    out = []
    for index, raw in enumerate(obj.sequence(term, key, f"{base}.{key}")):
        path = f"{base}.{key}[{index}]"
        if not isinstance(raw, _MAPPING):
            obj.fail(path, "must be a mapping")
        label = obj.string(raw, "key", f"{path}.key")
        if not label:
            obj.fail(f"{path}.key", "missing")
        operator = obj.string(raw, "operator", f"{path}.operator")
        if operator not in _SELECTOR_OPERATORS:
            obj.fail(f"{path}.operator", f"must be one of {_OPERATOR_NAMES}, not {operator!r}")
        values = obj.sequence(raw, "values", f"{path}.values")
        for position, value in enumerate(values):
            if not isinstance(value, str):
                obj.fail(f"{path}.values[{position}]", f"must be a string, not {type_name(value)}")
        if operator in ("In", "NotIn") and not values:
            obj.fail(f"{path}.values", f"{operator} needs at least one value")
        if operator in ("Exists", "DoesNotExist") and values:
            obj.fail(f"{path}.values", f"{operator} takes no values")
        if operator in ("Gt", "Lt") and (len(values) != 1 or not _is_integer_text(values[0])):
            obj.fail(f"{path}.values", f"{operator} needs exactly one integer value")
        out.append(
            NodeSelectorRequirement.model_construct(
                key=label, operator=cast("SelectorOperator", operator), values=tuple(values)
            )
        )
    return tuple(out)


_SPREAD_PATH = "spec.topologySpreadConstraints"


def _spread_constraints(obj: _Object, spec: Mapping[str, Any]) -> tuple[TopologySpreadConstraint, ...]:
    """``spec.topologySpreadConstraints``, validated as the API server does for what they decide."""
    out = []
    for index, raw in enumerate(obj.sequence(spec, "topologySpreadConstraints", _SPREAD_PATH)):
        path = f"{_SPREAD_PATH}[{index}]"
        if not isinstance(raw, _MAPPING):
            obj.fail(path, "must be a mapping")
        max_skew = obj.integer(raw, "maxSkew", f"{path}.maxSkew", minimum=1)
        if max_skew is None:
            obj.fail(f"{path}.maxSkew", "missing")
        topology_key = obj.string(raw, "topologyKey", f"{path}.topologyKey")
        if not topology_key:
            obj.fail(f"{path}.topologyKey", "missing")
        when = obj.string(raw, "whenUnsatisfiable", f"{path}.whenUnsatisfiable")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            obj.fail(f"{path}.whenUnsatisfiable", f"must be DoNotSchedule or ScheduleAnyway, not {when!r}")
        min_domains = obj.integer(raw, "minDomains", f"{path}.minDomains", minimum=1)
        if min_domains is not None and when != "DoNotSchedule":
            obj.fail(f"{path}.minDomains", "may only be set with whenUnsatisfiable DoNotSchedule")
        policies: list[InclusionPolicy] = []
        for name, default in (("nodeAffinityPolicy", "Honor"), ("nodeTaintsPolicy", "Ignore")):
            policy = obj.string(raw, name, f"{path}.{name}", default)
            if policy not in ("Honor", "Ignore"):
                obj.fail(f"{path}.{name}", f"must be Honor or Ignore, not {policy!r}")
            policies.append(cast("InclusionPolicy", policy))
        keys = obj.sequence(raw, "matchLabelKeys", f"{path}.matchLabelKeys")
        for position, key in enumerate(keys):
            if not isinstance(key, str) or not key:
                obj.fail(f"{path}.matchLabelKeys[{position}]", "must be a label key")
        selector = storage.read_label_selector(obj, raw, "labelSelector", f"{path}.labelSelector")
        out.append(
            TopologySpreadConstraint(
                max_skew=max_skew,
                topology_key=topology_key,
                when_unsatisfiable=cast('Literal["DoNotSchedule", "ScheduleAnyway"]', when),
                selector=selector,
                min_domains=min_domains or 1,
                node_affinity_policy=policies[0],
                node_taints_policy=policies[1],
                match_label_keys=tuple(keys),
            )
        )
    return tuple(out)


def _toleration(obj: _Object, raw: Any, path: str) -> Toleration:
    if not isinstance(raw, _MAPPING):
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
    if effect and effect not in _TAINT_EFFECTS:
        obj.fail(f"{path}.effect", f"must be one of {_EFFECT_NAMES}, not {effect!r}")
    return Toleration.model_construct(
        key=key,
        operator=cast('Literal["Equal", "Exists"]', operator),
        value=value,
        effect=cast('TaintEffect | Literal[""]', effect),
    )


def _notices(
    by_kind: Mapping[str, Mapping[str, _Object]], snapshot: Snapshot, scheduler_name: str
) -> tuple[Notice, ...]:
    """What a lenient conversion tolerated that keeps work from running, once per object: only
    about this scheduler's work (its pods, its PodGroups) and the nodes."""
    out: list[Notice] = []
    for node in snapshot.nodes:
        raw = by_kind["Node"][node.name].raw.get("metadata", {}).get("annotations") or {}
        text = raw.get(GPU_TOPOLOGY_ANNOTATION)
        if node.gpu_topology is None and isinstance(text, str):
            try:
                gpu_topology(text, node.gpus)
                continue
            except ValueError as error:
                message = (
                    f"annotation {GPU_TOPOLOGY_ANNOTATION} is invalid ({error}): "
                    "its GPUs count as uniformly connected"
                )
            out.append(Notice.model_construct(kind="Node", key=node.name, reason="InvalidGpuTopology", message=message))
    queues = snapshot.queue_by_name
    for group in snapshot.podgroups:
        if group.queue not in queues and is_ours(group, snapshot, scheduler_name):
            message = f"spec.queue {group.queue!r} names no Queue: its pods are not scheduled until the queue exists"
            out.append(Notice.model_construct(kind="PodGroup", key=group.key, reason="QueueNotFound", message=message))
    groups = snapshot.podgroup_by_key
    dangling: dict[str, list[str]] = {}
    for pod in snapshot.pods:
        if pod.group is not None and pod.group not in groups and pod.managed and not pod.finished:
            dangling.setdefault(pod.group, []).append(pod.key)
    for group_key, keys in sorted(dangling.items()):
        message = (
            f"names PodGroup {group_key!r} (annotation {GROUP_NAME_ANNOTATIONS[0]}), which does not exist: "
            "not scheduled until it does"
        )
        out.extend(
            Notice.model_construct(kind="Pod", key=key, reason="PodGroupNotFound", message=message) for key in keys
        )
    return tuple(out)


def _names(obj: _Object, spec: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """The ``name`` of each entry of a list of named items (``spec.schedulingGates``,
    ``spec.resourceClaims``)."""
    names = []
    for index, raw in enumerate(obj.sequence(spec, key, f"spec.{key}")):
        path = f"spec.{key}[{index}]"
        if not isinstance(raw, _MAPPING):
            obj.fail(path, "must be a mapping")
        name = obj.string(raw, "name", f"{path}.name")
        if not name:
            obj.fail(f"{path}.name", "missing")
        names.append(name)
    return tuple(names)


def _nominated_node(obj: _Object) -> str | None:
    """``status.nominatedNodeName``: where the pod waits for its victims to go."""
    status = obj.raw.get("status")
    if not isinstance(status, Mapping):
        return None
    value = status.get("nominatedNodeName")
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        obj.fail("status.nominatedNodeName", f"expected a string, got {type(value).__name__}")
    return value


def _resolve_gpu_ids(pods: list[Pod], nodes: Mapping[str, Node], converter: _Converter) -> list[Pod]:
    """Give each bound GPU pod without ``vcsat.io/gpu-ids`` the lowest indices no other pod holds.

    Annotated pods keep their indices. The others, oldest first (then by key, so the answer is the
    same every time), take the lowest indices left: whole GPUs for ``nvidia.com/gpu``, and for a GPU
    share the lowest GPU that no whole-GPU pod holds and whose shares leave room for it.
    """
    holders = [pod for pod in pods if pod.bound and (pod.gpus or pod.gpu_milli)]
    if not holders:
        return pods
    whole: dict[str, set[int]] = {}
    shares: dict[str, dict[int, int]] = {}
    for pod in holders:
        if pod.gpu_ids is None or pod.node_name is None:
            continue
        node = nodes[pod.node_name]
        for index in pod.gpu_ids:
            if converter.strict and index >= node.gpus:
                _fail_gpu(converter, pod, f"index {index} is not a GPU of Node {node.name} (it has {node.gpus})")
            if pod.gpu_milli:
                node_shares = shares.setdefault(node.name, {})
                node_shares[index] = node_shares.get(index, 0) + pod.gpu_milli
            elif index in whole.setdefault(node.name, set()) and converter.strict:
                _fail_gpu(converter, pod, f"GPU {index} of Node {node.name} is held by another pod too")
            else:
                whole[node.name].add(index)

    resolved: dict[str, tuple[int, ...]] = {}
    for pod in sorted((pod for pod in holders if pod.gpu_ids is None), key=lambda pod: (pod.created, pod.key)):
        assert pod.node_name is not None
        node = nodes[pod.node_name]
        taken = whole.setdefault(node.name, set())
        node_shares = shares.setdefault(node.name, {})
        if pod.gpu_milli:
            fitting = [
                index
                for index in range(node.gpus)
                if index not in taken and node_shares.get(index, 0) + pod.gpu_milli <= 1000
            ]
            if not fitting:
                if converter.strict:
                    _fail_gpu(converter, pod, f"no GPU of Node {node.name} has room for {pod.gpu_milli}/1000 more")
                fitting = [0]
            ids: tuple[int, ...] = (fitting[0],)
            node_shares[fitting[0]] = node_shares.get(fitting[0], 0) + pod.gpu_milli
        else:
            free = [index for index in range(node.gpus) if index not in taken and index not in node_shares]
            if len(free) < pod.gpus:
                if converter.strict:
                    _fail_gpu(
                        converter,
                        pod,
                        f"Node {node.name} has {len(free)} free GPU(s) left, the pod holds {pod.gpus}",
                    )
                free += [index for index in range(max(node.gpus, pod.gpus)) if index not in free]
            ids = tuple(free[: pod.gpus])
            taken.update(ids)
        resolved[pod.key] = ids
    if not resolved:
        return pods
    return [pod.model_copy(update={"gpu_ids": resolved[pod.key]}) if pod.key in resolved else pod for pod in pods]


def _fail_gpu(converter: _Converter, pod: Pod, message: str) -> NoReturn:
    raise InputError(
        message,
        source=converter.source,
        obj=f"Pod {pod.key}",
        field=field_path("metadata", "annotations", GPU_IDS_ANNOTATION),
    )


def _construct(model: type[_M], **values: Any) -> _M:
    """``model.model_construct(**values)`` for a model given every one of its fields, five times faster.

    The converter has checked every value itself, so pydantic's validation would only repeat it;
    ``model_construct`` still spends 10 µs per object on defaults and bookkeeping that a complete
    set of fields does not need, which is a third of the time for 10,000 pods.
    """
    if values.keys() != model.__pydantic_fields__.keys():
        return model.model_construct(**values)  # a field the converter does not fill: the safe way
    instance = model.__new__(model)
    object.__setattr__(instance, "__dict__", values)
    object.__setattr__(instance, "__pydantic_fields_set__", set(values))
    object.__setattr__(instance, "__pydantic_extra__", None)
    object.__setattr__(instance, "__pydantic_private__", None)
    return instance


def _epoch_seconds(obj: _Object, stamp: Any, path: str) -> float:
    if stamp is None:
        return 0.0
    try:
        return parse_clock(stamp)
    except ValueError as error:
        obj.fail(path, str(error))


def _inqueue_since(obj: _Object, status: Mapping[str, Any], phase: str) -> float | None:
    """When an Inqueue group was admitted: its ``Inqueued`` condition's ``lastTransitionTime``."""
    if phase != "Inqueue":
        return None
    for index, condition in enumerate(obj.sequence(status, "conditions", "status.conditions")):
        path = f"status.conditions[{index}]"
        if not isinstance(condition, _MAPPING):
            obj.fail(path, f"must be a mapping, not {type_name(condition)}")
        if condition.get("type") == INQUEUED_CONDITION and condition.get("status") == "True":
            stamp = condition.get("lastTransitionTime")
            return None if stamp is None else _epoch_seconds(obj, stamp, f"{path}.lastTransitionTime")
    return None


def _is_integer_text(text: str) -> bool:
    return text.lstrip("+-").isdigit() and text.isascii()
