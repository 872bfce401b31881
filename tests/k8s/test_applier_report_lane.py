"""The applier's report writes yield to its bindings, against the real API server.

Two applies in a row, as the live loop submits them: the first binds three gangs, the second six
lone pods whose bindings this test's client holds back. While they are held, the first apply's
PodGroup statuses and Events go out one at a time (:mod:`vcsat.adapters.kube.report_lane`); once
they are let go everything lands: every pod bound once, where decided, each gang whole, each
PodGroup Running, a ``Scheduled`` Event on each gang and lone pod. Nothing here measures time:
waits have a generous deadline only so that a broken applier fails the test instead of hanging it.
"""

from __future__ import annotations

import threading
from typing import Any

from scheduler_support import Bubble, wait_until

from vcsat.adapters.kube.applier import Applier
from vcsat.adapters.kube.client import Kube
from vcsat.adapters.kube.report_lane import ReportLane
from vcsat.model import Binding, Decision, PodGroupOutcome, SolverStats


class _Recording(Kube):
    """The real client, holding back the bindings of some pods and noting the report writes."""

    def __init__(self, kube: Kube, held: set[str]) -> None:
        super().__init__(kube.configuration)
        self.held = held
        self.release = threading.Event()
        self.queued = threading.Event()
        """Set once both applies are submitted: the first one's bindings wait for it, so the second
        one's are queued before the first one's reports can start."""
        self.lane: ReportLane | None = None
        self._lock = threading.Lock()
        self.reports = 0
        """Report writes under way now."""
        self.most_together = 0
        """The most report writes under way at once while bindings were held."""
        self.saw_held_back = False
        """A report write was under way while the lane held others back for the bindings."""
        self.writes: list[str] = []

    def request(self, method: str, path: str, **options: Any) -> Any:
        if path.endswith("/binding"):
            held = path.split("/")[-2] in self.held
            assert (self.release if held else self.queued).wait(120), "the test never let the bindings go"
            return super().request(method, path, **options)
        report = method in ("POST", "PATCH") and ("/events" in path or "/podgroups/" in path)
        if not report or self.release.is_set():
            return super().request(method, path, **options)
        with self._lock:
            self.reports += 1
            self.most_together = max(self.most_together, self.reports)
            first = len(self.writes) == 0
            self.writes.append(f"{method} {path}")
        try:
            if first:
                # Hold the first report write until the lane holds the other gangs' writes back
                # (it works) or another report write starts beside it (it does not).
                lane = self.lane
                assert lane is not None
                wait_until(lambda: lane.waiting() >= 2 or self.reports > 1, "report writes held back, or not")
                self.saw_held_back = lane.waiting() >= 2
            return super().request(method, path, **options)
        finally:
            with self._lock:
                self.reports -= 1


def test_report_writes_go_one_at_a_time_while_bindings_are_queued(bubble: Bubble, kube: Kube) -> None:
    first_node, second_node = bubble.node("a", cpu="16"), bubble.node("b", cpu="16")
    gangs = {f"g{i}": bubble.gang(f"g{i}", 2, cpu="1") for i in range(3)}
    lone = [bubble.pod(f"lone-{i}", cpu="1")["metadata"]["name"] for i in range(6)]
    store, snapshot = bubble.listed()
    ns = bubble.namespace
    stats = SolverStats(status="OPTIMAL")
    first = Decision(
        bindings=[Binding(pod=f"{ns}/{pod}", node=first_node) for pods in gangs.values() for pod in pods],
        podgroups=[PodGroupOutcome(podgroup=f"{ns}/{gang}", phase="Running") for gang in gangs],
        solver=stats,
    )
    second = Decision(
        bindings=[Binding(pod=f"{ns}/{pod}", node=second_node) for pod in lone],
        podgroups=[PodGroupOutcome(podgroup=f"{ns}/{pod}", phase="Running") for pod in lone],
        solver=stats,
    )

    recording = _Recording(kube, set(lone))
    applier = Applier(recording, store)
    recording.lane = applier._reports
    try:
        # As the live loop does: each apply bound ahead of a full cycle reports only what it bound.
        applied_first = applier.submit(first, snapshot, early=True)
        applied_second = applier.submit(second, snapshot, early=True)
        recording.queued.set()
        report = applied_first.result(120)  # its reports go out, one at a time, while the lone pods wait
        assert sorted(report.bound) == sorted(f"{ns}/{pod}" for pods in gangs.values() for pod in pods)
        assert applier._reports.bindings() == len(lone)
        assert recording.saw_held_back, recording.writes
        assert recording.most_together == 1, recording.writes
        assert len(recording.writes) >= 2 * len(gangs)  # a status and a Scheduled Event per gang
        recording.release.set()
        assert sorted(applied_second.result(120).bound) == sorted(f"{ns}/{pod}" for pod in lone)
    finally:
        recording.queued.set()
        recording.release.set()
        applier.close()
        recording.close()

    placement = bubble.placement()
    assert all(placement[pod] == first_node for pods in gangs.values() for pod in pods)
    assert all(placement[pod] == second_node for pod in lone)
    for gang in gangs:
        assert bubble.get_podgroup(gang)["status"]["phase"] == "Running"
    scheduled = {event["involvedObject"]["name"] for event in bubble.events() if event["reason"] == "Scheduled"}
    assert scheduled >= {*gangs, *lone}
