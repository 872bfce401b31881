"""Incremental conversion: what the live scheduler keeps from one cycle's conversion for the next.

Every cycle the live scheduler converts the informers' whole cache, and between two cycles only a
handful of objects change: converting 60,000 unchanged pods again would cost seconds. A
:class:`ConversionMemo` kept across cycles lets the converter reuse an object's model value while
the object and everything its conversion read besides it are unchanged, so that the snapshot is
always *equal* to a fresh conversion of the same objects.

When an object is unchanged:

- it is the very same dict as last cycle (an informer's cache replaces an object when it
  changes, never edits it); or
- it has the same ``metadata.uid`` and ``metadata.resourceVersion`` as last cycle's (the API
  server gives every change a new version; a relist brings new dicts of unchanged objects), and
  the same ``spec.nodeName`` and ``metadata.annotations``: the informer shows a pod whose binding
  is in flight as bound (a copy with those two changed, the version kept). Objects from files
  carry no version: only the first rule applies to them.

What a conversion reads besides the object (its *context*, compared as well):

- a node, a storage object, a HyperNode: nothing;
- a PodGroup: the priority classes (its priority) and the queues' names (a missing queue);
- a pod: the priority classes, whether its PodGroup exists (a missing one is an error in a file)
  and whether its node exists (a pod on a node that is gone is left out). GPU indices of bound
  pods without ``vcsat.io/gpu-ids`` are resolved after the reuse, over all pods, every time (a
  copy equal to last call's is last call's);
- the check of the HyperNodes against the nodes: the very same HyperNode and Node values.

A changed object is converted again, and when the new value equals the last one field by field
(the change was to something no reader reads: a status written by the scheduler itself, a count, a
condition's message, a node's heartbeat, ``resourceVersion`` alone), the last value is kept: the
very same model object, so that what the solver keys on object identity (admission's sums, each
node's room, the pricing's tallies) is reused as after any steady cycle. Equal values make the
same snapshot, so this never changes a decision. Whoever acts on what the model does not hold (the
status writes read the store's object) must compare that object, not the model's identity.

The pod walk carries more (:meth:`ConversionMemo.pod_keys_changed`): after a complete call whose pod
contexts are the very objects of this one, a pod object that call saw is not looked at again unless
it names a PodGroup or node that came or went; its value is the one :meth:`~ConversionMemo.reuse`
would give. A failed call drops this, and the next one reads every pod.

Nor need a call walk every raw object to identify it (:meth:`ConversionMemo.changed_by_kind`): a
caller that knows which keys may show another object than in the last complete call (the live
store, ``Store.snapshot_changes``) gives them, and the memo patches that call's objects by kind and
their sorted keys with those alone; every other key's object is the very dict that call saw, so its
identification and value stand. The memo holds that call's objects only while it completes, and
only for the generation it was made at: otherwise every object is walked.

Memory stays bounded: a complete call forgets every object it did not see, so deleted objects
are forgotten at the next cycle (the dicts a call found replaced first, without a walk).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import is_
from typing import Any, Protocol, TypeVar

from vcsat.adapters.convert.fields import MAPPING_TYPES

_T = TypeVar("_T")
_C = TypeVar("_C")
_M = TypeVar("_M", bound="Memoized")

UNSET: Any = object()
"""An object's ``memo_context`` before any conversion of it: equal to no context."""


class Memoized(Protocol):
    """An identified input object (:class:`~.reader.KubeObject`): the memo keeps its last
    conversion on it, so that the same dict next cycle finds its value in one step."""

    raw: Mapping[str, Any]
    kind: str
    key: str
    memo_context: Any
    memo_value: Any


