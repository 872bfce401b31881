"""Disruption (issue 3, points 3 to 5): priority preemption inside a queue, reclaim across queues,
conformance, and the cycles around an eviction.

Every case checks the Decision itself (who is evicted and why, who is nominated where, with which
GPUs, what the preemptor's PodGroup says) and that the validator finds nothing. The waiting gangs
are PodGroups already admitted (phase Inqueue), as they are once the Job controller has created
their pods, and every case runs both with the default policy and with enqueue off.

Unless said otherwise: one node of 4 cores and ample memory; running pods of 1 core, each its own
PodGroup of one, created one second apart (the last one is the youngest); one queue ``qa``.
"""

from __future__ import annotations

from typing import Any

import pytest
from builders import gangs, group, node, pod, queue, snapshot

from vcsat.model import Decision, Pod, PodGroup, Policy, Snapshot
from vcsat.solver import check, solve

DEFAULT = Policy(time_limit_s=2)
NO_ENQUEUE = Policy(time_limit_s=2, enqueue=False)
POLICIES = pytest.mark.parametrize("policy", [DEFAULT, NO_ENQUEUE], ids=["default", "no-enqueue"])

NODE = node("n1", cpu="4", memory="64Gi")


def solved(snap: Snapshot, policy: Policy) -> Decision:
    decision = solve(snap, policy)
    assert check(snap, decision, policy) == []
    return decision


def evicted(decision: Decision) -> dict[str, str]:
    return {e.pod: e.reason for e in decision.evictions}


def nominated(decision: Decision) -> dict[str, str]:
    return {n.pod: n.node for n in decision.nominations}


def outcome(decision: Decision, key: str) -> tuple[str, str, str]:
    found = next(o for o in decision.podgroups if o.podgroup == key)
    return found.phase, found.reason, found.message


def waiting_job(
    prefix: str, *, queue_name: str = "qa", priority: int = 10, **kwargs: Any
) -> tuple[list[Pod], list[PodGroup]]:
    """One admitted (Inqueue) pending job, created after every running pod."""
    return gangs(prefix, queue=queue_name, priority=priority, created=100, phase="Inqueue", **kwargs)


def assert_preempted(
    decision: Decision, snap: Snapshot, preemptor: str, victims: set[str], reason: str = "preempt"
) -> None:
    """Exactly ``victims`` go, for ``reason``; the preemptor's pending pods are all nominated (none
    bound) and its PodGroup waits with WaitingForEviction and a message that counts the victims."""
    assert evicted(decision) == dict.fromkeys(victims, reason)
    pending = {p.key for p in snap.pods_of_group[preemptor] if p.pending}
    assert set(nominated(decision)) == pending
    assert not {b.pod for b in decision.bindings} & pending
    phase, why, message = outcome(decision, preemptor)
    assert (phase, why) == ("Inqueue", "WaitingForEviction")
    assert str(len(victims)) in message and reason in message, message


# --- whom preemption picks ---------------------------------------------------------------------


def _running(*specs: tuple[str, int, int, str]) -> tuple[list[Pod], list[PodGroup]]:
    """Running one-pod jobs (prefix, how many, priority, cpu) on n1 in qa, created in order."""
    pods: list[Pod] = []
    groups: list[PodGroup] = []
    start = 0
    for prefix, count, priority, cpu in specs:
        more_pods, more_groups = gangs(prefix, count, queue="qa", priority=priority, node="n1", cpu=cpu, created=start)
        pods += more_pods
        groups += more_groups
        start += count
    return pods, groups


VICTIM_CHOICES: dict[str, tuple[tuple[list[Pod], list[PodGroup]], dict[str, Any], set[str]]] = {
    # a 2-pod gang of priority 10 on a node full of priority-1 pods: the two youngest go
    "youngest-first": (_running(("lo", 4, 1, "1")), {"size": 2}, {"ns/lo-2-0", "ns/lo-3-0"}),
    # priority 1 goes before priority 5, although the priority-5 pods are younger
    "lowest-priority-first": (
        _running(("p1", 2, 1, "1"), ("p5", 2, 5, "1")),
        {"size": 2},
        {"ns/p1-0-0", "ns/p1-1-0"},
    ),
    # one 2-core pod rather than two 1-core pods of the same priority, although those are younger
    "fewest-pods": (_running(("two", 1, 1, "2"), ("one", 2, 1, "1")), {"cpu": "2"}, {"ns/two-0-0"}),
    # lower priority first even when it costs more pods: two priority-1 pods, not one priority-5 pod
    "priority-before-count": (
        _running(("p5", 1, 5, "2"), ("p1", 2, 1, "1")),
        {"cpu": "2"},
        {"ns/p1-0-0", "ns/p1-1-0"},
    ),
}


