"""A gang of one pod whose node query the room knows finds no node is refused at once, as before.

The fill asks each gang of one pod (:func:`vcsat.solver.greedy._one_pod`) for its class and its
query key once per problem (:func:`vcsat.solver.greedy._one_pod_key`, kept with the memos the
rooms of a problem share) and refuses it when the room already knows that query finds no node,
before its lineage, plan, query memo or capabilities are looked up. The reference below is the
entry of :func:`vcsat.solver.greedy._place` as it was (the class asked of every gang in every room,
the refusal made inside :func:`vcsat.solver.greedy._fit_one`): the cases pin what the memo holds
and what small clusters decide, and the property compares both on generated clusters through the
greedy, its by-gain fill and a run of top-ups that share their memos as the exchange's do.
"""

from __future__ import annotations

from typing import Any

import pytest
from builders import group, node, pod, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_greedy_gang_path import _generated, digest

from vcsat.model import Policy, Snapshot
from vcsat.solver import greedy
from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import Gang, Problem, build_problem
from vcsat.solver.search.top_up import top_up

POLICY = Policy(time_limit_s=2)


def reference_place(
    problem: Problem,
    gang: Gang,
    room: greedy.Room,
    queue_room: dict[str, dict[str, int]],
    assignment: Assignment,
    held: dict[str, dict[str, int]],
) -> bool:
    """:func:`vcsat.solver.greedy._place` as it was: the one-pod class asked of every gang every
    time, and a known-empty query refused by :func:`vcsat.solver.greedy._fit_one` itself."""
    one = greedy._one_pod(problem, gang, room)
    if one is None and greedy._known_not_to_fit(problem, gang, room):
        return False
    lineage = problem.caps_of(gang.queue)
    lineage_caps = [queue_room[q] for q in lineage]
    if one is not None:
        node_index = greedy._fit_one(problem, gang, room, lineage_caps, one)
        if node_index is None:
            return False
        greedy._placed_one(problem, gang, assignment, held, lineage_caps, one, node_index)
        return True
    taken = greedy.fit_topology_first(problem, gang, room, lineage_caps)
    if taken is None:
        return False
    assignment.placed.add(gang.index)
    usage = held.setdefault(gang.queue, {})
    for class_index, shape_index, node_index in taken:
        assignment.count[class_index] = assignment.count.get(class_index, 0) + 1
        key = (shape_index, node_index)
        assignment.shape_slots[key] = assignment.shape_slots.get(key, 0) + 1
        slot = (gang.index, shape_index, node_index)
        assignment.gang_slots[slot] = assignment.gang_slots.get(slot, 0) + 1
        greedy.charge(problem, problem.shapes[shape_index].request, 1, usage, lineage_caps)
    return True


def without(problem: Problem, assignment: Assignment, keep: set[int]) -> Assignment:
    """``assignment`` with only the gangs of ``keep``: what a trade's top-ups fill again."""
    slots = {key: k for key, k in assignment.gang_slots.items() if key[0] in keep}
    shape_slots: dict[tuple[int, int], int] = {}
    for (_, s, n), k in slots.items():
        shape_slots[(s, n)] = shape_slots.get((s, n), 0) + k
    count = {c: k for c, k in assignment.count.items() if problem.classes[c].gang in keep}
    return Assignment(placed=set(keep), count=count, shape_slots=shape_slots, gang_slots=slots)


def decisions(snap: Snapshot, rounds: int = 4) -> tuple[Any, ...]:
    """The greedy's decision, its by-gain fill's, and ``rounds`` top-ups sharing their memos, each
    of the last one's result less a different third of its gangs (as the exchange drops some)."""
    problem = build_problem(snap, POLICY)
    first = greedy.greedy(problem)
    out: list[Any] = [digest(first), digest(greedy.greedy_by_gain(problem))]
    kept = greedy.KeptRankings(problem)
    current = first
    for round_ in range(rounds):
        keep = {g for g in current.placed if g % 3 != round_ % 3}
        current = top_up(problem, without(problem, current, keep), kept=kept, by_gain=round_ % 2 == 1)
        out.append(digest(current))
    return tuple(out)


