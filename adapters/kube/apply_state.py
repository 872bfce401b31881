"""What the parts of the applier share: the report of one apply, the state, the limits.

The applier (:mod:`vcsat.adapters.kube.applier`) is one object made of parts that each write one
kind of thing (:mod:`.binding`, :mod:`.evictions`, :mod:`.status_writes`, :mod:`.events`); they
share its API client, informer store, thread pools and the memory of what was written, declared
once here (:class:`ApplierState`) so each part says what it uses.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from vcsat.adapters.kube.client import Kube
from vcsat.adapters.kube.informer import Store
from vcsat.adapters.kube.report_lane import ReportLane
from vcsat.model import Binding

log = logging.getLogger("vcsat.applier")


COMPONENT = "vcsat"
MAX_EVENT_MESSAGE = 1024
"""events.k8s.io refuses longer notes; core Events are kept to the same length."""
MAX_REMEMBERED = 20000
"""Events and status writes remembered for deduplication; beyond it the oldest half is forgotten
(groups deleted while waiting would otherwise stay remembered forever)."""
REPORT_WORKERS = 8
"""Concurrent PodGroup status, pod condition and Event writes."""


@dataclass
class ApplyReport:
    """What one apply did, for logs, metrics and tests."""

    bound: list[str] = field(default_factory=list)
    """Pods bound now (``namespace/name``)."""
    failed: dict[str, str] = field(default_factory=dict)
    """Pods whose binding the server refused or never answered, with why."""
    stale: dict[str, str] = field(default_factory=dict)
    """Gangs skipped whole because something they depend on changed after the snapshot."""
    partial: list[str] = field(default_factory=list)
    """Gangs cut off mid-bind: some pods bound, some failed; the next cycle places the rest."""
    evicted: list[str] = field(default_factory=list)
    evictions_deferred: dict[str, str] = field(default_factory=dict)
    """Victims a PodDisruptionBudget protects for now (429), or that could not be evicted."""
    nominated: list[str] = field(default_factory=list)
    podgroups_updated: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    """``namespace/name reason`` of every Event created or refreshed."""
    unschedulable: list[str] = field(default_factory=list)
    """Pods whose PodScheduled=False (Unschedulable) condition was written or changed."""
    follow_ups: dict[str, float] = field(default_factory=dict)
    """What applying this decision again on an unchanged cluster would write, and from when on
    (``time.monotonic()``): e.g. ``unschedulable-second-cycle`` (the pods seen unplaced for the
    first time get their condition the next cycle) or ``event-refresh`` (a waiting group's Event
    is refreshed once its window ends). Empty: repeating it writes nothing until something changes."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def follow_up(self, what: str, at: float) -> None:
        """Note that a repeat of this decision writes ``what`` from ``at`` on (the earliest counts)."""
        with self._lock:
            if at < self.follow_ups.get(what, float("inf")):
                self.follow_ups[what] = at

    @property
    def quiet(self) -> bool:
        """Nothing written, and nothing refused or cut short that a repeat might get done."""
        return not (
            self.bound
            or self.failed
            or self.stale
            or self.partial
            or self.evicted
            or self.evictions_deferred
            or self.nominated
            or self.podgroups_updated
            or self.events
            or self.unschedulable
        )


@dataclass
class GangOutcome:
    bound: list[Binding] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


@dataclass
class ConditionWrite:
    before: str
    """The pod's resourceVersion our write applied to."""
    after: str
    message: str
    since: str
    """Its lastTransitionTime."""
    at: float


class ApplierState:
    """What the applier's parts share; :class:`~vcsat.adapters.kube.applier.Applier` sets all of it."""

    kube: Kube
    store: Store
    identity: str
    event_refresh_s: float
    _pool: ThreadPoolExecutor
    """Bindings, evictions and nominations."""
    _reports: ReportLane
    """PodGroup statuses, pod conditions and Events."""
    _events_lock: threading.Lock
    """Guards every memory below, here and in the parts."""
    _conditions_written: dict[str, ConditionWrite]
    """Per pod key, our last PodScheduled write: the next cycle and a binding sent before the
    watch shows it still know the pod's current condition and version."""


def forget_oldest(memory: dict[Any, Any], age: Callable[[Any], float]) -> None:
    oldest = sorted(memory, key=lambda key: age(memory[key]))[: len(memory) // 2]
    for key in oldest:
        del memory[key]
