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
from dataclasses import dataclass
from itertools import chain
from typing import TypeVar

from vcsat.model import Pod, Snapshot
from vcsat.solver import changes, pod_sums

_T = TypeVar("_T")

_last: tuple[Snapshot, dict[int, int]] | None = None
"""The last carried snapshot and the position of each of its pods by id (never changed once kept)."""
_lock = threading.Lock()
"""A cycle and a reader in another thread (the dashboard) may carry at once."""


def _group_of(pod: Pod) -> str | None:
    return pod.group


def _node_of(pod: Pod) -> str | None:
    return pod.node_name if pod.bound else None


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
        moves = _Moves.of(found, before_at, at)
        if not moves.order_kept(before.pods, pods):
            return
        cache, kept = snapshot.__dict__, before.__dict__
        for name, key_of in (("pods_of_group", _group_of), ("pods_on_node", _node_of)):
            previous = kept.get(name)
            if previous is not None and name not in cache:
                grouped = _carried(previous, found, moves, key_of)
                if grouped is not None:
                    cache[name] = grouped
        by_key = kept.get("pod_by_key")
        if by_key is not None and "pod_by_key" not in cache and len(by_key) == len(before.pods):
            carried = _by_key(list(by_key), found, moves, pods)
            if len(carried) == len(pods):  # else two pods of one key: the snapshot makes it
                cache["pod_by_key"] = carried


def forget() -> None:
    """Drop the last snapshot kept (tests; a process that stops scheduling)."""
    global _last
    with _lock:
        _last = None


def _by_key(keys: list[str], found: changes.Changes, moves: _Moves, pods: Sequence[Pod]) -> dict[str, Pod]:
    """``pod_by_key`` of the new snapshot from the old one's keys, one per pod and in its pods' order
    (no key twice): the kept pods' keys as slices, each new pod's key at its place."""
    kept = list(_without(keys, moves.gone))
    pieces: list[Sequence[str]] = []
    start = 0
    for i, (position, pod) in enumerate(zip(moves.new, found.pods_new, strict=True)):
        end = position - i  # the kept pods before the i-th new one
        pieces.append(kept[start:end])
        pieces.append((pod.key,))
        start = end
    pieces.append(kept[start:])
    return dict(zip(chain.from_iterable(pieces), pods, strict=True))


@dataclass(frozen=True)
class _Moves:
    """Where the pods gone were in the old snapshot and the new ones are in the new one, and what
    that makes of a position: enough to place a key among the others without a step per pod."""

    before_at: dict[int, int]
    at: dict[int, int]
    gone: list[int]
    """Old positions of the pods gone, sorted."""
    new: list[int]
    """New positions of the new pods, sorted."""
    shift: list[int]
    """``gone[i] - i``: the pods that stayed before the i-th gone one (non-decreasing)."""

    @classmethod
    def of(cls, found: changes.Changes, before_at: dict[int, int], at: dict[int, int]) -> _Moves:
        gone = sorted(before_at[id(pod)] for pod in found.pods_gone)
        new = sorted(at[id(pod)] for pod in found.pods_new)
        return cls(before_at, at, gone, new, [position - i for i, position in enumerate(gone)])

    def order_kept(self, before: Sequence[Pod], after: Sequence[Pod]) -> bool:
        """Whether the pods in both snapshots are in the same order in each: ``before`` without its
        gone pods is, object for object, ``after`` without its new ones."""
        if len(before) - len(self.gone) != len(after) - len(self.new):
            return False
        return all(map(operator.is_, _without(before, self.gone), _without(after, self.new)))

    def old_position(self, position: int) -> int:
        """The old position of the first pod that stayed at or after new position ``position`` (the
        old snapshot's length if none did): the pods that stayed are in the same order in both."""
        stayed_before = position - bisect.bisect_left(self.new, position)
        return stayed_before + bisect.bisect_right(self.shift, stayed_before)


def _without(items: Sequence[_T], cuts: list[int]) -> chain[_T]:
    """``items`` without the ones at the (sorted) positions ``cuts``, as slices (no step per item here)."""
    starts = [0, *(cut + 1 for cut in cuts)]
    ends = [*cuts, len(items)]
    return chain.from_iterable(items[start:end] for start, end in zip(starts, ends, strict=True))


def _carried(
    previous: dict[str, tuple[Pod, ...]],
    found: changes.Changes,
    moves: _Moves,
    key_of: Callable[[Pod], str | None],
) -> dict[str, tuple[Pod, ...]] | None:
    """``previous`` (the last snapshot's index, as a fresh pass made it) for the new snapshot: the
    keys of the pods gone or new made again from their pods that stayed and the new ones, in the
    new snapshot's order, each put where its first pod now falls among the other keys; None when
    ``previous`` is not in a fresh pass's order. The shared pods must be in the same order in both
    snapshots."""
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
    before_at, at = moves.before_at, moves.at

    # The old keys are in the order of their first pod in the old snapshot: each touched one is
    # found by bisection on those positions, and the others kept as slices.
    keys = list(previous)
    values = list(previous.values())
    positions = list(map(before_at.__getitem__, map(id, map(operator.itemgetter(0), values))))
    cuts = []
    for key in touched:
        entry = previous.get(key)
        if entry is not None:
            cut = bisect.bisect_left(positions, before_at[id(entry[0])])
            if cut >= len(keys) or keys[cut] != key:
                return None  # not in a fresh pass's order: make it afresh
            cuts.append(cut)
    cuts.sort()
    kept_keys, kept_values = list(_without(keys, cuts)), list(_without(values, cuts))
    kept_positions = list(_without(positions, cuts))

    # Each touched key's pods: the old ones still there (an id in ``at`` is a live pod of both
    # snapshots, so the same pod) and the new ones, in the new snapshot's order.
    entries: list[tuple[int, str, tuple[Pod, ...]]] = []
    for key, new in touched.items():
        entry = previous.get(key)
        pods = sorted([*(pod for pod in entry or () if id(pod) in at), *new], key=lambda pod: at[id(pod)])
        if not pods:
            continue
        entries.append((at[id(pods[0])], key, tuple(pods)))
    entries.sort(key=operator.itemgetter(0))

    # The kept keys keep their order (their pods stayed, in order); each touched key goes in before
    # the first kept key whose first pod comes after its own.
    out: dict[str, tuple[Pod, ...]] = {}
    start = 0
    for position, key, made in entries:
        end = bisect.bisect_left(kept_positions, moves.old_position(position), lo=start)
        out.update(zip(kept_keys[start:end], kept_values[start:end], strict=True))
        out[key] = made
        start = end
    out.update(zip(kept_keys[start:], kept_values[start:], strict=True))
    return out
