"""The applier sends a decision's bindings oldest first, against the real API server.

A large decision waits for the API server's write rate, so the order its bindings are sent in is
the order pods start: the pods that have waited longest go first (by their gang's oldest pod's
``creationTimestamp``), whatever order the decision lists them in. Two lone pods, a gang of two and
another lone pod, created a second apart (the timestamp's resolution), are decided newest first;
one binding worker makes the order observable.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from scheduler_support import Bubble

from vcsat.adapters.kube.applier import Applier
from vcsat.adapters.kube.client import Kube
from vcsat.model import Binding, Decision, PodGroupOutcome, SolverStats


class _Recording(Kube):
    """The real client, noting the pods it binds in order."""

    def __init__(self, kube: Kube) -> None:
        super().__init__(kube.configuration)
        self.bound: list[str] = []
        self._lock = threading.Lock()

    def request(self, method: str, path: str, **options: Any) -> Any:
        if path.endswith("/binding"):
            with self._lock:
                self.bound.append(path.split("/")[-2])
        return super().request(method, path, **options)


def test_bindings_go_out_oldest_first(bubble: Bubble, kube: Kube) -> None:
    node = bubble.node("a", cpu="16")
    created: list[list[str]] = []  # oldest first: each a lone pod or a gang's pods
    for make in (
        lambda: [bubble.pod("lone-0", cpu="1")["metadata"]["name"]],
        lambda: [bubble.pod("lone-1", cpu="1")["metadata"]["name"]],
        lambda: list(bubble.gang("g", 2, cpu="1")),
        lambda: [bubble.pod("lone-2", cpu="1")["metadata"]["name"]],
    ):
        created.append(make())
        time.sleep(1.1)  # creationTimestamp counts whole seconds
    store, snapshot = bubble.listed()
    ns = bubble.namespace
    newest_first = [pod for unit in reversed(created) for pod in unit]
    decision = Decision(
        bindings=[Binding(pod=f"{ns}/{pod}", node=node) for pod in newest_first],
        podgroups=[PodGroupOutcome(podgroup=f"{ns}/g", phase="Running")],
        solver=SolverStats(status="OPTIMAL"),
    )
    recording = _Recording(kube)
    applier = Applier(recording, store, workers=1)
    try:
        report = applier.submit(decision, snapshot).result(120)
    finally:
        applier.close()
        recording.close()
    assert sorted(report.bound) == sorted(f"{ns}/{pod}" for pod in newest_first)
    lone_0, lone_1, gang, lone_2 = created
    assert recording.bound[:2] == lone_0 + lone_1, recording.bound
    assert sorted(recording.bound[2:4]) == sorted(gang), recording.bound
    assert recording.bound[4:] == lone_2, recording.bound