class ConversionMemo:
    """What the calls of the converter read, for the next call with the same options.

    Each raw dict seen is identified once (:meth:`identify_by_kind`) into one object that lives as long as
    the dict keeps coming back; that object carries its last conversion and the context it was
    made in, so an unchanged object costs one lookup and one comparison per call. The tables are
    kept across calls and only pruned (after a complete call) when the call saw fewer objects than
    they hold: nothing is rebuilt per call. A failed call leaves only values that are right for
    their object and context, so the next call may use them.
    """

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], Memoized] = {}
        """(kind, key) -> the object last converted under that key, with its value: what a new dict
        of the same version (a relist) reuses."""
        self.identified: dict[int, list[Any]] = {}
        """id(raw) -> [raw, what identifying it gave, the call that last saw it]: the raw object
        kept alive, its id its own."""
        self.topology: tuple[Sequence[Any], Sequence[Any], Any] | None = None
        """(HyperNodes, nodes, outcome) of the last check of the HyperNodes against the nodes."""
        self.copies: dict[str, Any] = {}
        """Last call's copies made after the reuse (:meth:`same_copies`), by key."""
        self.contexts: dict[Any, Any] = {}
        """The contexts of the last call, each kept as one object (:meth:`context`)."""
        self._contexts_next: dict[Any, Any] = {}
        self.pod_contexts: tuple[tuple[Any, ...], Mapping[str, Any], Mapping[str, Any]] | None = None
        """The last complete call's pod contexts, PodGroups and nodes (:meth:`pod_keys_changed`)."""
        self._pod_contexts_last: tuple[tuple[Any, ...], Mapping[str, Any], Mapping[str, Any]] | None = None
        self._pod_contexts_next: tuple[tuple[Any, ...], Mapping[str, Any], Mapping[str, Any]] | None = None
        self.by_kind: tuple[int, dict[str, dict[str, Any]], dict[str, list[str]]] | None = None
        """The last complete call's generation, its objects by kind and key, and the keys of the
        kinds it sorted (:meth:`changed_by_kind`, :meth:`sorted_keys`)."""
        self._by_kind_last: tuple[int, dict[str, dict[str, Any]], dict[str, list[str]]] | None = None
        self._by_kind_next: tuple[int, dict[str, dict[str, Any]]] | None = None
        self._sorted_now: dict[str, list[str]] = {}
        self._sorted_given: dict[str, list[str]] = {}
        self._call = 0
        self._replaced: list[int] = []
        """Ids of the raw objects a :meth:`reuse` of this call found replaced by another of their key."""
        self._identified_now = 0
        self._reused_now = 0

    def reuse(self, obj: Memoized, context: Any, make: Callable[..., _T], *args: Any) -> _T:
        """``make(*args)``, or the value of this object (or of last call's object of the same key
        and version) when the context is unchanged."""
        self._reused_now += 1
        if obj.memo_context is context:
            return obj.memo_value  # type: ignore[no-any-return]
        key = (obj.kind, obj.key)
        last = self.values.get(key)
        if last is not None and last is not obj:
            self._replaced.append(id(last.raw))  # a dict the next prune looks at first
        if last is not None and last.memo_context == context and (last is obj or same_object(last.raw, obj.raw)):
            value = last.memo_value
        else:
            value = make(*args)
            if last is not None and same_value(last.memo_value, value):
                # A change to what the conversion does not read (a status write, a heartbeat, a new
                # version only): the very same value, so what is keyed on it downstream is kept.
                value = last.memo_value
        self.values[key] = obj
        obj.memo_context = context
        obj.memo_value = value
        return value  # type: ignore[no-any-return]

    def identify_by_kind(
        self,
        objects: Iterable[Any],
        make: Callable[[Any, int], _M | None],
        by_kind: Mapping[str, dict[str, _M]],
        twice: Callable[[_M], object],
    ) -> None:
        """Each raw object identified: what identifying it gave in an earlier call (the same dict),
        or ``make(raw, index)``; put (unless None) in ``by_kind`` under its kind and key, in the
        order of ``objects``, in the same walk (a second walk over every object of the cluster
        would cost a step per object every cycle). ``twice(obj)`` is called for a key met a second
        time (it raises)."""
        table = self.identified
        call = self._call
        index = -1
        for index, raw in enumerate(objects):
            found = table.get(id(raw))
            if found is None or found[0] is not raw:
                found = table[id(raw)] = [raw, make(raw, index), call]
            else:
                found[2] = call
            obj = found[1]
            if obj is None:
                continue
            seen = by_kind[obj.kind]
            key = obj.key
            if key in seen:
                twice(obj)
            seen[key] = obj
        self._identified_now += index + 1

    def changed_by_kind(
        self,
        since: int,
        changed: Mapping[str, Mapping[str, Any]],
        make: Callable[[Any, int], _M | None],
        kinds: Iterable[str],
    ) -> dict[str, dict[str, _M]] | None:
        """The objects by kind and key without a walk over all of them: the last complete call's
        (which converted the objects as of generation ``since``), with ``changed`` put in (per
        kind, each key whose raw object may differ, and that object, None when gone), each
        changed object identified as :meth:`identify_by_kind` does; None when that call is not
        there or a changed object does not fit (an object that identifies as another kind or key,
        or a gone key that call did not hold): then the caller identifies every object. Every
        other key's object is the very one that call saw, and so its identification.

        The sorted keys of the kinds that call sorted (:meth:`sorted_keys`) are patched too:
        gone keys taken out, new ones merged in (a sort of two sorted runs)."""
        last = self._by_kind_last
        self._by_kind_last = None  # its dicts are patched in place: they are this call's now
        if last is None or last[0] != since or set(kinds) != set(last[1]):
            return None
        _, by_kind, sorted_last = last
        table = self.identified
        call = self._call
        for kind, entries in changed.items():
            seen = by_kind.get(kind)
            if seen is None:
                continue  # a kind the converter does not read
            added: list[str] = []
            gone: list[str] = []
            for key, raw in entries.items():
                old = seen.get(key)
                if raw is None:
                    if old is None:
                        return None
                    del seen[key]
                    gone.append(key)
                else:
                    found = table.get(id(raw))
                    if found is None or found[0] is not raw:
                        found = table[id(raw)] = [raw, make(raw, -1), call]
                    obj = found[1]
                    if obj is None or obj.kind != kind or obj.key != key:
                        return None
                    if old is obj:
                        continue
                    if old is None:
                        added.append(key)
                    seen[key] = obj
                if old is not None:
                    at = id(old.raw)
                    entry = table.get(at)
                    if entry is not None and entry[0] is old.raw and entry[1] is old:
                        del table[at]
            keys = sorted_last.get(kind)
            if keys is not None and (added or gone):
                for key in gone:
                    index = bisect_left(keys, key)
                    if index == len(keys) or keys[index] != key:
                        return None
                    del keys[index]
                keys.extend(added)
                keys.sort()  # the old keys are one sorted run: a merge, not a sort
        # Every raw object in the table is one of this call's (the replaced and gone ones are out):
        # nothing for :meth:`keep` to prune by its stamps.
        self._identified_now = len(table)
        self._sorted_given = sorted_last
        return by_kind

    def sorted_keys(self, kind: str, objects: Mapping[str, Any]) -> list[str]:
        """``sorted(objects)`` (the ``kind`` objects of this call), from :meth:`changed_by_kind`'s
        patched keys when it gave them; kept for the next call's patch."""
        keys = self._sorted_given.get(kind)
        if keys is None or len(keys) != len(objects):
            keys = sorted(objects)
        self._sorted_now[kind] = keys
        return keys

    def converted_by_kind(self, generation: int, by_kind: dict[str, dict[str, Any]]) -> None:
        """This call's objects by kind (kept by :meth:`keep` if it completes)."""
        self._by_kind_next = (generation, by_kind)

    def pod_keys_changed(
        self, contexts: tuple[Any, ...], podgroups: Mapping[str, Any], nodes: Mapping[str, Any]
    ) -> tuple[set[str], set[str]] | None:
        """The PodGroup keys and node names that came or went since the last call, when a pod
        object that call saw has the context it had unless it names one of them; None when any
        pod may have another (every pod is read again).

        A pod's context is the priority classes and whether its PodGroup and its node exist
        (:func:`~.pods.pod_context`). When the last call was complete and its pod contexts are
        these very objects (:meth:`context`: the classes unchanged), a pod object it saw has the
        context its last :meth:`reuse` gave it, and the value there, unless the pod names a
        PodGroup or node of these sets. Set differences of the keys: no walk over the pods."""
        last = self._pod_contexts_last
        self._pod_contexts_next = (contexts, podgroups, nodes)
        if last is None or len(last[0]) != len(contexts) or not all(map(is_, last[0], contexts)):
            return None
        return set(last[1].keys() ^ podgroups.keys()), set(last[2].keys() ^ nodes.keys())

    def count_reused(self, reused: int) -> None:
        """Count ``reused`` objects whose value was taken without :meth:`reuse` (as it would give it)."""
        self._reused_now += reused

    def context(self, context: _C) -> _C:
        """``context``, or the equal one given last call: a context unchanged since then is the
        very same object, which :meth:`reuse` tells at once."""
        found = self.contexts.get(context)
        if found is None:
            found = context
        self._contexts_next[context] = found
        return found

    def topology_checked(self, hypernodes: Sequence[Any], nodes: Sequence[Any], check: Callable[[], _T]) -> _T:
        """``check()`` of these HyperNodes against these nodes, or its last outcome for the very same
        values (a raised error is raised again, never kept)."""
        last = self.topology
        if last is not None and _same_items(last[0], hypernodes) and _same_items(last[1], nodes):
            return last[2]  # type: ignore[no-any-return]
        outcome = check()
        self.topology = (tuple(hypernodes), tuple(nodes), outcome)
        return outcome

    def same_copies(self, values: list[_T], copies: list[_T]) -> list[_T]:
        """``copies`` (``values`` with some replaced by a copy, such as a pod given the GPU indices it
        holds), each copy equal to last call's copy of its key being last call's very copy."""
        if copies is values:
            self.copies = {}
            return copies
        last = self.copies
        kept: dict[str, Any] = {}
        out: list[_T] = []
        for value, copied in zip(values, copies, strict=True):
            if copied is not value:
                key = copied.key  # type: ignore[attr-defined]
                before = last.get(key)
                if before is not None and same_value(before, copied):
                    copied = before
                kept[key] = copied
            out.append(copied)
        self.copies = kept
        return out

    def keep(self) -> None:
        """At the end of a complete call: what this call did not see is forgotten."""
        call = self._call
        identified = self.identified
        if len(identified) != self._identified_now:
            # A steady call replaces a few hundred objects (a binding confirmed, a status written)
            # of tens of thousands: the dicts they replaced are looked at first, and the whole
            # table is walked only when more is gone (an object deleted).
            for at in self._replaced:
                found = identified.get(at)
                if found is not None and found[2] != call:
                    del identified[at]
            if len(identified) != self._identified_now:
                self.identified = {at: found for at, found in identified.items() if found[2] == call}
        self._replaced = []
        if len(self.values) != self._reused_now:
            identified = self.identified
            self.values = {
                key: obj
                for key, obj in self.values.items()
                if (found := identified.get(id(obj.raw))) is not None and found[1] is obj
            }
        self.contexts, self._contexts_next = self._contexts_next, {}
        self.pod_contexts, self._pod_contexts_next = self._pod_contexts_next, None
        following = self._by_kind_next
        self.by_kind = None if following is None else (following[0], following[1], self._sorted_now)
        self._by_kind_next = None
        self._sorted_now, self._sorted_given = {}, {}

    def drop_pending(self) -> None:
        """At the start of a call (the last one may have failed): count this call's objects afresh."""
        self._call += 1
        self._replaced = []
        # Read by this call only, and kept again only if it completes: after a failed call (which
        # may have read some pods in other contexts) every pod is read again.
        self._pod_contexts_last, self.pod_contexts = self.pod_contexts, None
        self._pod_contexts_next = None
        # Likewise the objects by kind: this call patches them in place, so a failed call leaves none.
        self._by_kind_last, self.by_kind = self.by_kind, None
        self._by_kind_next = None
        self._sorted_now, self._sorted_given = {}, {}
        self._identified_now = 0
        self._reused_now = 0
        self._contexts_next = {}


