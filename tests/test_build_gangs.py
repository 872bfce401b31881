"""The build's gangs as the straightforward computation makes them: gangs ordered by their pods'
earliest creation (then key), each gang's pods by (creation, key), its gated pods, the first pod
whose PodGroup is missing, its need and pending count (``_prefilter``); the greedy room's fit test
and the fair-share terms against their plain definitions. The build finds these in one pass each
(and keeps the earliest creation while grouping): the tables and properties here hold them to what
the plain code says."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import group, node, pod, queue, snapshot
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.model import Pod, Policy, Snapshot
from vcsat.solver import greedy
from vcsat.solver.objectives import fairness
from vcsat.solver.problem import Problem, build_problem

GANG_ON = Policy(time_limit_s=2)
GANG_OFF = Policy(time_limit_s=2, gang=False)


def reference_gangs(snap: Snapshot, policy: Policy) -> list[tuple[str, list[str], list[str], str | None]]:
    """Per gang in order: its key, its placeable pods and its gated pods (in order), the first
    pod's missing PodGroup; computed the plain way."""
    pending = [p for p in snap.pods if p.pending and p.managed]
    by_gang: dict[str, list[Pod]] = {}
    for p in pending:
        by_gang.setdefault(p.group if (p.group is not None and policy.gang) else p.key, []).append(p)
    out = []
    for key in sorted(by_gang, key=lambda k: (min(p.created for p in by_gang[k]), k)):
        every = sorted(by_gang[key], key=lambda p: (p.created, p.key))
        missing = next((p.group for p in every if p.group is not None and p.group not in snap.podgroup_by_key), None)
        out.append((key, [p.key for p in every if not p.held], [p.key for p in every if p.held], missing))
    return out


def built_gangs(problem: Problem) -> list[tuple[str, list[str], list[str], str | None]]:
    out = []
    for gang in problem.gangs:
        pods = sorted(
            ((p.created, p.key) for c in gang.classes for p in problem.classes[c].pods),
        )
        out.append((gang.key, [key for _, key in pods], [p.key for p in gang.held], gang.missing_group))
    return out


def test_gangs_ordered_by_earliest_pod_then_key() -> None:
    snap = snapshot(
        nodes=[node("n1", cpu="64")],
        pods=[
            pod("ns/b-1", group="ns/b", created=5),
            pod("ns/b-0", group="ns/b", created=1),  # b's earliest comes second
            pod("ns/a-0", group="ns/a", created=3),
            pod("ns/lone", created=1),  # ties with b: the key decides
            pod("ns/c-0", group="ns/c", created=2, gates=["wait"]),
            pod("ns/c-1", group="ns/c", created=2),
        ],
        groups=[group("ns/a"), group("ns/b", min_member=2), group("ns/c", min_member=2)],
    )
    problem = build_problem(snap, GANG_ON)
    assert [g.key for g in problem.gangs] == ["ns/b", "ns/lone", "ns/c", "ns/a"]
    assert built_gangs(problem) == reference_gangs(snap, GANG_ON)
    (c,) = (g for g in problem.gangs if g.key == "ns/c")
    assert [p.key for p in c.held] == ["ns/c-0"]


def test_the_first_pod_with_a_missing_podgroup_is_named() -> None:
    snap = snapshot(
        nodes=[node("n1", cpu="64")],
        pods=[pod("ns/x-0", group="ns/gone", created=1), pod("ns/y", created=0)],
    )
    problem = build_problem(snap, GANG_ON)
    assert [(g.key, g.missing_group) for g in problem.gangs] == [("ns/y", None), ("ns/gone", "ns/gone")]
    off = build_problem(snap, GANG_OFF)
    assert [(g.key, g.missing_group) for g in off.gangs] == [("ns/y", None), ("ns/x-0", "ns/gone")]


def test_a_gang_short_of_pending_pods_is_blocked_as_before() -> None:
    snap = snapshot(
        nodes=[node("n1", cpu="64")],
        pods=[pod("ns/g-0", group="ns/g", created=1), pod("ns/g-1", group="ns/g", created=2)],
        groups=[group("ns/g", min_member=3)],
    )
    problem = build_problem(snap, GANG_ON)
    (gang,) = problem.gangs
    blocked = problem.blocked[gang.index]
    assert blocked.reason == "GangUnsatisfied"
    assert blocked.message.startswith("2 pending pods can never reach minMember 3")