@POLICIES
@pytest.mark.parametrize("case", sorted(VICTIM_CHOICES))
def test_preemption_evicts_the_fewest_and_cheapest_lower_priority_pods(policy: Policy, case: str) -> None:
    (running, running_groups), job, victims = VICTIM_CHOICES[case]
    hi, hi_groups = waiting_job("hi", **job)
    snap = snapshot(nodes=[NODE], pods=running + hi, groups=running_groups + hi_groups, queues=[queue("qa")])
    decision = solved(snap, policy)
    assert_preempted(decision, snap, "ns/hi-0", victims)
    assert set(nominated(decision).values()) == {"n1"}


@POLICIES
def test_preemptor_is_nominated_onto_the_victims_gpus(policy: Policy) -> None:
    """4 GPUs, each held by a priority-1 pod; a 2-GPU pod of priority 10 takes the youngest two's."""
    gpu_node = node("g1", cpu="16", memory="64Gi", gpus=4)
    running = [
        pod(f"ns/lo-{i}", cpu="1", gpus=1, gpu_ids=[i], group=f"ns/lo-{i}", priority=1, node="g1", created=i)
        for i in range(4)
    ]
    running_groups = [group(f"ns/lo-{i}", queue="qa", priority=1, phase="Running") for i in range(4)]
    hi, hi_groups = waiting_job("hi", gpus=2)
    snap = snapshot(nodes=[gpu_node], pods=running + hi, groups=running_groups + hi_groups, queues=[queue("qa")])
    decision = solved(snap, policy)
    assert_preempted(decision, snap, "ns/hi-0", {"ns/lo-2", "ns/lo-3"})
    assert [(n.pod, n.node, sorted(n.gpus)) for n in decision.nominations] == [("ns/hi-0-0", "g1", [2, 3])]


@POLICIES
def test_a_victim_gang_goes_whole_rather_than_below_min_member(policy: Policy) -> None:
    """A 4-pod gang of minMember 3 holds the node; 2 cores are needed: the whole gang goes."""
    running, running_groups = gangs("g", queue="qa", size=4, min_member=3, priority=1, node="n1")
    hi, hi_groups = waiting_job("hi", cpu="2")
    snap = snapshot(nodes=[NODE], pods=running + hi, groups=running_groups + hi_groups, queues=[queue("qa")])
    decision = solved(snap, policy)
    assert_preempted(decision, snap, "ns/hi-0", {f"ns/g-0-{i}" for i in range(4)})


@POLICIES
def test_a_victim_gang_keeps_min_member_when_another_victim_completes_the_room(policy: Policy) -> None:
    """Beside the gang (4 pods, minMember 3) runs an older lone pod: one pod of the gang and the
    lone pod go, two victims instead of the whole gang's four."""
    running, running_groups = gangs("g", queue="qa", size=4, min_member=3, priority=1, node="n1", created=5)
    lone, lone_groups = gangs("lone", queue="qa", priority=1, node="n1")
    hi, hi_groups = waiting_job("hi", cpu="2")
    snap = snapshot(
        nodes=[node("n1", cpu="5", memory="64Gi")],
        pods=running + lone + hi,
        groups=running_groups + lone_groups + hi_groups,
        queues=[queue("qa")],
    )
    decision = solved(snap, policy)
    gone = set(evicted(decision))
    assert len(gone) == 2 and "ns/lone-0-0" in gone
    assert len(gone & {f"ns/g-0-{i}" for i in range(4)}) == 1
    assert_preempted(decision, snap, "ns/hi-0", gone)


