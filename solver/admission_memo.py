"""One snapshot's admission, asked for twice in a live cycle, computed once.

The build (:func:`vcsat.solver.problem.build_problem`) admits every PodGroup of the snapshot, and
the live scheduler then asks the same question again for the PodGroups that have no pods yet (a
Job controller creates a job's pods only once its group is Inqueue). Admission is a pure function
of the snapshot and the policy, and both are immutable, so the last answer is kept for the very
snapshot object it was made for.
"""

from __future__ import annotations

from vcsat.model import Policy, Snapshot
from vcsat.solver.enqueue import Admission, admit

_last: tuple[Snapshot, Policy, bool, dict[str, Admission]] | None = None


def admissions(snapshot: Snapshot, policy: Policy, *, overcommit: bool) -> dict[str, Admission]:
    """``admit(snapshot, policy, overcommit=overcommit)``, computed once for the last snapshot.
    The answer is shared: read it, never change it."""
    global _last
    last = _last
    if last is not None and last[0] is snapshot and last[2] == overcommit and last[1] == policy:
        return last[3]
    result = admit(snapshot, policy, overcommit=overcommit)
    _last = (snapshot, policy, overcommit, result)
    return result
