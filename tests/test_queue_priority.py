"""Volcano's queue priority (``Queue.spec.priority``): higher-priority queues' fair shares first.

Volcano v1.10+ compares ``spec.priority`` before the shares in the QueueOrderFn of its proportion
and capacity plugins: allocate and reclaim serve the queues of higher priority first, and reclaim
takes victims from the lowest-priority queues first (its victim order is the reverse queue order).
Priority orders; it grants no share: a queue at its deserved share reclaims nothing, and victims'
queues still give back only their excess. In a hierarchy each queue's own value counts.

The cases: the converter; two queues competing for one node (the higher priority wins, equal
priorities keep the old order); priority raises no share; hierarchy; reclaim. The properties:
equal priorities decide exactly as no priorities, and an optimal decision never leaves room of a
lower-priority queue's new gang that a waiting gang of a higher-priority queue could use to come
closer to its deserved share.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from builders import gangs, group, node, queue, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_objects import k8s_node, k8s_pod, k8s_podgroup
from test_volcano_scenarios import (
    UTILITY_SLACK,
    Case,
    admitted_pending,
    clusters,
    dominant,
    evicted_pods,
    gang_fits,
    node_room,
    part_within_share,
    per_queue,
    placed_pods,
    quota_room,
)

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.errors import InputError
from vcsat.model import Decision, Policy, Queue, Snapshot
from vcsat.model import resources as res
from vcsat.solver import check, solve
from vcsat.solver.enqueue import admit
from vcsat.solver.shares import cluster_total, deserved_shares, queue_usage

NO_ENQUEUE = Policy(time_limit_s=2, enqueue=False)
"""Admission has its own queue order (solver/enqueue.py); these cases test allocate and reclaim."""


def prioritised(name: str, priority: int = 0, **kwargs: Any) -> Queue:
    return queue(name, **kwargs).model_copy(update={"priority": priority})


def solved(snap: Snapshot, policy: Policy = NO_ENQUEUE) -> Decision:
    decision = solve(snap, policy)
    assert check(snap, decision, policy) == []
    return decision


def running_groups(snap: Snapshot, decision: Decision) -> set[str]:
    return {o.podgroup for o in decision.podgroups if o.phase == "Running"}


def without_seconds(decision: Decision) -> Decision:
    return decision.model_copy(update={"solver": decision.solver.model_copy(update={"seconds": 0.0})})


# --- the converter ----------------------------------------------------------------------------


def k8s_queue(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(("spec", "expected"), [({}, 0), ({"priority": 0}, 0), ({"priority": 100}, 100)])
def test_the_converter_reads_spec_priority(spec: dict[str, Any], expected: int) -> None:
    snap = snapshot_from_objects([k8s_queue("q", **spec)], source="test.yaml")
    assert snap.queue_by_name["q"].priority == expected
    assert snap.queue_by_name["default"].priority == 0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "test.yaml: Queue q: spec.priority: must be at least 0, not -1"),
        ("high", "test.yaml: Queue q: spec.priority: must be an integer, not a string"),
    ],
)
def test_a_bad_priority_names_queue_and_field(value: object, message: str) -> None:
    with pytest.raises(InputError) as raised:
        snapshot_from_objects([k8s_queue("q", priority=value)], source="test.yaml")
    assert str(raised.value) == message


@pytest.mark.parametrize(("priority_b", "winner"), [(None, "ns/a"), (0, "ns/a"), (3, "ns/b")])
def test_a_dumped_instance_with_queue_priorities(priority_b: int | None, winner: str) -> None:
    """From Kubernetes objects to the decision: the converter's ``spec.priority`` reaches the
    solver. Two gangs of eight one-core pods in queues qa and qb, one eight-core node; without
    priorities the tie goes to ``a`` (same age, then by name)."""
    spec: dict[str, Any] = {"weight": 1} if priority_b is None else {"weight": 1, "priority": priority_b}
    objects: list[dict[str, Any]] = [k8s_node("n1"), k8s_queue("qa", weight=1), k8s_queue("qb", **spec)]
    for name, queue_name in [("a", "qa"), ("b", "qb")]:
        objects.append(k8s_podgroup(name, minMember=8, queue=queue_name))
        objects += [k8s_pod(f"{name}-{i}", group=name) for i in range(8)]
    snap = snapshot_from_objects(objects, source="test.yaml")
    decision = solved(snap)
    assert {binding.pod.rsplit("-", 1)[0] for binding in decision.bindings} == {winner}


# --- two queues, one node -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("priority_a", "priority_b", "winner"),
    [
        (0, 0, "ns/b-0"),  # equal: the old order (shares tie, the older gang wins)
        (7, 7, "ns/b-0"),
        (10, 0, "ns/a-0"),  # the younger gang of the higher-priority queue
        (0, 10, "ns/b-0"),
        (2, 1, "ns/a-0"),
    ],
)
@pytest.mark.parametrize("phase", ["Inqueue", None], ids=["admitted", "no-enqueue"])
def test_two_queues_competing_for_one_node(priority_a: int, priority_b: int, winner: str, phase: str | None) -> None:
    """qa's and qb's gangs each want the whole node (8 one-core pods); either fills its queue's
    deserved share (4 cores), so the shares tie and the queue priority decides."""
    a, a_groups = gangs("a", queue="qa", size=8, cpu="1", created=5, phase=phase)
    b, b_groups = gangs("b", queue="qb", size=8, cpu="1", created=0, phase=phase)
    snap = snapshot(
        nodes=[node("n1", cpu="8", memory="64Gi")],
        pods=a + b,
        groups=a_groups + b_groups,
        queues=[prioritised("qa", priority_a), prioritised("qb", priority_b)],
    )
    decision = solved(snap, Policy(time_limit_s=2) if phase else NO_ENQUEUE)
    assert running_groups(snap, decision) == {winner}
    assert decision.solver.status == "OPTIMAL"
    (waiting,) = [o for o in decision.podgroups if o.phase != "Running"]
    assert waiting.reason == "Outranked"
    if priority_a != priority_b:
        loser = "qb" if winner == "ns/a-0" else "qa"
        assert f"queues of higher priority than queue {loser}" in waiting.message
    else:
        assert "higher priority than queue" not in waiting.message


@pytest.mark.parametrize(
    ("priority_a", "priority_b", "expected"),
    [
        (0, 0, {"qa": 1, "qb": 1}),  # concave shares: one gang each (3 of 4 cores each)
        (1, 0, {"qa": 2}),  # qa's share is served first: its second gang brings it to its share
        (0, 1, {"qb": 2}),
    ],
)
def test_the_higher_priority_share_is_served_first(priority_a: int, priority_b: int, expected: dict[str, int]) -> None:
    """Two gangs of three cores per queue, one node of eight, shares of four each. Balanced when
    equal; with priorities the first queue's share is filled first (its second gang reaches it, as
    Volcano's capacity plugin, which bounds allocation by capability, not by deserved, would)."""
    a, a_groups = gangs("a", 2, queue="qa", size=3, cpu="1")
    b, b_groups = gangs("b", 2, queue="qb", size=3, cpu="1")
    snap = snapshot(
        nodes=[node("n1", cpu="8", memory="64Gi")],
        pods=a + b,
        groups=a_groups + b_groups,
        queues=[prioritised("qa", priority_a), prioritised("qb", priority_b)],
    )
    decision = solved(snap)
    placed = Counter(snap.queue_of(snap.pod_by_key[binding.pod]) for binding in decision.bindings)
    assert {name: count // 3 for name, count in placed.items()} == expected


@pytest.mark.parametrize("priorities", [(0, 0), (5, 0), (0, 5)])
def test_priority_raises_no_share(priorities: tuple[int, int]) -> None:
    """Single-pod jobs divide finely: each queue gets its deserved half whatever the priorities;
    priority orders the serving of shares, it does not enlarge one."""
    a, a_groups = gangs("a", 8, queue="qa", cpu="1")
    b, b_groups = gangs("b", 8, queue="qb", cpu="1")
    snap = snapshot(
        nodes=[node("n1", cpu="8", memory="64Gi")],
        pods=a + b,
        groups=a_groups + b_groups,
        queues=[prioritised("qa", priorities[0]), prioritised("qb", priorities[1])],
    )
    decision = solved(snap)
    placed = Counter(snap.queue_of(snap.pod_by_key[binding.pod]) for binding in decision.bindings)
    assert placed == {"qa": 4, "qb": 4}


# --- hierarchy ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("org", "team", "other", "winner"),
    [
        (9, 0, 1, "ns/o-0"),  # the parent's priority is not inherited: team (0) loses to other (1)
        (0, 5, 1, "ns/t-0"),  # the child's own priority counts under a parent of priority 0
        (0, 0, 0, "ns/t-0"),  # equal: the old order (the older gang)
    ],
)
def test_in_a_hierarchy_each_queue_s_own_priority_counts(org: int, team: int, other: int, winner: str) -> None:
    """Queue ``team`` under ``org``; ``other`` at the top. Volcano's QueueOrderFn (capacity plugin,
    hierarchical) compares the jobs' queues' own ``spec.priority``; a parent's does not pass down."""
    t, t_groups = gangs("t", queue="team", size=8, cpu="1", created=0)
    o, o_groups = gangs("o", queue="other", size=8, cpu="1", created=5)
    snap = snapshot(
        nodes=[node("n1", cpu="8", memory="64Gi")],
        pods=t + o,
        groups=t_groups + o_groups,
        queues=[prioritised("org", org), prioritised("team", team, parent="org"), prioritised("other", other)],
    )
    assert running_groups(snap, solved(snap)) == {winner}


