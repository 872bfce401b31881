"""The one converter: Kubernetes and Volcano objects → a :class:`~vcsat.model.Snapshot`.

The live scheduler (objects from informers) and ``vcsat solve`` (objects from a dumped file) both
call :func:`snapshot_from_objects`, so a cycle replayed offline sees exactly what the live cycle
saw. It reads only the fields of contract §1 and turns every amount into the exact integer
kube-scheduler compares (cpu millicores, everything else whole units, a fraction rounded up; queue
limits as Volcano compares them, see :mod:`vcsat.model.quantity`). This module sorts the objects
by kind and assembles the Snapshot; each kind is read by its own module (:mod:`.nodes`,
:mod:`.pods`, :mod:`.podgroups`, :mod:`.queues`, :mod:`.priority_classes`, :mod:`.hypernodes`,
:mod:`.storage_objects`), and what a lenient conversion tolerated is listed by :mod:`.notices`.

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

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from itertools import count
from types import MappingProxyType
from typing import Any, NoReturn, TypeVar

from vcsat.adapters.convert import storage_objects as storage
from vcsat.adapters.convert.fields import MAPPING_TYPES, type_name
from vcsat.adapters.convert.gpu_ids import resolve_gpu_ids
from vcsat.adapters.convert.hypernodes import read_hypernode
from vcsat.adapters.convert.node_selectors import read_requirements
from vcsat.adapters.convert.nodes import read_node
from vcsat.adapters.convert.notices import conversion_notices
from vcsat.adapters.convert.podgroups import read_podgroup
from vcsat.adapters.convert.pods import pod_context, pod_references, read_pod
from vcsat.adapters.convert.priority_classes import read_priority_classes
from vcsat.adapters.convert.queues import read_queues
from vcsat.adapters.convert.reader import NAMESPACED as _NAMESPACED
from vcsat.adapters.convert.reader import Conversion, KubeObject
from vcsat.adapters.convert.reuse import UNSET, ConversionMemo
from vcsat.adapters.errors import InputError
from vcsat.model.cluster import HyperNode, Node, Pod, PodGroup, Snapshot
from vcsat.model.hypernodes import resolve_hypernodes

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
    "CSIDriver": "storage.k8s.io",
    "CSIStorageCapacity": "storage.k8s.io",
    "PodDisruptionBudget": "policy",
}
_READ: Mapping[str, Any] = MappingProxyType({})
"""What a pod's object is replaced by once read (an empty mapping: the object is no longer held)."""
_GROUPS: dict[str, str] = {}
"""apiVersion -> its API group (``scheduling.volcano.sh/v1beta1`` -> ``scheduling.volcano.sh``), as met."""
_T = TypeVar("_T")
_NO_CONTEXT: tuple[()] = ()
"""The context of a node's reading (it reads nothing besides the node), one object for every call."""


def snapshot_from_objects(
    objects: Iterable[Mapping[str, Any]],
    *,
    scheduler_name: str = "vcsat",
    source: str | None = None,
    strict: bool = True,
    generation: int = 0,
    memo: ConversionMemo | None = None,
    now: float | None = None,
    changes: Mapping[str, Mapping[str, Any]] | None = None,
    since: int | None = None,
) -> Snapshot:
    """The snapshot of these objects; objects of other kinds are ignored (contract §1).

    ``memo``: kept by the caller across calls with the same options (the live scheduler's cycles):
    objects unchanged since the last call, in an unchanged context, are not converted again
    (:mod:`vcsat.adapters.convert.reuse`); the snapshot is the one a fresh conversion gives.
    ``now``: the cycle's clock (``Snapshot.now``; see :mod:`vcsat.adapters.convert.clock`).
    ``changes`` (with ``memo``): per kind, each key whose object may differ from those of the
    memo's last complete call, made at generation ``since``, and its object now (None: gone); every
    other key's object is the very one that call saw (the live store's
    :meth:`~vcsat.adapters.kube.informer.Store.snapshot_changes`). Then only those are identified
    (:meth:`ConversionMemo.changed_by_kind`), not every object; ``objects`` must still be all of them.
    """
    from vcsat.solver.pauses import no_gc_pauses  # here: the solver package loads OR-Tools

    if memo is not None:
        memo.drop_pending()
    converter = _SnapshotConverter(scheduler_name=scheduler_name, source=source, strict=strict, memo=memo)
    # Tens of thousands of new objects and no reference cycles among them: the cyclic garbage
    # collector would only rescan the (large) input again and again, about 40% of the time.
    with no_gc_pauses():
        return converter.convert(objects, generation, now, changes, since)


