"""The indexed greedy room answers as a scan over nodes does: query for query, and the greedy, the
explanations and the whole cycle decide the same with either.

``tests/greedy_reference.py`` keeps the scan (the room as it was before it was indexed). Each
case runs with the indexed room's Python short-cut for small node lists turned off, so the numpy
paths are the ones compared even on clusters of a few nodes.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from builders import node, pod, snapshot, term
from greedy_reference import ScanRoom
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.model import Policy, Snapshot
from vcsat.model.cluster import PreferredSchedulingTerm
from vcsat.solver import explain, greedy
from vcsat.solver.pricing import scarcity
from vcsat.solver.problem import Problem, build_problem

POLICY = Policy(time_limit_s=2)


@pytest.fixture(autouse=True)
def numpy_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(greedy, "SMALL_SCAN", 0)


def generated(**options: Any) -> Snapshot:
    instance = generate_instance(GeneratorOptions(**options))
    return snapshot_from_objects(instance["items"], source="generated")


@st.composite
def racked_clusters(draw: st.DrawFn) -> tuple[Snapshot, int]:
    """A random generated cluster in racks of four, two racks a spine, and its seed: what the
    exchange's properties comparing a cheaper path with the plain one draw."""
    nodes = draw(st.integers(4, 30))
    jobs = draw(st.integers(10, 150))
    seed = draw(st.integers(0, 10_000))
    snap = generated(
        nodes=nodes,
        pending_jobs=jobs,
        seed=seed,
        busy_gpu_fraction=draw(st.sampled_from([0.2, 0.6, 0.9])),
        multi_node_job_share=draw(st.sampled_from([0.1, 0.4])),
        ps_worker_job_share=draw(st.sampled_from([0.0, 0.3])),
        rack_size=4,
        racks_per_spine=2,
    )
    return snap, seed


def decide(problem_of: Any, monkeypatch: pytest.MonkeyPatch, room: type) -> tuple[Any, ...]:
    """The greedy decision and the explanations, with this room class."""
    with monkeypatch.context() as patch:
        patch.setattr(greedy, "Room", room)
        patch.setattr(explain, "Room", room)
        problem = problem_of()
        hint = greedy.greedy(problem)
        reasons = explain.outcomes(problem, hint)
    return (
        sorted(hint.placed),
        sorted(hint.count.items()),
        sorted(hint.shape_slots.items()),
        sorted(hint.gang_slots.items()),
        [(o.podgroup, o.phase, o.reason, o.message) for o in reasons],
    )


def same_decisions(snap: Snapshot, policy: Policy, monkeypatch: pytest.MonkeyPatch) -> None:
    def problem_of() -> Problem:
        return build_problem(snap, policy)

    indexed = decide(problem_of, monkeypatch, greedy.Room)
    scanned = decide(problem_of, monkeypatch, ScanRoom)
    assert indexed == scanned
    assert indexed[0], "the case places something"


