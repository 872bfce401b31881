"""A cycle with nothing to place: its decision computed once per policy and cluster size, then reused.

Why: after a cycle that bound pods the live scheduler runs follow-up cycles (the applier's writes
and the pods' status echoes are due) on snapshots where no pod of ours is pending. ``solve`` would
still build the whole problem for them (admission, every node's room, the pricing), only to decide
nothing, and a build over no pending pods (its only resource ``pods``) replaces the reuse caches
the next binding cycle would have read (:mod:`vcsat.solver.node_side` keeps the last build's
resources only), so that cycle rebuilds them.

With no pending pod of ours there is no gang: no binding, nomination, eviction (preempt and reclaim
serve waiting gangs only) or PodGroup entry (the decision speaks of groups with pending pods), the
objective and the bound are 0, and what is left, the solver's status and budgets, is made from the
policy and the number of nodes alone (the search budget's per-node overhead). So :func:`decision`
solves the first such snapshot for real and hands its decision out again, with its own seconds,
for every later one with the same policy and node count. Without the wall stop that is exactly
what ``solve`` returns; with it, the status and the steps skipped for time are the clock's in any
cycle (at 5,000 nodes a 2 s cycle skips the search whatever it is given), and every later one
repeats the first one's. Nothing but the logs and metrics reads them (the live scheduler solves
afresh a cycle it dumps for replay).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from operator import attrgetter

from vcsat.model import Decision, Policy, Snapshot
from vcsat.solver.solve import solve

_PENDING = attrgetter("pending")
_kept: tuple[Policy, int, Decision] | None = None
"""The last decision kept, with the policy and node count it was made for (only an empty one)."""


def nothing_to_place(snapshot: Snapshot) -> bool:
    """No pod of ours is pending (gated pods included: they make gangs that are explained)."""
    # ``pending`` is ``managed`` and more (Pod._states); read as a kept attribute, a C-level walk.
    return not any(map(_PENDING, snapshot.pods))


def decision(
    snapshot: Snapshot,
    policy: Policy,
    *,
    started: float | None = None,
    fresh: Callable[..., Decision] = solve,
) -> Decision:
    """``fresh(snapshot, policy, started=started)`` (``solve`` by default) for a snapshot with
    :func:`nothing_to_place`, reused from the last one of the same policy and node count (module
    docstring)."""
    global _kept
    if not nothing_to_place(snapshot):
        raise ValueError("the snapshot has pods to place: solve it")
    started = time.monotonic() if started is None else started
    kept = _kept
    if kept is not None and kept[1] == len(snapshot.nodes) and kept[0] == policy:
        stats = kept[2].solver.model_copy(update={"seconds": round(time.monotonic() - started, 3)})
        return kept[2].model_copy(update={"solver": stats})
    made = fresh(snapshot, policy, started=started)
    if not (made.bindings or made.nominations or made.evictions or made.podgroups):
        _kept = (policy, len(snapshot.nodes), made)
    return made


def forget() -> None:
    """Drop the kept decision (tests)."""
    global _kept
    _kept = None
