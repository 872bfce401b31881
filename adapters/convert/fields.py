"""Typed reading of one Kubernetes object's fields, failing with the field's path.

Both the converter (:mod:`.snapshot` and its readers per kind) and the controller's Job reader
(controller/jobspec.py) read untrusted YAML and must refuse it in one line that names the
object and the field. One reader serves both, so the rules (null means unset, a boolean is not an
integer) and the wording of the messages are the same wherever a user meets them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn, overload

from vcsat.adapters.errors import InputError

EMPTY: Mapping[str, Any] = {}
"""What an absent mapping reads as: callers chain ``.get`` without a None check."""
MAPPING_TYPES = (dict, Mapping)  # dict first: an ABC check costs ten times more


def type_name(value: Any) -> str:
    """How a message names the type a user wrote: "a list", "an integer", "null"..."""
    if isinstance(value, MAPPING_TYPES):
        return "a mapping"
    names = {list: "a list", str: "a string", bool: "a boolean", int: "an integer", float: "a number"}
    return names.get(type(value), "null" if value is None else f"a {type(value).__name__}")


class FieldReader:
    """Reads fields below one object; subclasses say which object (``label``) and file (``source``)."""

    source: str | None

    @property
    def label(self) -> str:
        """The object as a message names it: ``Pod ns/name``."""
        raise NotImplementedError

    def fail(self, path: str, message: str) -> NoReturn:
        raise InputError(message, source=self.source, obj=self.label or None, field=path or None)

    def mapping(self, parent: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
        value = parent.get(key)
        if value is None:
            return EMPTY
        if not isinstance(value, MAPPING_TYPES):
            self.fail(path, f"must be a mapping, not {type_name(value)}")
        return value

    def sequence(self, parent: Mapping[str, Any], key: str, path: str) -> list[Any]:
        value = parent.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(path, f"must be a list, not {type_name(value)}")
        return value

    def string(self, parent: Mapping[str, Any], key: str, path: str, default: str = "") -> str:
        value = parent.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            self.fail(path, f"must be a string, not {type_name(value)}")
        return value

    @overload
    def integer(
        self, parent: Mapping[str, Any], key: str, path: str, default: int, *, minimum: int | None = None
    ) -> int: ...

    @overload
    def integer(
        self, parent: Mapping[str, Any], key: str, path: str, default: None = None, *, minimum: int | None = None
    ) -> int | None: ...

    def integer(
        self, parent: Mapping[str, Any], key: str, path: str, default: int | None = None, *, minimum: int | None = None
    ) -> int | None:
        value = parent.get(key)
        if value is None:
            return default
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(path, f"must be an integer, not {type_name(value)}")
        if minimum is not None and value < minimum:
            self.fail(path, f"must be at least {minimum}, not {value}")
        return value

    def boolean(self, parent: Mapping[str, Any], key: str, path: str, default: bool) -> bool:
        value = parent.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.fail(path, f"must be true or false, not {type_name(value)}")
        return value
