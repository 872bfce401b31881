"""Why each PodGroup got what it got: the typed outcome per gang (contract §2 ``podgroups``).

Reasons found before the search (no node can ever take a pod, too few pods for minMember, a closed
or missing queue, a missing PodGroup, pods held by scheduling gates or resource claims) come from
the prefilter. For a gang the search left out, this module names the constraint or
objective level that decided it, with amounts:

- ``QueueOverused``: its queue's capability has less room than the gang's minimum needs;
- ``InsufficientResources``: the whole cluster has less free than the gang's minimum needs;
- ``Fragmented``: there is enough free room in total, but not on nodes where its pods fit;
- ``Unschedulable``: it fits by room, but not within its pod topology spread constraints
  maxSkew (kube-scheduler's "node(s) didn't match pod topology spread constraints");
- ``NetworkTopologyUnsatisfied``: a hard ``networkTopology`` finds no HyperNode of its tier with room
  (or, once some of its pods run, no room in the HyperNode that holds them);
- ``Outranked``: it would fit on its own, but the room went to work ranked higher by the objective
  (queues of higher ``spec.priority``, whose fair shares are served first; higher priority; or more
  work placed);
- ``NotExamined``: none of the cheap reasons holds and the group is beyond the first
  ``Policy.explain_per_queue`` waiting groups of its queue, so the trial placement that tells the
  four reasons above apart was not made this cycle (``vcsat explain`` makes it on demand).

Each group's explanation depends on that group and the cycle's decision only, never on which
groups were examined before it, so the lazy cut-off leaves every examined group's reason as a full
examination of all groups gives it.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from vcsat.model import PodGroupOutcome
from vcsat.model import resources as res
from vcsat.model.decision import PodGroupPhase
from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import Room, fit_topology_first, undo
from vcsat.solver.objectives.fairness import fair_resources
from vcsat.solver.problem import Gang, Problem
from vcsat.solver.rules import volumes
from vcsat.solver.rules.spread import SPREAD_REASON

NOT_EXAMINED = "NotExamined"
"""The reason of a waiting group past its queue's ``Policy.explain_per_queue`` (module docstring)."""


class _LazyRoom:
    """The free room for trial placements, built on the first examination (none may be needed)."""

    def __init__(self, problem: Problem, assignment: Assignment) -> None:
        self.problem = problem
        self.assignment = assignment
        self.built: Room | None = None

    def get(self) -> Room:
        if self.built is None:
            room = Room(self.problem)
            if room.interpod is not None:
                # Rules between pods are judged beside what this cycle placed (room stays the free room).
                for (s, node), k in self.assignment.shape_slots.items():
                    c = self.problem.shapes[s].isolated
                    if c is not None:
                        for _ in range(k):
                            room.interpod.place(c, node)
            self.built = room
        return self.built


