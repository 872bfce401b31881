"""List+watch caches of what a scheduling cycle reads, kept as the plain API dicts kubectl prints.

Why a cache at all: a cycle must not list 10,000 pods from the API server every second, and it
must see one consistent moment of the cluster. Each :class:`Informer` lists its resource once,
then watches from the list's resourceVersion (with bookmarks, so a quiet resource still resumes
from a recent point), and relists when the server says the version is gone (410) or the watch
breaks. All informers feed one :class:`Store`, which:

- keeps every object exactly as the server sent it (only ``metadata.managedFields`` dropped, as
  kubectl hides it), so :func:`~vcsat.adapters.convert.snapshot.snapshot_from_objects` reads the cache the
  same way it reads a dumped file;
- counts changes: ``generation`` goes up on every change, and the generation at which each object
  last changed in a way that matters for scheduling is remembered, so the applier can tell a gang
  whose pods changed after its snapshot (stale: skipped, decided again next cycle);
- wakes the scheduling loop only for changes that can alter a decision (a new pending pod, a node
  cordoned, a queue closed), not for heartbeats, a pod turning Running, or our own writes; and
  counts apart (``reported``) the changes that alter only what a cycle writes back (a pod's phase,
  which a PodGroup's status counts; a PodScheduled condition; a PodGroup's status), so the loop
  knows when repeating the last cycle would write nothing new;
- says with a snapshot which keys may show another object than an earlier snapshot did
  (``snapshot_changes``: touched since, or shown changed by a write of ours in flight in either), so the
  converter identifies only those, not every object of the cluster;
- remembers the bindings the applier sent (``expect_binding``) until the watch confirms them, and
  shows those pods as bound in the next snapshot meanwhile, as kube-scheduler "assumes" pods:
  otherwise a cycle that starts before the confirmations arrive would see their room as free;
  the same for the evictions and nominations in flight (``expect_eviction``,
  ``expect_nomination``; :mod:`.pod_marks`): their pods shown terminating, or nominated.
"""

from __future__ import annotations

import collections
import functools
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vcsat.adapters.kube.client import SCHEDULING_RESOURCES, ApiError, Kube, Resource, object_key
from vcsat.adapters.kube.pod_marks import PodMark, marked, now_timestamp

log = logging.getLogger("vcsat.informer")

_FINISHED = ("Succeeded", "Failed")
BINDING_TTL_S = 60.0
"""How long a binding the server took is shown as bound without the watch confirming it."""
QUEUED_BINDING_TTL_S = 300.0
"""The same for a binding queued or in flight (the applier may have a long queue)."""
UNCERTAIN_BINDING_TTL_S = 10.0
"""The same for a binding whose request failed in transit (it may or may not have landed)."""
SCHEDULING_KINDS = tuple(resource.kind for resource in SCHEDULING_RESOURCES)
MAX_TOMBSTONES = 100_000
"""Deleted objects (and node load changes) remembered for stale checks, at most, between cycles."""
ABSENT_RETRY_S = 10.0
"""How often a resource whose API is not installed (a missing CRD) is looked for again."""


@dataclass
class _Expected:
    node: str
    annotations: dict[str, str]
    state: str  # "sent", "bound" or "uncertain"
    deadline: float
    shown: tuple[dict[str, Any], dict[str, Any]] | None = None
    """The cached pod and its assumed copy: every snapshot shows the same copy while the pod is
    unchanged, so the converter can reuse its conversion."""


@dataclass(frozen=True)
class StoreChanges:
    """What a snapshot may show differently from an earlier one (:meth:`Store.snapshot_changes`)."""

    by_kind: dict[str, dict[str, dict[str, Any] | None]] | None
    """Per kind, each key that may differ and its object as shown now (None: gone); None: unknown."""
    assumed: frozenset[str]
    """The pods this snapshot shows changed by a write of ours in flight (a binding, an eviction, a
    nomination): the next call's ``assumed``."""