@st.composite
def gang_snapshots(draw: st.DrawFn) -> Snapshot:
    names = ["ns/g0", "ns/g1", "ns/g2", "ns/g3"]
    present = draw(st.lists(st.sampled_from(names), unique=True))
    pods = []
    for i in range(draw(st.integers(0, 14))):
        owner = draw(st.sampled_from([None, *names]))
        pods.append(
            pod(
                f"ns/p{i}",
                group=owner,
                created=draw(st.sampled_from([0.0, 1.0, 2.5, 3.0])),
                gates=["g"] if draw(st.booleans()) and draw(st.booleans()) else [],
                queue_name=draw(st.sampled_from([None, "default"])),
            )
        )
    groups = [group(name, min_member=draw(st.integers(1, 3)), created=float(k)) for k, name in enumerate(present)]
    return snapshot(nodes=[node("n1", cpu="64"), node("n2", cpu="8")], pods=pods, groups=groups, queues=[queue("q")])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=gang_snapshots(), gang=st.booleans())
def test_built_gangs_are_the_plain_computations(snap: Snapshot, gang: bool) -> None:
    policy = GANG_ON if gang else GANG_OFF
    problem = build_problem(snap, policy)
    assert built_gangs(problem) == reference_gangs(snap, policy)
    for g in problem.gangs:
        pending = sum(len(problem.classes[c].pods) for c in g.classes)
        reason = problem.blocked[g.index].reason if g.index in problem.blocked else None
        if reason == "GangUnsatisfied":
            assert pending < g.need
            assert problem.blocked[g.index].message.startswith(f"{pending} pending pods")
        if g.group is not None and not g.group.min_task_member:
            members = snap.pods_of_group.get(g.group.key, ())
            assert g.need == max(0, g.group.min_member - sum(1 for p in members if p.gang_ready))


def generated(seed: int) -> Problem:
    options = GeneratorOptions(nodes=16, pending_jobs=30, seed=seed, busy_gpu_fraction=0.7)
    instance = generate_instance(options)
    return build_problem(snapshot_from_objects(instance["items"], source="generated"), GANG_ON)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 500), picks=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), max_size=30))
def test_room_fits_is_the_plain_test(seed: int, picks: list[tuple[int, int]]) -> None:
    problem = generated(seed)
    room = greedy.Room(problem)
    for n, s in picks:
        if not problem.shapes:
            return
        node_index, shape = n % len(problem.nodes), problem.shapes[s % len(problem.shapes)]
        request = shape.request
        whole, share = room.parts(request)
        free, whole_free = room.free[node_index], room.whole[node_index]
        plain = all(a <= r for a, r in zip(request, free, strict=True)) and whole <= whole_free
        if plain and share > 0:
            plain = any(u + share <= 1000 for u in room.shared[node_index].values()) or whole_free - whole >= 1
        assert room.fits(node_index, request) == plain
        if plain and s % 3 == 0:
            room.take(node_index, request)  # the room changes between tests


def plain_fair_terms(problem: Problem, rank: int) -> list[tuple[str, str, int, int, list[int]]]:
    """``fairness._fair_terms`` as it read each class's request per resource."""
    priority = fairness.fair_levels(problem)[rank][0]
    thresholds = {
        q: fairness.tier_threshold(problem, q, rank)
        for q in fairness._queue_tiers(problem)
        if problem.queue_priority(q) == priority
    }
    by_queue: dict[str, list[int]] = {}
    for gang in problem.candidates:
        threshold = thresholds.get(gang.queue)
        if threshold is None or gang.rank < threshold:
            continue
        for c in gang.classes:
            if problem.shapes[problem.classes[c].shape].nodes:
                by_queue.setdefault(gang.queue, []).append(c)
    out = []
    for q, classes in sorted(by_queue.items()):
        if q not in problem.deserved:
            continue
        for name in fairness.fair_resources(problem, q):
            r = problem.resource_index(name)
            cap = problem.deserved[q][name]
            held = fairness._held(problem, q, name)
            if held >= cap:
                continue
            asked = [c for c in classes if problem.shapes[problem.classes[c].shape].request[r] > 0]
            if asked:
                out.append((q, name, cap, held, asked))
    return out


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 500))
def test_fair_terms_are_the_plain_computation(seed: int) -> None:
    problem = generated(seed)
    for rank in range(len(fairness.fair_levels(problem))):
        assert fairness._fair_terms(problem, rank) == plain_fair_terms(problem, rank)
