"""Bounded cycles under a stream of new pods: which waiting groups one cycle is given.

A cycle's decide time grows with the pods it places, and a pod that arrives during a cycle waits
for that cycle and the next one. With a backlog of thousands, each cycle takes seconds, so a new
pod waits seconds twice. A *capped* cycle is given the waiting groups in scheduling-queue order
(priority, highest first, then the earliest creation of the group's waiting pods, as
kube-scheduler's PrioritySort orders its queue) up to about ``cap`` pods, whole groups only; the
others are left out of its objects altogether, as if they had not arrived yet, and the next cycle
follows at once. So a cycle stays short, and a newly arrived pod is decided within about one short
cycle after the groups ahead of it.

A group given to a capped cycle that is still waiting after it (it did not fit, or waits for
victims to go) goes behind every group not given yet, in the order they were last given, as
kube-scheduler moves a pod it could not place out of its active queue: otherwise more waiting pods
than the cap that cannot be placed would fill every cycle and hide new pods that could.

What a cycle is given changes; what it does with it does not: the decision is the same function of
its (smaller) snapshot, dumped and replayable as any other. A group is given whole (all of its
waiting pods), so a gang is never split between cycles by the cap. A PodGroup object is left out
only with all of its pods (a group none of whose pods is bound or running yet); a PodGroup with no
pods at all is always given, since its pods are created only once it is admitted.

:class:`CycleCap` adapts ``cap`` after each cycle so that the part of a cycle's time that grows
with the pods it is given stays near a target (or near the part it pays whatever it is given, when
that is longer), never more than doubled at once. A cap must not cut
throughput: when a cycle takes long whatever it is given (a loaded machine, a large cluster), a
cap below the pods that arrive while a cycle runs would only let the backlog grow. So the cap is
never below the arrivals of one such cycle (with a margin), measured from the last cycles.
"""

from __future__ import annotations

import collections
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vcsat.adapters.convert.pods import DEFAULT_SCHEDULER, GROUP_NAME_ANNOTATIONS

DEFAULT_TARGET_S = 0.0
"""Seconds of a cycle's time that grow with the pods it is given a capped cycle aims at
(``--cycle-target``); 0: no cap. Off by default: on a loaded machine, where a cycle's fixed part
dominates, capping did not shorten the start latency measured on kwok (benchmarks/RESULTS.md)."""
MIN_CAP = 200
"""Fewest waiting pods a capped cycle is given (unless fewer wait): below this the cycle's fixed
costs (snapshot, model set-up) dominate and shorter cycles only add cycles."""
START_CAP = 1000
"""Waiting pods the first capped cycle is given, before any cycle was timed."""
OBSERVED = 16
"""Cycles the cap's estimate of a cycle's time is made from (the last ones)."""
MIN_OBSERVED = 4
"""Cycles seen before the cap adapts."""
ARRIVAL_MARGIN = 1.5
"""The cap is at least this many times the pods that arrive during a cycle as long as the last."""


@dataclass(frozen=True)
class Deferral:
    """What one cycle was given and what it leaves to the next."""

    objects: list[dict[str, Any]]
    """The cycle's objects: every object, less the waiting pods (and their PodGroups) deferred."""
    given_pods: int
    """Waiting pods given to the cycle."""
    deferred_pods: int
    """Waiting pods left to a later cycle (0: the cycle sees everything)."""
    deferred_groups: int
    given_groups: frozenset[str]
    """Keys of the waiting groups given to the cycle."""
    waiting: Mapping[str, int]
    """Every waiting group (given or not): its waiting pods."""


def waiting_group(obj: Mapping[str, Any], scheduler_name: str) -> str | None:
    """The group key (``namespace/podgroup``, or ``namespace/pod`` for a lone pod) of a pod this
    scheduler has yet to place; None for any other object."""
    if obj.get("kind") != "Pod":
        return None
    spec = obj.get("spec") or {}
    metadata = obj.get("metadata") or {}
    status = obj.get("status") or {}
    if (spec.get("schedulerName") or DEFAULT_SCHEDULER) != scheduler_name:
        return None
    if spec.get("nodeName") or metadata.get("deletionTimestamp"):
        return None
    if status.get("phase", "Pending") != "Pending":
        return None
    namespace = metadata.get("namespace") or ""
    annotations = metadata.get("annotations") or {}
    group = next((annotations[key] for key in GROUP_NAME_ANNOTATIONS if annotations.get(key)), None)
    return f"{namespace}/{group or metadata.get('name') or ''}"


def _priority(obj: Mapping[str, Any]) -> int:
    value = (obj.get("spec") or {}).get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _created(obj: Mapping[str, Any]) -> str:
    value = (obj.get("metadata") or {}).get("creationTimestamp")
    return value if isinstance(value, str) else ""


