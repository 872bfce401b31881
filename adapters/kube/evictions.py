"""Making room: evicting the decision's victims and nominating the pods that wait for the room.

Evictions go through the Eviction API (``policy/v1``), so PodDisruptionBudgets are honoured: a 429
means a budget says "not now" and the victim stays; the next cycle decides again. A victim that
is gone, going, or another pod by now (its UID changed) needs no eviction. A nominated pod gets
``status.nominatedNodeName``, as kube-scheduler marks a preemptor, written only when it changes.

Both are sent in the background, as bindings are (kube-scheduler's asynchronous preemption does
the same with its victims): the cycle goes on once they are queued, and the informer store shows
them done meanwhile (:mod:`.pod_marks`), so the next cycle neither counts a victim's room as
evictable again nor nominates its preemptor elsewhere. The apply's report counts them once answered.
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

    def _evict(self, evictions: Iterable[Eviction], snapshot: Snapshot) -> list[tuple[Eviction, Future[str | None]]]:
        """Queue the evictions, each pod shown terminating from now on; the futures answer them."""
        futures = []
        for eviction in evictions:
            self.store.expect_eviction(eviction.pod)
            futures.append(
                (eviction, self._pool.submit(self._evict_one, snapshot.pod_by_key.get(eviction.pod), eviction))
            )
        return futures

    def _evictions_answered(self, futures: list[tuple[Eviction, Future[str | None]]], report: ApplyReport) -> None:
        for eviction, future in futures:
            problem = future.result()
            if problem is None:
                report.evicted.append(eviction.pod)
            else:
                report.evictions_deferred[eviction.pod] = problem
                log.info("eviction not done", extra={"pod": eviction.pod, "why": problem})

    def _evict_one(self, pod: Pod | None, eviction: Eviction) -> str | None:
        try:
            problem, outcome = self._send_eviction(pod, eviction)
        except BaseException:
            self.store.eviction_done(eviction.pod, "refused")
            raise
        self.store.eviction_done(eviction.pod, outcome)
        return problem

    def _send_eviction(self, pod: Pod | None, eviction: Eviction) -> tuple[str | None, str]:
        """What stops the eviction (None: nothing), and the store's outcome for it."""
        namespace, _, name = eviction.pod.partition("/")
        current = self.store.get("Pod", eviction.pod)
        if current is None or (current.get("metadata") or {}).get("deletionTimestamp"):
            return None, "moot"  # gone or going already: the room is being freed
        uid = (current.get("metadata") or {}).get("uid")
        if pod is not None and pod.uid and uid != pod.uid:
            return None, "moot"  # the victim the solver chose no longer exists; this is another pod
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
                return None, "moot"  # deleted meanwhile (409: its UID precondition no longer holds)
            if error.status == 429:
                return f"not now: {error.message}", "refused"  # a PodDisruptionBudget
            return f"{error.status or 'no answer'}: {error.message}", "refused"
        why = "Preempted" if eviction.reason == "preempt" else "Reclaimed"
        self._event(
            PODS,
            current,
            why,
            f"Evicted by {COMPONENT} ({eviction.reason}) to make room for higher-ranked work",
            "Normal",
            dedupe=False,
        )
        return None, "evicted"

    def _nominate(self, nominations: Iterable[Nomination]) -> list[tuple[Nomination, Future[bool]]]:
        """Queue the nominations that change something, each pod shown nominated from now on."""
        futures: list[tuple[Nomination, Future[bool]]] = []
        for nomination in nominations:
            current = self.store.get("Pod", nomination.pod)
            if current is None or (current.get("spec") or {}).get("nodeName"):
                continue
            if (current.get("status") or {}).get("nominatedNodeName") == nomination.node:
                continue  # already says so: no write
            self.store.expect_nomination(nomination.pod, nomination.node)
            futures.append((nomination, self._pool.submit(self._nominate_one, nomination)))
        return futures

    def _nominations_answered(self, futures: list[tuple[Nomination, Future[bool]]], report: ApplyReport) -> None:
        for nomination, future in futures:
            if future.result():
                report.nominated.append(nomination.pod)
            else:
                report.follow_up("retry", time.monotonic())

    def _nominate_one(self, nomination: Nomination) -> bool:
        namespace, _, name = nomination.pod.partition("/")
        written = False
        try:
            self.kube.patch(PODS.path(namespace, name, "status"), {"status": {"nominatedNodeName": nomination.node}})
            written = True
        except ApiError as error:
            if error.status != 404:
                log.warning("nomination failed", extra={"pod": nomination.pod, "error": str(error)})
        finally:
            self.store.nomination_done(nomination.pod, written)
        return written
