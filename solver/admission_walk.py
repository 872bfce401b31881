"""Every PodGroup's admission inputs made in one walk, for a pass that carries nothing.

Admission (:mod:`vcsat.solver.enqueue`) starts from four facts per PodGroup of the cluster (running
ones included, most of the groups): whether it is ours (:func:`vcsat.solver.enqueue.is_ours`), its
need and holdings (:mod:`vcsat.solver.admission_groups`), whether it reserves, and its commitment
and reservation summed per queue (:mod:`vcsat.solver.admission_commitments`). Each of those modules
keeps its own carry for the live scheduler, and each walks every group (and reads its pods) on its
own when there is nothing to carry: a one-shot ``vcsat solve``, a replay, the first cycle. This walk
reads each group and its pods once and makes all four, with the same functions and the same sums
in the same order, so its answers are those of the separate passes by construction
(``tests/test_admission_walk.py``). It is taken only where those passes would each start afresh:
sums not carried across snapshots (:func:`vcsat.solver.pod_sums.carrying`), no two PodGroups of one
key, and no earlier pass whose group sums are worth reusing; it leaves the group sums behind for
the next pass as :func:`vcsat.solver.admission_groups.needs_and_holdings` would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from vcsat.model import Pod, PodGroup, Snapshot
from vcsat.model import resources as res
from vcsat.solver import admission_groups, pod_sums
from vcsat.solver.admission_commitments import RESERVING_PHASES


class Walk(NamedTuple):
    """What admission starts from, for every PodGroup of one snapshot."""

    ours: set[str]
    """The keys of the groups that are ours to admit."""
    groups: list[PodGroup]
    """Our groups, in the snapshot's order."""
    need: dict[str, dict[str, int]]
    """Per group key, its need (shared with the next pass: read, never change)."""
    held: dict[str, dict[str, int]]
    """Per group key, what its pods bound by us hold (shared as :attr:`need`)."""
    own: dict[str, dict[str, int]]
    """Per queue named by a group, what its groups commit (fresh: the caller's to change)."""
    reserved: dict[str, int]
    """What admitted groups reserve beyond what their pods hold (fresh: the caller's to change)."""
    reserving: dict[str, bool]
    """Per key of a group in a reserving phase, whether it reserves its need."""


def walk(
    snapshot: Snapshot,
    scheduler_name: str,
    default_scheduler: str,
    need_of: Callable[[PodGroup, Sequence[Pod]], dict[str, int]],
) -> Walk | None:
    """The inputs of every group in one walk, or None where a pass would carry something (then the
    separate passes, with their carries, are asked instead)."""
    groups = snapshot.podgroups
    if pod_sums.carrying() or len(snapshot.podgroup_by_key) != len(groups):
        return None
    if not admission_groups.starts_afresh(snapshot):
        return None
    pods_of = snapshot.pods_of_group
    ours: set[str] = set()
    mine: list[PodGroup] = []
    need: dict[str, dict[str, int]] = {}
    held: dict[str, dict[str, int]] = {}
    kept: dict[str, admission_groups.Entry] = {}
    own: dict[str, dict[str, int]] = {}
    reserved: dict[str, int] = {}
    reserving: dict[str, bool] = {}
    nothing: tuple[Pod, ...] = ()
    for group in groups:
        key = group.key
        pods = pods_of.get(key, nothing)
        # One read of the pods for three answers: whether one is ours, what ours bound hold, and
        # how many are bound (a Running group reserves once its gang is bound).
        managed = False
        bound = 0
        holding: list[res.Resources] = []
        for pod in pods:
            pod_managed = pod.managed  # a model field: read once (docs/compiled-build.md)
            if pod_managed:
                managed = True
            if pod.bound:
                bound += 1
                if pod_managed:
                    holding.append(pod.requests)
        is_ours = managed if pods else (group.scheduler_name or default_scheduler) == scheduler_name
        if is_ours:
            ours.add(key)
            mine.append(group)
        needs = need_of(group, pods)
        holds = res.total(holding) if holding else {}
        need[key] = needs
        held[key] = holds
        kept[key] = (group, tuple(pods), needs, holds)
        # The group's part (admission_commitments.part), added up as it is made.
        queue = group.queue
        commits = own.get(queue)
        if commits is None:
            commits = own[queue] = {}
        phase = group.phase
        reserves = False
        if phase in RESERVING_PHASES:
            reserves = is_ours and (phase == "Inqueue" or bound >= group.min_member)
            reserving[key] = reserves
        if reserves:
            for name, amount in needs.items():
                commits[name] = commits.get(name, 0) + amount
                reserved[name] = reserved.get(name, 0) + max(0, amount - holds.get(name, 0))
        elif holds:
            for name, amount in needs.items():
                commits[name] = commits.get(name, 0) + min(amount, holds.get(name, 0))
    admission_groups.keep(snapshot, kept, need, held)
    return Walk(ours, mine, need, held, own, reserved, reserving)
