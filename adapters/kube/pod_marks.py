"""Evictions and nominations of ours in flight, shown as done in the snapshots taken meanwhile.

A decision that preempts writes an eviction per victim and ``status.nominatedNodeName`` per
preemptor. Waiting for those answers before the next cycle may start holds every preempting cycle
up by a round trip per write, and a cycle that starts before the watch reports them must not
decide as if nothing had been written: it would pick the same room again, and evict more victims
for it. So, as bindings in flight are shown bound (the informer store's "assumed" pods, as
kube-scheduler assumes them), a pod whose eviction is in flight is shown terminating (a terminating
pod is never a victim and still holds its room until it is gone) and a pod whose nomination is in
flight is shown nominated, until the watch reports the write, the write fails, or a time-to-live
passes without either.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any


@dataclass
class PodMark:
    """What the next snapshots show of one pod while our writes on it are in flight."""

    deadline: float
    """``time.monotonic()`` after which the pod is shown as the store has it again."""
    evicting_since: str | None = None
    """The eviction's ``metadata.deletionTimestamp`` as shown (RFC 3339, when it was sent); None:
    no eviction in flight."""
    nominated: str | None = None
    """The node of the nomination in flight; None: none."""
    shown: tuple[dict[str, Any], dict[str, Any]] | None = None
    """The stored pod and its marked copy: every snapshot shows the same copy while both are
    unchanged, so the converter can reuse its conversion."""

    @property
    def empty(self) -> bool:
        return self.evicting_since is None and self.nominated is None

    def settled_by(self, pod: dict[str, Any]) -> None:
        """Forget what ``pod`` (as the watch reports it now) already shows: an eviction once it is
        terminating or finished, a nomination once it says that node or the pod is bound."""
        metadata = pod.get("metadata") or {}
        status = pod.get("status") or {}
        if self.evicting_since is not None and (
            metadata.get("deletionTimestamp") or status.get("phase") in ("Succeeded", "Failed")
        ):
            self.evicting_since = None
        if self.nominated is not None and (
            status.get("nominatedNodeName") == self.nominated or (pod.get("spec") or {}).get("nodeName")
        ):
            self.nominated = None
        self.shown = None


def now_timestamp() -> str:
    """The current time as the API server writes ``deletionTimestamp``."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def marked(pod: dict[str, Any], mark: PodMark) -> dict[str, Any]:
    """A copy of ``pod`` as it is once the writes ``mark`` holds have landed (``pod`` itself when
    they change nothing it shows)."""
    if mark.shown is not None and mark.shown[0] is pod:
        return mark.shown[1]
    metadata = pod.get("metadata") or {}
    status = pod.get("status") or {}
    copy = pod
    if mark.evicting_since is not None and not metadata.get("deletionTimestamp"):
        copy = {**copy, "metadata": {**metadata, "deletionTimestamp": mark.evicting_since}}
    if (
        mark.nominated is not None
        and not (pod.get("spec") or {}).get("nodeName")
        and status.get("nominatedNodeName") != mark.nominated
    ):
        copy = {**copy, "status": {**status, "nominatedNodeName": mark.nominated}}
    mark.shown = (pod, copy)
    return copy
