"""What each queue's PodGroups commit and reserve at the start of admission, carried across passes.

Admission (:mod:`vcsat.solver.enqueue`, rule 5) starts from, per queue, what its groups are held to
(an admitted group its whole need, another group what it holds of it) and, cluster-wide, what
admitted groups reserve beyond what their pods hold. Each group's part is a function of its need,
its holdings and whether it reserves, and those are a function of the PodGroup object, its pods
and the scheduler's name. :mod:`vcsat.solver.admission_groups` already hands back the very same
need and holdings dicts for a group whose PodGroup and pods are the very objects of the last pass,
so a group whose two dicts are those of the last pass keeps its part, and only the others are
entered again in the :class:`~vcsat.solver.ledger.Ledger` sums: at 5,000 nodes ~11,000 groups,
a few hundred of them changed per live cycle. A snapshot with two PodGroups of one key (the
converter never makes one) is summed afresh, group by group, as before; so is every pass while
carrying is off (:func:`vcsat.solver.pod_sums.carry`: a one-shot solve gains nothing from it).
After a carried pass, which groups to enter again is read off the change set of the two snapshots
(:mod:`vcsat.solver.changes`, found once per cycle for every carry) instead of walking every group.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

from vcsat.model import PodGroup, Snapshot
from vcsat.solver import changes, pod_sums
from vcsat.solver.ledger import Ledger

Part = tuple[str, dict[str, int], dict[str, int] | None]
"""A group's queue, what it commits there, and what it reserves (None: it does not reserve)."""


class _Carried:
    def __init__(self, scheduler_name: str) -> None:
        self.scheduler_name = scheduler_name
        self.inputs: dict[str, tuple[PodGroup, Mapping[str, int], Mapping[str, int]]] = {}
        """Per group key, the PodGroup and the need and holdings dicts its part was made from."""
        self.snapshot: Snapshot | None = None
        """The snapshot of the last pass: every group of it has its part in the ledgers."""
        self.own: Ledger[str, str] = Ledger()
        self.reserved: Ledger[str, bool] = Ledger()


_carried: _Carried | None = None
_lock = threading.Lock()


def part(group: PodGroup, need: Mapping[str, int], held: Mapping[str, int], reserving: bool) -> Part:
    """One group's commitment (rule 5's ``committed``) and reservation (``reserved``)."""
    if reserving:
        return (
            group.queue,
            dict(need),
            {name: max(0, amount - held.get(name, 0)) for name, amount in need.items()},
        )
    if held:
        return group.queue, {name: min(amount, held.get(name, 0)) for name, amount in need.items()}, None
    return group.queue, {}, None  # holds nothing and reserves nothing, so commits nothing


def commitments(
    snapshot: Snapshot,
    need: Mapping[str, Mapping[str, int]],
    held: Mapping[str, Mapping[str, int]],
    reserving: Callable[[PodGroup], bool],
    scheduler_name: str,
) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """Per queue named by a PodGroup, what its groups commit (the queue present even when that is
    nothing), and what all of them reserve. Fresh dicts, the caller's to change."""
    global _carried
    groups = snapshot.podgroups
    if not pod_sums.carrying() or len(snapshot.podgroup_by_key) != len(groups):
        return _fresh(groups, need, held, reserving)
    with _lock:
        carried = _carried
        if carried is None or carried.scheduler_name != scheduler_name:
            carried = _carried = _Carried(scheduler_name)
        if carried.snapshot is not None:
            _put_touched(carried, snapshot, need, held, reserving)
        else:  # the first carried pass: every group entered
            for group in groups:
                key = group.key
                carried.inputs[key] = (group, need[key], held[key])
                _enter(carried, key, group, need[key], held[key], reserving)
            carried.snapshot = snapshot
        own = {queue: dict(total) for queue, total in carried.own.sums.items()}
        return own, dict(carried.reserved.sum(True) or {})


def _put_touched(
    carried: _Carried,
    snapshot: Snapshot,
    need: Mapping[str, Mapping[str, int]],
    held: Mapping[str, Mapping[str, int]],
    reserving: Callable[[PodGroup], bool],
) -> None:
    """Enter again the parts of the groups the change set since the last pass names; a group it
    leaves out is the very PodGroup with the very pods, so its part (a function of them and the
    scheduler's name) is the one entered then, whether or not its need dicts are the same objects."""
    last = carried.snapshot
    assert last is not None
    touched = () if last is snapshot else changes.between(last, snapshot).groups_touched
    by_key = snapshot.podgroup_by_key
    inputs = carried.inputs
    for key in touched:
        group = by_key.get(key)
        if group is None:
            inputs.pop(key, None)
            carried.own.drop(key)
            carried.reserved.drop(key)
            continue
        found = inputs[key] = (group, need[key], held[key])
        _enter(carried, key, group, found[1], found[2], reserving)
    carried.snapshot = snapshot


def _enter(
    carried: _Carried,
    key: str,
    group: PodGroup,
    need: Mapping[str, int],
    held: Mapping[str, int],
    reserving: Callable[[PodGroup], bool],
) -> None:
    """Enter one group's part (its commitments, and its reservation if it reserves) in the carried sums."""
    queue, commits, reserves = part(group, need, held, reserving(group))
    carried.own.put(key, queue, commits)
    if reserves is None:
        carried.reserved.drop(key)
    else:
        carried.reserved.put(key, True, reserves)


def forget() -> None:
    """Drop what was carried (tests; a process that stops scheduling)."""
    global _carried
    with _lock:
        _carried = None


RESERVING_PHASES = frozenset({"Inqueue", "Running"})
"""The phases in which a group may reserve its need (Volcano: Inqueue, or Running with its gang up);
the one place the rule is written (:meth:`vcsat.solver.enqueue._State.reserving` reads it too)."""


def _fresh(
    groups: Sequence[PodGroup],
    need: Mapping[str, Mapping[str, int]],
    held: Mapping[str, Mapping[str, int]],
    reserving: Callable[[PodGroup], bool],
) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    own: dict[str, dict[str, int]] = {}
    reserved: dict[str, int] = {}
    for group in groups:
        # :func:`part`, added up as it is made (no dict per group: a cold pass walks every group).
        key = group.key
        needs, holds = need[key], held[key]
        mine = own.get(group.queue)
        if mine is None:
            mine = own[group.queue] = {}
        # Only a group in a reserving phase may reserve: the others are not asked.
        if group.phase in RESERVING_PHASES and reserving(group):
            for name, amount in needs.items():
                mine[name] = mine.get(name, 0) + amount
                reserved[name] = reserved.get(name, 0) + max(0, amount - holds.get(name, 0))
        elif holds:
            for name, amount in needs.items():
                mine[name] = mine.get(name, 0) + min(amount, holds.get(name, 0))
    return own, reserved
