"""The snapshot's indexes of its pods (``pods_of_group``, ``pods_on_node``, ``pod_by_key``), carried
from the last cycle's snapshot for the pods the change set leaves out.

Why: each index is a walk over every pod of the snapshot (:class:`vcsat.model.Snapshot`'s cached
properties), made afresh for each live cycle's snapshot though only a few hundred pods changed. A
pod the change set (:func:`vcsat.solver.changes.between`) leaves out is the very pod of the last
snapshot, so it sits under the same key; only the keys of the pods gone or new (a group's, a node's,
a pod's own) are made again, from the last entry's pods that stayed and the new pods.

Readers iterate these indexes (the check walks ``pods_on_node``), so a carried index is the fresh one
exactly, in its order too: keys in the order of their first pod, each key's pods in the snapshot's
order. That holds when the pods both snapshots share are in the same order in each (the converter
sorts pods by key, so they are): this is checked (one pass at C speed) and, when it fails, or a pod
object or pod key shows twice, or the last snapshot's index was never asked for, nothing is carried
and the snapshot makes the index itself when first read. Only the live scheduler carries
(:func:`vcsat.solver.pod_sums.carrying`); a one-shot ``vcsat solve`` or a replay never asks.

The carried index is put where the snapshot's cached property keeps its own (the instance's
``__dict__``), before anything reads it, so every reader anywhere gets it; the snapshot stays
immutable to them.
"""

from __future__ import annotations

import bisect
import operator
import threading
from collections.abc import Callable, Sequence
from itertools import chain
from typing import TypeVar

from vcsat.model import Pod, Snapshot
from vcsat.solver import changes, pod_sums

_T = TypeVar("_T")
_V = TypeVar("_V")

_last: tuple[Snapshot, dict[int, int]] | None = None
"""The last carried snapshot and the position of each of its pods by id (never changed once kept)."""
_lock = threading.Lock()
"""A cycle and a reader in another thread (the dashboard) may carry at once."""


def _group_of(pod: Pod) -> str | None:
    return pod.group


def _node_of(pod: Pod) -> str | None:
    return pod.node_name if pod.bound else None


def _key_of(pod: Pod) -> str:
    return pod.key


def _tuple(pods: tuple[Pod, ...]) -> tuple[Pod, ...]:
    return pods


def _one(pod: Pod) -> tuple[Pod]:
    return (pod,)


def carry(snapshot: Snapshot) -> None:
    """Put ``snapshot``'s pod indexes in place, carried from the last snapshot carried, when the live
    scheduler carries; otherwise, or when they cannot be carried, leave them to the snapshot."""
    global _last
    if not pod_sums.carrying():
        return
    pods = snapshot.pods
    with _lock:
        last = _last
        if last is not None and last[0] is snapshot:
            return
        at = dict(zip(map(id, pods), range(len(pods)), strict=True))
        if len(at) != len(pods):  # one pod object twice: positions by id would not say where
            _last = None
            return
        _last = (snapshot, at)
        if last is None:
            return
        before, before_at = last
        found = changes.between(before, snapshot)
        if not _order_kept(before.pods, before_at, pods, at, found):
            return
        cache, kept = snapshot.__dict__, before.__dict__
        for name, key_of in (("pods_of_group", _group_of), ("pods_on_node", _node_of)):
            previous = kept.get(name)
            if previous is not None and name not in cache:
                grouped = _carried(previous, found, before_at, at, key_of, _tuple, tuple)
                if grouped is not None:
                    cache[name] = grouped
        by_key = kept.get("pod_by_key")
        if by_key is not None and "pod_by_key" not in cache and len(by_key) == len(before.pods):
            carried = _carried(by_key, found, before_at, at, _key_of, _one, _only)
            if carried is not None and len(carried) == len(pods):
                cache["pod_by_key"] = carried


def forget() -> None:
    """Drop the last snapshot kept (tests; a process that stops scheduling)."""
    global _last
    with _lock:
        _last = None


