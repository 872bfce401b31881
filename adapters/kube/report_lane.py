"""The lane of the applier's report writes (PodGroup statuses, pod conditions, Events): behind the bindings.

A binding is what a pod waits for; a status, a condition or an Event is not. Both kinds of write
go to one API server, which on a busy cluster answers them in about the order it is given them:
report writes sent while bindings are queued delay those bindings. So while any binding is queued
or in flight, report writes go out one at a time (as kube-scheduler's event broadcaster writes its
Events: one after the other, beside its bindings), and on all the lane's threads once none is.
Report writes still make progress during a long burst of bindings, only slowly.

A write marked ``urgent`` never waits: admissions to Inqueue, which a Job controller waits for
before it creates a job's pods (they are few: one per PodGroup).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

BUSY_REPORT_WRITES = 1
"""Report writes at a time while bindings are queued or in flight."""


class ReportLane:
    """A thread pool for report writes that yields to bindings (module docstring). Thread-safe."""

    def __init__(self, workers: int, *, busy_workers: int = BUSY_REPORT_WRITES) -> None:
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="vcsat-apply-report")
        self._busy_workers = busy_workers
        self._cond = threading.Condition()
        self._bindings = 0
        """Bindings queued or in flight."""
        self._running = 0
        """Report writes under way that count against the bindings (not urgent)."""
        self._waiting = 0
        """Report writes held back for the bindings."""

    # --- the bindings' side -----------------------------------------------------------------------

    def binding_queued(self, future: Future[Any]) -> None:
        """A binding was queued as ``future``; the lane yields to it until it is answered (or cancelled)."""
        with self._cond:
            self._bindings += 1
        future.add_done_callback(self._binding_done)

    def _binding_done(self, _future: Future[Any]) -> None:
        with self._cond:
            self._bindings -= 1
            if self._bindings == 0:
                self._cond.notify_all()

    def bindings(self) -> int:
        """Bindings queued or in flight now."""
        with self._cond:
            return self._bindings

    # --- the report writes' side ------------------------------------------------------------------

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Run ``fn(*args, **kwargs)`` on the lane: one write at a time while bindings are queued."""
        return self._pool.submit(self._gated, fn, *args, **kwargs)

    def submit_urgent(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Run ``fn`` on the lane without waiting for the bindings (admissions)."""
        return self._pool.submit(fn, *args, **kwargs)

    def waiting(self) -> int:
        """Report writes held back for the bindings now."""
        with self._cond:
            return self._waiting

    def _gated(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        with self._cond:
            self._waiting += 1
            while self._bindings > 0 and self._running >= self._busy_workers:
                self._cond.wait()
            self._waiting -= 1
            self._running += 1
        try:
            return fn(*args, **kwargs)
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait)
