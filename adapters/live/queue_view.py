"""Each queue as an operator sees it after a cycle: weight, capability, deserved, allocated, share.

Why one module: the Volcano-named queue gauges (:mod:`vcsat.adapters.live.volcano_metrics`) and
the web dashboard (:mod:`vcsat.adapters.dashboard`) must show the same numbers, and both must agree
with what the solver decided on. So the deserved share is the solver's own
(:func:`vcsat.solver.shares.deserved.fair_shares`, the exact integers of the cycle's model), and
the allocation is what the queue's pods hold once the cycle's decision is applied: what they held
in the snapshot, plus the pods bound now, less the pods evicted now (as Volcano's allocated moves
with each allocation and eviction of its session). Every vector covers the queue's whole subtree,
as the deserved share does.

The share is Volcano's (its proportion plugin): the largest ``allocated / deserved`` over the
resources; a resource deserved 0 counts 1 when something of it is allocated, else 0. A queue is
overused, as Volcano says, when it holds at least its deserved share of every resource.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from vcsat.model import Decision, Snapshot
from vcsat.model import resources as res
from vcsat.solver.shares.deserved import QueueTree, fair_shares, queue_demand, queue_usage

PHASES = ("Pending", "Inqueue", "Running", "Unknown")
"""The PodGroup phases counted per queue (Volcano's ``queue_pod_group_*_count``)."""


@dataclass(frozen=True)
class QueueRow:
    """One queue after a cycle; resource vectors in model units (:mod:`vcsat.model.resources`)."""

    name: str
    parent: str | None
    weight: int
    open: bool
    capability: dict[str, int] | None
    """The queue's own cap; None: unbounded."""
    deserved: dict[str, int]
    allocated: dict[str, int]
    request: dict[str, int]
    """What its pods hold plus what its pending pods ask (Volcano's request)."""
    podgroups: dict[str, int]
    """PodGroups of the queue (its own, not its children's) per phase of :data:`PHASES`."""

    @property
    def share(self) -> float:
        return share(self.allocated, self.deserved)

    @property
    def overused(self) -> bool:
        return all(amount <= self.allocated.get(name, 0) for name, amount in self.deserved.items())


def share(allocated: Mapping[str, int], deserved: Mapping[str, int]) -> float:
    """Volcano's queue share: the largest ``allocated / deserved`` over the deserved resources."""
    out = 0.0
    for name, amount in deserved.items():
        held = allocated.get(name, 0)
        out = max(out, held / amount if amount else (1.0 if held else 0.0))
    return out


def queue_rows(
    snapshot: Snapshot, decision: Decision, shown: Mapping[tuple[str, str], int] | None = None
) -> list[QueueRow]:
    """Every queue of the snapshot, by name, as it stands once ``decision`` is applied. ``shown``:
    the snapshot's PodGroups per (queue, phase shown, an empty one Pending), if the caller has them
    (:mod:`vcsat.adapters.live.group_tallies`); the snapshot's keys must then be unique."""
    shares = fair_shares(snapshot)
    tree = QueueTree.of(snapshot)
    # What each queue's pods hold in the snapshot is the solver's own sum (carried from cycle to
    # cycle in the live scheduler, :mod:`vcsat.solver.pod_sums`): only the decision's pods are
    # walked, not every pod of the cluster after every cycle.
    held = queue_usage(snapshot)
    own: dict[str, dict[str, int]] = {queue.name: dict(held.get(queue.name, {})) for queue in snapshot.queues}
    changed = [(key, 1) for key in {binding.pod for binding in decision.bindings}]
    changed += [(key, -1) for key in {eviction.pod for eviction in decision.evictions}]
    for key, sign in changed:
        pod = snapshot.pod_by_key.get(key)
        # A pod placed now holds room unless it already did; one evicted now gives back what it held.
        if pod is None or pod.bound == (sign > 0):
            continue
        name = snapshot.queue_of(pod)
        total = own.get(name) if name is not None else None
        if total is not None:
            for resource, amount in pod.requests.items():
                total[resource] = total.get(resource, 0) + sign * amount
    allocated = dict(own)
    for name in tree.bottom_up():
        parent = tree.parent.get(name)
        if parent is not None:
            allocated[parent] = res.add(allocated.get(parent, {}), allocated.get(name, {}))
    request = queue_demand(snapshot, subtree=True)

    phases: dict[str, Counter[str]] = {queue.name: Counter() for queue in snapshot.queues}
    decided = {outcome.podgroup: outcome.phase for outcome in decision.podgroups}
    if shown is None:
        for group in snapshot.podgroups:
            phase = decided.get(group.key) or group.phase or "Pending"
            if group.queue in phases and phase in PHASES:
                phases[group.queue][phase] += 1
    else:
        # The phases shown, with only the decided groups moved to the phase decided.
        counts = dict(shown)
        for key, decided_phase in decided.items():
            found = snapshot.podgroup_by_key.get(key)
            if found is None or not decided_phase:
                continue
            was = (found.queue, found.phase or "Pending")
            counts[was] -= 1
            counts[(found.queue, decided_phase)] = counts.get((found.queue, decided_phase), 0) + 1
        for (queue_name, phase), count in counts.items():
            if queue_name in phases and phase in PHASES and count:
                phases[queue_name][phase] += count

    rows = []
    for queue in sorted(snapshot.queues, key=lambda q: q.name):
        fair = shares.get(queue.name)
        deserved = dict(fair.deserved) if fair is not None else {}
        rows.append(
            QueueRow(
                name=queue.name,
                parent=tree.parent.get(queue.name),
                weight=max(1, queue.weight),
                open=queue.open,
                capability=dict(queue.capability) if queue.capability is not None else None,
                deserved=deserved,
                allocated={k: v for k, v in allocated.get(queue.name, {}).items() if v},
                request={k: v for k, v in request.get(queue.name, {}).items() if v},
                podgroups={phase: phases[queue.name][phase] for phase in PHASES},
            )
        )
    return rows
