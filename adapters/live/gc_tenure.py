"""The live scheduler's long-lived objects kept out of the cyclic collector's passes.

The scheduler's process holds its informers' caches, its conversion memo and the last cycle's
snapshot: at 5,000 nodes over half a million objects that live for many cycles and hold no garbage.
CPython collects its oldest generation once the objects that reached it since the last full
collection number a quarter of those already there; in the scheduler that count grows with every
watch event (each replaces an object by a new one) and every cycle's survivors, so a full
collection walked all of them every batch or two, about a second of CPU each (benchmarks/RESULTS.md,
session 16: 11-16% of the scheduler's CPU).

:class:`Tenure` runs after each cycle: a collection of the two young generations (the cycle's own
cyclic garbage and the informers' since the last cycle are freed there), then ``gc.freeze()``,
which moves every survivor to the permanent generation, which no collection walks. The solver's
pauses (:mod:`vcsat.solver.pauses`) end the same way while the tenure holds objects frozen: what a
solve or a check left is frozen when it ends, and counted here. An object
frozen there is still freed by reference counting when its last reference goes; only cyclic
garbage made of frozen objects would stay. So the frozen objects are bounded after each freeze
(the last count plus what was frozen since; an exact count walks them all, so it is made only when
that bound passes the margin), and once they are more than ``growth`` above the fewest counted since
the last full collection, they are unfrozen and collected in full: memory stays within that
margin of what is alive, as with CPython's own rule, but the walk of everything happens when the
live set grows (or leaks), not on every batch of watch events.

The scheduler's process is its own (``vcsat scheduler``): the tenure owns the permanent
generation, and :meth:`Tenure.release` (on close) gives everything back to the collector.
"""

from __future__ import annotations

import gc

GROWTH = 0.25
"""How far the frozen objects may grow above the fewest since the last full collection before the
next one (CPython's own margin for its oldest generation)."""


class Tenure:
    """After each cycle: young passes, survivors frozen, a full collection when they grow by ``growth``."""

    def __init__(self, growth: float = GROWTH) -> None:
        self.growth = growth
        self.full_collections = 0
        """Full collections this tenure ran (the first after the cold cycle included)."""
        self.frozen = 0
        """At least the objects in the permanent generation after the last :meth:`after_cycle` (what
        was frozen since they were last counted is added, what died since is not taken off)."""
        self._floor: int | None = None
        """The fewest frozen objects counted since the last full collection; None while not frozen."""

    def after_cycle(self) -> None:
        """Free the young generations' garbage, freeze what survives; collect in full if grown."""
        floor = self._floor
        if floor is None:  # the first time: whatever garbage the caches' lists left, then freeze
            self._collect_all()
            return
        from vcsat.solver.pauses import take_frozen

        gc.collect(1)
        # What survived since the last freeze is in the oldest generation now, or was frozen at the
        # end of a solver's pause: the frozen objects are at most that many more. Counting them
        # exactly walks them all, so only when that bound passes the margin.
        self.frozen += len(gc.get_objects(generation=2)) + take_frozen()
        gc.freeze()
        limit = floor * (1.0 + self.growth)
        if self.frozen <= limit:
            return
        self.frozen = gc.get_freeze_count()
        if self.frozen > limit:
            self._collect_all()
        else:
            self._floor = min(floor, self.frozen)

    def release(self) -> None:
        """Give the frozen objects back to the collector (its oldest generation)."""
        if self._floor is not None:
            from vcsat.solver.pauses import hold_frozen

            gc.unfreeze()
            hold_frozen(False)
            self._floor = None
            self.frozen = 0

    def _collect_all(self) -> None:
        # Here, not at import: the solver package loads OR-Tools (a cycle has loaded it already).
        from vcsat.solver.pauses import hold_frozen

        gc.unfreeze()
        gc.collect()
        gc.freeze()
        hold_frozen(True)  # the solver's pauses then leave the generations as they are, uncounted
        self.full_collections += 1
        self.frozen = self._floor = gc.get_freeze_count()