@POLICIES
def test_each_preemptor_uses_only_room_freed_below_its_own_priority(policy: Policy) -> None:
    """Victims of priority 7 and 1 (2 cores each); preemptors of priority 10 and 5 (2 cores each):
    both run, the priority-5 one in the priority-1 victim's room."""
    running, running_groups = _running(("v7", 1, 7, "2"), ("v1", 1, 1, "2"))
    hi, hi_groups = waiting_job("hi", cpu="2")
    mid, mid_groups = waiting_job("mid", cpu="2", priority=5)
    snap = snapshot(
        nodes=[NODE],
        pods=running + hi + mid,
        groups=running_groups + hi_groups + mid_groups,
        queues=[queue("qa")],
    )
    decision = solved(snap, policy)
    assert evicted(decision) == {"ns/v7-0-0": "preempt", "ns/v1-0-0": "preempt"}
    assert set(nominated(decision)) == {"ns/hi-0-0", "ns/mid-0-0"}


# --- when preemption must not happen ----------------------------------------------------------


@POLICIES
def test_equal_priority_never_preempts(policy: Policy) -> None:
    running, running_groups = gangs("eq", 4, queue="qa", priority=5, node="n1")
    new, new_groups = waiting_job("new", priority=5)
    snap = snapshot(nodes=[NODE], pods=running + new, groups=running_groups + new_groups, queues=[queue("qa")])
    decision = solved(snap, policy)
    assert not decision.evictions and not decision.nominations and not decision.bindings
    assert outcome(decision, "ns/new-0")[1] != "WaitingForEviction"


@POLICIES
def test_no_preemption_across_queues(policy: Policy) -> None:
    """qb's priority-1 pods fill the node; qa's priority-10 job may not preempt them (and with
    reclaim off, nothing else may take them either)."""
    running, running_groups = gangs("lo", 4, queue="qb", priority=1, node="n1")
    hi, hi_groups = waiting_job("hi")
    snap = snapshot(
        nodes=[NODE], pods=running + hi, groups=running_groups + hi_groups, queues=[queue("qa"), queue("qb")]
    )
    no_reclaim = policy.model_copy(update={"reclaim": False})
    decision = solved(snap, no_reclaim)
    assert not decision.evictions and not decision.nominations


@POLICIES
def test_no_preemption_across_queues_when_the_other_queue_is_within_its_share(policy: Policy) -> None:
    """qa and qb hold two cores each (their deserved shares); qa's own pods are of its new job's
    priority. qb's low-priority pods are not qa's to preempt, and not above their share to reclaim."""
    mine, mine_groups = gangs("mine", 2, queue="qa", priority=20, node="n1")
    theirs, theirs_groups = gangs("theirs", 2, queue="qb", priority=1, node="n1", created=10)
    hi, hi_groups = waiting_job("hi", priority=20)
    snap = snapshot(
        nodes=[NODE],
        pods=mine + theirs + hi,
        groups=mine_groups + theirs_groups + hi_groups,
        queues=[queue("qa"), queue("qb")],
    )
    decision = solved(snap, policy)
    assert not decision.evictions and not decision.nominations


@POLICIES
@pytest.mark.parametrize(
    "blocked",
    ["closed-queue", "matches-no-node", "bigger-than-all-victims"],
)
def test_a_preemptor_that_cannot_run_evicts_nothing(policy: Policy, blocked: str) -> None:
    running, running_groups = gangs("lo", 4, queue="qa", priority=1, node="n1")
    queues = [queue("qa", open=blocked != "closed-queue")]
    if blocked == "matches-no-node":
        hi, hi_groups = waiting_job("hi", selector={"zone": "nowhere"})
    elif blocked == "bigger-than-all-victims":
        hi, hi_groups = waiting_job("hi", size=5)
    else:
        hi, hi_groups = waiting_job("hi")
    snap = snapshot(nodes=[NODE], pods=running + hi, groups=running_groups + hi_groups, queues=queues)
    decision = solved(snap, policy)
    assert not decision.evictions and not decision.nominations and not decision.bindings
    phase, reason, message = outcome(decision, "ns/hi-0")
    assert phase != "Running" and reason and message


@POLICIES
def test_preempt_off_evicts_nothing(policy: Policy) -> None:
    running, running_groups = gangs("lo", 4, queue="qa", priority=1, node="n1")
    hi, hi_groups = waiting_job("hi")
    snap = snapshot(nodes=[NODE], pods=running + hi, groups=running_groups + hi_groups, queues=[queue("qa")])
    decision = solved(snap, policy.model_copy(update={"preempt": False}))
    assert not decision.evictions and not decision.nominations


