"""A Queue's ``status.state`` as Volcano's queue controller moves it: Open, Closing, Closed.

Closing a queue that still holds PodGroups (any PodGroup whose ``spec.queue`` names it, whatever
its phase, as Volcano counts them) makes it ``Closing``; it becomes ``Closed`` once the last of
them is gone, and a queue with none closes at once. Opening works from either. Neither Closing
nor Closed admits anything new: vcsat's scheduler admits no PodGroup of such a queue to Inqueue
and places no new pod of it (``QueueClosed``), which is what Volcano's enqueue and allocate do
with a queue that is not Open; what already runs keeps running.

:func:`next_state` is the rule; :class:`QueueStates` applies it on the API (the controller calls
it for OpenQueue/CloseQueue Commands, and on every resync and PodGroup deletion to finish the
Closing queues). Hierarchical queues follow their parent, as in Volcano: closing a queue closes
its open sub-queues, opening it reopens those it closed, and a sub-queue cannot be opened under a
closed parent.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from vcsat.adapters.controller.commands import QUEUES
from vcsat.adapters.kube.client import PODGROUPS, Kube
from vcsat.adapters.kube.status_subresource import StatusWriter

log = logging.getLogger("vcsat.controller")

OPEN, CLOSING, CLOSED = "Open", "Closing", "Closed"
CLOSED_BY_PARENT = "volcano.sh/closed-by-parent"
"""Queue annotation: closed because its parent was, so reopened with it (Volcano's key)."""
ACTIONS = ("OpenQueue", "CloseQueue")


def next_state(current: str, action: str | None, podgroups: int) -> str:
    """The state after ``action`` (None: a plain resync) on a queue in ``current`` holding
    ``podgroups`` PodGroups. An unknown current state is left as it is on a resync."""
    if action == "OpenQueue":
        return OPEN
    if action == "CloseQueue":
        if current == CLOSED:
            return CLOSED
        return CLOSING if podgroups else CLOSED
    if current == CLOSING and not podgroups:
        return CLOSED
    return current or OPEN


class QueueRefused(Exception):
    """An action that cannot be carried out as asked (opening a queue under a closed parent)."""


class QueueStates:
    """Reads queues and their PodGroups, writes the state :func:`next_state` gives."""

    def __init__(self, kube: Kube, statuses: StatusWriter | None = None) -> None:
        self.kube = kube
        self.statuses = statuses or StatusWriter(kube)

    def podgroups_per_queue(self) -> Counter[str]:
        items, _ = self.kube.list(PODGROUPS)
        return Counter(str((group.get("spec") or {}).get("queue") or "default") for group in items)

    def apply(self, queue: str, action: str) -> str:
        """Carry out ``action`` on ``queue`` and, as Volcano does, on its sub-queues: closing a
        queue closes its open children (marked ``volcano.sh/closed-by-parent``), opening it opens
        the children so marked, and a queue under a Closing or Closed parent cannot be opened
        (:class:`QueueRefused`). The state ``queue`` is left in (raises ApiError, 404 included)."""
        queues = {str(q["metadata"]["name"]): q for q in self.kube.list(QUEUES)[0]}
        if queue not in queues:
            self.kube.get(QUEUES.path(None, queue))  # the API's own 404
        parent = _parent(queues[queue])
        if action == "OpenQueue" and parent in queues and _state(queues[parent]) in (CLOSING, CLOSED):
            raise QueueRefused(f"queue {queue} cannot open while its parent {parent} is {_state(queues[parent])}")
        held = self.podgroups_per_queue() if action == "CloseQueue" else Counter[str]()
        return self._apply(queues, queue, action, held, set())

    def _apply(self, queues: dict[str, Any], name: str, action: str, held: Counter[str], seen: set[str]) -> str:
        seen.add(name)
        current = str((queues[name].get("status") or {}).get("state") or "")
        state = next_state(current, action, held[name])
        if state != current:
            self.statuses.patch_status(QUEUES, None, name, {"state": state})
            log.info(f"queue {name} {state.lower()}", extra={"queue": name, "was": current, "podgroups": held[name]})
        for child, obj in sorted(queues.items()):
            if _parent(obj) != name or child in seen:
                continue
            marked = _annotations(obj).get(CLOSED_BY_PARENT) == "true"
            if action == "CloseQueue" and _state(obj) not in (CLOSING, CLOSED):
                self._mark(child, "true")
                self._apply(queues, child, action, held, seen)
            elif action == "OpenQueue" and marked:
                self._mark(child, "false")
                self._apply(queues, child, action, held, seen)
        return state

    def _mark(self, name: str, value: str) -> None:
        self.kube.patch(QUEUES.path(None, name), {"metadata": {"annotations": {CLOSED_BY_PARENT: value}}})

    def finish_closing(self) -> list[str]:
        """Close every Closing queue that holds no PodGroup any more, and every open queue whose
        parent is Closing or Closed (a child made since); the queues closed."""
        queues = {str(q["metadata"]["name"]): q for q in self.kube.list(QUEUES)[0]}
        orphans = [
            name
            for name, obj in sorted(queues.items())
            if _state(obj) not in (CLOSING, CLOSED) and _state(queues.get(_parent(obj), {})) in (CLOSING, CLOSED)
        ]
        closing = [name for name, obj in sorted(queues.items()) if _state(obj) == CLOSING]
        if not closing and not orphans:
            return []
        held = self.podgroups_per_queue()
        closed: list[str] = []
        for name in orphans:
            self._mark(name, "true")
            if self._apply(queues, name, "CloseQueue", held, set()) == CLOSED:
                closed.append(name)
        for name in closing:
            if next_state(CLOSING, None, held[name]) == CLOSED:
                self.statuses.patch_status(QUEUES, None, name, {"state": CLOSED})
                log.info(f"queue {name} closed: its last PodGroup is gone", extra={"queue": name})
                closed.append(name)
        return closed


def _state(queue: dict[str, Any]) -> str:
    return str((queue.get("status") or {}).get("state") or (OPEN if queue else ""))


def _parent(queue: dict[str, Any]) -> str:
    return str((queue.get("spec") or {}).get("parent") or "")


def _annotations(queue: dict[str, Any]) -> dict[str, str]:
    return dict((queue.get("metadata") or {}).get("annotations") or {})
