"""A value derived from a frozen model's fields, computed on first use and kept in the instance.

The solver's phases read a pod's ``key``, ``bound`` or ``gpus`` millions of times in a cycle; as
plain properties each read runs Python code again. The fields of a frozen model never change, so
the value computed once stays right: :func:`derived` stores it in the instance's ``__dict__``,
where the next read finds it as a plain attribute (the descriptor only runs while it is absent).
It is ``functools.cached_property`` without its lock (the value is a pure function of frozen
fields: two threads computing it at once store equal values). A copy with changed fields drops
what was derived from the old ones (``Frozen.model_copy``); equality, hashing and serialisation
read the fields only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

_T = TypeVar("_T")


class derived(Generic[_T]):
    """``@derived`` on a method of a frozen model: a read-only attribute computed once."""

    def __init__(self, function: Callable[[Any], _T]) -> None:
        self.function = function
        self.name = function.__name__
        self.__doc__ = function.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> derived[_T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> _T | derived[_T]:
        if instance is None:
            return self
        value = self.function(instance)
        instance.__dict__[self.name] = value
        return value