class _SnapshotConverter(Conversion):
    """A conversion that assembles a Snapshot from every kind's reader."""

    def convert(
        self,
        objects: Iterable[Mapping[str, Any]],
        generation: int,
        now: float | None = None,
        changes: Mapping[str, Mapping[str, Any]] | None = None,
        since: int | None = None,
    ) -> Snapshot:
        memo = self.memo
        identify = self._identify
        # A steady live cycle: the last call's objects with only the changed ones identified.
        patched = None
        if memo is not None and changes is not None and since is not None:
            patched = memo.changed_by_kind(since, changes, identify, _KINDS)
        by_kind: dict[str, dict[str, KubeObject]] = {kind: {} for kind in _KINDS} if patched is None else patched
        if patched is None and memo is None:
            for obj in map(identify, objects, count()):
                if obj is None:
                    continue
                seen = by_kind[obj.kind]
                key = obj.key
                if key in seen:
                    _twice(obj)
                seen[key] = obj
        elif patched is None and memo is not None:
            memo.identify_by_kind(objects, identify, by_kind, _twice)
        if memo is not None:
            memo.converted_by_kind(generation, by_kind)

        classes = read_priority_classes(self, by_kind["PriorityClass"].values())
        queues = read_queues(self, by_kind["Queue"].values())
        nodes = self._nodes(by_kind["Node"])
        podgroups: dict[str, PodGroup] = {}
        pods: list[Pod | None]
        if memo is None:  # nothing to reuse: no context to compare either
            for key, obj in _by_key(by_kind["PodGroup"]):
                group = read_podgroup(self, obj, classes, queues)
                if group is not None:
                    podgroups[key] = group
            pod_objects = by_kind["Pod"]
            pods = [read_pod(self, obj, classes, podgroups, nodes) for _, obj in _by_key(pod_objects)]
            # Nothing reads a pod's object again (the notices read nodes' and PodGroups'): when the
            # caller handed the objects over (a file's read), they are freed here, not after the
            # whole snapshot is built, so the parsed file and the snapshot never both peak. All at
            # once after the pods are read, not each as it is read: each pod's values would then
            # fill the holes its object left, scattered through the parsed file's memory; made with
            # nothing freed between them they lie together in key order, the order the solver
            # walks the pods again and again, which reads them faster (for a higher peak while the
            # pods are read).
            for obj in pod_objects.values():
                obj.raw = _READ
        else:
            classes_key = memo.context((tuple(sorted(classes.values.items())), classes.default))
            group_context = memo.context((classes_key, tuple(sorted(queues))))
            pod_contexts = {
                (group, node): memo.context((classes_key, group, node))
                for group in (True, False)
                for node in (True, False)
            }
            reuse = memo.reuse
            carried = 0
            group_objects = by_kind["PodGroup"]
            for key in memo.sorted_keys("PodGroup", group_objects):
                obj = group_objects[key]
                if obj.memo_context is group_context:  # reuse's first step, without the call
                    group = obj.memo_value
                    carried += 1
                else:
                    group = reuse(obj, group_context, read_podgroup, self, obj, classes, queues)
                if group is not None:
                    podgroups[key] = group
            memo.count_reused(carried)
            pods = []
            # A pod object the last call saw keeps its value (what ``reuse`` gives it) unless its
            # context may have changed: only the new pods and those naming a PodGroup or node that
            # came or went are read.
            changed = memo.pod_keys_changed(tuple(pod_contexts.values()), podgroups, nodes)
            groups_changed, nodes_changed = changed if changed is not None else (set(), set())
            names_changed = bool(groups_changed or nodes_changed)
            unset = UNSET
            append = pods.append
            carried = 0
            pod_objects = by_kind["Pod"]
            # Each pod's step is a few attribute reads, tens of thousands of times a cycle, so the
            # test of its names is written out here, not called. A carried pod is read again when
            # its PodGroup or node came or went; a name that is no string is not looked up (what
            # ``pod_context`` reads of it does not depend on which exist).
            for obj in map(pod_objects.__getitem__, memo.sorted_keys("Pod", pod_objects)):
                references = obj.references
                if changed is not None and obj.memo_context is not unset:
                    if not names_changed:
                        append(obj.memo_value)
                        carried += 1
                        continue
                    if references is not None:
                        group, node_name = references
                        if not (
                            (isinstance(group, str) and group in groups_changed)
                            or (isinstance(node_name, str) and node_name in nodes_changed)
                        ):
                            append(obj.memo_value)
                            carried += 1
                            continue
                if references is None:
                    references = obj.references = pod_references(obj)
                context = pod_contexts[pod_context(references, podgroups, nodes)]
                append(reuse(obj, context, read_pod, self, obj, classes, podgroups, nodes))
            memo.count_reused(carried)
        claims = self._storage(by_kind["PersistentVolumeClaim"], storage.claim)
        volumes = self._storage(by_kind["PersistentVolume"], partial(storage.volume, requirements=read_requirements))
        storage_classes = self._storage(by_kind["StorageClass"], storage.storage_class)
        csinodes = self._storage(by_kind["CSINode"], storage.csinode)
        csi_drivers = self._storage(by_kind["CSIDriver"], storage.csi_driver)
        capacities = self._storage(by_kind["CSIStorageCapacity"], storage.storage_capacity)
        budgets = self._storage(by_kind["PodDisruptionBudget"], storage.disruption_budget)
        kept = [pod for pod in pods if pod is not None]
        placed = resolve_gpu_ids(kept, nodes, self)
        if memo is not None:
            placed = memo.same_copies(kept, placed)
        hypernodes = [self.reuse(obj, (), read_hypernode, self, obj) for _, obj in _by_key(by_kind["HyperNode"])]
        if hypernodes:
            node_values = list(nodes.values())
            check = partial(_topology_error, hypernodes, node_values)
            error = check() if memo is None else memo.topology_checked(hypernodes, node_values, check)
            if error is not None:
                if self.strict:
                    raise InputError(error, source=self.source) from None
                hypernodes = []  # live: no topology rather than a wrong one
        self.keep_memo()

        namespaces = {
            obj.name: obj.string_map(obj.raw["metadata"], "labels", "metadata.labels")
            for _, obj in _by_key(by_kind["Namespace"])
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
            csi_drivers=csi_drivers,
            storage_capacities=capacities,
            disruption_budgets=budgets,
        )
        notices = conversion_notices(by_kind, snapshot, self.scheduler_name, strict=self.strict)
        return snapshot.model_copy(update={"notices": notices}) if notices else snapshot

    def _nodes(self, objects: Mapping[str, KubeObject]) -> dict[str, Node]:
        """The nodes by name, in name order. With a memo, a node object the last call read keeps its
        value without a call (:meth:`ConversionMemo.reuse`'s first step, five thousand times a
        cycle at 5,000 nodes: a node's reading depends on nothing else)."""
        memo = self.memo
        if memo is None:
            return {key: read_node(self, obj) for key, obj in _by_key(objects)}
        nodes: dict[str, Node] = {}
        carried = 0
        for key in memo.sorted_keys("Node", objects):
            obj = objects[key]
            if obj.memo_context is _NO_CONTEXT:
                nodes[key] = obj.memo_value
                carried += 1
            else:
                nodes[key] = memo.reuse(obj, _NO_CONTEXT, read_node, self, obj)
        memo.count_reused(carried)
        return nodes

    def _storage(self, objects: Mapping[str, KubeObject], read: Callable[[KubeObject], _T]) -> tuple[_T, ...]:
        """Storage objects and budgets (``adapters/convert/storage_objects.py``), in key order, each converted
        once while the informer keeps the same object."""
        return tuple(self.reuse(obj, (), read, obj) for _, obj in _by_key(objects))

    def _identify(self, raw: Any, index: int) -> KubeObject | None:
        """The object as a :class:`KubeObject` of a kind read here, or None for any other object.

        The common case (the parser's own dicts, string kind, apiVersion, name and namespace) is
        read here in one call, the KubeObject given them ready read; anything else goes
        :meth:`_identify_checked`, which checks it all and names what is wrong."""
        if type(raw) is dict:
            kind = raw.get("kind")
            api_version = raw.get("apiVersion")
            if type(kind) is str and type(api_version) is str:
                wanted = _KINDS.get(kind)
                if wanted is None:
                    return None
                group = _GROUPS.get(api_version)
                if group is None:
                    group = _GROUPS[api_version] = api_version.rpartition("/")[0]
                if group != wanted:
                    return None  # same kind name, another API (not ours to read)
                metadata: Any = raw.get("metadata")
                name = metadata.get("name") if type(metadata) is dict else None
                if type(name) is str and name:
                    if kind in _NAMESPACED:
                        namespace = metadata.get("namespace", "default")
                        key = f"{namespace}/{name}" if type(namespace) is str and namespace else None
                    else:
                        namespace, key = "", name
                    if key is not None:
                        return KubeObject(raw, kind, self.source, index, (name, namespace, key))
        return self._identify_checked(raw, index)

    def _identify_checked(self, raw: Any, index: int) -> KubeObject | None:
        if not isinstance(raw, MAPPING_TYPES):
            raise InputError(f"must be a mapping, not {type_name(raw)}", source=self.source, field=f"objects[{index}]")
        kind = raw.get("kind")
        if kind not in _KINDS:
            if kind is not None and not isinstance(kind, str):
                raise InputError("must be a string", source=self.source, field=f"objects[{index}].kind")
            return None
        api_version = raw.get("apiVersion")
        if api_version is not None:
            # Live objects from the Python client may come without apiVersion; then kind decides.
            group = _GROUPS.get(api_version) if type(api_version) is str else None
            if group is None:
                if not isinstance(api_version, str):
                    raise InputError("must be a string", source=self.source, field=f"objects[{index}].apiVersion")
                group = _GROUPS[api_version] = api_version.rpartition("/")[0]
            if group != _KINDS[kind]:
                return None  # same kind name, another API (not ours to read)
        return KubeObject(raw, kind, self.source, index)


def _twice(obj: KubeObject) -> NoReturn:
    """An object whose kind and key were met already."""
    obj.fail("metadata.name", "duplicate object (listed twice)")


def _by_key(objects: Mapping[str, _T]) -> list[tuple[str, _T]]:
    """``sorted(objects.items())``, at half its cost: the keys are unique, so sorting them alone
    (strings, not pairs) gives the same order."""
    return [(key, objects[key]) for key in sorted(objects)]


def _topology_error(hypernodes: list[HyperNode], nodes: list[Node]) -> str | None:
    """Why the HyperNodes do not make a topology of these nodes; None when they do."""
    try:
        resolve_hypernodes(hypernodes, nodes)
    except ValueError as error:
        return str(error)
    return None