def outcomes(problem: Problem, assignment: Assignment, *, full: bool = False) -> list[PodGroupOutcome]:
    """One outcome per gang, in key order. ``full``: every waiting group examined, whatever
    ``Policy.explain_per_queue`` says (what ``vcsat explain`` shows)."""
    limit = None if full else problem.policy.explain_per_queue
    examined: dict[str, int] = {}
    room = _LazyRoom(problem, assignment)
    free_total = _free_total(problem)
    fits_cache: dict[tuple[object, ...], bool] = {}
    minimum_cache: dict[tuple[object, ...], dict[str, int]] = {}
    short_cache: dict[Hashable, tuple[str, str] | None] = {}
    """:func:`_short_of_room` per :func:`_short_key`."""
    pods_of = _placed_pods(problem, assignment)
    caps_after = _caps_after(problem, pods_of)
    placed_by_queue = _amounts(problem, pods_of)
    out: list[PodGroupOutcome] = []
    higher: dict[int, int] = {}
    by_queue_priority: dict[int, int] = {}
    for gang in problem.gangs:
        if gang.index in assignment.placed:
            higher[gang.rank] = higher.get(gang.rank, 0) + 1
            priority = problem.queue_priority(gang.queue)
            by_queue_priority[priority] = by_queue_priority.get(priority, 0) + 1
    for gang in problem.gangs:
        if gang.index in assignment.placed:
            out.append(PodGroupOutcome(podgroup=gang.key, phase="Running"))
            continue
        blocked = problem.blocked.get(gang.index)
        if blocked is not None:
            reason, message = blocked.reason, blocked.message
        else:
            signature = (gang.need, *((problem.classes[c].shape, len(problem.classes[c].pods)) for c in gang.classes))
            need = minimum_cache.get(signature)
            if need is None:
                need = minimum_cache[signature] = minimum_request(problem, gang)
            short_key = _short_key(gang, signature)
            if short_key in short_cache:
                cheap = short_cache[short_key]
            else:
                cheap = short_cache[short_key] = _short_of_room(problem, gang, need, caps_after, free_total)
            if cheap is not None:
                reason, message = cheap
            elif limit is not None and examined.get(gang.queue, 0) >= limit:
                reason, message = NOT_EXAMINED, _not_examined(gang, limit)
            else:
                examined[gang.queue] = examined.get(gang.queue, 0) + 1
                reason, message = _why_left_out(
                    problem,
                    gang,
                    need,
                    room.get(),
                    placed_by_queue,
                    free_total,
                    fits_cache,
                    higher,
                    by_queue_priority,
                )
        out.append(PodGroupOutcome(podgroup=gang.key, phase=_waiting_phase(gang), reason=reason, message=message))
    out.sort(key=lambda o: o.podgroup)
    return out


def _short_key(gang: Gang, signature: tuple[object, ...]) -> Hashable:
    """What :func:`_short_of_room` reads of a gang: its queue (the capabilities it counts against)
    and its minimum, which its ``signature`` (its need and classes' shapes and sizes) decides. At
    10,000 nodes 12,801 waiting gangs share a few hundred of these."""
    return (gang.queue, signature)


def _caps_after(problem: Problem, pods_of: dict[tuple[str, int], int]) -> dict[str, dict[str, int]]:
    """Per capped queue, what its capability leaves once the decision's pods (``pods_of``:
    :func:`_placed_pods`) are placed."""
    caps_after = {queue: dict(left) for queue, left in problem.queue_room.items()}
    for (own, s), k in pods_of.items():
        request = problem.shapes[s].request
        for queue in problem.caps_of(own):
            for name in caps_after[queue]:
                if name in problem.resources:
                    caps_after[queue][name] -= k * request[problem.resource_index(name)]
    return caps_after


def _waiting_phase(gang: Gang) -> PodGroupPhase:
    """Inqueue once admitted (Volcano's enqueue), else Pending; a pod without a PodGroup is never
    held back by admission, and waits as Pending."""
    return "Inqueue" if gang.admitted and gang.group is not None else "Pending"


def placed_amounts(problem: Problem, assignment: Assignment) -> dict[str, dict[str, int]]:
    """What the decision adds to each queue, per resource."""
    return _amounts(problem, _placed_pods(problem, assignment))


def _placed_pods(problem: Problem, assignment: Assignment) -> dict[tuple[str, int], int]:
    """Pods the decision places, per (queue, shape), in the order the classes first appear."""
    out: dict[tuple[str, int], int] = {}
    for c, k in assignment.count.items():
        pod_class = problem.classes[c]
        key = (problem.gangs[pod_class.gang].queue, pod_class.shape)
        out[key] = out.get(key, 0) + k
    return out