def both(snap: Snapshot, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    ours = decisions(snap)
    with monkeypatch.context() as patch:
        patch.setattr(greedy, "_place", reference_place)
        assert decisions(snap) == ours
    return ours


def lone(key: str, created: float, **requests: Any) -> tuple[Any, Any]:
    return pod(key, group=key, **requests), group(key, created=created)


def _full_then_smaller() -> Snapshot:
    """Three 4-GPU pods onto one node with 6 free GPUs: the second finds no node, the third is
    refused by the known-empty query; a 2-GPU pod after them fits."""
    items = [lone("ns/a", 0.0, gpus=4), lone("ns/b", 1.0, gpus=4), lone("ns/c", 2.0, gpus=4), lone("ns/d", 3.0, gpus=2)]
    return snapshot(
        nodes=[node("n1", cpu="32", memory="128Gi", gpus=6)], pods=[p for p, _ in items], groups=[g for _, g in items]
    )


def _two_shapes() -> Snapshot:
    """Two nodes of 4 GPUs; 3-GPU pods take both, then a 3-GPU pod is refused while 1-GPU pods
    still fill the single GPU left on each node."""
    items = [lone(f"ns/big{i}", float(i), gpus=3) for i in range(3)]
    items += [lone(f"ns/small{i}", float(10 + i), gpus=1) for i in range(3)]
    nodes = [node(f"n{i}", cpu="32", memory="128Gi", gpus=4) for i in range(2)]
    return snapshot(nodes=nodes, pods=[p for p, _ in items], groups=[g for _, g in items])


def _a_gang_of_two() -> Snapshot:
    """A gang of two pods is not one pod: the memo holds no class for it."""
    pods = [pod(f"ns/g-{i}", group="ns/g", gpus=2) for i in range(2)]
    one, one_group = lone("ns/one", 1.0, gpus=2)
    return snapshot(
        nodes=[node("n1", cpu="32", memory="128Gi", gpus=4)],
        pods=[*pods, one],
        groups=[group("ns/g", min_member=2), one_group],
    )


def placed_groups(snap: Snapshot) -> dict[str, int]:
    problem = build_problem(snap, POLICY)
    out: dict[str, int] = {}
    for c, k in greedy.greedy(problem).count.items():
        name = problem.classes[c].pods[0].group or ""
        out[name] = out.get(name, 0) + k
    return out


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (_full_then_smaller, {"ns/a": 1, "ns/d": 1}),
        (_two_shapes, {"ns/big0": 1, "ns/big1": 1, "ns/small0": 1, "ns/small1": 1}),
        (_a_gang_of_two, {"ns/g": 2}),
    ],
    ids=["full-then-smaller", "two-shapes", "a-gang-of-two"],
)
def test_small_cases(case: Any, expected: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    assert placed_groups(case()) == expected
    with monkeypatch.context() as patch:
        patch.setattr(greedy, "_place", reference_place)
        assert placed_groups(case()) == expected
    both(case(), monkeypatch)


def test_the_memo_holds_the_one_pod_class_and_its_query_key() -> None:
    problem = build_problem(_a_gang_of_two(), POLICY)
    room = greedy.Room(problem)
    by_group = {problem.classes[g.classes[0]].pods[0].group: g for g in problem.gangs}
    gang_of_two, one = by_group["ns/g"], by_group["ns/one"]
    assert greedy._one_pod_key(problem, gang_of_two, room) == (None, None)
    pod_class, key = greedy._one_pod_key(problem, one, room)
    assert pod_class is problem.classes[one.classes[0]]
    shape = problem.shapes[pod_class.shape]
    assert key == room.query_key(shape.request, shape.fits, None)
    assert key == greedy._node_query(problem, room, shape, None, None)[0]  # what _fit_one asks


def test_a_known_empty_query_refuses_without_asking_the_class(monkeypatch: pytest.MonkeyPatch) -> None:
    """With its query known to find no node, a gang of one pod is refused before _fit_one is
    called, and the room is left as it was; without, it is asked and placed (as the reference)."""
    problem = build_problem(_a_gang_of_two(), POLICY)
    one = next(g for g in problem.gangs if problem.classes[g.classes[0]].pods[0].group == "ns/one")
    asked: list[int] = []
    real = greedy._fit_one

    def counting(problem: Problem, gang: Gang, room: greedy.Room, caps: Any, pod_class: Any) -> int | None:
        asked.append(gang.index)
        return real(problem, gang, room, caps, pod_class)

    monkeypatch.setattr(greedy, "_fit_one", counting)
    for place in (greedy._place, reference_place):
        room = greedy.Room(problem)
        shape = problem.shapes[problem.classes[one.classes[0]].shape]
        room.full.add(room.query_key(shape.request, shape.fits, None))
        free = [list(row) for row in room.free]
        assignment = Assignment()
        assert not place(problem, one, room, {}, assignment, {})
        assert room.free == free and not assignment.placed
        fresh = greedy.Room(problem)
        assert place(problem, one, fresh, {}, assignment, {})
        assert assignment.placed == {one.index}
    assert asked == [one.index, one.index, one.index]  # ours: only the fresh room's; the reference: both


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10_000),
    nodes=st.integers(6, 30),
    jobs=st.integers(10, 80),
    multi=st.sampled_from([0.0, 0.2, 0.5]),
    caps=st.lists(st.one_of(st.none(), st.tuples(st.integers(1, 40), st.integers(0, 60))), min_size=3, max_size=3),
)
def test_generated_clusters_decide_as_the_reference(
    seed: int, nodes: int, jobs: int, multi: float, caps: list[tuple[int, int] | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    both(_generated(seed, nodes, jobs, multi, caps), monkeypatch)