# --- reclaim ------------------------------------------------------------------------------------


def _reclaim_cluster(low: int, mid: int, high: int, *, guarantee: str = "6") -> Snapshot:
    """Queue ``hi`` (guaranteed six cores, so it deserves six) waits with one one-core pod; ``lo``
    fills node n1 and ``mid`` node n2 (four one-core jobs each), each deserving one core, so both
    are three cores above their shares. ``mid``'s jobs are younger."""
    lo, lo_groups = gangs("lo", 4, queue="lo", cpu="1", node="n1", created=0)
    mid_pods, mid_groups = gangs("mid", 4, queue="mid", cpu="1", node="n2", created=10)
    want, want_groups = gangs("want", queue="hi", cpu="1", created=20, phase="Inqueue")
    return snapshot(
        nodes=[node("n1", cpu="4", memory="64Gi"), node("n2", cpu="4", memory="64Gi")],
        pods=lo + mid_pods + want,
        groups=lo_groups + mid_groups + want_groups,
        queues=[
            prioritised("lo", low),
            prioritised("mid", mid),
            prioritised("hi", high, guarantee={"cpu": guarantee}),
        ],
    )


@pytest.mark.parametrize(
    ("low", "mid", "victim_queue"),
    [
        (0, 0, "mid"),  # equal: the old order (younger victims first)
        (0, 5, "lo"),  # the lower-priority queue gives first, though its pods are older
        (5, 0, "mid"),
    ],
)
def test_reclaim_takes_from_the_lowest_priority_queue_first(low: int, mid: int, victim_queue: str) -> None:
    snap = _reclaim_cluster(low, mid, 10)
    decision = solved(snap, Policy(time_limit_s=2))
    assert [e.reason for e in decision.evictions] == ["reclaim"]
    (victim,) = decision.evictions
    assert snap.queue_of(snap.pod_by_key[victim.pod]) == victim_queue
    assert [n.pod for n in decision.nominations] == ["ns/want-0-0"]