@pytest.mark.pure_only
@pytest.mark.parametrize(
    "options",
    [
        {"nodes": 48, "pending_jobs": 90, "seed": 1},
        {"nodes": 64, "pending_jobs": 160, "seed": 2, "busy_gpu_fraction": 0.7},
        {"nodes": 40, "pending_jobs": 80, "seed": 3, "multi_node_job_share": 0.3, "rack_size": 4},
        {"nodes": 40, "pending_jobs": 60, "seed": 4, "anti_affinity_share": 0.3},
        {"nodes": 40, "pending_jobs": 60, "seed": 5, "spread_job_share": 0.3, "rack_size": 8},
    ],
    ids=["plain", "busy", "multi-node", "anti-affinity", "spread"],
)
def test_generated_clusters_decide_alike(options: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    same_decisions(generated(**options), POLICY, monkeypatch)


SLOW_OK = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@pytest.mark.pure_only
@settings(max_examples=12, deadline=None, suppress_health_check=SLOW_OK)
@given(
    nodes=st.integers(6, 40),
    jobs=st.integers(10, 60),
    seed=st.integers(0, 10_000),
    busy=st.sampled_from([0.2, 0.5, 0.8]),
    multi=st.sampled_from([0.05, 0.3]),
    rack=st.sampled_from([2, 4, 16]),
)
def test_random_generated_clusters_decide_alike(
    nodes: int, jobs: int, seed: int, busy: float, multi: float, rack: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = generated(
        nodes=nodes,
        pending_jobs=jobs,
        seed=seed,
        busy_gpu_fraction=busy,
        multi_node_job_share=multi,
        rack_size=rack,
        racks_per_spine=2,
    )
    same_decisions(snap, POLICY, monkeypatch)


def prefer(weight: int, requirement: str) -> PreferredSchedulingTerm:
    return PreferredSchedulingTerm(weight=weight, preference=term(requirement))


@st.composite
def shared_gpu_clusters(draw: st.DrawFn) -> Snapshot:
    """GPU nodes in racks (some with a PreferNoSchedule taint), some GPUs held by shares of bound
    pods, pending gangs of whole GPUs and shares; some pinned to one rack (eligible on few nodes),
    some preferring a rack."""
    rng = random.Random(draw(st.integers(0, 10_000)))
    nodes = [
        node(
            f"n{i}",
            cpu=rng.choice(["8", "16", "32"]),
            memory="64Gi",
            gpus=rng.choice([2, 4, 8]),
            labels={"rack": f"r{i % 6}"},
            taints=["spot:PreferNoSchedule"] if rng.random() < 0.2 else [],
        )
        for i in range(draw(st.integers(2, 16)))
    ]
    pods = []
    for i, n in enumerate(nodes):
        if rng.random() < 0.5:
            pods.append(pod(f"b/s{i}", cpu="1", gpu_milli=rng.choice([250, 500, 700]), node=n.name, gpu_ids=[0]))
        if rng.random() < 0.4 and n.gpus > 2:
            pods.append(pod(f"b/w{i}", cpu="2", gpus=2, node=n.name, gpu_ids=[n.gpus - 2, n.gpus - 1]))
    for g in range(draw(st.integers(1, 10))):
        size = rng.choice([1, 1, 2, 3])
        milli = rng.choice([0, 0, 300, 500])
        gpus = 0 if milli else rng.choice([1, 2, 4])
        selector = {"rack": f"r{rng.randrange(6)}"} if rng.random() < 0.3 else None
        wish = (prefer(rng.choice([1, 50]), f"rack in (r{rng.randrange(6)})"),) if rng.random() < 0.3 else ()
        for k in range(size):
            made = pod(
                f"p/g{g}-{k}",
                cpu=rng.choice(["1", "2"]),
                gpus=gpus,
                gpu_milli=milli,
                created=float(g),
                selector=selector,
            )
            pods.append(made.model_copy(update={"preferred_affinity": wish}) if wish else made)
    return snapshot(nodes=nodes, pods=pods)


@pytest.mark.pure_only
@settings(max_examples=40, deadline=None, suppress_health_check=SLOW_OK)
@given(snap=shared_gpu_clusters())
def test_gpu_shares_decide_alike(snap: Snapshot, monkeypatch: pytest.MonkeyPatch) -> None:
    def problem_of() -> Problem:
        return build_problem(snap, POLICY)

    assert decide(problem_of, monkeypatch, greedy.Room) == decide(problem_of, monkeypatch, ScanRoom)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), steps=st.integers(5, 60))
def test_room_queries_agree_with_the_scan(seed: int, steps: int) -> None:
    """Random takes and gives; after each, every query the greedy asks answers alike."""
    problem = build_problem(
        generated(nodes=30, pending_jobs=40, seed=seed % 50, rack_size=4, racks_per_spine=2), POLICY
    )
    indexed, scanned = greedy.Room(problem), ScanRoom(problem)
    rng = random.Random(seed)
    taken: list[tuple[int, tuple[int, ...]]] = []
    domains = problem.domains
    for _ in range(steps):
        shape = rng.choice(problem.shapes)
        if taken and rng.random() < 0.3:
            node_index, request = taken.pop()
            indexed.give(node_index, request)
            scanned.give(node_index, request)
        else:
            where = indexed.best_fit(shape.request, shape.gpus, shape.upper)
            assert where == scanned.best_fit(shape.request, shape.gpus, shape.upper)
            if where is not None:
                indexed.take(where, shape.request)
                scanned.take(where, shape.request)
                taken.append((where, shape.request))
        for gpus in (1, 4, 8, 16):
            assert indexed.fullest_with(gpus) == scanned.fullest_with(gpus)
        if domains is not None:
            for tier in domains.tiers:
                for name in domains.domains(tier):
                    nodes = domains.nodes_in(tier, name)
                    assert indexed.free_gpus_in(domains, tier, name) == scanned.free_gpus_in(domains, tier, name)
                for needed in (1, 8, 16):
                    assert indexed.roomy_domains(domains, tier, needed) == scanned.roomy_domains(domains, tier, needed)
                    assert indexed.best_fit_in(shape.request, shape.upper, nodes) == scanned.best_fit_in(
                        shape.request, shape.upper, nodes
                    )
        assert indexed.free == scanned.free


