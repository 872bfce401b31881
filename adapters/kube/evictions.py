"""Making room: evicting the decision's victims and nominating the pods that wait for the room.

Evictions go through the Eviction API (``policy/v1``), so PodDisruptionBudgets are honoured: a 429
means a budget says "not now" and the victim stays; the next cycle decides again. A victim that
is gone, going, or another pod by now (its UID changed) needs no eviction. A nominated pod gets
``status.nominatedNodeName``, as kube-scheduler marks a preemptor, written only when it changes.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import Future
from typing import Any

from vcsat.adapters.kube.apply_state import COMPONENT, ApplyReport, log
from vcsat.adapters.kube.client import (
    PODS,
    ApiError,
)
from vcsat.adapters.kube.events import EventWriter
from vcsat.model import Eviction, Nomination, Pod, Snapshot


class Evictions(EventWriter):
    """Evictions through the Eviction API and ``status.nominatedNodeName`` on the waiting pods."""

    def _evict(self, evictions: Iterable[Eviction], snapshot: Snapshot, report: ApplyReport) -> None:
        futures = [
            (eviction, self._pool.submit(self._evict_one, snapshot.pod_by_key.get(eviction.pod), eviction))
            for eviction in evictions
        ]
        for eviction, future in futures:
            problem = future.result()
            if problem is None:
                report.evicted.append(eviction.pod)
            else:
                report.evictions_deferred[eviction.pod] = problem
                log.info("eviction not done", extra={"pod": eviction.pod, "why": problem})

    def _evict_one(self, pod: Pod | None, eviction: Eviction) -> str | None:
        namespace, _, name = eviction.pod.partition("/")
        current = self.store.get("Pod", eviction.pod)
        if current is None or (current.get("metadata") or {}).get("deletionTimestamp"):
            return None  # gone or going already: the room is being freed
        uid = (current.get("metadata") or {}).get("uid")
        if pod is not None and pod.uid and uid != pod.uid:
            return None  # the victim the solver chose no longer exists; this is another pod
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"preconditions": {"uid": uid}},
        }
        try:
            self.kube.post(PODS.path(namespace, name, "eviction"), body)
        except ApiError as error:
            if error.status in (404, 409):
                return None  # deleted meanwhile (409: its UID precondition no longer holds)
            if error.status == 429:
                return f"not now: {error.message}"  # a PodDisruptionBudget
            return f"{error.status or 'no answer'}: {error.message}"
        why = "Preempted" if eviction.reason == "preempt" else "Reclaimed"
        self._event(
            PODS,
            current,
            why,
            f"Evicted by {COMPONENT} ({eviction.reason}) to make room for higher-ranked work",
            "Normal",
            dedupe=False,
        )
        return None

    def _nominate(self, nominations: Iterable[Nomination], snapshot: Snapshot, report: ApplyReport) -> None:
        futures: list[tuple[Nomination, Future[bool]]] = []
        for nomination in nominations:
            current = self.store.get("Pod", nomination.pod)
            if current is None or (current.get("spec") or {}).get("nodeName"):
                continue
            if (current.get("status") or {}).get("nominatedNodeName") == nomination.node:
                continue  # already says so: no write
            futures.append((nomination, self._pool.submit(self._nominate_one, nomination)))
        for nomination, future in futures:
            if future.result():
                report.nominated.append(nomination.pod)
            else:
                report.follow_up("retry", time.monotonic())

    def _nominate_one(self, nomination: Nomination) -> bool:
        namespace, _, name = nomination.pod.partition("/")
        try:
            self.kube.patch(PODS.path(namespace, name, "status"), {"status": {"nominatedNodeName": nomination.node}})
        except ApiError as error:
            if error.status != 404:
                log.warning("nomination failed", extra={"pod": nomination.pod, "error": str(error)})
            return False
        return True
