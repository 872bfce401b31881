"""Volcano Queue objects → :class:`~vcsat.model.Queue`, with their parents checked for cycles.

A parent that names no Queue, or a cycle of parents, is an error in a file; live, the queue
that closes a cycle or names a missing parent is read as having none.
"""

from __future__ import annotations

from collections.abc import Iterable

from vcsat.adapters.convert.reader import Conversion, KubeObject
from vcsat.adapters.errors import InputError
from vcsat.model.cluster import (
    DEFAULT_QUEUE,
    Queue,
)


def read_queues(conversion: Conversion, objects: Iterable[KubeObject]) -> dict[str, Queue]:
    queues: dict[str, Queue] = {}
    parents: dict[str, tuple[str, KubeObject]] = {}
    for obj in objects:
        spec = obj.mapping(obj.raw, "spec", "spec")
        status = obj.mapping(obj.raw, "status", "status")
        guarantee_spec = obj.mapping(spec, "guarantee", "spec.guarantee")
        guarantee = obj.quota(guarantee_spec, "resource", "spec.guarantee.resource") or {}
        parent = obj.string(spec, "parent", "spec.parent") or None
        if parent is not None:
            parents[obj.name] = (parent, obj)
        state = obj.string(status, "state", "status.state")
        queues[obj.name] = Queue.model_construct(
            name=obj.name,
            weight=obj.integer(spec, "weight", "spec.weight", 1, minimum=1),
            capability=obj.quota(spec, "capability", "spec.capability"),
            deserved=obj.quota(spec, "deserved", "spec.deserved"),
            guarantee=guarantee,
            reclaimable=obj.boolean(spec, "reclaimable", "spec.reclaimable", True),
            parent=parent,
            open=state not in ("Closed", "Closing"),
            priority=obj.integer(spec, "priority", "spec.priority", 0, minimum=0),
        )
    if DEFAULT_QUEUE not in queues:
        queues[DEFAULT_QUEUE] = Queue.model_construct(name=DEFAULT_QUEUE)
    for name, (parent, obj) in sorted(parents.items()):
        if parent in queues:
            continue
        # Volcano makes the root queue itself; a parent "root" that is not listed is the top.
        if parent == "root" or not conversion.strict:
            queues[name] = queues[name].model_copy(update={"parent": None})
        else:
            obj.fail("spec.parent", f"unknown Queue {parent!r}")
    _break_queue_cycles(conversion, queues)
    return queues


def _break_queue_cycles(conversion: Conversion, queues: dict[str, Queue]) -> None:
    for start in sorted(queues):
        seen = [start]
        parent = queues[start].parent
        while parent is not None:
            if parent in seen:
                if conversion.strict:
                    chain = " -> ".join([*seen, parent])
                    raise InputError(
                        f"queue parents form a cycle: {chain}",
                        source=conversion.source,
                        obj=f"Queue {start}",
                        field="spec.parent",
                    )
                queues[seen[-1]] = queues[seen[-1]].model_copy(update={"parent": None})
                break
            seen.append(parent)
            parent = queues[parent].parent
