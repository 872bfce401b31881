"""How much CPU the cyclic garbage collector takes in the live scheduler's process.

A scheduler's caches and its conversion memo are hundreds of thousands of long-lived objects
(a 5,000-node cluster: over half a million), and CPython's full collections scan them all: one
takes as long as a whole steady cycle. The solver pauses the collector while it runs
(:mod:`vcsat.solver.pauses`), but the informers' and the applier's threads allocate between
cycles and the collections they trigger land on whichever thread allocates. This clock counts
them (collections by generation and the collecting thread's CPU seconds), so the cycle log says
how much of a cycle's, or a batch's, CPU went to the collector rather than to deciding.
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Any


class GcClock:
    """Collections by generation and their CPU seconds since :meth:`start`.

    No lock: a collection may start inside any allocation, also one made while a lock is held
    here, and the callback would wait for it forever. The counts change under the GIL only, in
    the callback; a read may miss a collection under way, never corrupt a count."""

    def __init__(self) -> None:
        self.collections = [0, 0, 0]
        self.cpu_seconds = 0.0
        self._started = threading.local()
        self._on = False

    def start(self) -> None:
        if not self._on:
            gc.callbacks.append(self._callback)
            self._on = True

    def stop(self) -> None:
        if self._on:
            gc.callbacks.remove(self._callback)
            self._on = False

    def totals(self) -> dict[str, Any]:
        """Collections by generation (0, 1, 2: the full ones) and their CPU seconds so far."""
        return {"collections": list(self.collections), "cpu_seconds": round(self.cpu_seconds, 3)}

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        # Called by CPython in the collecting thread, before and after each collection.
        if phase == "start":
            self._started.at = time.thread_time()
            return
        started = getattr(self._started, "at", None)
        if started is None:
            return
        spent = time.thread_time() - started
        generation = min(int(info.get("generation", 0)), 2)
        self.collections[generation] += 1
        self.cpu_seconds += spent
