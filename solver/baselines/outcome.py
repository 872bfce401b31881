"""A baseline's placements as a :class:`~vcsat.model.Decision` (contract §2).

Baselines are greedy: they have no objective bound, so their decisions say ``FALLBACK`` (the status
of a greedy decision), with ``objective`` the number of pods placed and ``bound`` 0. Every PodGroup
with pending pods gets its entry, in key order, with a reason code when nothing was placed, so that a
baseline's decision passes the same validator as the solver's.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping

from vcsat.model import Binding, Decision, PodGroupOutcome, Snapshot, SolverStats
from vcsat.solver.baselines.state import Placement
from vcsat.solver.validator.check import gang_key

Reason = tuple[str, str]
"""A reason code of contract §2 and its human message."""

NO_ROOM: Reason = ("InsufficientResources", "no node had room for it when its turn came")


def decision(
    snapshot: Snapshot,
    placements: Iterable[Placement],
    reasons: Mapping[str, Reason],
    *,
    scheduler: str,
    started: float,
    inqueue: Collection[str] = (),
) -> Decision:
    """Bindings in placement order; one ``podgroups`` entry per gang key with pending pods. A gang
    left unplaced is ``Inqueue`` when its PodGroup already was or is listed in ``inqueue`` (admitted
    this cycle), else ``Pending``."""
    placed = list(placements)
    running = {gang_key(p.pod) for p in placed}
    groups = snapshot.podgroup_by_key
    outcomes: list[PodGroupOutcome] = []
    for key in sorted({gang_key(pod) for pod in snapshot.pods if pod.pending}):
        if key in running:
            outcomes.append(PodGroupOutcome(podgroup=key, phase="Running"))
            continue
        group = groups.get(key)
        admitted = group is not None and (group.phase == "Inqueue" or key in inqueue)
        phase = "Inqueue" if admitted else "Pending"
        reason, message = reasons.get(key, NO_ROOM)
        outcomes.append(PodGroupOutcome(podgroup=key, phase=phase, reason=reason, message=f"{scheduler}: {message}"))
    return Decision(
        bindings=[Binding(pod=p.pod.key, node=p.node, gpus=list(p.gpus)) for p in placed],
        podgroups=outcomes,
        solver=SolverStats(
            status="FALLBACK",
            objective=float(len(placed)),
            bound=0.0,
            seconds=round(time.monotonic() - started, 3),
        ),
    )
