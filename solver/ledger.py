"""Sums of resource vectors per bucket, kept up to date as entries come, change and go.

Why: the live scheduler's cycles sum the same pods' requests again and again (per queue, per
node), though between two cycles only the few pods the watch reported changed. A ledger holds
one entry per summed thing (a pod, a group's subtotal) and adjusts its bucket's sum by that
entry alone when it is put or dropped, so a cycle pays for what changed, not for the cluster.

The sums are exact: integers, added and subtracted. They are also the very dicts a fresh
:func:`vcsat.model.resources.total` of the bucket's entries would give, up to key order: a
resource is in a bucket's sum exactly while some entry of the bucket names it (its amount may be
zero, as in a fresh total), and a bucket is in :meth:`Ledger.sums` exactly while it has an entry.
A ledger made with ``named=False`` skips that count (about half its work): a resource whose entries
all went may stay in its bucket's sum at zero, which is enough where sums are only read by name.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
B = TypeVar("B", bound=Hashable)


class Ledger(Generic[K, B]):
    """Entries by key, each in one bucket with one vector; the sum of each bucket's vectors."""

    def __init__(self, *, named: bool = True) -> None:
        self.named = named
        """Whether a resource leaves a bucket's sum with its last entry (see the module docstring)."""
        self._entries: dict[K, tuple[B, Mapping[str, int]]] = {}
        self._sums: dict[B, dict[str, int]] = {}
        self._named: dict[B, dict[str, int]] = {}
        """Per bucket and resource, how many entries name the resource (drop it at zero)."""
        self._size: dict[B, int] = {}

    def put(self, key: K, bucket: B, vector: Mapping[str, int]) -> None:
        """Enter (or replace) ``key``'s entry. The vector is kept, not copied: never change it."""
        self.put_many(((key, bucket, vector),))

    def put_many(self, entries: Iterable[tuple[K, B, Mapping[str, int]]]) -> None:
        """:meth:`put` for each entry, in one loop (a cold start enters tens of thousands)."""
        known, sums, named_of, size = self._entries, self._sums, self._named, self._size
        counted = self.named
        for key, bucket, vector in entries:
            if key in known:
                self.drop(key)
            known[key] = (bucket, vector)
            total = sums.get(bucket)
            if total is None:
                total = sums[bucket] = {}
                named_of[bucket] = {}
                size[bucket] = 0
            size[bucket] += 1
            if counted:
                named = named_of[bucket]
                for name, amount in vector.items():
                    total[name] = total.get(name, 0) + amount
                    named[name] = named.get(name, 0) + 1
            else:
                for name, amount in vector.items():
                    total[name] = total.get(name, 0) + amount

    def drop(self, key: K) -> None:
        """Take ``key``'s entry out, if there is one."""
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        bucket, vector = entry
        self._size[bucket] -= 1
        if not self._size[bucket]:
            del self._sums[bucket], self._named[bucket], self._size[bucket]
            return
        total, named = self._sums[bucket], self._named[bucket]
        if not self.named:
            for name, amount in vector.items():
                total[name] -= amount
            return
        for name, amount in vector.items():
            named[name] -= 1
            if named[name]:
                total[name] -= amount
            else:
                del total[name], named[name]

    def sum(self, bucket: B) -> Mapping[str, int] | None:
        """The bucket's sum (shared: read it, never change it); None when it has no entry."""
        return self._sums.get(bucket)

    def size(self, bucket: B) -> int:
        """How many entries the bucket holds."""
        return self._size.get(bucket, 0)

    @property
    def sums(self) -> Mapping[B, Mapping[str, int]]:
        """Every bucket with an entry, and its sum (shared: read it, never change it)."""
        return self._sums

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