def _amounts(problem: Problem, pods_of: dict[tuple[str, int], int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (queue, s), k in pods_of.items():
        row = out.setdefault(queue, {})
        for name, amount in zip(problem.resources, problem.shapes[s].request, strict=True):
            row[name] = row.get(name, 0) + k * amount
    return out


def _free_total(problem: Problem) -> dict[str, int]:
    """The free room of the schedulable nodes, summed per resource (overcommitted rows count 0)."""
    rows = [row for node, row in zip(problem.nodes, problem.free, strict=True) if node.schedulable]
    if not rows:
        return {}
    sums = np.maximum(np.array(rows, dtype=np.int64).reshape(len(rows), len(problem.resources)), 0).sum(axis=0)
    return {name: int(amount) for name, amount in zip(problem.resources, sums, strict=True)}


def minimum_request(problem: Problem, gang: Gang) -> dict[str, int]:
    """What the gang's smallest whole placement asks: its needed pods, largest classes first."""
    needed = max(1, gang.need)
    total: dict[str, int] = {}
    for c in sorted(gang.classes, key=lambda c: -sum(problem.shapes[problem.classes[c].shape].request)):
        pod_class = problem.classes[c]
        take = min(len(pod_class.pods), needed)
        needed -= take
        request = dict(zip(problem.resources, problem.shapes[pod_class.shape].request, strict=True))
        total = res.add(total, res.scale(request, take))
        if needed <= 0:
            break
    return {name: amount for name, amount in total.items() if amount}


def _not_examined(gang: Gang, limit: int) -> str:
    which = (
        f"only the first {limit} waiting groups of queue {gang.queue} are"
        if limit
        else f"no waiting group of queue {gang.queue} is (explain_per_queue is 0)"
    )
    return (
        f"waiting; not examined in detail this cycle: its queue and the cluster have room for it, but {which} "
        f"tried against the nodes in a cycle. For the full reason run `vcsat explain INSTANCE {gang.key}` on a "
        "dump of the cluster (`vcsat dump`), or raise the policy's explain_per_queue"
    )


def _short_of_room(
    problem: Problem,
    gang: Gang,
    need: dict[str, int],
    caps_after: dict[str, dict[str, int]],
    free_total: dict[str, int],
) -> tuple[str, str] | None:
    """The reasons read off totals alone: a queue capability or the whole cluster too small."""
    for queue in problem.caps_of(gang.queue):
        left = caps_after[queue]
        short = {name: amount for name, amount in res.shortfall(need, left).items() if name in left}
        if short:
            name = sorted(short)[0]
            which = "queue" if queue == gang.queue else "ancestor queue"
            return (
                "QueueOverused",
                f"{which} {queue}: its capability leaves {res.format_amount(name, max(0, left[name]))} free "
                f"after this cycle, the gang needs {res.format_amount(name, need[name])}",
            )
    short = res.shortfall(need, free_total)
    if short:
        name = sorted(short)[0]
        return (
            "InsufficientResources",
            f"the gang needs {res.format_amount(name, need[name])}, "
            f"the cluster has {res.format_amount(name, free_total.get(name, 0))} free",
        )
    return None


def _why_left_out(
    problem: Problem,
    gang: Gang,
    need: dict[str, int],
    room: Room,
    placed_by_queue: dict[str, dict[str, int]],
    free_total: dict[str, int],
    fits_cache: dict[tuple[object, ...], bool],
    placed_by_priority: dict[int, int],
    placed_by_queue_priority: dict[int, int],
) -> tuple[str, str]:
    """The reason found by trying to place the gang on the free room (module docstring)."""
    hard = problem.highest_tier(gang)
    signature = (
        hard,
        gang.index if hard is not None else -1,
        gang.need,
        tuple(sorted(gang.task_need.items())),
        gang.queue,
        *((problem.classes[c].shape, problem.classes[c].task, len(problem.classes[c].pods)) for c in gang.classes),
    )
    isolated = any(c in problem.isolated for c in gang.classes)
    fits = fits_cache.get(signature) if not isolated else None
    if room.interpod is not None:
        room.interpod.begin()  # no refusals of another group's trial are read as this one's
    if fits is None:
        taken = fit_topology_first(problem, gang, room, [problem.queue_room[q] for q in problem.caps_of(gang.queue)])
        fits = taken is not None
        if taken is not None:
            undo(problem, room, taken)
        fits_cache[signature] = fits
    if not fits and room.spread is not None and any(c in room.spread.of_class for c in gang.classes):
        spread, room.spread = room.spread, None
        caps = [problem.queue_room[q] for q in problem.caps_of(gang.queue)]
        taken = fit_topology_first(problem, gang, room, caps)
        if taken is not None:
            undo(problem, room, taken)  # with no spread state: none was touched
        room.spread = spread
        if taken is not None:
            return (
                "Unschedulable",
                f"the gang's {max(1, gang.need)} pods ({res.format_vector(need)}) fit by room, but "
                f"{SPREAD_REASON} (maxSkew over the domains of their topologySpreadConstraints)",
            )
    if not fits and isolated and room.interpod is not None and room.interpod.stuck and room.interpod.last:
        # kube-scheduler's words for the pod that found no node (its own gang's pods placed before it).
        refused = sorted(room.interpod.last.items(), key=lambda item: (-item[1], item[0]))
        rest = len(problem.nodes) - sum(room.interpod.last.values())
        return (
            "Unschedulable",
            f"0/{len(problem.nodes)} nodes are available for one of its pods: "
            + ", ".join(f"{count} {why}" for why, count in refused)
            + (f"; {rest} without room or eligibility for it" if rest > 0 else ""),
        )
    if not fits and hard is not None and gang.anchor is not None:
        return (
            "NetworkTopologyUnsatisfied",
            f"networkTopology hard: its running pods are in tier-{hard} HyperNode "
            f"{gang.anchor[1] or '(no HyperNode)'}, which has no room for its {max(1, gang.need)} more pods "
            f"({res.format_vector(need)}) together; it waits rather than span further",
        )
    if not fits and hard is not None:
        return (
            "NetworkTopologyUnsatisfied",
            f"networkTopology hard: no tier-{hard} HyperNode has room for the gang's {max(1, gang.need)} pods "
            f"({res.format_vector(need)}) together; it waits rather than span further",
        )
    if not fits:
        return (
            "Fragmented",
            f"the cluster has {res.format_vector({n: free_total.get(n, 0) for n in need})} free in total, "
            f"but not on nodes where the gang's {max(1, gang.need)} pods "
            f"({res.format_vector(need)}) fit together",
        )
    for name in fair_resources(problem, gang.queue):
        deserved = problem.deserved[gang.queue][name]
        holds = problem.queue_usage.get(gang.queue, {}).get(name, 0)
        holds += placed_by_queue.get(gang.queue, {}).get(name, 0)
        if holds >= deserved:
            return (
                "QueueOverused",
                f"queue {gang.queue} holds {res.format_amount(name, holds)} of its deserved "
                f"{res.format_amount(name, deserved)} after this cycle; the gang ({res.format_vector(need)}) "
                "would fit, but the room went to queues below their shares (objective level: queue fair share)",
            )
    own = problem.queue_priority(gang.queue)
    before = sum(count for priority, count in placed_by_queue_priority.items() if priority > own)
    if before:
        return (
            "Outranked",
            f"it fits on its own ({res.format_vector(need)}), but the room went to {before} gangs of queues of "
            f"higher priority than queue {gang.queue} (priority {own}), whose fair shares are served first "
            "(objective level: queue fair share, by queue priority)",
        )
    above = sum(count for priority, count in placed_by_priority.items() if priority > gang.rank)
    if above:
        return (
            "Outranked",
            f"it fits on its own ({res.format_vector(need)}), but the room went to {above} gangs of higher "
            f"priority (objective level: placed work at priority above {gang.priority}){volume_note(need)}",
        )
    return (
        "Outranked",
        f"it fits on its own ({res.format_vector(need)}), but the room went to work the objective ranks "
        f"higher at priority {gang.priority}: "
        "fairer queue shares, more placed work (by dominant share), better locality or packing, or older gangs"
        f"{volume_note(need)}",
    )


def volume_note(need: res.Resources) -> str:
    """kube-scheduler's words for volume room another pod took (see :mod:`vcsat.solver.rules.volumes`)."""
    notes = []
    if any(name.startswith(volumes.LOCAL_PREFIX) for name in need):
        notes.append(volumes.BIND_CONFLICT)
    if any(name.startswith(volumes.ATTACHABLE_PREFIX) for name in need):
        notes.append(volumes.MAX_VOLUME_COUNT)
    return "".join(f"; for its volumes: {note}" for note in notes)