# --- conformance: who is never a victim --------------------------------------------------------

PROTECTED: dict[str, dict[str, Any]] = {
    "preemptable-false": {"preemptable": False},
    "kube-system": {"namespace": "kube-system"},
    "system-cluster-critical": {"priority_class": "system-cluster-critical"},
    "system-node-critical": {"priority_class": "system-node-critical"},
    "terminating": {"terminating": True},
}


@POLICIES
@pytest.mark.parametrize("kind", sorted(PROTECTED))
def test_protected_pods_are_spared_and_an_older_unprotected_pod_goes(policy: Policy, kind: str) -> None:
    """Three young protected pods of priority 1 and one older unprotected pod of priority 1 fill
    the node; the priority-10 job needs one core. Younger-first would pick a protected pod: the
    unprotected one goes instead."""
    options = dict(PROTECTED[kind])
    namespace = str(options.pop("namespace", "ns"))
    guarded, guarded_groups = gangs(
        "guarded", 3, queue="qa", priority=1, node="n1", created=50, namespace=namespace, **options
    )
    free, free_groups = gangs("free", queue="qa", priority=1, node="n1")
    hi, hi_groups = waiting_job("hi")
    snap = snapshot(
        nodes=[NODE],
        pods=guarded + free + hi,
        groups=guarded_groups + free_groups + hi_groups,
        queues=[queue("qa")],
    )
    decision = solved(snap, policy)
    assert_preempted(decision, snap, "ns/hi-0", {"ns/free-0-0"})


@POLICIES
def test_only_protected_pods_in_the_way_means_no_eviction(policy: Policy) -> None:
    guarded, guarded_groups = gangs("guarded", 4, queue="qa", priority=1, node="n1", preemptable=False)
    hi, hi_groups = waiting_job("hi")
    snap = snapshot(nodes=[NODE], pods=guarded + hi, groups=guarded_groups + hi_groups, queues=[queue("qa")])
    decision = solved(snap, policy)
    assert not decision.evictions and not decision.nominations
    assert outcome(decision, "ns/hi-0")[1] not in ("", "WaitingForEviction")


# --- queue capability and preemption -----------------------------------------------------------


@POLICIES
def test_queue_capability_forces_preemption_although_the_node_has_room(policy: Policy) -> None:
    """qa's capability (4 cores) is all held by priority-1 pods; the node has 4 cores idle. The
    priority-10 job may not exceed the capability: one priority-1 pod goes to make quota room."""
    running, running_groups = gangs("lo", 4, queue="qa", priority=1, node="n1")
    hi, hi_groups = waiting_job("hi")
    snap = snapshot(
        nodes=[node("n1", cpu="8", memory="64Gi")],
        pods=running + hi,
        groups=running_groups + hi_groups,
        queues=[queue("qa", capability={"cpu": "4"})],
    )
    decision = solved(snap, policy)
    assert evicted(decision) == {"ns/lo-3-0": "preempt"}
    assert set(nominated(decision)) | {b.pod for b in decision.bindings} == {"ns/hi-0-0"}


@POLICIES
def test_a_preemptor_for_quota_room_is_nominated_even_where_a_node_is_idle(policy: Policy) -> None:
    """As above, but the idle room is on another node: binding the preemptor there now would put
    qa over its capability until the victim is gone, so it is nominated and waits instead."""
    running, running_groups = gangs("lo", 4, queue="qa", priority=1, node="n1")
    hi, hi_groups = waiting_job("hi")
    snap = snapshot(
        nodes=[NODE, node("n2", cpu="4", memory="64Gi")],
        pods=running + hi,
        groups=running_groups + hi_groups,
        queues=[queue("qa", capability={"cpu": "4"})],
    )
    decision = solved(snap, policy)
    assert_preempted(decision, snap, "ns/hi-0", {"ns/lo-3-0"})


