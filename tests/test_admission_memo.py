"""A live cycle admits a snapshot's PodGroups once (``solver/admission_memo.py``): the build and the
admission of groups without pods read one answer, equal to a fresh ``admit``; another snapshot
or policy is admitted afresh."""

from __future__ import annotations

import pytest
from builders import group, node, pod, queue, snapshot

from vcsat.adapters.live.scheduler import _with_admissions
from vcsat.model import Policy
from vcsat.solver import admission_memo, solve
from vcsat.solver.enqueue import admit


def _cluster(extra_cpu: str = "4") -> object:
    return snapshot(
        [node("n1", cpu="8")],
        [pod("ns/a-0", cpu="2", group="ns/a"), pod("ns/a-1", cpu="2", group="ns/a")],
        [group("ns/a", 2, queue="q"), group("ns/empty", 1, queue="q", min_resources={"cpu": extra_cpu})],
        [queue("q")],
    )


@pytest.mark.pure_only
def test_the_build_and_the_groups_without_pods_read_one_admission(monkeypatch: object) -> None:
    calls: list[object] = []
    real = admission_memo.admit

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(args[0])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(admission_memo, "admit", counted)  # type: ignore[attr-defined]
    snap = _cluster()
    policy = Policy(time_limit_s=1.0)
    decision = solve(snap, policy, wall=False)
    applied = _with_admissions(decision, snap, policy)
    assert calls == [snap]
    fresh = admit(snap, policy, overcommit=policy.overcommit)
    outcome = next(o for o in applied.podgroups if o.podgroup == "ns/empty")
    assert outcome.phase == ("Inqueue" if fresh["ns/empty"].admitted else "Pending")
    assert admission_memo.admissions(snap, policy, overcommit=policy.overcommit) == fresh


def test_another_snapshot_or_policy_is_admitted_afresh() -> None:
    policy = Policy(time_limit_s=1.0)
    first, second = _cluster("4"), _cluster("64")
    assert admission_memo.admissions(first, policy, overcommit=True) == admit(first, policy, overcommit=True)
    assert admission_memo.admissions(second, policy, overcommit=True) == admit(second, policy, overcommit=True)
    assert admission_memo.admissions(second, policy, overcommit=True)["ns/empty"].admitted is False
    assert admission_memo.admissions(second, policy, overcommit=False) == admit(second, policy, overcommit=False)
    other = Policy(time_limit_s=1.0, enqueue=False)
    assert admission_memo.admissions(second, other, overcommit=True) == admit(second, other, overcommit=True)
    assert admission_memo.admissions(second, other, overcommit=True)["ns/empty"].admitted is True