def queue_order(groups: Mapping[str, list[Mapping[str, Any]]], tried: Mapping[str, int] | None = None) -> list[str]:
    """The waiting groups in the order a capped cycle takes them: groups never given to a capped
    cycle first, then by the cycle that last was given them (``tried``, oldest first); within
    each, highest priority of any of its waiting pods first, then earliest creation of any of
    them, then key (a total order)."""
    tried = tried or {}

    def key(group: str) -> tuple[int, int, str, str]:
        pods = groups[group]
        return (tried.get(group, -1), -max(_priority(pod) for pod in pods), min(_created(pod) for pod in pods), group)

    return sorted(groups, key=key)


def defer(
    objects: Iterable[dict[str, Any]], scheduler_name: str, cap: int | None, tried: Mapping[str, int] | None = None
) -> Deferral:
    """The objects one cycle is given with at most about ``cap`` waiting pods (None: no cap);
    ``tried``: per group, the last capped cycle it was given to (:func:`queue_order`).

    Groups are taken whole in :func:`queue_order` while their waiting pods fit under ``cap``; the
    first group is always taken, so a gang larger than ``cap`` is still placed. Later groups that
    do not fit are skipped, smaller ones after them may still be taken (the cap is on work, and a
    group taken out of order is one that fits this cycle anyway).
    """
    objects = list(objects)
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for obj in objects:
        group = waiting_group(obj, scheduler_name)
        if group is not None:
            groups.setdefault(group, []).append(obj)
    waiting = sum(len(pods) for pods in groups.values())
    if cap is None or waiting <= cap:
        return Deferral(objects, waiting, 0, 0, frozenset(groups), _sizes(groups))
    given = 0
    deferred: set[str] = set()
    for group in queue_order(groups, tried):
        size = len(groups[group])
        if given == 0 or given + size <= cap:
            given += size
        else:
            deferred.add(group)
    kept = [obj for obj in objects if (group := waiting_group(obj, scheduler_name)) is None or group not in deferred]
    left_with_pods: set[str] = set()  # PodGroups of which some pod stays in the cycle
    for obj in kept:
        if obj.get("kind") == "Pod":
            metadata = obj.get("metadata") or {}
            annotations = metadata.get("annotations") or {}
            name = next((annotations[key] for key in GROUP_NAME_ANNOTATIONS if annotations.get(key)), None)
            if name:
                left_with_pods.add(f"{metadata.get('namespace') or ''}/{name}")
    out = [obj for obj in kept if obj.get("kind") != "PodGroup" or _podgroup_given(obj, deferred, left_with_pods)]
    return Deferral(out, given, waiting - given, len(deferred), frozenset(groups) - deferred, _sizes(groups))


def _podgroup_given(podgroup: Mapping[str, Any], deferred: set[str], left_with_pods: set[str]) -> bool:
    metadata = podgroup.get("metadata") or {}
    key = f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"
    return key not in deferred or key in left_with_pods


def _sizes(groups: Mapping[str, list[Mapping[str, Any]]]) -> dict[str, int]:
    return {group: len(pods) for group, pods in groups.items()}


def arrived(before: Mapping[str, int], now: Mapping[str, int]) -> int:
    """Waiting pods in ``now`` that were not waiting in ``before`` (per group: only the growth)."""
    return sum(max(0, size - before.get(group, 0)) for group, size in now.items())


class CycleCap:
    """The cap of the next cycle, adapted to how long cycles take (module docstring)."""

    def __init__(self, target_s: float = DEFAULT_TARGET_S, *, start: int = START_CAP, least: int = MIN_CAP) -> None:
        self.target_s = target_s
        self.least = least
        self.cap = max(start, least)
        self._seen: collections.deque[tuple[int, float]] = collections.deque(maxlen=OBSERVED)

    def observe(self, given_pods: int, seconds: float, arrivals_per_s: float = 0.0) -> int:
        """After a cycle that was given ``given_pods`` waiting pods and decided in ``seconds``,
        while new waiting pods arrived at ``arrivals_per_s``: the cap of the next one.

        A cycle's time is about a fixed part (the snapshot and the model over the nodes, whatever
        it is given) plus a part per pod. Over the last cycles, the fixed part is taken as the
        shortest cycle and the part per pod as the median of the rest per pod. The cap is the
        pods whose part is the larger of the target and the fixed part: capping below that would
        mostly cut throughput, since the fixed part is paid anyway. Until enough cycles were seen
        the cap stays as it is.
        """
        if given_pods > 0:
            self._seen.append((given_pods, seconds))
        if len(self._seen) < MIN_OBSERVED:
            return self.cap
        fixed = min(t for _, t in self._seen)
        per_pod = statistics.median(max(t - fixed, 0.0) / n for n, t in self._seen)
        keep_up = int(ARRIVAL_MARGIN * arrivals_per_s * seconds)
        scaled = 2 * self.cap if per_pod <= 0 else min(int(max(self.target_s, fixed) / per_pod), 2 * self.cap)
        self.cap = max(self.least, keep_up, scaled)
        return self.cap
