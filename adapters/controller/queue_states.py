"""A Queue's ``status.state`` as Volcano's queue controller moves it: Open, Closing, Closed.

Closing a queue that still holds PodGroups (any PodGroup whose ``spec.queue`` names it, whatever
its phase, as Volcano counts them) makes it ``Closing``; it becomes ``Closed`` once the last of
them is gone, and a queue with none closes at once. Opening works from either. Neither Closing
nor Closed admits anything new: vcsat's scheduler admits no PodGroup of such a queue to Inqueue
and places no new pod of it (``QueueClosed``), which is what Volcano's enqueue and allocate do
with a queue that is not Open; what already runs keeps running.

:func:`next_state` is the rule; :class:`QueueStates` applies it on the API (the controller calls
it for OpenQueue/CloseQueue Commands, and on every resync and PodGroup deletion to finish the
Closing queues).
"""

from __future__ import annotations

import logging
from collections import Counter

from vcsat.adapters.controller.commands import QUEUES
from vcsat.adapters.kube.client import PODGROUPS, Kube
from vcsat.adapters.kube.status_subresource import StatusWriter

log = logging.getLogger("vcsat.controller")

OPEN, CLOSING, CLOSED = "Open", "Closing", "Closed"
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


class QueueStates:
    """Reads queues and their PodGroups, writes the state :func:`next_state` gives."""

    def __init__(self, kube: Kube, statuses: StatusWriter | None = None) -> None:
        self.kube = kube
        self.statuses = statuses or StatusWriter(kube)

    def podgroups_per_queue(self) -> Counter[str]:
        items, _ = self.kube.list(PODGROUPS)
        return Counter(str((group.get("spec") or {}).get("queue") or "default") for group in items)

    def apply(self, queue: str, action: str) -> str:
        """Carry out ``action`` on ``queue``; the state it is left in (raises ApiError, 404 included)."""
        current = str((self.kube.get(QUEUES.path(None, queue)).get("status") or {}).get("state") or "")
        held = self.podgroups_per_queue()[queue] if action == "CloseQueue" else 0
        state = next_state(current, action, held)
        if state != current:
            self.statuses.patch_status(QUEUES, None, queue, {"state": state})
            log.info(f"queue {queue} {state.lower()}", extra={"queue": queue, "was": current, "podgroups": held})
        return state

    def finish_closing(self) -> list[str]:
        """Close every Closing queue that holds no PodGroup any more; the queues closed."""
        queues, _ = self.kube.list(QUEUES)
        closing = [q for q in queues if (q.get("status") or {}).get("state") == CLOSING]
        if not closing:
            return []
        held = self.podgroups_per_queue()
        closed: list[str] = []
        for queue in closing:
            name = str(queue["metadata"]["name"])
            if next_state(CLOSING, None, held[name]) == CLOSED:
                self.statuses.patch_status(QUEUES, None, name, {"state": CLOSED})
                log.info(f"queue {name} closed: its last PodGroup is gone", extra={"queue": name})
                closed.append(name)
        return closed
