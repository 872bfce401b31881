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

A process that keeps objects frozen on purpose (the live scheduler's tenure,
:func:`hold_frozen`) cannot have them unfrozen. There the pause ends with ``gc.freeze`` alone: what
the call left joins the frozen objects at once, instead of waiting in the youngest generation for
a young pass to walk it all (the first allocation after the pause would start one), and how many
objects that froze is counted (a list of the three generations, no collection) for the tenure,
whose bound on the frozen objects must include them (:func:`take_frozen`).
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
_frozen_here = 0
"""Objects the pauses froze while held, since the last :func:`take_frozen`."""


def hold_frozen(held: bool) -> None:
    """Say that the process keeps objects frozen (``held``), or no longer: the live scheduler's
    tenure (:mod:`vcsat.adapters.live.gc_tenure`). While held, a pause ends by freezing what it
    left, counted by generation lists rather than by ``gc.get_freeze_count``, which walks every
    frozen object."""
    global _held, _frozen_here
    _held = held
    _frozen_here = 0


def take_frozen() -> int:
    """How many objects the pauses froze since the last call (while held; 0 otherwise)."""
    global _frozen_here
    taken, _frozen_here = _frozen_here, 0
    return taken


def keep_as_old() -> None:
    """Move every object the collector tracks out of the young generations, without walking them.

    With none frozen: to the oldest generation (``gc.freeze`` then ``gc.unfreeze``; the count costs
    nothing then). While the process holds objects frozen (:func:`hold_frozen`): frozen with them,
    and counted for :func:`take_frozen`. Skipped when a program froze objects of its own
    (``gc.unfreeze`` would release them, and nobody would count what a freeze added).
    """
    global _frozen_here
    if _held:
        _frozen_here += sum(len(gc.get_objects(generation)) for generation in range(3))
        gc.freeze()
    elif gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