@pytest.mark.pure_only  # hands compiled code a stand-in room (greedy_reference.ScanRoom)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(seed=st.integers(0, 10_000), steps=st.integers(5, 40), busy=st.sampled_from([0.2, 0.6, 0.9]))
@pytest.mark.parametrize("plain_nodes", [0, 3], ids=["gpu-nodes-only", "with-cpu-nodes"])
def test_priced_queries_agree_with_the_scan(seed: int, steps: int, busy: float, plain_nodes: int) -> None:
    """The scarce-pool choice (priced with numpy) is the per-node reference's, as room changes;
    with nodes without GPUs, pods asking none are priced for the GPU room they would strand."""
    cluster = generated(nodes=30, pending_jobs=40, seed=seed % 50, busy_gpu_fraction=busy)
    if plain_nodes:
        extra_nodes = [node(f"cpu-{i}", cpu="32", memory="128Gi") for i in range(plain_nodes)]
        extra_pods = [pod(f"ns/cpu-{i}", cpu=str(1 + i % 4), created=float(i)) for i in range(4)]
        cluster = cluster.model_copy(
            update={"nodes": (*cluster.nodes, *extra_nodes), "pods": (*cluster.pods, *extra_pods)}
        )
    problem = build_problem(cluster, POLICY)
    scarce = scarcity.for_problem(problem)
    assume(scarce is not None)  # most generated clusters confine some pods to GPU models
    indexed, scanned = greedy.Room(problem), ScanRoom(problem)
    rng = random.Random(seed)
    taken: list[tuple[int, tuple[int, ...]]] = []
    for _ in range(steps):
        if taken and rng.random() < 0.3:
            node_index, request = taken.pop()
            indexed.give(node_index, request)
            scanned.give(node_index, request)
        for shape in rng.sample(problem.shapes, min(6, len(problem.shapes))):
            assert indexed.cheapest_fit(scarce, shape) == scanned.cheapest_fit(scarce, shape)
            odd = indexed.cheapest_fit(scarce, shape, lambda n: n % 2 == 1)
            assert odd == scanned.cheapest_fit(scarce, shape, lambda n: n % 2 == 1)
            # The cheapest node refused (as an anti-affinity rule would): the next in the order.
            first = scanned.cheapest_fit(scarce, shape)
            second = indexed.cheapest_fit(scarce, shape, lambda n, first=first: n != first)
            assert second == scanned.cheapest_fit(scarce, shape, lambda n, first=first: n != first)
        shape = rng.choice(problem.shapes)
        where = indexed.cheapest_fit(scarce, shape)
        if where is not None:
            indexed.take(where, shape.request)
            scanned.take(where, shape.request)
            taken.append((where, shape.request))
        assert indexed.free == scanned.free


def _pod_count(room: greedy.Room, shape: Any, most: int, n: int) -> int:
    """At most how many pods of ``shape`` fit on node ``n`` from the room now (and at most
    ``most``), in Python from the room's rows: 0 where it is not eligible or overcommitted."""
    row = room.free[n]
    if n not in shape.fits or min(row, default=0) < 0:
        return 0
    count = most
    for amount, free in zip(shape.request, row, strict=True):
        if amount > 0:
            count = min(count, free // amount)
    whole, _ = room.parts(shape.request)
    if whole > 0:
        count = min(count, room.whole[n] // whole)
    return max(count, 0)


def _domain_holds(room: greedy.Room, problem: Problem, gang: Any, nodes: list[int], any_take: bool) -> bool:
    """What a trial on these nodes may hold, summed node by node in Python (the per-domain answer
    :class:`greedy._Holder` gives from arrays)."""
    classes = [problem.classes[c] for c in gang.classes]
    held = [
        min(len(pc.pods), sum(_pod_count(room, problem.shapes[pc.shape], len(pc.pods), n) for n in nodes))
        for pc in classes
    ]
    if any_take:
        return any(held)
    if sum(held) < max(1, gang.need):
        return False
    per_task: dict[str, int] = {}
    for pc, k in zip(classes, held, strict=True):
        per_task[pc.task] = per_task.get(pc.task, 0) + k
    return all(per_task.get(task, 0) >= need for task, need in gang.task_need.items())


def _taken_room(seed: int, steps: int) -> tuple[Problem, greedy.Room]:
    """A small cluster with racks and spines, and its room after ``steps`` random best-fit takes."""
    problem = build_problem(
        generated(nodes=24, pending_jobs=40, seed=seed % 50, rack_size=4, racks_per_spine=2, multi_node_job_share=0.3),
        POLICY,
    )
    room = greedy.Room(problem)
    rng = random.Random(seed)
    for _ in range(steps):
        shape = rng.choice(problem.shapes)
        where = room.best_fit(shape.request, shape.gpus, shape.upper)
        if where is not None:
            room.take(where, shape.request)
    return problem, room


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), steps=st.integers(0, 40), any_take=st.booleans())
def test_holder_answers_every_domain_as_a_sum_per_domain(seed: int, steps: int, any_take: bool) -> None:
    """After random takes, the holder's answer for every topology domain (all of a tier at once)
    is the per-domain sum of pod counts tested gang by gang."""
    problem, room = _taken_room(seed, steps)
    domains = problem.domains
    assume(domains is not None)
    assert domains is not None
    for gang in problem.candidates:
        holder = greedy._Holder(room, problem, gang, any_take)
        for tier in domains.tiers:
            for nodes in room.tier_nodes[tier]:
                assert holder.may_hold(nodes) == _domain_holds(room, problem, gang, nodes, any_take)
        for n in range(len(problem.nodes)):
            assert holder.may_hold([n]) == _domain_holds(room, problem, gang, [n], any_take)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), steps=st.integers(0, 40), most=st.integers(0, 5))
