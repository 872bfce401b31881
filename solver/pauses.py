"""No garbage-collector pauses while a cycle runs, and its survivors kept out of the young passes.

A snapshot of a thousand nodes is hundreds of thousands of Python objects, and a cycle allocates
as many again (model rows, dicts of counts). CPython's cyclic collector then runs its full passes
again and again over all of them, a large share of the cycle's CPU time (benchmarks/RESULTS.md),
for no garbage (the cycle's objects die by reference counting). The collector is paused for the
duration of a solve or a check and put back as it was.

What the call made and left alive (its decision, the caches it keeps on the snapshot) would all sit
in the youngest generation when the pause ends: the next young pass would walk every object of it,
and a pass of the middle generation walk them again, freeing nothing. So the outermost pause ends
by moving every tracked object to the oldest generation at once (``gc.freeze`` then
``gc.unfreeze``, no walk), which only a full collection walks. Whatever cyclic garbage the call
left waits for that full collection; the solver leaves almost none (a CP-SAT model is no reference
cycle, :mod:`vcsat.solver.fresh_model`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_gc_pauses() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            keep_as_old()
            gc.enable()


_held = False
"""Whether the process keeps objects frozen on purpose (:func:`hold_frozen`)."""


def hold_frozen(held: bool) -> None:
    """Say that the process keeps objects frozen (``held``), or no longer: the live scheduler's
    tenure (:mod:`vcsat.adapters.live.gc_tenure`). While held, a pause ends without counting them:
    ``gc.get_freeze_count`` walks every frozen object (0.04 CPU-s for 700,000 on a loaded box)."""
    global _held
    _held = held


def keep_as_old() -> None:
    """Move every object the collector tracks to its oldest generation, without walking them.

    Skipped while the process keeps objects frozen (:func:`hold_frozen`, or a program's own
    ``gc.freeze``): ``gc.unfreeze`` would release them. With none frozen the count costs nothing.
    """
    if not _held and gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
