"""Prometheus metrics and the health endpoints of a long-running vcsat process.

An operator needs to see, without reading logs, how long cycles take and what started them (and
how many a loop on a period would have run for nothing), whether CP-SAT proves its decisions
optimal or runs out of time (and how far from optimal it then is), how many pods are bound and
evicted, and why PodGroups wait. Kubernetes needs ``/healthz`` (restart me) and
``/readyz`` (send me work). Both are served from one small HTTP server on one port.

The metrics live in their own ``CollectorRegistry``, not the process-global one, so that two
``Metrics`` in one process (tests, a scheduler and a controller side by side) never collide.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from vcsat.adapters.live.volcano_metrics import CycleLike, VolcanoMetrics
from vcsat.model import Decision
from vcsat.solver.deadline import EXCHANGE_TRADES, STEPS

log = logging.getLogger(__name__)

CYCLE_BUCKETS_S = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 60.0, 120.0)
"""From a trivial cycle to a large one at twice the default 10 s search budget, and beyond."""
NO_REASON = "Unknown"
"""The ``reason`` label of a waiting PodGroup whose outcome gave none."""


class Metrics:
    """The metrics of one process, with ``observe_*`` calls for the scheduler loop and the applier."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.cycle_seconds = Histogram(
            "vcsat_cycle_seconds",
            "Wall time of one scheduling cycle: snapshot, solve, check and apply.",
            buckets=CYCLE_BUCKETS_S,
            registry=self.registry,
        )
        self.solver_seconds = Histogram(
            "vcsat_solver_seconds",
            "Time the solver itself took in a cycle, as it reports it.",
            buckets=CYCLE_BUCKETS_S,
            registry=self.registry,
        )
        self.solver_status = Counter(
            "vcsat_solver_status",
            "Cycles by solver status: OPTIMAL (proven), FEASIBLE (time limit hit), WITHIN_GAP (proven within the "
            "policy's relative_gap) or FALLBACK (greedy).",
            ["status"],
            registry=self.registry,
        )
        self.steps_skipped = Counter(
            "vcsat_solver_steps_skipped",
            "Optional solver steps a cycle skipped because they would have ended after its time limit, by step "
            "(second_fill, exchange, search, evictions, ...): a cycle that skips them decides on less.",
            ["step"],
            registry=self.registry,
        )
        for step in (*STEPS, EXCHANGE_TRADES):  # every step's series from 0: a rate() over it starts known
            self.steps_skipped.labels(step=step)
        self.solver_gap = Gauge(
            "vcsat_solver_relative_gap",
            "Proven relative gap of the last cycle's decision: (bound - objective) / max(|bound|, 1); 0 is optimal.",
            registry=self.registry,
        )
        self.level_gap = Gauge(
            "vcsat_solver_level_gap",
            "Per level of the objective (the queue fair-share levels, then placed work by priority), the "
            "proven relative gap of the last cycle's decision there, each level's bound holding the more "
            "important ones at the decision's values: the first level above 0 is where a better decision "
            "may differ first.",
            ["level"],
            registry=self.registry,
        )
        self._levels: set[str] = set()
        self.pods_bound = Counter(
            "vcsat_pods_bound",
            "Pods bound to a node through the Binding subresource.",
            registry=self.registry,
        )
        self.evictions = Counter(
            "vcsat_evictions",
            "Pods evicted through the Eviction API, by reason (preempt or reclaim).",
            ["reason"],
            registry=self.registry,
        )
        self.pending_podgroups = Gauge(
            "vcsat_pending_podgroups",
            "PodGroups left waiting by the last cycle, by the reason that blocks them.",
            ["reason"],
            registry=self.registry,
        )
        self.nominations = Gauge(
            "vcsat_nominations",
            "Pods the last cycle nominated onto room that its evictions free.",
            registry=self.registry,
        )
        self.nominations_issued = Counter(
            "vcsat_nominations_issued",
            "Nominations issued, summed over cycles (a pod waiting several cycles counts each time).",
            registry=self.registry,
        )
        self.cycles = Counter(
            "vcsat_cycles",
            "Cycles by what started them: start, change (a change that may alter the decision), follow-up "
            "(--period after a cycle that wrote something, or whose report back changed), deadline (a "
            "clock rule came due) or resync (--resync seconds without any of these).",
            ["trigger"],
            registry=self.registry,
        )
        self.idle_periods = Counter(
            "vcsat_idle_periods_skipped",
            "Periods (--period) with no cycle because nothing had changed and nothing was due: cycles a "
            "loop on a period would have run for nothing.",
            registry=self.registry,
        )
        self.leader = Gauge(
            "vcsat_leader",
            "1 while this replica holds the leader lease and acts, 0 while it stands by.",
            registry=self.registry,
        )
        self.volcano: VolcanoMetrics | None = None
        """Volcano's scheduler metrics under its own names (``volcano_*``), in the same registry; made
        by the first cycle, so that a process that runs none (the Job controller) serves none."""
        self._volcano_lock = threading.Lock()
        self._pending_reasons: set[str] = set()
        self._server: ThreadingHTTPServer | None = None
        self.port: int | None = None
        """The port the HTTP server listens on, once ``serve`` has started it."""

    # --- observations --------------------------------------------------------------------------

    def observe_cycle(self, decision: Decision, seconds: float) -> None:
        """Record one cycle: its wall time and what its decision says about the solver and the waiting."""
        self.cycle_seconds.observe(seconds)
        self.solver_seconds.observe(decision.solver.seconds)
        self.solver_status.labels(status=decision.solver.status).inc()
        # ``exchange_trades=N`` (the trades a clock cut the exchange after) counts as its step: a
        # label per N would grow without end.
        for step in {entry.partition("=")[0] for entry in decision.solver.skipped}:
            self.steps_skipped.labels(step=step).inc()
        self.solver_gap.set(decision.solver.gap)
        # A level seen before and absent now (a priority with no work left) drops to 0, as the
        # waiting reasons below do: graphs stay continuous.
        gaps = {level.level: level.gap for level in decision.solver.levels}
        self._levels.update(gaps)
        for level in self._levels:
            self.level_gap.labels(level=level).set(gaps.get(level, 0.0))
        self.nominations.set(len(decision.nominations))
        self.nominations_issued.inc(len(decision.nominations))

        waiting: dict[str, int] = {}
        for outcome in decision.podgroups:
            if outcome.phase != "Running":
                reason = outcome.reason or NO_REASON
                waiting[reason] = waiting.get(reason, 0) + 1
        # A reason seen before and absent now drops to 0 rather than vanishing: graphs stay continuous.
        self._pending_reasons.update(waiting)
        for reason in self._pending_reasons:
            self.pending_podgroups.labels(reason=reason).set(waiting.get(reason, 0))

    def observe_result(self, cycle: CycleLike) -> None:
        """The Volcano-named series of one cycle (queues, jobs, attempts): see ``VolcanoMetrics``."""
        with self._volcano_lock:  # two cycles' applies may end at once, on two threads
            if self.volcano is None:
                self.volcano = VolcanoMetrics(self.registry)
            try:
                self.volcano.observe(cycle)
            except Exception:
                # A gauge that fails to move must not fail the cycle that applied its decision.
                log.exception("volcano metrics failed")

    def observe_trigger(self, trigger: str, n: int = 1) -> None:
        """``n`` cycles start for ``trigger`` (see ``vcsat.adapters.live.scheduler.TRIGGERS``); 0 makes the
        series exist, so a rate() over it starts from a known zero."""
        self.cycles.labels(trigger=trigger).inc(n)

    def observe_idle_periods(self, n: int) -> None:
        """``n`` more periods passed with no cycle due."""
        self.idle_periods.inc(n)

    def observe_bound(self, n: int) -> None:
        """``n`` pods were bound (successful Binding calls only)."""
        if n:
            self.pods_bound.inc(n)

    def observe_evictions(self, n: int, reason: str = "preempt") -> None:
        """``n`` pods were evicted for ``reason`` (successful Eviction calls only)."""
        # The series exists from the first call, so a rate() over it starts from a known zero.
        counter = self.evictions.labels(reason=reason)
        if n:
            counter.inc(n)

    def set_leader(self, leading: bool) -> None:
        """Whether this replica currently leads (wire to the leader elector's callbacks)."""
        self.leader.set(1 if leading else 0)

    def exposition(self) -> bytes:
        """The text exposition format, as ``/metrics`` serves it."""
        return generate_latest(self.registry)

    # --- HTTP ----------------------------------------------------------------------------------

    def serve(
        self,
        port: int,
        *,
        healthy: Callable[[], bool],
        ready: Callable[[], bool],
        host: str = "0.0.0.0",
    ) -> None:
        """Serve ``/metrics``, ``/healthz`` and ``/readyz`` on ``port`` (0: any free one) in a daemon thread.

        The probes answer 200 ``ok`` when their callback returns True, else 503 (also when it raises).
        The bound port is ``self.port`` when this returns.
        """
        if self._server is not None:
            raise RuntimeError(f"already serving on port {self.port}")
        handler = _handler_for(self, healthy=healthy, ready=ready)
        server = ThreadingHTTPServer((host, port), handler)
        server.daemon_threads = True
        self._server = server
        self.port = int(server.server_address[1])
        thread = threading.Thread(target=server.serve_forever, name=f"metrics-{self.port}", daemon=True)
        thread.start()
        log.info("serving metrics and probes", extra={"port": self.port})

    def shutdown(self) -> None:
        """Stop the HTTP server, if one runs."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


def _probe(check: Callable[[], bool], name: str) -> bool:
    try:
        return bool(check())
    except Exception:
        log.exception("health check raised", extra={"probe": name})
        return False


def _handler_for(
    metrics: Metrics, *, healthy: Callable[[], bool], ready: Callable[[], bool]
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "vcsat"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, metrics.exposition(), CONTENT_TYPE_LATEST)
            elif path in ("/healthz", "/livez"):
                self._send_probe(_probe(healthy, "healthz"))
            elif path == "/readyz":
                self._send_probe(_probe(ready, "readyz"))
            else:
                self._send(404, b"not found\n", "text/plain; charset=utf-8")

        def _send_probe(self, ok: bool) -> None:
            self._send(200 if ok else 503, b"ok\n" if ok else b"not ok\n", "text/plain; charset=utf-8")

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            # Probes arrive every few seconds; an access log line for each would drown the real ones.
            pass

    return Handler