@POLICIES
def test_queue_capability_avoids_a_useless_preemption(policy: Policy) -> None:
    """qa may hold 2 cores and holds them; its priority-10 gang needs 3: no eviction can make it
    fit, so none happens, and it waits with QueueOverused and the amounts."""
    running, running_groups = gangs("lo", 2, queue="qa", priority=1, node="n1")
    hi, hi_groups = waiting_job("hi", size=3)
    snap = snapshot(
        nodes=[NODE],
        pods=running + hi,
        groups=running_groups + hi_groups,
        queues=[queue("qa", capability={"cpu": "2"})],
    )
    decision = solved(snap, policy)
    assert not decision.evictions and not decision.nominations and not decision.bindings
    _, reason, message = outcome(decision, "ns/hi-0")
    assert reason in ("QueueOverused", "Unschedulable"), message
    assert "qa" in message and "3000m cpu" in message, message


# --- reclaim across queues ---------------------------------------------------------------------


def _reclaim_snapshot(wanted: int, qa: dict[str, Any] | None = None, qb: dict[str, Any] | None = None) -> Snapshot:
    """qb's four priority-1 pods fill the node; qa (empty) wants ``wanted`` one-core jobs."""
    running, running_groups = gangs("b", 4, queue="qb", priority=1, node="n1")
    jobs, job_groups = gangs("a", wanted, queue="qa", created=100, phase="Inqueue")
    return snapshot(
        nodes=[NODE],
        pods=running + jobs,
        groups=running_groups + job_groups,
        queues=[queue("qa", **(qa or {})), queue("qb", **(qb or {}))],
    )


@POLICIES
@pytest.mark.parametrize(
    ("wanted", "qa", "victims"),
    [
        (1, {}, {"ns/b-3-0"}),
        (4, {}, {"ns/b-2-0", "ns/b-3-0"}),
        (4, {"weight": 3}, {"ns/b-1-0", "ns/b-2-0", "ns/b-3-0"}),
    ],
    ids=["exactly-one-pod", "up-to-the-equal-share", "up-to-the-weighted-share"],
)
def test_reclaim_takes_back_exactly_what_the_queue_needs_up_to_its_share(
    policy: Policy, wanted: int, qa: dict[str, Any], victims: set[str]
) -> None:
    """Reclaim evicts the youngest of qb's pods, as many as qa needs and no more than qb holds
    beyond its deserved share (2 cores at 1:1, 1 core when qa weighs 3); victims of priority 1
    make way for qa's jobs of priority 0: reclaim is about queues, not priorities."""
    snap = _reclaim_snapshot(wanted, qa=qa)
    decision = solved(snap, policy)
    assert evicted(decision) == dict.fromkeys(victims, "reclaim")
    assert len(decision.nominations) == len(victims)
    for n in decision.nominations:
        group_key = snap.pod_by_key[n.pod].group or ""
        assert outcome(decision, group_key)[:2] == ("Inqueue", "WaitingForEviction")


@POLICIES
@pytest.mark.parametrize(
    ("case", "qb", "update"),
    [
        ("not-reclaimable", {"reclaimable": False}, {}),
        ("reclaim-off", {}, {"reclaim": False}),
    ],
)
def test_nothing_is_reclaimed(policy: Policy, case: str, qb: dict[str, Any], update: dict[str, bool]) -> None:
    snap = _reclaim_snapshot(4, qb=qb)
    decision = solved(snap, policy.model_copy(update=update))
    assert not decision.evictions and not decision.nominations and not decision.bindings


@POLICIES
def test_reclaim_takes_only_from_the_queue_above_its_share(policy: Policy) -> None:
    """qb holds 3 cores and qc 1 (each deserves 4/3): only qb is above its share, and it gives one
    pod (its youngest); qc's lone pod, younger still, is not touched."""
    b, b_groups = gangs("b", 3, queue="qb", node="n1")
    c, c_groups = gangs("c", 1, queue="qc", node="n1", created=50)
    a, a_groups = gangs("a", 2, queue="qa", created=100, phase="Inqueue")
    snap = snapshot(
        nodes=[NODE],
        pods=b + c + a,
        groups=b_groups + c_groups + a_groups,
        queues=[queue("qa"), queue("qb"), queue("qc")],
    )
    decision = solved(snap, policy)
    assert evicted(decision) == {"ns/b-2-0": "reclaim"}
    assert len(decision.nominations) == 1


