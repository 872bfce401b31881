"""What a pod contributes to a pricing tally, made once per pod spec rather than once per pod.

The converter reads each distinct pod spec once, so pods of one spec share their requests, node
selector, affinity and tolerations objects. A tally that reads only those (and, where it says so,
one more plain value such as whether the pod waits) gives every pod of the spec the same
contribution: the memo keys on the objects' identities and keeps the objects themselves, so an
identity reused after garbage collection never answers for a different spec.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from vcsat.model import Pod

Made = TypeVar("Made")

#: Entries kept before the memo starts afresh: far above the distinct specs of one snapshot, small
#: enough that a long-lived scheduler does not keep every spec it ever saw.
KEPT = 1 << 12


class SpecMemo(Generic[Made]):
    """Per-spec results of one function of a pod's spec (and of ``extra``, when given)."""

    __slots__ = ("_found", "_kept", "_make")

    def __init__(self, make: Callable[[Pod], Made]) -> None:
        self._make = make
        self._found: dict[int, list[tuple[object, object, object, Hashable, object, Made]]] = {}
        """Per identity of a requests object, the specs made with it: (requests, selector, affinity,
        extra, tolerations, made). Keyed by one identity, not a tuple of five: no key tuple is built
        and hashed per pod, and one spec's pods find their entry first in a list of one or two."""
        self._kept = 0
        """Entries held, over every list."""

    def made(self, pod: Pod, extra: Hashable = None) -> Made:
        """``make(pod)``, computed once for every pod sharing this pod's spec objects and ``extra``.
        A method, not ``__call__``: an instance call goes through the type's call slot, a method
        call does not, and a tally calls this once per pod (so the memo has no ``__call__``)."""
        requests = pod.requests
        entries = self._found.get(id(requests))
        selector, affinity, tolerations = pod.node_selector, pod.affinity, pod.tolerations
        if entries is not None:
            for entry in entries:
                if (
                    entry[0] is requests
                    and entry[1] is selector
                    and entry[2] is affinity
                    and entry[4] is tolerations
                    and entry[3] == extra
                ):
                    return entry[5]
        made = self._make(pod)
        if self._kept >= KEPT:
            self._found.clear()
            self._kept = 0
            entries = None
        if entries is None or entries[0][0] is not requests:  # a new identity, or a reused one
            self._kept -= len(entries) if entries is not None else 0
            entries = self._found[id(requests)] = []
        self._kept += 1
        entries.append((requests, selector, affinity, extra, tolerations, made))
        return made
