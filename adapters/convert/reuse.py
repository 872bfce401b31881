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
  pods without ``vcsat.io/gpu-ids`` are resolved after the reuse, over all pods, every time;
- the check of the HyperNodes against the nodes: the very same HyperNode and Node values.

Memory stays bounded: each call keeps only what it saw, so deleted objects are forgotten at the
next cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from vcsat.adapters.convert.fields import MAPPING_TYPES

_T = TypeVar("_T")
_C = TypeVar("_C")
_O = TypeVar("_O", bound="_HasRaw")


class _HasRaw(Protocol):
    raw: Mapping[str, Any]


class ConversionMemo:
    """What one call of the converter read, for the next call with the same options."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], tuple[Mapping[str, Any], Any, Any]] = {}
        """(kind, key) -> (raw object, context, model value) of the last call."""
        self.identified: dict[int, tuple[Mapping[str, Any], Any]] = {}
        """id(raw) -> (raw, what identifying it gave): the raw object kept alive, its id its own."""
        self.references: dict[int, tuple[Mapping[str, Any], Any]] = {}
        """id(raw pod) -> (raw, (PodGroup key, node name)) the pod names."""
        self.topology: tuple[Sequence[Any], Sequence[Any], Any] | None = None
        """(HyperNodes, nodes, outcome) of the last check of the HyperNodes against the nodes."""
        self.contexts: dict[Any, Any] = {}
        """The contexts of the last call, each kept as one object (:meth:`context`)."""
        self._contexts_next: dict[Any, Any] = {}
        self._values_next: dict[tuple[str, str], tuple[Mapping[str, Any], Any, Any]] = {}
        self._identified_next: dict[int, tuple[Mapping[str, Any], Any]] = {}
        self._references_next: dict[int, tuple[Mapping[str, Any], Any]] = {}

    def reuse(self, kind: str, key: str, raw: Mapping[str, Any], context: Any, make: Callable[[], _T]) -> _T:
        """``make()``, or last call's value for this object when it and its ``context`` are unchanged."""
        found = self.values.get((kind, key))
        if found is not None and found[0] is raw and found[1] is context:
            self._values_next[(kind, key)] = found  # the common case, without a new record
            return found[2]  # type: ignore[no-any-return]
        reusable = found is not None and found[1] == context and same_object(found[0], raw)
        value = found[2] if reusable else make()  # type: ignore[index]
        self._values_next[(kind, key)] = (raw, context, value)
        return value

    def identify(self, raw: Any, index: int, make: Callable[[Any, int], _T]) -> _T:
        """What identifying ``raw`` gave last call (the same dict), or ``make(raw, index)``."""
        found = self.identified.get(id(raw))
        if found is None or found[0] is not raw:
            found = (raw, make(raw, index))
        self._identified_next[id(raw)] = found
        return found[1]

    def references_of(self, obj: _O, make: Callable[[_O], _T]) -> _T:
        """The PodGroup and node a raw pod names (``make(obj)``), read once per dict."""
        raw = obj.raw
        found = self.references.get(id(raw))
        if found is None or found[0] is not raw:
            found = (raw, make(obj))
        self._references_next[id(raw)] = found
        return found[1]

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

    def keep(self) -> None:
        """At the end of a call: what this call read replaces what the last one read."""
        self.values, self._values_next = self._values_next, {}
        self.identified, self._identified_next = self._identified_next, {}
        self.references, self._references_next = self._references_next, {}
        self.contexts, self._contexts_next = self._contexts_next, {}

    def drop_pending(self) -> None:
        """A call that failed: keep what the last complete call read."""
        self._values_next = {}
        self._identified_next = {}
        self._references_next = {}
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


def _same_items(before: Sequence[Any], now: Sequence[Any]) -> bool:
    return len(before) == len(now) and all(a is b for a, b in zip(before, now, strict=True))