@POLICIES
def test_reclaim_never_takes_a_queue_below_its_share(policy: Policy) -> None:
    """qb and qc hold two cores each; qa wants two. Each deserves 4/3 core: taking a whole core
    from either would leave it below its share, so nothing is reclaimed."""
    b, b_groups = gangs("b", 2, queue="qb", node="n1")
    c, c_groups = gangs("c", 2, queue="qc", node="n1")
    a, a_groups = gangs("a", 2, queue="qa", created=100, phase="Inqueue")
    snap = snapshot(
        nodes=[NODE],
        pods=b + c + a,
        groups=b_groups + c_groups + a_groups,
        queues=[queue("qa"), queue("qb"), queue("qc")],
    )
    decision = solved(snap, policy)
    assert not decision.evictions and not decision.nominations


# --- the cycles around an eviction --------------------------------------------------------------


def next_cycle(snap: Snapshot, decision: Decision, *, victims_gone: bool) -> Snapshot:
    """The snapshot after the decision was applied: victims terminating (or gone), nominated pods
    carrying ``status.nominatedNodeName``."""
    victims = evicted(decision)
    where = nominated(decision)
    pods = []
    for p in snap.pods:
        if p.key in victims:
            if not victims_gone:
                pods.append(p.model_copy(update={"terminating": True}))
        elif p.key in where:
            pods.append(p.model_copy(update={"nominated_node": where[p.key]}))
        else:
            pods.append(p)
    # A fresh Snapshot: model_copy would carry over the cached per-node and per-key indexes.
    return snapshot(nodes=snap.nodes, pods=pods, groups=snap.podgroups, queues=snap.queues)


@POLICIES
def test_a_nominated_preemptor_waits_for_its_victims_then_binds(policy: Policy) -> None:
    running, running_groups = gangs("lo", 4, queue="qa", priority=1, node="n1")
    hi, hi_groups = waiting_job("hi", size=2)
    first = snapshot(nodes=[NODE], pods=running + hi, groups=running_groups + hi_groups, queues=[queue("qa")])
    decision = solved(first, policy)
    assert_preempted(decision, first, "ns/hi-0", {"ns/lo-2-0", "ns/lo-3-0"})

    # Next cycle: the victims are still terminating. The preemptor waits; nobody else is evicted.
    second = next_cycle(first, decision, victims_gone=False)
    waiting = solved(second, policy)
    assert not waiting.evictions and not waiting.nominations and not waiting.bindings
    phase, reason, message = outcome(waiting, "ns/hi-0")
    assert (phase, reason) != ("Running", "") and reason == "WaitingForEviction"
    assert "n1" in message, message

    # The victims are gone: the preemptor binds where it was nominated.
    third = next_cycle(first, decision, victims_gone=True)
    bound = solved(third, policy)
    assert not bound.evictions and not bound.nominations
    assert {(b.pod, b.node) for b in bound.bindings} == {("ns/hi-0-0", "n1"), ("ns/hi-0-1", "n1")}
    assert outcome(bound, "ns/hi-0")[:2] == ("Running", "")


@POLICIES
def test_a_nominated_gpu_preemptor_binds_to_the_gpus_it_was_promised(policy: Policy) -> None:
    gpu_node = node("g1", cpu="16", memory="64Gi", gpus=2)
    running = [
        pod(f"ns/lo-{i}", cpu="1", gpus=1, gpu_ids=[i], group=f"ns/lo-{i}", priority=1, node="g1", created=i)
        for i in range(2)
    ]
    running_groups = [group(f"ns/lo-{i}", queue="qa", priority=1, phase="Running") for i in range(2)]
    hi, hi_groups = waiting_job("hi", gpus=1)
    first = snapshot(nodes=[gpu_node], pods=running + hi, groups=running_groups + hi_groups, queues=[queue("qa")])
    decision = solved(first, policy)
    assert evicted(decision) == {"ns/lo-1": "preempt"}
    assert [(n.pod, n.gpus) for n in decision.nominations] == [("ns/hi-0-0", [1])]
    bound = solved(next_cycle(first, decision, victims_gone=True), policy)
    assert [(b.pod, b.node, b.gpus) for b in bound.bindings] == [("ns/hi-0-0", "g1", [1])]
