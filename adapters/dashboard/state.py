"""What the dashboard has seen: the last cycle of this replica and a short history of cycles.

The scheduler hands every cycle's result to :meth:`DashboardState.observe` (from its loop or an
applier thread); the HTTP threads read :meth:`DashboardState.seen`, a consistent view that never
changes under them. The views of a cycle are computed once, on the first request that needs them.
"""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from vcsat.adapters.dashboard.views import JobView, NodeView, Waiting, job_view, node_views, waiting
from vcsat.adapters.live.queue_view import QueueRow, queue_rows
from vcsat.model import Decision, Snapshot

HISTORY = 50
"""Cycles kept for the cycles table."""


@dataclass(frozen=True)
class CycleSummary:
    number: int
    at: float
    """Wall clock when it was observed (its decision applied or refused), Unix seconds."""
    trigger: str
    status: str
    gap: float
    seconds: float
    bound: int
    evicted: int
    waiting: int
    violations: int


@dataclass(frozen=True)
class LastCycle:
    snapshot: Snapshot
    decision: Decision


@dataclass(frozen=True)
class Seen:
    """One consistent view for one request."""

    last: LastCycle | None
    cycles: tuple[CycleSummary, ...]
    leading: bool
    _memo: dict[str, Any] = field(default_factory=dict, compare=False)

    def queues(self) -> list[QueueRow]:
        last = self._last()
        rows: list[QueueRow] = self._cached("queues", lambda: queue_rows(last.snapshot, last.decision))
        return rows

    def waiting(self) -> list[Waiting]:
        last = self._last()
        rows: list[Waiting] = self._cached("waiting", lambda: waiting(last.snapshot, last.decision))
        return rows

    def nodes(self) -> list[NodeView]:
        last = self._last()
        rows: list[NodeView] = self._cached("nodes", lambda: node_views(last.snapshot, last.decision))
        return rows

    def job(self, key: str) -> JobView:
        last = self._last()
        return job_view(last.snapshot, last.decision, key)

    def _last(self) -> LastCycle:
        if self.last is None:
            raise LookupError("no cycle yet")
        return self.last

    def _cached(self, name: str, compute: Any) -> Any:
        if name not in self._memo:
            self._memo[name] = compute()
        return self._memo[name]


class DashboardState:
    """The last cycle and the history, behind a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen = Seen(None, (), leading=False)
        self._cycles: collections.deque[CycleSummary] = collections.deque(maxlen=HISTORY)
        self.leading = False
        self._last_number = 0

    def observe(self, result: Any) -> None:
        """One cycle's result (``vcsat.adapters.live.scheduler.CycleResult``), once applied or refused."""
        decision: Decision = result.decision
        report = result.report
        summary = CycleSummary(
            number=result.number,
            at=time.time(),
            trigger=result.trigger,
            status=decision.solver.status,
            gap=decision.solver.gap,
            seconds=result.apply_seconds or result.seconds,
            bound=len(report.bound) if report is not None else 0,
            evicted=len(report.evicted) if report is not None else 0,
            waiting=sum(1 for outcome in decision.podgroups if outcome.phase != "Running"),
            violations=len(result.violations),
        )
        with self._lock:
            self._cycles.append(summary)
            cycles = tuple(sorted(self._cycles, key=lambda c: c.number))
            last = self._seen.last
            # A cycle's apply may end after the next cycle's: the newest cycle's view stays.
            if last is None or result.number >= self._last_number:
                last, self._last_number = LastCycle(result.snapshot, decision), result.number
            self._seen = Seen(last, cycles, leading=True)

    def set_leading(self, leading: bool) -> None:
        with self._lock:
            self.leading = leading
            self._seen = Seen(self._seen.last, self._seen.cycles, leading=leading)

    def seen(self) -> Seen:
        with self._lock:
            return self._seen
