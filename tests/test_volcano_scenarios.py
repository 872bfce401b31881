"""Fair sharing and disruption on random small clusters: the invariants every decision keeps.

Hypothesis builds clusters of one to three nodes shared by two or three queues (weights, some
capped by a capability, some not reclaimable) with running load of mixed priorities, some of it
protected by conformance, and a few pending gangs, some already admitted (Inqueue) and some new
(Pending). It solves one cycle with preemption and reclaim on, with and without enqueue, and
checks what issue 3 promises:

- the validator (``check``) finds nothing, and no protected pod is ever a victim;
- every eviction is justified (:func:`eviction_problems`);
- idle room is lent: work conservation (:func:`idle_room_problems`);
- queue fairness (:func:`fairness_problems`, whose docstring states and justifies the invariant).

Protected running pods are mixed with unprotected ones of the same priority on purpose, so that a
solver picking victims by age alone would pick a protected one. Each invariant's checker is also
shown a hand-made decision that breaks it, so that a checker which can never fail is caught.

The validator property runs here on clusters without queue capabilities: with them it finds a
known solver bug (tests/test_issue3_pending.py, "stale capability in the preempt phase").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from builders import bind, decision, evict, gangs, group, node, nominate, pod, queue, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcsat.model import Decision, Pod, Policy, Snapshot
from vcsat.model import resources as res
from vcsat.model.conformance import protection
from vcsat.solver import check, solve
from vcsat.solver.objectives.fairness import fair_resources, share_utility
from vcsat.solver.problem import build_problem
from vcsat.solver.shares import cluster_total, deserved_shares, queue_usage

POLICY = Policy(time_limit_s=2)
POLICIES = st.sampled_from([POLICY, Policy(time_limit_s=2, enqueue=False)])
"""With enqueue (admission) and without: the invariants hold either way."""
SHARE_SCALE = 1000
"""Shares are compared in thousandths of the cluster, the grain of the queue fair-share level."""
FAIR = (res.CPU, res.MEMORY)
"""The resources queues share in these clusters (the pods count is a per-node limit, not shared)."""

PROTECTIONS = ("", "", "", "", "preemptable", "kube-system", "critical", "terminating")


@dataclass(frozen=True)
class Case:
    snapshot: Snapshot
    policy: Policy
    decision: Decision


@st.composite
def clusters(draw: st.DrawFn, *, capabilities: bool = True) -> Snapshot:
    """One to three nodes, two or three queues, running load that fits, one to five pending gangs.

    Requests are whole cores and 1-2 GiB, so one pod is always more than a thousandth of the
    cluster on every shared resource (the fairness invariant's grain)."""
    nodes = [
        node(f"n{i}", cpu=draw(st.sampled_from(["4", "8"])), memory="16Gi") for i in range(draw(st.integers(1, 3)))
    ]
    queue_names = [f"q{i}" for i in range(draw(st.integers(2, 3)))]
    caps = [None, None, None, {"cpu": "3"}, {"cpu": "6"}] if capabilities else [None]
    queues = [
        queue(
            name,
            weight=draw(st.integers(1, 3)),
            reclaimable=draw(st.sampled_from([True, True, True, False])),
            capability=draw(st.sampled_from(caps)),
        )
        for name in queue_names
    ]
    free = {n.name: n.allocatable[res.CPU] for n in nodes}
    pods: list[Pod] = []
    groups = []
    for j in range(draw(st.integers(0, 8))):
        size = draw(st.integers(1, 2))
        cpu = draw(st.sampled_from([1, 2]))
        where = draw(st.sampled_from(sorted(free)))
        if free[where] < size * cpu * 1000:
            continue
        free[where] -= size * cpu * 1000
        guard = draw(st.sampled_from(PROTECTIONS))
        key = f"{'kube-system' if guard == 'kube-system' else 'ns'}/run-{j}"
        priority = draw(st.sampled_from([1, 1, 5, 10]))
        minimum = draw(st.integers(1, size))
        owner = draw(st.sampled_from(queue_names))
        groups.append(group(key, minimum, owner, priority=priority, phase="Running"))
        pods += [
            pod(
                f"{key}-{i}",
                cpu=cpu,
                group=key,
                node=where,
                priority=priority,
                preemptable=guard != "preemptable",
                priority_class="system-cluster-critical" if guard == "critical" else "",
                terminating=guard == "terminating",
                created=float(j),
            )
            for i in range(size)
        ]
    for j in range(draw(st.integers(1, 5))):
        size = draw(st.integers(1, 3))
        key = f"ns/job-{j}"
        priority = draw(st.sampled_from([1, 5, 10, 10]))
        # Admitted in an earlier cycle (Inqueue), or new (Pending: enqueue decides first).
        phase = draw(st.sampled_from(["", "Inqueue"]))
        minimum = draw(st.integers(1, size))
        groups.append(group(key, minimum, draw(st.sampled_from(queue_names)), priority=priority, phase=phase))
        cpu = draw(st.sampled_from([1, 2]))
        memory = draw(st.sampled_from(["1Gi", "2Gi"]))
        created = 100.0 + draw(st.integers(0, 50))
        pods += [
            pod(f"{key}-{i}", cpu=cpu, memory=memory, group=key, priority=priority, created=created)
            for i in range(size)
        ]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


def solved(snap: Snapshot, policy: Policy) -> Case:
    return Case(snap, policy, solve(snap, policy))


# --- what a decision did, per queue -----------------------------------------------------------


def placed_pods(case: Case) -> list[Pod]:
    pods = case.snapshot.pod_by_key
    return [pods[b.pod] for b in case.decision.bindings] + [pods[n.pod] for n in case.decision.nominations]


def evicted_pods(case: Case) -> list[Pod]:
    return [case.snapshot.pod_by_key[e.pod] for e in case.decision.evictions]


def per_queue(snap: Snapshot, pods: list[Pod]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for p in pods:
        name = snap.queue_of(p)
        if name is not None:
            out[name] = res.add(out[name], p.requests)
    return out


def dominant(snap: Snapshot, policy: Policy, queue: str) -> str | None:
    """The resource the solver judges a queue's share on (its dominant binding deserved one)."""
    found = fair_resources(build_problem(snap, policy), queue)
    return found[0] if found else None


def node_room(case: Case) -> dict[str, dict[str, int]]:
    """Per node, what no pod holds after the decision: allocatable less every bound pod (victims
    and terminating pods still hold their room), every binding and every nomination."""
    room = {n.name: dict(n.allocatable) for n in case.snapshot.nodes}
    taken = [p for p in case.snapshot.pods if p.bound]
    for p in taken:
        room[p.node_name or ""] = res.sub(room[p.node_name or ""], p.requests)
    pods = case.snapshot.pod_by_key
    for placement in [*case.decision.bindings, *case.decision.nominations]:
        room[placement.node] = res.sub(room[placement.node], pods[placement.pod].requests)
    return room


def quota_room(case: Case, name: str) -> dict[str, int] | None:
    """What the queue's capability still allows after the decision (victims still counted)."""
    capped = case.snapshot.queue_by_name[name].capability
    if capped is None:
        return None
    held = queue_usage(case.snapshot).get(name, {})
    added = per_queue(case.snapshot, placed_pods(case)).get(name, {})
    return {r: cap - held.get(r, 0) - added.get(r, 0) for r, cap in capped.items()}


def fits_count(request: dict[str, int], room: dict[str, dict[str, int]]) -> int:
    """How many pods of ``request`` fit into the per-node ``room`` together."""
    count = 0
    for free in room.values():
        asked = [(r, amount) for r, amount in request.items() if amount > 0]
        count += min((max(0, free.get(r, 0)) // amount for r, amount in asked), default=0)
    return count


def gang_fits(pods: list[Pod], need: int, room: dict[str, dict[str, int]], quota: dict[str, int] | None) -> bool:
    """Whether ``need`` of the gang's (identical) pending pods fit the room and the queue's quota."""
    if need <= 0 or not pods:
        return False
    request = pods[0].requests
    if quota is not None and any(request.get(r, 0) * need > left for r, left in quota.items()):
        return False
    return fits_count(request, room) >= need


def admitted_pending(case: Case) -> dict[str, list[Pod]]:
    """Per PodGroup that enqueue admitted (placed, or waiting Inqueue), its pending pods. Groups
    the admission holds back (phase Pending) are not the allocator's to place."""
    phase = {o.podgroup: o.phase for o in case.decision.podgroups}
    out: dict[str, list[Pod]] = defaultdict(list)
    for p in case.snapshot.pods:
        if p.pending and p.group is not None and phase.get(p.group) != "Pending":
            out[p.group].append(p)
    return out


# --- the invariants, as checkers that list what breaks them -----------------------------------


def eviction_problems(case: Case) -> list[str]:
    """Every eviction must be justified.

    - ``preempt``: a new placement (binding or nomination) in the victim's own queue has a higher
      priority than the victim;
    - ``reclaim``: the victim's queue is reclaimable and, after the decision (its new placements
      in, its victims out), still holds at least its deserved share on its dominant resource; and
      some other queue that gets new placements held less than its own share before them (its
      victims, if any, taken out).
    And no protected pod (conformance) is a victim at all.
    """
    snap = case.snapshot
    total = cluster_total(snap)
    deserved = deserved_shares(snap, total)
    held = queue_usage(snap)
    placed = per_queue(snap, placed_pods(case))
    evicted = per_queue(snap, evicted_pods(case))
    reasons = {e.pod: e.reason for e in case.decision.evictions}
    problems: list[str] = []
    for victim in evicted_pods(case):
        if protection(victim):
            problems.append(f"{victim.key} evicted although it {protection(victim)}")
        name = snap.queue_of(victim) or ""
        if reasons[victim.key] == "preempt":
            if not any(snap.queue_of(p) == name and p.priority > victim.priority for p in placed_pods(case)):
                problems.append(f"{victim.key} preempted without a higher-priority placement in queue {name}")
            continue
        if not snap.queue_by_name[name].reclaimable:
            problems.append(f"{victim.key} reclaimed from queue {name}, which is not reclaimable")
        r = dominant(snap, case.policy, name) or ""
        after = held[name].get(r, 0) + placed.get(name, {}).get(r, 0) - evicted[name].get(r, 0)
        if after < deserved[name][r]:
            problems.append(f"reclaim leaves {name} at {after} {r}, below its deserved {deserved[name][r]}")
        takers = [
            other
            for other in placed
            if other != name
            and held[other].get(ro := (dominant(snap, case.policy, other) or ""), 0) - evicted.get(other, {}).get(ro, 0)
            < deserved[other][ro]
        ]
        if not takers:
            problems.append(f"{victim.key} reclaimed for no queue below its deserved share")
    return problems


def idle_room_problems(case: Case) -> list[str]:
    """Work conservation, for a proven optimum (status OPTIMAL): after the decision, no admitted
    gang left waiting fits its minimum (minMember less its running members), and no placed gang
    fits one more pod, into the room no pod holds or is promised (victims still hold theirs, and
    nominations count as well) within its queue's capability. Such a gang would add placed work
    without lowering any more important objective level."""
    if case.decision.solver.status != "OPTIMAL":
        return []
    snap = case.snapshot
    room = node_room(case)
    placed = {p.key for p in placed_pods(case)}
    problems: list[str] = []
    for key, pods in sorted(admitted_pending(case).items()):
        group_ = snap.podgroup_by_key[key]
        running = sum(1 for p in snap.pods_of_group.get(key, ()) if p.bound)
        left = [p for p in pods if p.key not in placed]
        got = len(pods) - len(left)
        need = 1 if got else max(1, group_.min_member - running)
        if len(left) >= need and gang_fits(left, need, room, quota_room(case, group_.queue)):
            problems.append(f"{key} ({'placed' if got else 'waiting'}) still fits in idle room")
    return problems


UTILITY_SLACK = 8
"""One thousandth of rounding in a share, times the utility's steepest slope (4), twice."""


def part_within_share(usage: int, deserved: int, total: int) -> int:
    """What the solver's queue fair-share level counts for a queue on its dominant resource: the
    concave utility of the part of its deserved share it holds (thousandths of the share)."""
    if deserved <= 0:
        return 0
    return share_utility(min(SHARE_SCALE, SHARE_SCALE * usage // deserved))


def fairness_problems(case: Case) -> list[str]:
    """The fairness invariant, for a proven optimum (status OPTIMAL).

    A queue's *part within its share* is what it holds (before the cycle, plus its new
    placements) on its dominant resource, in thousandths of the cluster, capped at its deserved
    share. Take a queue B with no nominations and no victims this cycle, one of its newly bound
    gangs G, and an admitted gang W waiting in another queue A. If W's minimum fits (nodes and
    A's capability) into the room left after the decision plus G's room, then swapping G for W
    must not raise A's part within its share by more than it lowers B's:

        gain(A, +W) < loss(B, −G) + 2

    In words: no queue stays below its deserved share while another queue, above its own, keeps
    new room that the first could use, unless the first's waiting gangs fit nowhere.

    Parts are measured as the solver's first objective level does: the concave utility of the part
    of its deserved share a queue holds (thousandths of the share), so "gain" and "loss" compare
    utilities. Why this and not more: that level maximises the sum of the queues' utilities; the swap
    keeps every hard rule, so an optimum never leaves one
    open that raises the sum. The margin of two thousandths absorbs one unit of rounding: A's part
    is measured on the final count, which may hold a little more than the allocate phase gave it.
    Stronger statements ("no queue below its share while another is above") hold for no solver:
    whole pods and gangs do not divide into shares, and a queue whose waiting gangs fit nowhere
    cannot be helped. Queues with nominations or victims are left out because their placements
    come partly from the preempt and reclaim phases, which run after allocate with their own
    objective.
    """
    if case.decision.solver.status != "OPTIMAL":
        return []
    snap = case.snapshot
    total = cluster_total(snap)
    deserved = deserved_shares(snap, total)
    held = queue_usage(snap)
    room = node_room(case)
    pods = snap.pod_by_key
    touched = {snap.queue_of(pods[n.pod]) for n in case.decision.nominations}
    touched |= {snap.queue_of(p) for p in evicted_pods(case)}
    bound_gangs: dict[str, list[str]] = defaultdict(list)
    for b in case.decision.bindings:
        bound_gangs[pods[b.pod].group or b.pod].append(b.pod)
    placed_keys = {p.key for p in placed_pods(case)}

    def usage(name: str, r: str) -> int:
        # What the queue's top-tier level counts: all it holds, plus its new work of at least its
        # highest pending priority (lower tiers do not count at that level).
        added = [p for p in placed_pods(case) if snap.queue_of(p) == name and p.priority >= top.get(name, 0)]
        return held.get(name, {}).get(r, 0) + res.total(p.requests for p in added).get(r, 0)

    def part(name: str, r: str, amount: int) -> int:
        return part_within_share(amount, deserved[name][r], total[r])

    waiting: dict[str, list[tuple[str, list[Pod]]]] = defaultdict(list)
    for key, gang_pods in sorted(admitted_pending(case).items()):
        if not any(p.key in placed_keys for p in gang_pods):
            waiting[snap.podgroup_by_key[key].queue].append((key, gang_pods))

    # The levels come in tiers of each queue's own priorities (its highest first); the swap argument
    # holds between gangs of their queues' top tier.
    top: dict[str, int] = {}
    for key, gang_pods in admitted_pending(case).items():
        name = snap.podgroup_by_key[key].queue
        top[name] = max(top.get(name, gang_pods[0].priority), gang_pods[0].priority)

    problems: list[str] = []
    for gang_key, members in sorted(bound_gangs.items()):
        b_name = snap.queue_of(pods[members[0]])
        if b_name is None or b_name in touched or pods[members[0]].priority < top.get(b_name, 0):
            continue
        rb = dominant(snap, case.policy, b_name)
        if rb is None:
            continue
        freed = res.total(pods[k].requests for k in members).get(rb, 0)
        loss = part(b_name, rb, usage(b_name, rb)) - part(b_name, rb, usage(b_name, rb) - freed)
        swapped = {name: dict(free) for name, free in room.items()}
        for b in case.decision.bindings:
            if b.pod in members:
                swapped[b.node] = res.add(swapped[b.node], pods[b.pod].requests)
        for a_name, gangs_waiting in sorted(waiting.items()):
            if a_name == b_name:
                continue
            ra = dominant(snap, case.policy, a_name)
            if ra is None:
                continue
            for key, gang_pods in gangs_waiting:
                if gang_pods[0].priority < top.get(a_name, 0):
                    continue
                group_ = snap.podgroup_by_key[key]
                running = sum(1 for p in snap.pods_of_group.get(key, ()) if p.bound)
                need = max(1, group_.min_member - running)
                if not gang_fits(gang_pods, need, swapped, quota_room(case, a_name)):
                    continue
                asked = need * gang_pods[0].requests.get(ra, 0)
                gain = part(a_name, ra, usage(a_name, ra) + asked) - part(a_name, ra, usage(a_name, ra))
                if gain >= loss + UTILITY_SLACK:
                    problems.append(
                        f"queue {a_name} would gain {gain}/1000 of its share and {b_name} lose {loss}/1000 "
                        f"if {key} took the room of {gang_key}"
                    )
    return problems


# --- properties -------------------------------------------------------------------------------

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(clusters(capabilities=False), POLICIES)
def test_validator_finds_nothing(snap: Snapshot, policy: Policy) -> None:
    case = solved(snap, policy)
    assert check(snap, case.decision, policy) == []


@SETTINGS
@given(clusters(), POLICIES)
def test_every_eviction_is_justified_and_spares_protected_pods(snap: Snapshot, policy: Policy) -> None:
    assert eviction_problems(solved(snap, policy)) == []


@SETTINGS
@given(clusters(), POLICIES)
def test_idle_room_is_lent(snap: Snapshot, policy: Policy) -> None:
    assert idle_room_problems(solved(snap, policy)) == []


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), POLICIES)
def test_no_queue_below_its_share_while_another_keeps_room_it_could_use(snap: Snapshot, policy: Policy) -> None:
    assert fairness_problems(solved(snap, policy)) == []


# --- the checkers catch what they are for ------------------------------------------------------


def _two_queues_one_node() -> Snapshot:
    """qa and qb (equal weights) each want four admitted one-core jobs; one node of four cores.
    qb also runs a priority-1 pod on a second node of one core."""
    a, a_groups = gangs("a", 4, queue="qa", phase="Inqueue", created=10)
    b, b_groups = gangs("b", 4, queue="qb", phase="Inqueue", created=10)
    run, run_groups = gangs("run", queue="qb", priority=1, node="n2")
    return snapshot(
        nodes=[node("n1", cpu="4", memory="64Gi"), node("n2", cpu="1", memory="64Gi")],
        pods=a + b + run,
        groups=a_groups + b_groups + run_groups,
        queues=[queue("qa"), queue("qb")],
    )


def test_checkers_accept_the_solvers_own_decision() -> None:
    snap = _two_queues_one_node()
    case = solved(snap, POLICY)
    assert eviction_problems(case) == idle_room_problems(case) == fairness_problems(case) == []


@pytest.mark.parametrize(
    ("checker", "made", "words"),
    [
        # qb takes the whole node: qa, below its share, could use the room of any of qb's jobs.
        (
            fairness_problems,
            {"bindings": [bind(f"ns/b-{j}-0", "n1") for j in range(4)]},
            "queue qa would gain",
        ),
        # nothing placed although the node is idle
        (idle_room_problems, {}, "still fits in idle room"),
        # qb's only running pod reclaimed for qa: qb is not above its share
        (
            eviction_problems,
            {
                "bindings": [bind(f"ns/{x}-{j}-0", "n1") for x in "ab" for j in range(2)],
                "nominations": [nominate("ns/a-2-0", "n2")],
                "evictions": [evict("ns/run-0-0", "reclaim")],
            },
            "below its deserved",
        ),
        # a priority-1 pod preempted for priority-0 work
        (
            eviction_problems,
            {"nominations": [nominate("ns/b-0-0", "n2")], "evictions": [evict("ns/run-0-0", "preempt")]},
            "without a higher-priority placement",
        ),
    ],
    ids=["unfair", "idle", "reclaim-below-share", "preempt-upwards"],
)
def test_checkers_catch_a_decision_that_breaks_their_invariant(
    checker: Callable[[Case], list[str]], made: dict[str, Any], words: str
) -> None:
    snap = _two_queues_one_node()
    made_up = decision(snap, **made)
    # Every group was admitted: the ones left out wait Inqueue.
    waiting = [o.model_copy(update={"phase": "Inqueue"}) if o.phase == "Pending" else o for o in made_up.podgroups]
    case = Case(snap, POLICY, made_up.model_copy(update={"podgroups": waiting}))
    problems = checker(case)
    assert any(words in problem for problem in problems), problems
