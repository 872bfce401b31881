"""PriorityClass objects → the priority value of each class name, and the globalDefault.

Pods and PodGroups name a class; the number is what the solver compares. Kubernetes' two built-in
classes count without being listed; a name that matches no class is an error in a file and
priority 0 live.
"""

from __future__ import annotations

from collections.abc import Iterable

from vcsat.adapters.convert.reader import Conversion, KubeObject
from vcsat.adapters.errors import InputError

BUILTIN_PRIORITY_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
"""Kubernetes creates these itself; a file may use them without listing them."""


def read_priority_classes(conversion: Conversion, objects: Iterable[KubeObject]) -> PriorityClasses:
    values = dict(BUILTIN_PRIORITY_CLASSES)
    defaults: list[tuple[int, str]] = []
    for obj in objects:
        value = obj.raw.get("value")
        if value is None:
            obj.fail("value", "missing")
        values[obj.name] = obj.integer(obj.raw, "value", "value", 0)
        if obj.boolean(obj.raw, "globalDefault", "globalDefault", False):
            defaults.append((values[obj.name], obj.name))
    if len(defaults) > 1 and conversion.strict:
        names = ", ".join(name for _, name in sorted(defaults, key=lambda entry: entry[1]))
        raise InputError(f"more than one globalDefault PriorityClass: {names}", source=conversion.source)
    default = max(defaults)[0] if defaults else 0
    return PriorityClasses(values, default, conversion.strict)


class PriorityClasses:
    """PriorityClass values by name, and the globalDefault that applies when a pod names none."""

    def __init__(self, values: dict[str, int], default: int, strict: bool) -> None:
        self.values = values
        self.default = default
        self.strict = strict

    def value_of(self, obj: KubeObject, name: str, path: str) -> int:
        if not name:
            return self.default
        value = self.values.get(name)
        if value is None:
            if self.strict:
                obj.fail(path, f"unknown PriorityClass {name!r}")
            return 0
        return value