class Store:
    """The objects of every informer, a change counter, and the bindings in flight. Thread-safe."""

    def __init__(self, kinds: Iterable[str] = SCHEDULING_KINDS) -> None:
        self._cond = threading.Condition()
        self._kinds = tuple(kinds)
        self._objects: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in self._kinds}
        self._synced: set[str] = set()
        self.generation = 0
        """Goes up by one on every change of any object."""
        self.relevant = 0
        """Goes up on changes that may alter a decision; the scheduling loop waits on it."""
        self._relevant_by_kind: collections.Counter[str] = collections.Counter()
        """``relevant``'s changes by kind (``Binding`` for a binding refused): what woke the loop."""
        self.reported = 0
        """Goes up on the other changes that may alter what a cycle writes back (a PodGroup's status,
        a pod's condition), though not its decision: they wake nobody, but the loop does not stay
        idle over them (see ``_REPORTED_PROJECTIONS``)."""
        self._changed_at: dict[tuple[str, str], int] = {}
        self._touched: dict[str, dict[str, int]] = {kind: {} for kind in self._kinds}
        """Per kind, the generation of each object's last change (any change, relevant or not, a
        deletion too), oldest first: :meth:`touched_since` reads it from the newest end."""
        self._touched_floor: dict[str, int] = {kind: 0 for kind in self._kinds}
        """Per kind, the generation up to which deletions were forgotten (the journal bounded)."""
        self._node_load_at: dict[str, int] = {}
        self._tombstones: dict[tuple[str, str], int] = {}
        self._snapshot_generations: list[int] = []
        self._expected: dict[str, _Expected] = {}
        self._marks: dict[str, PodMark] = {}
        """Per pod key, our evictions and nominations on it in flight (:mod:`.pod_marks`)."""

    # --- feeding ------------------------------------------------------------------------------

    def replace(self, kind: str, items: Iterable[dict[str, Any]]) -> None:
        """A fresh list of ``kind``: what is not in it any more was deleted."""
        fresh = {object_key(item): _trim(item) for item in items}
        with self._cond:
            current = self._objects[kind]
            for key in [key for key in current if key not in fresh]:
                self._change(kind, key, current.pop(key), None)
            for key, obj in fresh.items():
                old = current.get(key)
                if old is None or _version(old) != _version(obj):
                    current[key] = obj
                    self._change(kind, key, old, obj)
            self._synced.add(kind)
            self._cond.notify_all()

    def apply(self, kind: str, event_type: str, obj: dict[str, Any]) -> None:
        """One watch event (ADDED, MODIFIED or DELETED)."""
        key = object_key(obj)
        with self._cond:
            current = self._objects[kind]
            old = current.get(key)
            if event_type == "DELETED":
                if old is None:
                    return
                del current[key]
                self._change(kind, key, old, None)
            else:
                obj = _trim(obj)
                current[key] = obj
                self._change(kind, key, old, obj)
            self._cond.notify_all()

    def _change(self, kind: str, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        self.generation += 1
        generation = self.generation
        relevant = _relevant(kind, old, new)
        touched = self._touched[kind]
        touched.pop(key, None)  # moved to the newest end
        touched[key] = generation
        if new is None and len(touched) > 2 * len(self._objects[kind]) + 1000:
            # Mostly deleted objects: forget them, and that anything before now can be told.
            objects = self._objects[kind]
            self._touched[kind] = {k: at for k, at in touched.items() if k in objects}
            self._touched_floor[kind] = generation
        if kind == "Pod":
            relevant = self._pod_change(key, old, new, relevant)
        if new is None:
            self._changed_at.pop((kind, key), None)
            self._tombstones[(kind, key)] = generation
            self._bound_memory()
        elif relevant or old is None:
            self._changed_at[(kind, key)] = generation
        if relevant:
            self.relevant += 1
            self._relevant_by_kind[kind] += 1
        elif old is not None and new is not None:
            projection = _REPORTED_PROJECTIONS.get(kind)
            if projection is not None and projection(old) != projection(new):
                self.reported += 1

    def _pod_change(self, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None, relevant: bool) -> bool:
        """Pod-specific bookkeeping; whether the change still counts as relevant."""
        new_node = _node_name(new) if new is not None else None
        old_node = _node_name(old) if old is not None else None
        mark = self._marks.get(key)
        if mark is not None:
            if new is not None:
                mark.settled_by(new)
            if new is None or mark.empty:
                del self._marks[key]
        expected = self._expected.get(key)
        if expected is not None and (new is None or new_node is not None):
            del self._expected[key]
            if new_node == expected.node and old_node is None:
                return False  # the confirmation of our own binding: nothing new to decide
        if new is not None and new_node is not None and old_node != new_node and not _finished(new):
            # Someone else's pod took room on that node after our snapshot.
            self._node_load_at[new_node] = self.generation
        return relevant

    # --- bindings in flight -------------------------------------------------------------------

    def expect_binding(self, pod_key: str, node: str, annotations: Mapping[str, str]) -> None:
        """Called when a binding is queued, so that its watch event is known as ours."""
        with self._cond:
            self._expected[pod_key] = _Expected(
                node, dict(annotations), "sent", time.monotonic() + QUEUED_BINDING_TTL_S
            )

    def keep_expecting(self, pod_key: str) -> None:
        """A binding still queued (its pod's volumes are being bound first): shown as bound a while longer."""
        with self._cond:
            expected = self._expected.get(pod_key)
            if expected is not None and expected.state == "sent":
                expected.deadline = max(expected.deadline, time.monotonic() + QUEUED_BINDING_TTL_S)

    def binding_done(self, pod_key: str, outcome: str) -> None:
        """``bound``: the server took it; ``failed``: it did not; ``uncertain``: no answer came."""
        with self._cond:
            expected = self._expected.get(pod_key)
            if expected is None:
                return  # the watch already confirmed it
            if outcome == "failed":
                del self._expected[pod_key]
                self.relevant += 1  # the pod is pending again: worth another cycle
                self._relevant_by_kind["Binding"] += 1
                self._cond.notify_all()
                return
            expected.state = outcome
            ttl = BINDING_TTL_S if outcome == "bound" else UNCERTAIN_BINDING_TTL_S
            expected.deadline = time.monotonic() + ttl

    # --- evictions and nominations in flight ------------------------------------------------

    def expect_eviction(self, pod_key: str) -> None:
        """Called when an eviction is queued: the pod is shown terminating until the watch says so."""
        with self._cond:
            mark = self._mark(pod_key)
            mark.evicting_since = now_timestamp()

    def expect_nomination(self, pod_key: str, node: str) -> None:
        """Called when a nomination is queued: the pod is shown nominated to ``node`` until the watch says so."""
        with self._cond:
            self._mark(pod_key).nominated = node

    def _mark(self, pod_key: str) -> PodMark:
        mark = self._marks.get(pod_key)
        if mark is None:
            mark = self._marks[pod_key] = PodMark(deadline=0.0)
        mark.deadline = max(mark.deadline, time.monotonic() + QUEUED_BINDING_TTL_S)
        mark.shown = None
        return mark

    def eviction_done(self, pod_key: str, outcome: str) -> None:
        """``evicted``: the server took it; ``moot``: the pod was gone, going, or another pod by
        now (nothing to show); ``refused``: it stays (a PodDisruptionBudget, an error), which is
        worth another cycle."""
        with self._cond:
            mark = self._marks.get(pod_key)
            if mark is None or mark.evicting_since is None:
                return  # the watch already showed it
            if outcome == "evicted":
                mark.deadline = time.monotonic() + BINDING_TTL_S
                return
            mark.evicting_since, mark.shown = None, None
            if mark.empty:
                del self._marks[pod_key]
            if outcome == "refused":
                self.relevant += 1
                self._relevant_by_kind["Eviction"] += 1
                self._cond.notify_all()

    def nomination_done(self, pod_key: str, written: bool) -> None:
        """Whether the server took the nomination; one it did not is no longer shown."""
        with self._cond:
            mark = self._marks.get(pod_key)
            if mark is None or mark.nominated is None:
                return
            if written:
                mark.deadline = time.monotonic() + BINDING_TTL_S
                return
            mark.nominated, mark.shown = None, None
            if mark.empty:
                del self._marks[pod_key]

    def next_expiry(self) -> float | None:
        """When (``time.monotonic()``) the first binding, eviction or nomination in flight stops
        being shown as done without the watch confirming it: the next snapshot may differ from then on."""
        with self._cond:
            deadlines = [expected.deadline for expected in self._expected.values()]
            deadlines.extend(mark.deadline for mark in self._marks.values())
            return min(deadlines, default=None)

    # --- reading ------------------------------------------------------------------------------

    def synced(self, kinds: Iterable[str] | None = None) -> bool:
        with self._cond:
            return all(kind in self._synced for kind in (kinds or self._kinds))

    def wait_synced(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not all(kind in self._synced for kind in self._kinds):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def wait_relevant(self, seen: int, timeout_s: float) -> int:
        """Waits until ``relevant`` passes ``seen`` or the timeout; returns ``relevant``."""
        with self._cond:
            if self.relevant <= seen and timeout_s > 0:
                self._cond.wait_for(lambda: self.relevant > seen, timeout_s)
            return self.relevant

    def relevant_by_kind(self) -> collections.Counter[str]:
        """The changes counted in ``relevant`` so far, by kind (``Binding``: a binding refused)."""
        with self._cond:
            return collections.Counter(self._relevant_by_kind)

    def wake(self) -> None:
        """Wakes whoever waits (used on shutdown)."""
        with self._cond:
            self._cond.notify_all()

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        with self._cond:
            return self._objects[kind].get(key)

    def objects(self, kind: str) -> list[dict[str, Any]]:
        with self._cond:
            return list(self._objects[kind].values())

    def snapshot(self) -> tuple[int, list[dict[str, Any]]]:
        """The generation and every object as of now, our writes in flight (bindings, evictions,
        nominations) shown as done.

        Objects are shared, not copied: the store never changes an object in place, it replaces
        it, so the list stays exactly what it was at this generation.
        """
        now = time.monotonic()
        with self._cond:
            generation = self.generation
            self._prune_tombstones(generation)
            for key in [key for key, e in self._expected.items() if e.deadline < now]:
                del self._expected[key]
            for key in [key for key, mark in self._marks.items() if mark.deadline < now]:
                del self._marks[key]
            out: list[dict[str, Any]] = []
            for kind in self._kinds:
                if kind != "Pod" or not (self._expected or self._marks):
                    out.extend(self._objects[kind].values())
                    continue
                for key, obj in self._objects[kind].items():
                    out.append(self._shown(key, obj))
            return generation, out

    def _shown(self, key: str, pod: dict[str, Any]) -> dict[str, Any]:
        """The pod as snapshots show it: with our writes in flight on it done (lock held)."""
        expected = self._expected.get(key)
        if expected is not None and not _node_name(pod):
            pod = _assumed(pod, expected)
        mark = self._marks.get(key)
        return pod if mark is None else marked(pod, mark)

    def snapshot_changes(
        self, since: int | None, assumed: frozenset[str]
    ) -> tuple[int, list[dict[str, Any]], StoreChanges]:
        """:meth:`snapshot`, and what in it may differ from the snapshot taken at generation
        ``since`` that showed the pods ``assumed`` changed by our writes in flight: per kind, each
        key touched since then (:meth:`touched_since`) or shown assumed in either snapshot, with
        its object as shown now (None: gone). Every other key's object is the very one shown then
        (the store replaces objects, never changes one in place). ``by_kind`` None when that cannot
        be told (``since`` None, or deletions since then forgotten): the caller reads every object.
        One hold of the lock: no event lands between the snapshot and its changes."""
        with self._cond:
            generation, out = self.snapshot()
            pods = self._objects["Pod"]
            shown = frozenset(key for key in (*self._expected, *self._marks) if key in pods)
            if since is None or any(since < floor for floor in self._touched_floor.values()):
                return generation, out, StoreChanges(None, shown)
            changed: dict[str, dict[str, dict[str, Any] | None]] = {}
            for kind in self._kinds:
                objects = self._objects[kind]
                keys: Iterable[str] = self._touched_since(kind, since, generation)
                if kind == "Pod":
                    keys = {*keys, *assumed, *shown}
                entries = {key: objects.get(key) for key in keys}
                if kind == "Pod":
                    for key, obj in entries.items():
                        if obj is not None:
                            entries[key] = self._shown(key, obj)
                if entries:
                    changed[kind] = entries
            return generation, out, StoreChanges(changed, shown)

    def _touched_since(self, kind: str, since: int, until: int) -> list[str]:
        """Keys of ``kind`` touched after ``since`` and at or before ``until`` (lock held)."""
        out: list[str] = []
        for key, at in reversed(self._touched[kind].items()):
            if at <= since:
                break
            if at <= until:
                out.append(key)
        return out

    def touched_since(self, kind: str, generation: int) -> list[str] | None:
        """Keys of the ``kind`` objects added, replaced (a change of any field) or deleted after
        ``generation``, newest first: for every other key ``get`` returns what it returned then.
        Reads only those. None: too long ago to tell (deletions before were forgotten)."""
        with self._cond:
            if generation < self._touched_floor[kind]:
                return None
            out: list[str] = []
            for key, at in reversed(self._touched[kind].items()):
                if at <= generation:
                    break
                out.append(key)
            return out

    def changed_since(
        self,
        generation: int,
        *,
        pods: Iterable[str] = (),
        podgroup: str | None = None,
        queue: str | None = None,
        nodes: Iterable[str] = (),
    ) -> str | None:
        """Why a gang decided at ``generation`` must not be applied now; None when it still may."""
        with self._cond:
            for key in pods:
                if self._tombstones.get(("Pod", key), 0) > generation and key not in self._objects["Pod"]:
                    return f"pod {key} was deleted"
                if self._changed_at.get(("Pod", key), 0) > generation:
                    return f"pod {key} changed"
            if podgroup is not None:
                if self._tombstones.get(("PodGroup", podgroup), 0) > generation and (
                    podgroup not in self._objects["PodGroup"]
                ):
                    return f"podgroup {podgroup} was deleted"
                if self._changed_at.get(("PodGroup", podgroup), 0) > generation:
                    return f"podgroup {podgroup} changed"
            if queue is not None and self._changed_at.get(("Queue", queue), 0) > generation:
                return f"queue {queue} changed"
            for name in nodes:
                node = self._objects["Node"].get(name)
                if node is None:
                    return f"node {name} is gone"
                if self._changed_at.get(("Node", name), 0) > generation:
                    return f"node {name} changed"
                if self._node_load_at.get(name, 0) > generation:
                    return f"node {name} took other pods"
            return None

    def _prune_tombstones(self, generation: int) -> None:
        # A tombstone only matters to a decision made before it; keep those of the last few
        # snapshots (one cycle is applied while the next may already be taken).
        self._snapshot_generations.append(generation)
        if len(self._snapshot_generations) > 3:
            oldest = self._snapshot_generations.pop(0)
            if len(self._tombstones) > 1000:
                self._tombstones = {k: g for k, g in self._tombstones.items() if g > oldest}
            if len(self._node_load_at) > 10000:
                self._node_load_at = {k: g for k, g in self._node_load_at.items() if g > oldest}

    def _bound_memory(self) -> None:
        """A standby replica takes no snapshots: forget what no decision can still be older than."""
        if len(self._tombstones) + len(self._node_load_at) <= MAX_TOMBSTONES:
            return
        recent = self.generation - MAX_TOMBSTONES // 2  # at worst, keep the newest half
        floor = max(self._snapshot_generations[0] if self._snapshot_generations else recent, recent)
        self._tombstones = {k: g for k, g in self._tombstones.items() if g > floor}
        self._node_load_at = {k: g for k, g in self._node_load_at.items() if g > floor}


class Informer:
    """List, then watch from the list's version, one resource; relists on 410 Gone or a broken watch.

    ``on_list(items)`` gets each full list (a relist replaces everything), ``on_event(type, obj)``
    each ADDED/MODIFIED/DELETED after it. A resource whose API is not installed (404, a missing
    CRD) counts as an empty list and is looked for again every :data:`ABSENT_RETRY_S`.
    """

    def __init__(
        self,
        kube: Kube,
        resource: Resource,
        *,
        on_list: Callable[[list[dict[str, Any]]], None],
        on_event: Callable[[str, dict[str, Any]], None],
        watch_timeout_s: int = 300,
        params: Mapping[str, str] | None = None,
    ) -> None:
        self.kube = kube
        self.resource = resource
        self.params: dict[str, Any] = dict(params or {})
        """Extra query parameters of the list and the watch (e.g. ``fieldSelector``)."""
        self.on_list = on_list
        self.on_event = on_event
        self.watch_timeout_s = watch_timeout_s
        self.resource_version = ""
        self._stop = threading.Event()
        self._watch: Any = None
        self._thread = threading.Thread(target=self._run, name=f"informer-{resource.plural}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        watch = self._watch
        if watch is not None:
            watch.close()

    def join(self, timeout_s: float) -> None:
        self._thread.join(timeout_s)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        backoff = _Backoff()
        while not self._stop.is_set():
            try:
                items, self.resource_version = self.kube.list(self.resource, **self.params)
            except ApiError as error:
                if error.status == 404:
                    log.info("API not installed; treating it as empty", extra={"resource": self.resource.plural})
                    self.on_list([])
                    self._stop.wait(ABSENT_RETRY_S)
                else:
                    log.warning("list failed", extra={"resource": self.resource.plural, "error": str(error)})
                    self._stop.wait(backoff.next())
                continue
            self.on_list(items)
            backoff.reset()
            self._watch_until_relist(backoff)

    def _watch_until_relist(self, backoff: _Backoff) -> None:
        while not self._stop.is_set():
            # Spread the watches' ends so that they do not all reconnect at once (as client-go does).
            timeout = int(self.watch_timeout_s * (1 + random.random()))
            try:
                self._watch = self.kube.watch(
                    self.resource, resource_version=self.resource_version, timeout_s=timeout, **self.params
                )
            except ApiError as error:
                if error.status == 410:
                    return  # too old: relist
                log.warning("watch failed", extra={"resource": self.resource.plural, "error": str(error)})
                self._stop.wait(backoff.next())
                if error.status not in (0, 429) and error.status < 500:
                    return
                continue
            try:
                for event in self._watch:
                    if self._stop.is_set():
                        return
                    if not self._handle(event):
                        return
            except ApiError as error:
                log.info("watch broke; resuming", extra={"resource": self.resource.plural, "error": str(error)})
                self._stop.wait(backoff.next())
            finally:
                self._watch = None
            backoff.reset()

    def _handle(self, event: Mapping[str, Any]) -> bool:
        """Applies one event; False when the watch must be given up for a relist."""
        event_type = event.get("type")
        obj = event.get("object") or {}
        if event_type == "ERROR":
            code = obj.get("code")
            if code != 410:
                log.warning(
                    "watch error event; relisting",
                    extra={"resource": self.resource.plural, "code": code, "error": obj.get("message")},
                )
            return False
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if event_type == "BOOKMARK":
            if version:
                self.resource_version = version
            return True
        if event_type in ("ADDED", "MODIFIED", "DELETED"):
            obj["kind"] = self.resource.kind
            obj["apiVersion"] = self.resource.api_version
            self.on_event(event_type, obj)
        if version:
            self.resource_version = version
        return True


class InformerSet:
    """One informer per resource a cycle reads, all feeding one :class:`Store`."""

    def __init__(self, kube: Kube, resources: Iterable[Resource] = SCHEDULING_RESOURCES) -> None:
        self.resources = tuple(resources)
        self.store = Store(resource.kind for resource in self.resources)
        self.informers = [
            Informer(
                kube,
                resource,
                on_list=functools.partial(self.store.replace, resource.kind),
                on_event=functools.partial(self.store.apply, resource.kind),
            )
            for resource in self.resources
        ]

    def start(self) -> None:
        for informer in self.informers:
            informer.start()

    def wait_synced(self, timeout_s: float) -> bool:
        return self.store.wait_synced(timeout_s)

    def stop(self) -> None:
        for informer in self.informers:
            informer.stop()
        for informer in self.informers:
            informer.join(5.0)
        self.store.wake()


class _Backoff:
    def __init__(self, first_s: float = 0.2, max_s: float = 30.0) -> None:
        self.first_s = first_s
        self.max_s = max_s
        self.current = first_s

    def next(self) -> float:
        delay = self.current
        self.current = min(self.max_s, self.current * 2)
        return delay * (0.5 + random.random() / 2)

    def reset(self) -> None:
        self.current = self.first_s


# --- what counts as a change --------------------------------------------------------------------


def _relevant(kind: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> bool:
    """Whether a change may alter a decision (and so wakes the loop and makes gangs stale)."""
    if old is None or new is None:
        return True
    projection = _PROJECTIONS.get(kind)
    if projection is None:
        return True
    return bool(projection(old) != projection(new))


def _pod_projection(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    metadata = pod.get("metadata") or {}
    phase = (pod.get("status") or {}).get("phase")
    return (
        pod.get("spec"),
        metadata.get("annotations"),
        metadata.get("labels"),
        metadata.get("deletionTimestamp"),
        phase if phase in _FINISHED else None,
    )


def _node_projection(node: Mapping[str, Any]) -> tuple[Any, ...]:
    metadata = node.get("metadata") or {}
    status = node.get("status") or {}
    ready = [c.get("status") for c in status.get("conditions") or () if c.get("type") == "Ready"]
    return (
        node.get("spec"),
        metadata.get("labels"),
        metadata.get("annotations"),
        status.get("allocatable"),
        status.get("capacity") if status.get("allocatable") is None else None,
        ready,
    )


def _podgroup_projection(group: Mapping[str, Any]) -> tuple[Any, ...]:
    # The spec and the annotations (which scheduler the group is for), not the status: it is ours
    # to write. Nor metadata.generation: Volcano's PodGroup CRD has no status subresource, so each
    # of our status writes bumps it, and counting it would make every write echo as a change that
    # wakes the loop and makes the group's gang stale.
    return (group.get("spec"), (group.get("metadata") or {}).get("annotations"))


def _queue_projection(queue: Mapping[str, Any]) -> tuple[Any, ...]:
    return (queue.get("spec"), (queue.get("status") or {}).get("state"))


_PROJECTIONS: dict[str, Callable[[Mapping[str, Any]], tuple[Any, ...]]] = {
    "Pod": _pod_projection,
    "Node": _node_projection,
    "PodGroup": _podgroup_projection,
    "Queue": _queue_projection,
}


def _pod_reported(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    status = pod.get("status") or {}
    scheduled = [
        (c.get("status"), c.get("reason"), c.get("message"))
        for c in status.get("conditions") or ()
        if c.get("type") == "PodScheduled"
    ]
    return (status.get("phase"), status.get("nominatedNodeName"), scheduled)


def _podgroup_reported(group: Mapping[str, Any]) -> Any:
    return group.get("status")


_REPORTED_PROJECTIONS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "Pod": _pod_reported,
    "PodGroup": _podgroup_reported,
}
"""What a cycle's writes depend on beyond its decision: a pod's phase (a PodGroup's status counts
running, succeeded and failed pods), its nomination and PodScheduled condition (written when they
differ from what the decision says); a PodGroup's status (written when it differs)."""


def _trim(obj: dict[str, Any]) -> dict[str, Any]:
    """Drops ``metadata.managedFields`` (kubectl hides it too; it is most of a small object's bytes)."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and "managedFields" in metadata:
        del metadata["managedFields"]
    return obj


def _version(obj: Mapping[str, Any]) -> Any:
    return (obj.get("metadata") or {}).get("resourceVersion")


def _node_name(pod: Mapping[str, Any]) -> str | None:
    return (pod.get("spec") or {}).get("nodeName") or None


def _finished(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in _FINISHED


def _assumed(pod: dict[str, Any], expected: _Expected) -> dict[str, Any]:
    """A copy of a pending pod as it is once the binding we sent lands."""
    if expected.shown is not None and expected.shown[0] is pod:
        return expected.shown[1]
    metadata = dict(pod.get("metadata") or {})
    if expected.annotations:
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **expected.annotations}
    spec = {**(pod.get("spec") or {}), "nodeName": expected.node}
    assumed = {**pod, "metadata": metadata, "spec": spec}
    expected.shown = (pod, assumed)
    return assumed
