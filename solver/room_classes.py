"""Nodes grouped into classes of equal free room, so that a query over the room costs the number of
distinct classes, not the number of nodes.

A class is the nodes with the same key (here: free GPUs as the greedy's buckets count them, and free
whole GPU devices); it knows how many nodes it holds and its lowest node index (a heap with lazy
deletion: a node that left the class is dropped when it reaches the top). The greedy moves a node
from class to class as it places and gives back pods, so a class's count and first node stay exact.
Tested against a plain scan over nodes (tests/test_room_classes.py).
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)


class NodeClasses(Generic[Key]):
    """Each node's class key, and per key its node count and lowest node index."""

    def __init__(self, keys: Sequence[Key]) -> None:
        self.key_of: list[Key] = list(keys)
        """Per node, the key of its class now."""
        self.count: dict[Key, int] = {}
        """Per key, how many nodes its class holds now (no entry when none)."""
        self._heaps: dict[Key, list[int]] = {}
        """Per key, node indices of its class (and of nodes that left it since), smallest on top."""
        for node, key in enumerate(self.key_of):
            self.count[key] = self.count.get(key, 0) + 1
            self._heaps.setdefault(key, []).append(node)  # ascending node order: already a heap

    def move(self, node: int, key: Key) -> None:
        """The node's room changed: it now belongs to the class of ``key``."""
        before = self.key_of[node]
        if before == key:
            return
        self.key_of[node] = key
        left = self.count[before] - 1
        if left:
            self.count[before] = left
        else:
            del self.count[before]
            del self._heaps[before]  # every entry left is stale
        self.count[key] = self.count.get(key, 0) + 1
        heap = self._heaps.get(key)
        if heap is None:
            self._heaps[key] = [node]
        else:
            heapq.heappush(heap, node)

    def first(self, key: Key) -> int | None:
        """The lowest node index of the class of ``key`` (None when it holds no node)."""
        heap = self._heaps.get(key)
        if heap is None:
            return None
        key_of = self.key_of
        while key_of[heap[0]] != key:  # left the class since it was pushed
            heapq.heappop(heap)
        return heap[0]


def fullest_with(classes: NodeClasses[tuple[int, int]], gpus: int) -> int | None:
    """Over classes keyed (free GPUs, free whole GPU devices): a node with at least ``gpus`` of both,
    the fewest free GPUs first, then the lowest node index."""
    best: tuple[int, int] | None = None
    for key in classes.count:
        level, whole = key
        if level < gpus or whole < gpus or (best is not None and level > best[0]):
            continue
        node = classes.first(key)
        assert node is not None
        if best is None or (level, node) < best:
            best = (level, node)
    return None if best is None else best[1]
