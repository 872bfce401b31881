"""A pod's required node-affinity terms as a key part that hashes once (:class:`HashedTerms`).

A module of its own so that :mod:`vcsat.solver.rules.predicates` can be compiled (the compiled
build, docs/compiled-build.md): mypyc cannot make a class that subclasses ``tuple`` native, so this
one stays pure Python while the predicates around it are compiled.
"""

from __future__ import annotations

from collections.abc import Iterable

from vcsat.model import NodeSelectorTerm


class HashedTerms(tuple[NodeSelectorTerm, ...]):
    """A pod's required node-affinity terms as a key part: a plain tuple of the terms, equal and
    hashing as one, whose hash is worked out once. The terms are frozen pydantic models, whose hash
    walks every field of every term and requirement in Python each time it is asked; a key is
    looked up in many caches for many pods each cycle, and the walk was much of those lookups."""

    _hash: int

    def __new__(cls, terms: Iterable[NodeSelectorTerm]) -> HashedTerms:
        made = super().__new__(cls, terms)
        made._hash = tuple.__hash__(made)
        return made

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[HashedTerms], tuple[tuple[NodeSelectorTerm, ...]]]:
        # Made again where it is read: a string's hash differs from one process to the next.
        return (HashedTerms, (tuple(self),))