@pytest.mark.parametrize("high", [0, 10])
def test_a_queue_at_its_share_reclaims_nothing_whatever_its_priority(high: int) -> None:
    """``hi`` holds its whole deserved share (two cores on n3) and waits for a third: priority
    lets it reclaim no more than before, i.e. nothing (Volcano skips overused queues in reclaim)."""
    lo, lo_groups = gangs("lo", 4, queue="lo", cpu="1", node="n1")
    held, held_groups = gangs("held", 2, queue="hi", cpu="1", node="n2")
    want, want_groups = gangs("want", queue="hi", cpu="1", created=20, phase="Inqueue")
    snap = snapshot(
        nodes=[node("n1", cpu="4", memory="64Gi"), node("n2", cpu="2", memory="64Gi")],
        pods=lo + held + want,
        groups=lo_groups + held_groups + want_groups,
        queues=[prioritised("lo", 0), prioritised("hi", high, deserved={"cpu": "2"})],
    )
    decision = solved(snap, Policy(time_limit_s=2))
    assert decision.evictions == []
    assert "ns/want-0" not in running_groups(snap, decision)


# --- properties ---------------------------------------------------------------------------------

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
POLICIES = st.sampled_from([Policy(time_limit_s=2), NO_ENQUEUE])


def with_priorities(snap: Snapshot, priorities: list[int]) -> Snapshot:
    queues = tuple(
        q.model_copy(update={"priority": priorities[i % len(priorities)]}) for i, q in enumerate(snap.queues)
    )
    return snap.model_copy(update={"queues": queues})


