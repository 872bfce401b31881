"""Top up a searched decision: the gangs it leaves waiting, placed greedily into the room it leaves.

The staged search solves the fair-share levels first and gives them most of its budget; when it
raises a fair-share tier, the placed-work stages that follow start from a solution that no longer
holds the greedy's placements and, on a crowded cluster, may end their short budget far below
what the room left would take (a whole priority's work dropped, the lower-priority gangs that
filled the holes gone). Placing the gangs the decision leaves out into the free room it leaves, as
the greedy would (fair-share levels first, from what each queue already holds, then the rest by
priority), is then a pure gain: a gang added never lowers a queue's fair share nor any priority's
placed work, so the result ranks at least as high in the objective's first levels.

Only where the greedy's room accounting is exact for the decision: no rules between pods, no
topology spread, no shared CSI volumes, and no GPU shares in the decision (the greedy packs shares
onto devices its own way, which a decision it did not make need not follow); elsewhere the
decision is returned as it is.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import KeptRankings, Room, charge, class_keys, fill, sharing_shapes
from vcsat.solver.problem import Problem


@dataclass
class Filled:
    """A top-up's room as its fill left it, with the capped queues' room left and each queue's
    held work as the fill kept them: what :func:`charged` would make of the top-up's result, so
    the next top-up of that result starts from them (:func:`top_up_in`)."""

    room: Room
    caps: dict[str, dict[str, int]]
    held: dict[str, dict[str, int]]


def top_up(
    problem: Problem,
    assignment: Assignment,
    *,
    by_gain: bool = False,
    only: Collection[int] | None = None,
    kept: KeptRankings | None = None,
) -> Assignment:
    """``assignment`` with the gangs it leaves out placed where they still fit, as the greedy
    places them (:func:`vcsat.solver.greedy.greedy`): each fair-share level first, its queues filled
    towards their deserved shares from what they already hold (``by_gain``: the greedy's other
    fill), then everything left by priority and age; ``assignment`` itself when nothing fits or
    the room cannot be accounted for exactly (module docstring). Never changes what
    ``assignment`` already places. ``only``: of the gangs left out, these alone. ``kept``: rankings
    carried from an earlier top-up of the same problem, and kept for the next (same decision,
    less work: :class:`vcsat.solver.greedy.KeptRankings`)."""
    out, filled = top_up_in(problem, assignment, by_gain=by_gain, only=only, kept=kept)
    if filled is not None:
        filled.room.keep_rankings()
    return out


def top_up_in(
    problem: Problem,
    assignment: Assignment,
    *,
    by_gain: bool = False,
    only: Collection[int] | None = None,
    kept: KeptRankings | None = None,
    filled: Filled | None = None,
    less: tuple[Charges, Mapping[int, int]] | None = None,
) -> tuple[Assignment, Filled | None]:
    """:func:`top_up`, and the room it filled, whose free room is then the result's: the next
    top-up of the result (the exchange makes two or three a trade) fills on in it, given as
    ``filled`` (with the queues' room and held work the fill kept), instead of making its own room
    from the result's slots and counting the result's pods again. The caller hands the last
    room's rankings on when done (:meth:`Room.keep_rankings`). None instead of a room where none
    was made, or where a room made from the result's slots would differ from it: a problem one of
    whose pods the best fit may place (:meth:`Room.order_read`) reads the order in which nodes
    entered their free-GPU buckets, which a room made from slots takes from the slots' order and
    a filled room from its fill's (there its rankings are kept here, as :func:`top_up` does).

    Why it is the same: every other part of a room is its free room per node (the free amounts,
    devices, domains' GPUs, the rows the rankings read), the same either way; its rankings are
    exact for the room they read (:class:`vcsat.solver.greedy.KeptRankings`); and what it knows to
    find no node stays true while room only shrinks, which a fill's kept gangs make it do.

    ``less``: where ``assignment`` is a decision whose :func:`charges` are known less some of its
    pod classes (with their counts there), as a trade's decision without its dropped gangs is:
    the queues' room and held work the room starts from are those less the classes' pods
    (:func:`charged_less`), not counted again over every placed class."""
    waiting = waiting_gangs(problem, assignment, only, kept)
    if not waiting or problem.interpod is not None or problem.spread or problem.attach is not None:
        return assignment, filled
    sharing = kept.sharing if kept is not None else sharing_shapes(problem)
    if sharing and any(k > 0 and s in sharing for (s, _), k in assignment.shape_slots.items()):
        return assignment, filled  # a GPU share: the decode's devices, not the greedy's
    if filled is None:
        counted = charged(problem, assignment, kept) if less is None else charged_less(problem, *less, kept)
        filled = Filled(Room(problem, assignment.shape_slots, kept), *counted)
    room, caps, held = filled.room, filled.caps, filled.held
    out = Assignment(
        placed=set(assignment.placed),
        count=dict(assignment.count),
        shape_slots=dict(assignment.shape_slots),
        gang_slots=dict(assignment.gang_slots),
    )
    fill(problem, (problem.gangs[g] for g in waiting), room, caps, out, held, by_gain=by_gain)
    result = assignment if out.placed == assignment.placed else out  # a failed trial gives its room back
    if room.order_read(problem):
        room.keep_rankings()
        return result, None
    return result, filled


def waiting_gangs(
    problem: Problem, assignment: Assignment, only: Collection[int] | None = None, kept: KeptRankings | None = None
) -> set[int]:
    """The candidates (of ``only``, when given) that ``assignment`` leaves out with none of their
    pods placed: what a top-up fills. With ``only``, its few gangs are looked at rather than every
    candidate; else the candidates not placed, a set difference (``kept``: the problem's memos hold
    the candidates' set), rather than a test per candidate (a top-up runs twice a trade)."""
    unplaced: set[int] | frozenset[int]
    if only is not None:
        unplaced = {i for i in only if i not in problem.blocked} - assignment.placed
    else:
        candidates = kept.candidate_set if kept is not None else {g.index for g in problem.candidates}
        unplaced = candidates - assignment.placed
    gangs, counted = problem.gangs, assignment.count.get
    # any(map(...)) rather than a generator per gang: a class of a gang not placed seldom has pods.
    return {g for g in unplaced if not any(map(counted, gangs[g].classes))}


def charged(
    problem: Problem, assignment: Assignment, kept: KeptRankings | None = None
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """The capped queues' room left and each queue's held work once ``assignment``'s pods are
    counted (:func:`vcsat.solver.greedy.charge`): what the fill starts from. Charged per (queue,
    shape) at once rather than per pod class, the queues met in the same order: whole numbers, so
    the same sums, for fewer charges (a top-up counts every placed class, once a trade). ``kept``:
    the problem's memos, which hold each class's (queue, shape) once."""
    caps = {name: dict(left) for name, left in problem.queue_room.items()}
    held = {queue: dict(usage) for queue, usage in problem.queue_usage.items()}
    pods: dict[tuple[str, int], int] = {}
    keys = kept.class_keys if kept is not None else class_keys(problem)
    for c, k in assignment.count.items():
        key = keys[c]
        pods[key] = pods.get(key, 0) + k
    for (queue, s), k in pods.items():
        lineage = [caps[name] for name in problem.caps_of(queue)]
        charge(problem, problem.shapes[s].request, k, held.setdefault(queue, {}), lineage)
    return caps, held


@dataclass(frozen=True)
class Charges:
    """What :func:`charged` makes of one decision (the capped queues' room left, each queue's held
    work), and per queue how many pod classes the decision's count names: what
    :func:`charged_less` starts from (read only)."""

    caps: dict[str, dict[str, int]]
    held: dict[str, dict[str, int]]
    entries: dict[str, int]


def charges(problem: Problem, assignment: Assignment, kept: KeptRankings | None = None) -> Charges:
    """:func:`charged` of ``assignment``, with the count's classes per queue (:class:`Charges`)."""
    caps, held = charged(problem, assignment, kept)
    keys = kept.class_keys if kept is not None else class_keys(problem)
    entries: dict[str, int] = {}
    for c in assignment.count:
        queue = keys[c][0]
        entries[queue] = entries.get(queue, 0) + 1
    return Charges(caps, held, entries)


def charged_less(
    problem: Problem, base: Charges, less: Mapping[int, int], kept: KeptRankings | None = None
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """:func:`charged` of a decision whose count is that of the decision ``base`` was made of,
    without the pod classes ``less`` (each with its count there): ``base`` less those classes' pods,
    charged back per (queue, shape).

    Why it is the same: every charge adds whole numbers to a queue's held work and takes them
    from its lineage's room (:func:`vcsat.solver.greedy.charge`), so a count's charges less some
    classes' are the sums :func:`charged` makes of the count without them, in any order; the
    capped queues' room has the same keys either way (the problem's). One difference is put
    right: :func:`charged` gives a queue held work (each resource named) only where the count names
    a class of it, so a queue none of whose classes is left gets the problem's held work back (or
    none) as there. The queues' order in the held work can differ, which nothing reads (the fill
    asks it queue by queue). Why: a trade's first top-up counted every placed class of the
    decision left (thousands) where the trade drops a few hundred, once a trade."""
    caps = {name: dict(left) for name, left in base.caps.items()}
    held = {queue: dict(usage) for queue, usage in base.held.items()}
    keys = kept.class_keys if kept is not None else class_keys(problem)
    pods: dict[tuple[str, int], int] = {}
    gone: dict[str, int] = {}
    for c, k in less.items():
        key = keys[c]
        pods[key] = pods.get(key, 0) + k
        gone[key[0]] = gone.get(key[0], 0) + 1
    for (queue, s), k in pods.items():
        lineage = [caps[name] for name in problem.caps_of(queue)]
        charge(problem, problem.shapes[s].request, -k, held.setdefault(queue, {}), lineage)
    for queue, classes in gone.items():
        if classes == base.entries.get(queue, 0):  # no class of the queue left in the count
            usage = problem.queue_usage.get(queue)
            if usage is None:
                held.pop(queue, None)
            else:
                held[queue] = dict(usage)
    return caps, held
