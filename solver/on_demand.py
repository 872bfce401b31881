"""The full explanation of one PodGroup or pod, on demand (``vcsat explain``).

A cycle examines in full only the first ``Policy.explain_per_queue`` waiting groups of each queue
and gives the rest the reason ``NotExamined`` (:mod:`vcsat.solver.explain`). This runs the same
cycle with every group examined and returns the one entry asked for. Reasons never change a
placement, and each group's reason depends on that group and the decision only, so the entry is
the one the cycle would have given it with no cut-off (same policy, same workers, and a search the
wall clock did not cut short: the decision's ``solver.wall_stopped`` is false).
"""

from __future__ import annotations

from vcsat.model import Decision, PodGroupOutcome, Policy, Snapshot
from vcsat.solver.solve import solve


def outcome_key(snapshot: Snapshot, name: str) -> str | None:
    """The ``podgroups`` entry a pod or PodGroup ``namespace/name`` is reported under: its PodGroup
    (also with gang scheduling off, contract §2), or the pod itself when it has none; None when
    the snapshot has neither."""
    if name in snapshot.podgroup_by_key:
        return name
    pod = snapshot.pod_by_key.get(name)
    if pod is None:
        return None
    return pod.group if pod.group is not None else pod.key


def explain_one(
    snapshot: Snapshot,
    policy: Policy,
    name: str,
    *,
    started: float | None = None,
    wall: bool | None = None,
) -> tuple[Decision, PodGroupOutcome | None]:
    """The cycle's decision with every group examined, and the entry of ``name`` (a pod or PodGroup
    key) in it: None when it has no pending pods (no entry) or is not in the snapshot."""
    decision = solve(snapshot, policy.model_copy(update={"explain_per_queue": None}), started=started, wall=wall)
    key = outcome_key(snapshot, name)
    found = next((entry for entry in decision.podgroups if entry.podgroup == key), None)
    return decision, found