def test_pod_counts_are_the_per_node_counts_on_the_eligible_nodes(seed: int, steps: int, most: int) -> None:
    """The room's pod counts (read only on a shape's eligible nodes) are, node by node, the counts
    worked out in Python from its rows; no other node is listed."""
    problem, room = _taken_room(seed, steps)
    for shape in problem.shapes:
        rows, counts = room.pod_counts(shape, most)
        assert rows.tolist() == sorted(shape.fits)
        listed = dict(zip(rows.tolist(), counts.tolist(), strict=True))
        for n in range(len(problem.nodes)):
            assert listed.get(n, 0) == _pod_count(room, shape, most, n)


def _attempts_one_by_one(problem: Problem, gang: Any, room: greedy.Room) -> list[list[int] | None]:
    """A gang's trials as they were listed before the holder judged whole tiers: every roomy
    domain's node list, then the holder asked of each (when more than FEW_ATTEMPTS were listed)."""
    needed = sum(
        problem.shapes[problem.classes[c].shape].gpus * min(len(problem.classes[c].pods), max(1, gang.need))
        for c in gang.classes
    )
    pods = sum(len(problem.classes[c].pods) for c in gang.classes)
    attempts: list[list[int] | None] = []
    fullest = room.fullest_with(needed) if pods > 1 and needed > 0 else None
    if fullest is not None:
        attempts.append([fullest])
    domains = problem.domains
    if domains is None or gang.index not in room.topology_gangs:
        return [*attempts, None]
    hard = problem.highest_tier(gang)
    for tier in domains.tiers:
        if hard is not None and tier > hard:
            break
        attempts += room.roomy_domains(domains, tier, needed)
    if hard is None:
        attempts.append(None)
    holder = room.holder(problem, gang) if len(attempts) > greedy.FEW_ATTEMPTS else None
    return [nodes for nodes in attempts if nodes is None or holder is None or holder.may_hold(nodes)]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), steps=st.integers(0, 40))
def test_domain_attempts_are_the_trials_the_holder_lets_through(seed: int, steps: int) -> None:
    """After random takes, a gang's trials judged per tier at once are the domain lists, listed
    one by one and each judged by the holder, in the same order."""
    problem, room = _taken_room(seed, steps)
    assume(problem.topology_gangs)
    for gang in problem.candidates:
        assert list(greedy._domain_attempts(problem, gang, room)) == _attempts_one_by_one(problem, gang, room)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(seed=st.integers(0, 10_000), steps=st.integers(5, 40), few=st.sampled_from([0, 2, 16]))
def test_kept_ranking_lowest_is_a_fresh_argmin(seed: int, steps: int, few: int) -> None:
    """A kept ranking's lowest node, kept across reads, is the one a ranking made afresh from the
    room now picks, whichever way (one by one or with numpy) its changed nodes were priced again."""
    problem = build_problem(generated(nodes=30, pending_jobs=40, seed=seed % 50, busy_gpu_fraction=0.5), POLICY)
    scarce = scarcity.for_problem(problem)
    assume(scarce is not None)
    assert scarce is not None
    room = greedy.Room(problem)
    rng = random.Random(seed)
    taken: list[tuple[int, tuple[int, ...]]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(greedy, "FEW_CHANGED", few)
        for _ in range(steps):
            if taken and rng.random() < 0.3:
                node_index, request = taken.pop()
                room.give(node_index, request)
            for shape in rng.sample(problem.shapes, min(4, len(problem.shapes))):
                kept = room.cheapest_fit(scarce, shape)
                assert kept == greedy._Ranking(room, scarce, shape).best(room)
            shape = rng.choice(problem.shapes)
            where = room.cheapest_fit(scarce, shape)
            if where is not None:
                room.take(where, shape.request)
                taken.append((where, shape.request))
