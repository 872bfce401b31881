"""Preemption spares the pods that a running pod's required affinity relies on (issue 10, point 5:
"evicting must not leave a placed pod's required affinity unsatisfied").

One node of 4 cores in queue ``qa``: a running ``web`` pod whose required pod affinity (hostname)
selects the running ``db`` pod beside it, a running ``lo`` pod, and a waiting 2-core job of
priority 10. Evicting ``db`` alone would be the cheapest choice (one pod, the lowest priority); it
would leave ``web``'s affinity with no pod to hold to.
"""

from __future__ import annotations

import pytest
from builders import gangs, node, queue, snapshot
from test_interpod import HOST, rules, term, with_rules
from test_preemption import evicted, nominated, solved, waiting_job

from vcsat.model import Policy

NODE = node("n1", cpu="4", memory="64Gi", labels={HOST: "n1"})
POLICIES = pytest.mark.parametrize(
    "policy", [Policy(time_limit_s=2), Policy(time_limit_s=2, enqueue=False)], ids=["default", "no-enqueue"]
)

CASES = {
    # web itself may go (its own affinity goes with it), with lo: db stays
    "the-relying-pod-may-go": (5, {"ns/lo-0-0": "preempt", "ns/web-0-0": "preempt"}),
    # web outranks the preemptor: nothing frees 2 cores without db, so nothing goes
    "nothing-else-frees-room": (20, {}),
}


@POLICIES
@pytest.mark.parametrize("case", sorted(CASES))
def test_preemption_never_evicts_a_pod_that_a_running_pods_affinity_relies_on(policy: Policy, case: str) -> None:
    web_priority, victims = CASES[case]
    db, db_groups = gangs("db", queue="qa", priority=1, node="n1", cpu="2", created=3, labels={"app": "db"})
    web, web_groups = gangs("web", queue="qa", priority=web_priority, node="n1", cpu="1", created=0)
    web = [with_rules(p, affinity=rules(term(HOST, {"app": "db"}))) for p in web]
    lo, lo_groups = gangs("lo", queue="qa", priority=1, node="n1", cpu="1", created=1)
    hi, hi_groups = waiting_job("hi", cpu="2")
    snap = snapshot(
        nodes=[NODE],
        pods=[*db, *web, *lo, *hi],
        groups=[*db_groups, *web_groups, *lo_groups, *hi_groups],
        queues=[queue("qa")],
    )
    decision = solved(snap, policy)
    assert evicted(decision) == victims
    assert set(nominated(decision)) == ({"ns/hi-0-0"} if victims else set())


@POLICIES
def test_without_the_affinity_the_cheapest_victim_is_the_db_pod(policy: Policy) -> None:
    """The same cluster with no affinity on web: db goes, so the cases above test the rule."""
    db, db_groups = gangs("db", queue="qa", priority=1, node="n1", cpu="2", created=3, labels={"app": "db"})
    web, web_groups = gangs("web", queue="qa", priority=5, node="n1", cpu="1", created=0)
    lo, lo_groups = gangs("lo", queue="qa", priority=1, node="n1", cpu="1", created=1)
    hi, hi_groups = waiting_job("hi", cpu="2")
    snap = snapshot(
        nodes=[NODE],
        pods=[*db, *web, *lo, *hi],
        groups=[*db_groups, *web_groups, *lo_groups, *hi_groups],
        queues=[queue("qa")],
    )
    assert evicted(solved(snap, policy)) == {"ns/db-0-0": "preempt"}