@SETTINGS
@given(clusters(), POLICIES, st.integers(1, 1000))
def test_equal_priorities_decide_as_none(snap: Snapshot, policy: Policy, priority: int) -> None:
    plain = solve(snap, policy)
    same = with_priorities(snap, [priority])
    assert without_seconds(solve(same, policy)) == without_seconds(plain)


def priority_problems(case: Case) -> list[str]:
    """For a proven optimum: take a queue B untouched by preempt and reclaim (no nominations, no
    victims), one of its newly bound gangs G, and an admitted gang W waiting in a queue A of
    higher priority than B. If W's minimum fits (nodes, A's capability) into the room left after
    the decision plus G's room, W must not bring A closer to its deserved share:

        gain(A, +W) < UTILITY_SLACK

    Why: A's fair-share levels all rank above B's, and the swap keeps every hard rule. The gain is
    measured on all of A's work (each level counts only part of it, so its true gain is at least
    this, the utility being concave): a conservative check that never blames a correct decision."""
    if case.decision.solver.status != "OPTIMAL":
        return []
    snap = case.snapshot
    total = cluster_total(snap)
    deserved = deserved_shares(snap, total)
    held = queue_usage(snap)
    placed = per_queue(snap, placed_pods(case))
    room = node_room(case)
    pods = snap.pod_by_key
    priority = {q.name: q.priority for q in snap.queues}
    touched = {snap.queue_of(pods[n.pod]) for n in case.decision.nominations}
    touched |= {snap.queue_of(p) for p in evicted_pods(case)}
    placed_keys = {p.key for p in placed_pods(case)}
    bound_gangs: dict[str, list[str]] = {}
    for b in case.decision.bindings:
        bound_gangs.setdefault(pods[b.pod].group or b.pod, []).append(b.pod)

    def usage(name: str, r: str) -> int:
        return held.get(name, {}).get(r, 0) + placed.get(name, {}).get(r, 0)

    problems: list[str] = []
    for gang_key, members in sorted(bound_gangs.items()):
        b_name = snap.queue_of(pods[members[0]])
        if b_name is None or b_name in touched:
            continue
        swapped = {name: dict(free) for name, free in room.items()}
        for b in case.decision.bindings:
            if b.pod in members:
                swapped[b.node] = res.add(swapped[b.node], pods[b.pod].requests)
        for key, gang_pods in sorted(admitted_pending(case).items()):
            a_name = snap.podgroup_by_key[key].queue
            if priority.get(a_name, 0) <= priority.get(b_name, 0) or any(p.key in placed_keys for p in gang_pods):
                continue
            ra = dominant(snap, case.policy, a_name)
            if ra is None:
                continue
            running = sum(1 for p in snap.pods_of_group.get(key, ()) if p.bound)
            need = max(1, snap.podgroup_by_key[key].min_member - running)
            if not gang_fits(gang_pods, need, swapped, quota_room(case, a_name)):
                continue
            now = usage(a_name, ra)
            asked = need * gang_pods[0].requests.get(ra, 0)
            gain = part_within_share(now + asked, deserved[a_name][ra], total[ra]) - part_within_share(
                now, deserved[a_name][ra], total[ra]
            )
            if gain >= UTILITY_SLACK:
                problems.append(
                    f"queue {a_name} (priority {priority[a_name]}) would gain {gain}/1000 of its share if {key} "
                    f"took the room of {gang_key} of queue {b_name} (priority {priority[b_name]})"
                )
    return problems


