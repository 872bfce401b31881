"""Reading one Kubernetes object and converting many: what every kind's reader shares.

:class:`KubeObject` reads the fields of one input object and names the object and the field path
in an error; :class:`Conversion` is one call's state (strict or lenient, the source file, the
scheduler's name) with the two caches that make a 10,000-pod cycle fast: parts that pods spell the
same way built once (:meth:`Conversion.shared`), and objects the informer did not replace reused
from the last cycle (:meth:`Conversion.reuse`). :func:`construct` makes a model value the readers
have already checked without validating it again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar, cast

from pydantic import BaseModel

from vcsat.adapters.convert.clock import parse_clock, parse_text_clock
from vcsat.adapters.convert.fields import MAPPING_TYPES, FieldReader, type_name
from vcsat.adapters.convert.reuse import UNSET, ConversionMemo
from vcsat.model import resources as res
from vcsat.model.quantity import nanos_to_amount, nanos_to_quota, parse_nanos

MAX_AMOUNT = 2**53
"""Largest amount accepted in model units (about 9·10^15: 8 PiB, or 9·10^12 cores in millicores):
exact as a float too, and room for sums without int64 overflow. A queue quota above it is held at
it (it bounds nothing a cluster holds)."""
NAMESPACED = frozenset({"Pod", "PodGroup", "PersistentVolumeClaim", "PodDisruptionBudget", "CSIStorageCapacity"})
"""The kinds whose objects are named within a namespace (``namespace/name``; ``default`` when none is given)."""
_SIMPLE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_NO_STRINGS: Mapping[str, str] = MappingProxyType({})
_T = TypeVar("_T")
_M = TypeVar("_M", bound=BaseModel)


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


class KubeObject(FieldReader):
    """One input object being read: knows how to name itself and its fields in an error."""

    __slots__ = (
        "key",
        "kind",
        "memo_context",
        "memo_value",
        "name",
        "namespace",
        "noticed",
        "raw",
        "references",
        "source",
    )

    key: str
    """``namespace/name``, or the name of a cluster-scoped object."""
    memo_context: Any
    """With a :class:`~.reuse.ConversionMemo`: the context of the object's last conversion."""
    memo_value: Any
    """With a :class:`~.reuse.ConversionMemo`: the object's last conversion."""
    references: Any
    """A pod's :func:`~.pods.pod_references`, once read (the object outlives a cycle with a memo)."""
    noticed: Any
    """What :mod:`~.notices` reads of a node's or PodGroup's raw object, once read; ``UNSET`` before."""

    def __init__(
        self,
        raw: Mapping[str, Any],
        kind: str,
        source: str | None,
        index: int,
        known: tuple[str, str, str] | None = None,
    ) -> None:
        """``known``: the name, namespace and key, already read and checked by the caller (the
        converter's common case, :meth:`~.snapshot.Converter._identify`); None reads them here."""
        self.raw = raw
        self.kind = kind
        self.source = source
        self.memo_context = UNSET
        self.memo_value = None
        self.references = None
        self.noticed = UNSET
        if known is not None:
            self.name, self.namespace, self.key = known
            return
        metadata: Any = raw.get("metadata")
        name = metadata.get("name") if type(metadata) is dict else None
        if type(name) is not str or not name:  # not the parser's own dict and a plain name: check it all
            self.name = self.namespace = self.key = ""
            if not isinstance(metadata, MAPPING_TYPES):
                self.fail(f"objects[{index}].metadata", "missing" if metadata is None else "must be a mapping")
            name = metadata.get("name")
            if not isinstance(name, str) or not name:
                self.fail(f"objects[{index}].metadata.name", "missing" if name is None else "must be a name")
        self.name = self.key = name
        self.namespace = ""
        if kind in NAMESPACED:
            namespace = metadata.get("namespace", "default")
            if not isinstance(namespace, str) or not namespace:
                self.fail("metadata.namespace", "must be a name")
            self.namespace = namespace
            self.key = f"{namespace}/{name}"

    @property
    def label(self) -> str:
        return f"{self.kind} {self.key}" if self.name else self.kind

    def string_map(self, parent: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
        value = parent.get(key)
        if value is None:
            return {}
        if type(value) is dict and all_strings(value):
            return dict(value)  # the common case, checked in one pass
        # Typed Any: the keys are checked here, and compiled code (docs/compiled-build.md) would
        # refuse a key that is not a string before the check names it.
        checked: Mapping[Any, Any] = self.mapping(parent, key, path)
        for entry_key, entry in checked.items():
            if not isinstance(entry_key, str):
                self.fail(path, f"key {entry_key!r} must be a string")
            if not isinstance(entry, str):
                self.fail(child(path, entry_key), f"must be a string, not {type_name(entry)}")
        return dict(checked)

    def checked_strings(self, parent: Mapping[str, Any], key: str, path: str) -> Mapping[str, str]:
        """:meth:`string_map` for a reader that only looks values up and keeps none of it: the
        input's own mapping when it is a plain dict of strings (no copy), else the checked copy."""
        value = parent.get(key)
        if value is None:
            return _NO_STRINGS
        if type(value) is dict and all_strings(value):
            return value
        return self.string_map(parent, key, path)

    def nanos_map(self, parent: Mapping[str, Any], key: str, path: str) -> dict[str, int]:
        """A resource list (``requests``, ``allocatable``, ...) as exact nanos per resource."""
        value: Mapping[Any, Any] = self.mapping(parent, key, path)  # keys checked here (as above)
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
        if type(stamp) is str:  # the common case, one call fewer per object
            try:
                return parse_text_clock(stamp)
            except ValueError as error:
                self.fail("metadata.creationTimestamp", str(error))
        return epoch_seconds(self, stamp, "metadata.creationTimestamp")


def all_strings(value: dict[Any, Any]) -> bool:
    """Whether every key and value is a plain ``str`` (anything else is checked field by field)."""
    str_type = str
    for entry_key, entry in value.items():
        if type(entry_key) is not str_type or type(entry) is not str_type:
            return False
    return True


class Conversion:
    """One conversion's options and caches, which every kind's reader is given."""

    def __init__(
        self, *, scheduler_name: str, source: str | None, strict: bool, memo: ConversionMemo | None = None
    ) -> None:
        self.scheduler_name = scheduler_name
        self.source = source
        self.strict = strict
        self.parts: dict[tuple[Any, ...], Any] = {}
        """Values built once per distinct spelling (:meth:`shared`), by kind of part and text."""
        self.clean: set[bytes] = set()
        """The specs' spellings found without ``null`` (:func:`~.spelling.spelling_seen`)."""
        self.memo = memo
        """The caller's memo of the last call (:meth:`reuse`); None when nothing is kept across calls."""

    def reuse(self, obj: KubeObject, context: tuple[Any, ...], make: Callable[..., _T], *args: Any) -> _T:
        """``make(*args)``, or what it gave last call for the same object in the same ``context``
        (what else the conversion depends on: its node and PodGroup existing, priority classes),
        see :mod:`.reuse`."""
        if self.memo is None:
            return make(*args)
        return self.memo.reuse(obj, context, make, *args)

    def shared(self, key: tuple[str, str | bytes], make: Callable[[], _T]) -> _T:
        """One frozen value for every pod that spells a part (tolerations, affinity) the same way.

        Pods of one job repeat these verbatim (and their containers' resources), and building them
        once instead of 10,000 times is much of the converter's speed. ``key`` holds the part's
        ``repr``: equal text, equal value.
        """
        found = self.parts.get(key)
        if found is None:
            found = self.parts[key] = make()
        return cast(_T, found)

    def keep_memo(self) -> None:
        """At the end of a call: the caller's memo now holds what this call read; what is gone
        from the cluster is forgotten."""
        if self.memo is not None:
            self.memo.keep()


def construct(model: type[_M], **values: Any) -> _M:
    """``model.model_construct(**values)`` for a model given every one of its fields, five times faster.

    The converter has checked every value itself, so pydantic's validation would only repeat it;
    ``model_construct`` still spends 10 µs per object on defaults and bookkeeping that a complete
    set of fields does not need, which is a third of the time for 10,000 pods.
    """
    return construct_from(model, values)


def construct_from(model: type[_M], values: dict[str, Any], *, complete: bool = False) -> _M:
    """:func:`construct` from a dict of the fields, which the model keeps (the caller gives it up):
    the hot paths spare the packing of thirty keyword arguments. ``complete``: ``values`` is known
    to hold exactly the model's fields (a constructed value's fields, some replaced), unchecked, and
    maybe values derived from them (:mod:`vcsat.model.derived`), which the instance then keeps."""
    if not complete and values.keys() != model.__pydantic_fields__.keys():
        return model.model_construct(**values)  # a field the converter does not fill: the safe way
    instance = _new(model)
    _set_dict(instance, values)
    _set_fields_set(instance, _every_field(model))
    _set_extra(instance, None)
    _set_private(instance, None)
    return instance


def construct_complete(model: type[_M], values: dict[str, Any]) -> _M:
    """``construct_from(model, values, complete=True)`` written out: the converter makes most pods
    and PodGroups this way (one for each object spelled like an earlier one), one call each."""
    instance = _new(model)
    _set_dict(instance, values)
    fields = _EVERY_FIELD.get(model)
    _set_fields_set(instance, fields if fields is not None else _every_field(model))
    _set_extra(instance, None)
    _set_private(instance, None)
    return instance


# The setters ``object.__setattr__`` would look up by name on every call, looked up once: the
# converter makes a model per pod and per PodGroup, and the lookups were much of each one's making.
# ``object.__new__`` is pydantic models' ``__new__`` (none of the model's classes defines its own).
_new = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


_EVERY_FIELD: dict[type[BaseModel], set[str]] = {}


def _every_field(model: type[BaseModel]) -> set[str]:
    """One set of all of ``model``'s field names, shared by every instance given all its fields.

    A set of thirty names is about 2 KB and one more object for the cyclic collector to track,
    per pod: more than the pod's own ``__dict__``. Sharing it is safe for frozen models: pydantic
    adds to an instance's set only on assignment (which a frozen model refuses, and which would
    add a name already there) and copies it before ``model_copy`` updates it.
    """
    found = _EVERY_FIELD.get(model)
    if found is None:
        found = _EVERY_FIELD[model] = set(model.__pydantic_fields__)
    return found


def epoch_seconds(obj: KubeObject, stamp: Any, path: str) -> float:
    if stamp is None:
        return 0.0
    try:
        return parse_clock(stamp)
    except ValueError as error:
        obj.fail(path, str(error))