def same_object(before: Mapping[str, Any], now: Mapping[str, Any]) -> bool:
    """Whether two raw objects are the same version of one object (see the module docstring)."""
    if before is now:
        return True
    old_meta, new_meta = before.get("metadata"), now.get("metadata")
    if not isinstance(old_meta, MAPPING_TYPES) or not isinstance(new_meta, MAPPING_TYPES):
        return False
    version = new_meta.get("resourceVersion")
    uid = new_meta.get("uid")
    if not version or not uid or not isinstance(version, str) or not isinstance(uid, str):
        return False
    if old_meta.get("resourceVersion") != version or old_meta.get("uid") != uid:
        return False
    if before.get("kind") != now.get("kind") or old_meta.get("annotations") != new_meta.get("annotations"):
        return False
    old_spec, new_spec = before.get("spec"), now.get("spec")
    old_node = old_spec.get("nodeName") if isinstance(old_spec, MAPPING_TYPES) else None
    new_node = new_spec.get("nodeName") if isinstance(new_spec, MAPPING_TYPES) else None
    return bool(old_node == new_node)


def same_value(before: Any, now: Any) -> bool:
    """Whether two conversions of one object are the same value: every model field equal, of the
    same type at the top (``1`` and ``1.0`` print differently), so that the last one may stand for
    the new one and a snapshot made with it prints as a fresh conversion does."""
    if before is now:
        return True
    kind = type(now)
    if type(before) is not kind:
        return False
    fields = getattr(kind, "__pydantic_fields__", None)
    if fields is None:
        return False  # no model value (nothing the readers make): never stood for another
    old_values, new_values = before.__dict__, now.__dict__
    for name in fields:
        old, new = old_values.get(name, UNSET), new_values.get(name, UNSET)
        if old is not new and (type(old) is not type(new) or old != new):
            return False
    return True


def _same_items(before: Sequence[Any], now: Sequence[Any]) -> bool:
    return len(before) == len(now) and all(a is b for a, b in zip(before, now, strict=True))