def _only(pods: list[Pod]) -> Pod | None:
    """The one pod of a key; None when a key has two (then ``pod_by_key`` is made afresh)."""
    return pods[0] if len(pods) == 1 else None


def _order_kept(
    before: Sequence[Pod], before_at: dict[int, int], after: Sequence[Pod], at: dict[int, int], found: changes.Changes
) -> bool:
    """Whether the pods in both snapshots are in the same order in each: ``before`` without its gone
    pods is, object for object, ``after`` without its new ones."""
    if len(before) - len(found.pods_gone) != len(after) - len(found.pods_new):
        return False
    left = _without(before, sorted(before_at[id(pod)] for pod in found.pods_gone))
    right = _without(after, sorted(at[id(pod)] for pod in found.pods_new))
    return all(map(operator.is_, left, right))


def _without(items: Sequence[_T], cuts: list[int]) -> chain[_T]:
    """``items`` without the ones at the (sorted) positions ``cuts``, as slices (no step per item here)."""
    starts = [0, *(cut + 1 for cut in cuts)]
    ends = [*cuts, len(items)]
    return chain.from_iterable(items[start:end] for start, end in zip(starts, ends, strict=True))


def _carried(
    previous: dict[str, _V],
    found: changes.Changes,
    before_at: dict[int, int],
    at: dict[int, int],
    key_of: Callable[[Pod], str | None],
    members: Callable[[_V], Sequence[Pod]],
    make: Callable[[list[Pod]], _V | None],
) -> dict[str, _V] | None:
    """``previous`` (the last snapshot's index, as a fresh pass made it) for the new snapshot: the
    keys of the pods gone or new made again from their pods that stayed and the new ones, in the
    new snapshot's order, and put where their first pod now falls among the other keys. ``members``:
    an entry's pods; ``make``: the entry of a key's pods (None: cannot carry). The shared pods
    must be in the same order in both snapshots (:func:`_order_kept`)."""
    touched: dict[str, list[Pod]] = {}
    for pod in found.pods_gone:
        key = key_of(pod)
        if key is not None:
            touched.setdefault(key, [])
    for pod in found.pods_new:
        key = key_of(pod)
        if key is not None:
            touched.setdefault(key, []).append(pod)
    if not touched:
        return dict(previous)

    def old_position(key: str) -> int:
        return before_at[id(members(previous[key])[0])]

    def new_position(key: str) -> int:
        return at[id(members(previous[key])[0])]

    # The old keys less the touched ones, as slices: old keys are in the order of their first pod in
    # the old snapshot, so each is found by bisection.
    keys = list(previous)
    cuts = []
    for key in touched:
        if key in previous:
            cut = bisect.bisect_left(keys, old_position(key), key=old_position)
            if cut >= len(keys) or keys[cut] != key:
                return None  # not in a fresh pass's order: make it afresh
            cuts.append(cut)
    cuts.sort()
    kept = list(_without(keys, cuts))

    # Each touched key's pods: the old ones still there (an id in ``at`` is a live pod of both
    # snapshots, so the same pod) and the new ones, in the new snapshot's order.
    entries: list[tuple[int, str, _V]] = []
    for key, new in touched.items():
        old = previous.get(key)
        stayed = [pod for pod in members(old) if id(pod) in at] if old is not None else []
        pods = sorted(stayed + new, key=lambda pod: at[id(pod)])
        if not pods:
            continue
        entry = make(pods)
        if entry is None:
            return None
        entries.append((at[id(pods[0])], key, entry))
    entries.sort(key=operator.itemgetter(0))

    # The kept keys keep their order (their pods stayed, in order); each touched key goes in where
    # its first pod falls.
    out: dict[str, _V] = {}
    start = 0
    for position, key, entry in entries:
        end = bisect.bisect_left(kept, position, lo=start, key=new_position)
        out.update(zip(kept[start:end], map(previous.__getitem__, kept[start:end]), strict=True))
        out[key] = entry
        start = end
    out.update(zip(kept[start:], map(previous.__getitem__, kept[start:]), strict=True))
    return out
