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

    __slots__ = ("_found", "_make")

    def __init__(self, make: Callable[[Pod], Made]) -> None:
        self._make = make
        self._found: dict[tuple[int, int, int, int, Hashable], tuple[object, object, object, object, Made]] = {}

    def __call__(self, pod: Pod, extra: Hashable = None) -> Made:
        """``make(pod)``, computed once for every pod sharing this pod's spec objects and ``extra``."""
        requests, selector, affinity, tolerations = pod.requests, pod.node_selector, pod.affinity, pod.tolerations
        key = (id(requests), id(selector), id(affinity), id(tolerations), extra)
        found = self._found.get(key)
        if (
            found is not None
            and found[0] is requests
            and found[1] is selector
            and found[2] is affinity
            and found[3] is tolerations
        ):
            return found[4]
        made = self._make(pod)
        if len(self._found) >= KEPT:
            self._found.clear()
        self._found[key] = (requests, selector, affinity, tolerations, made)
        return made
