"""Each PodGroup's need and holdings for admission, reused from the last pass when its inputs are the same.

Admission (:mod:`vcsat.solver.enqueue`) starts every pass by summing, for every PodGroup of the
snapshot, what it needs (rule 2) and what its bound pods hold: at 10,000 nodes that is tens of
thousands of groups, most of them running and unchanged since the last cycle. The live scheduler's
converter hands back the very model objects of the last cycle for Kubernetes objects that did not
change, and model objects are immutable, so a group whose PodGroup object and pods (the same pod
objects, in the same order) are those of the last pass keeps its sums from then. Everything else
is summed afresh with the same code, so the sums equal a fresh pass by construction. Which groups
changed since the last pass is read off the change set of the two snapshots
(:mod:`vcsat.solver.changes`, found once per cycle for every carry) rather than by comparing each
group's pods with the last pass's
(``tests/test_admission_groups.py``), and the last pass's tables are copied with only those groups
summed again or dropped, not rebuilt by a walk over every group. Only the last pass is kept: its
entries hold the objects they are keyed by, so those identities cannot be reused while an entry
lives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from vcsat.model import Pod, PodGroup, Snapshot
from vcsat.model import resources as res
from vcsat.solver import changes

Entry = tuple[PodGroup, Sequence[Pod], dict[str, int], dict[str, int]]
"""A group's sums with the group and pods they were summed from."""

_last: dict[str, Entry] = {}
"""The last pass's sums per group key, with the group and pods they were summed from."""
_last_snapshot: Snapshot | None = None
"""The snapshot of the last pass (every group of it has its entry in ``_last``)."""
_last_sums: tuple[Snapshot | None, dict[str, dict[str, int]], dict[str, dict[str, int]]] = (None, {}, {})
"""The snapshot of the pass that made them, and its need and holdings tables (handed out: copied,
never changed); read only when that snapshot is ``_last_snapshot``."""


def holdings(pods: Sequence[Pod]) -> dict[str, int]:
    """What a group's pods bound by us hold."""
    holding = [p.requests for p in pods if p.bound and p.managed]
    return res.total(holding) if holding else {}


def needs_and_holdings(
    snapshot: Snapshot, need_of: Callable[[PodGroup, Sequence[Pod]], dict[str, int]]
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """Per group key: ``need_of(group, pods)`` and :func:`holdings` of its pods. The dicts are
    shared with the next pass: read them, never change them."""
    global _last, _last_snapshot, _last_sums
    last = _last
    pods_of = snapshot.pods_of_group
    kept: dict[str, Entry] = {}
    need: dict[str, dict[str, int]] = {}
    held: dict[str, dict[str, int]] = {}
    # Mostly new objects: every group afresh costs less than finding which changed.
    last_snapshot = changes.worth_carrying(_last_snapshot, snapshot, "groups")
    by_key = snapshot.podgroup_by_key if last_snapshot is not None else {}
    tables = _last_sums
    if last_snapshot is not None and tables[0] is last_snapshot:
        # A group the change set leaves out is the very group of the last pass, with the very
        # pods: its entry stands. The last pass's tables are copied (at C speed) and only the
        # touched keys are summed again or dropped: a walk over every group (every PodGroup
        # of the cluster) cost more than the few hundred a cycle changes. Readers look groups up by key,
        # so the tables' order (new keys last) is read nowhere; of two groups of one key the
        # lookup gives the last, as the walk keeps it.
        touched = frozenset() if last_snapshot is snapshot else changes.between(last_snapshot, snapshot).groups_touched
        kept, need, held = dict(last), dict(tables[1]), dict(tables[2])
        for key in touched:
            group = by_key.get(key)
            if group is None:  # gone
                kept.pop(key, None)
                need.pop(key, None)
                held.pop(key, None)
                continue
            pods = pods_of.get(key, ())
            entry: Entry = (group, tuple(pods), need_of(group, pods), holdings(pods))
            kept[key] = entry
            need[key] = entry[2]
            held[key] = entry[3]
    elif last_snapshot is not None:  # the tables are another pass's (a test set ``_last`` alone)
        touched = frozenset() if last_snapshot is snapshot else changes.between(last_snapshot, snapshot).groups_touched
        for group in snapshot.podgroups:
            key = group.key
            if key in touched:
                pods = pods_of.get(key, ())
                entry = (group, tuple(pods), need_of(group, pods), holdings(pods))
            else:
                entry = last[key]
            kept[key] = entry
            need[key] = entry[2]
            held[key] = entry[3]
    else:  # no last pass, or one sharing few objects: every group summed afresh
        for group in snapshot.podgroups:
            key = group.key
            pods = pods_of.get(key, ())
            found = kept[key] = (group, tuple(pods), need_of(group, pods), holdings(pods))
            need[key] = found[2]
            held[key] = found[3]
    _last, _last_snapshot, _last_sums = kept, snapshot, (snapshot, need, held)
    return need, held


def starts_afresh(snapshot: Snapshot) -> bool:
    """Whether :func:`needs_and_holdings` would sum every group of ``snapshot`` afresh (no last pass,
    or one sharing too few objects with it): then a walk that sums them itself loses nothing."""
    return changes.worth_carrying(_last_snapshot, snapshot, "groups") is None


def keep(
    snapshot: Snapshot, kept: dict[str, Entry], need: dict[str, dict[str, int]], held: dict[str, dict[str, int]]
) -> None:
    """Keep sums made afresh elsewhere (every group of ``snapshot``, as :func:`needs_and_holdings`
    makes them) as the last pass's, for the next pass to reuse."""
    global _last, _last_snapshot, _last_sums
    _last, _last_snapshot, _last_sums = kept, snapshot, (snapshot, need, held)


def forget() -> None:
    """Drop the last pass's sums (tests; a process that stops scheduling)."""
    global _last, _last_snapshot, _last_sums
    _last, _last_snapshot, _last_sums = {}, None, (None, {}, {})
