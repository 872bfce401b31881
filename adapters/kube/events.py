"""Events: what the applier tells a user about an object, without one new Event per cycle.

A waiting group's reason, a ``Scheduled`` gang, an eviction and each ``Snapshot.notices`` entry
(what the converter tolerated but keeps work from running) become core/v1 Events. A repeat of
the same reason on the same object only counts, and is written at most every ``event_refresh_s``;
a group's first sighting waiting records nothing (a gang whose pods are still being created is a
passing state).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vcsat.adapters.convert.notices import SUB_GROUP_POLICY_IGNORED
from vcsat.adapters.kube.apply_state import (
    COMPONENT,
    MAX_EVENT_MESSAGE,
    MAX_REMEMBERED,
    ApplierState,
    ApplyReport,
    forget_oldest,
    log,
)
from vcsat.adapters.kube.client import (
    EVENTS,
    NODES,
    PODGROUPS,
    PODS,
    ApiError,
    Resource,
    now_rfc3339,
)
from vcsat.model import Snapshot

LASTING_NOTICES = frozenset({SUB_GROUP_POLICY_IGNORED})
"""Notices about a PodGroup that still hold once it runs (the others keep it from running)."""


@dataclass
class EventRecord:
    name: str
    namespace: str
    message: str
    count: int
    sent_at: float


class EventWriter(ApplierState):
    """Events on the objects a cycle concerns, each reason counted and refreshed, not repeated."""

    _events: dict[str, dict[str, EventRecord]]
    """Per involved object's uid, per reason: the Event written for it."""
    _waiting_seen: dict[str, dict[str, int]]
    """Per PodGroup (or lone pod) uid, per reason: cycles it was seen waiting for it."""

    def _notices(self, snapshot: Snapshot, report: ApplyReport) -> None:
        """A Warning Event on each object the converter tolerated but that keeps work from running
        (``Snapshot.notices``: a PodGroup's missing queue, a pod's missing PodGroup, a node's invalid
        GPU topology); one Event per object and reason, counted and refreshed like the others."""
        resources = {"Node": NODES, "Pod": PODS, "PodGroup": PODGROUPS}
        for notice in snapshot.notices:
            current = self.store.get(notice.kind, notice.key)
            if current is None:
                continue
            # No follow-up: a notice stands until its object is fixed, and the next cycle writes or
            # counts its Event again; a failed write (a namespace being deleted) is not retried.
            if self._event(resources[notice.kind], current, notice.reason, notice.message, "Warning"):
                report.events.append(f"{notice.key} {notice.reason}")

    def _still_waiting(self, uid: str, reason: str, report: ApplyReport) -> bool:
        """Whether a group waits for ``reason`` a second time: the first sighting records no Event.

        A gang seen while its pods are still being created waits one cycle for GangUnsatisfied;
        an Event for every such passing state would double the writes of a burst of new jobs.
        """
        with self._events_lock:
            if uid not in self._waiting_seen and len(self._waiting_seen) >= MAX_REMEMBERED:
                self._waiting_seen.clear()  # groups deleted while waiting: forget them all at once
            reasons = self._waiting_seen.setdefault(uid, {})
            reasons[reason] = reasons.get(reason, 0) + 1
            if reasons[reason] >= 2:
                return True
        report.follow_up("event-second-cycle", time.monotonic())
        return False

    def _forget_waiting(self, uid: str) -> None:
        """A group that got placed starts afresh: if it waits again later, that is a new Event. A
        notice that stands while the group runs (its sub-group policy) is not forgotten, or it
        would be said again after every placement."""
        with self._events_lock:
            records = self._events.pop(uid, None) or {}
            lasting = {reason: record for reason, record in records.items() if reason in LASTING_NOTICES}
            if lasting:
                self._events[uid] = lasting
            self._waiting_seen.pop(uid, None)

    def _event(
        self,
        resource: Resource,
        involved: Mapping[str, Any],
        reason: str,
        message: str,
        kind: str,
        *,
        dedupe: bool = True,
        report: ApplyReport | None = None,
    ) -> bool:
        """Record an Event on ``involved``; a repeat of the same reason only counts, written at most
        every ``event_refresh_s`` (when the window ends is noted in ``report``). True when something
        was written."""
        metadata = involved.get("metadata") or {}
        key = f"{metadata.get('namespace')}/{metadata.get('name')}"
        message = message[:MAX_EVENT_MESSAGE]
        now = time.monotonic()
        if dedupe:
            with self._events_lock:
                record = self._events.get(str(metadata.get("uid")), {}).get(reason)
                if record is not None:
                    record.count += 1
                    record.message = message
                    due = record.sent_at + self.event_refresh_s
                    if now < due:
                        if report is not None:
                            report.follow_up("event-refresh", due)
                        return False
                    record.sent_at = now
            if record is not None:
                try:
                    self.kube.patch(
                        EVENTS.path(record.namespace, record.name),
                        {"count": record.count, "lastTimestamp": now_rfc3339(), "message": message},
                    )
                    return True
                except ApiError as error:
                    if error.status != 404:
                        log.warning("event update failed", extra={"object": key, "error": str(error)})
                        if report is not None:
                            report.follow_up("retry", time.monotonic())
                        return False
                    # expired (the API server keeps Events an hour): write a new one
        namespace = str(metadata.get("namespace") or "default")
        stamp = now_rfc3339()
        name = f"{metadata.get('name')}.{uuid.uuid4().hex[:16]}"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": resource.api_version,
                "kind": resource.kind,
                "name": metadata.get("name"),
                "namespace": namespace,
                "uid": metadata.get("uid"),
                "resourceVersion": metadata.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": kind,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.identity[:128],
        }
        try:
            self.kube.post(EVENTS.path(namespace), body)
        except ApiError as error:
            log.warning("event not recorded", extra={"object": key, "reason": reason, "error": str(error)})
            if report is not None:
                report.follow_up("retry", time.monotonic())
            return False
        if dedupe:
            with self._events_lock:
                uid = str(metadata.get("uid"))
                if uid not in self._events and len(self._events) >= MAX_REMEMBERED:
                    forget_oldest(self._events, lambda records: max(r.sent_at for r in records.values()))
                self._events.setdefault(uid, {})[reason] = EventRecord(name, namespace, message, 1, now)
        return True