def test_the_priority_checker_catches_a_lower_queue_holding_the_room() -> None:
    """The checker is shown a decision that gives the node to the lower-priority queue."""
    a, a_groups = gangs("a", queue="qa", size=8, cpu="1", phase="Inqueue")
    b, b_groups = gangs("b", queue="qb", size=8, cpu="1", phase="Inqueue")
    snap = snapshot(
        nodes=[node("n1", cpu="8", memory="64Gi")],
        pods=a + b,
        groups=a_groups + b_groups,
        queues=[prioritised("qa", 1), prioritised("qb", 0)],
    )
    good = solved(snap)
    assert priority_problems(Case(snap, NO_ENQUEUE, good)) == []
    taken = [binding.model_copy(update={"pod": f"ns/b-0-{i}"}) for i, binding in enumerate(good.bindings)]
    wrong = good.model_copy(update={"bindings": taken})
    assert priority_problems(Case(snap, NO_ENQUEUE, wrong)) != []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), POLICIES, st.lists(st.sampled_from([0, 0, 1, 2]), min_size=3, max_size=3))
def test_no_lower_priority_queue_keeps_room_a_higher_one_could_use(
    snap: Snapshot, policy: Policy, priorities: list[int]
) -> None:
    prioritized = with_priorities(snap, priorities)
    decision = solved(prioritized, policy)
    assert priority_problems(Case(prioritized, policy, decision)) == []
    assert without_seconds(solve(prioritized, policy)) == without_seconds(decision)  # deterministic


@pytest.mark.parametrize(
    ("priority_a", "priority_b", "admitted"),
    [
        (0, 0, {"ns/a"}),  # equal: the shares tie and the queue's name decides
        (5, 0, {"ns/a"}),
        (0, 5, {"ns/b"}),
    ],
)
def test_admission_walks_higher_priority_queues_first(priority_a: int, priority_b: int, admitted: set[str]) -> None:
    """Volcano's enqueue orders queues by priority before share: with room for one of two
    PodGroups (no pods yet, minResources of the whole node), the higher-priority queue's is admitted."""
    groups = [
        group("ns/a", 1, "qa", min_resources={"cpu": "8"}, created=5.0),
        group("ns/b", 1, "qb", min_resources={"cpu": "8"}, created=0.0),
    ]
    snap = snapshot(
        nodes=[node("n1", cpu="8", memory="64Gi")],
        groups=groups,
        queues=[prioritised("qa", priority_a), prioritised("qb", priority_b)],
    )
    verdicts = admit(snap, Policy())
    assert {key for key, verdict in verdicts.items() if verdict.admitted} == admitted
