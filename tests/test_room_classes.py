"""Node classes (vcsat.solver.room_classes) answer every query as a plain scan over the nodes does,
under random sequences of pods placed and given back."""

from __future__ import annotations

import pytest
from builders import node, pod, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Policy
from vcsat.solver import greedy
from vcsat.solver.problem import build_problem
from vcsat.solver.room_classes import NodeClasses, fullest_with

Room = tuple[int, int]
"""A node's (free GPUs, free whole GPU devices)."""


def scan_fullest(rooms: list[Room], gpus: int) -> int | None:
    fitting = [(level, n) for n, (level, whole) in enumerate(rooms) if level >= gpus and whole >= gpus]
    return min(fitting)[1] if fitting else None


def scan_first(rooms: list[Room], key: Room) -> int | None:
    return next((n for n, room in enumerate(rooms) if room == key), None)


def agree(classes: NodeClasses[Room], rooms: list[Room]) -> None:
    for key in {*rooms, (0, 0), (8, 8), (3, 5)}:
        assert classes.first(key) == scan_first(rooms, key)
        assert classes.count.get(key, 0) == rooms.count(key)
    assert sum(classes.count.values()) == len(rooms)
    for gpus in range(0, 10):
        assert fullest_with(classes, gpus) == scan_fullest(rooms, gpus)


rooms_strategy = st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8)), min_size=1, max_size=40)
steps_strategy = st.lists(st.tuples(st.booleans(), st.integers(0, 10_000), st.integers(1, 8)), min_size=1, max_size=80)


@settings(max_examples=200, deadline=None)
@given(rooms=rooms_strategy, steps=steps_strategy)
def test_classes_answer_as_a_scan_under_random_places_and_removes(
    rooms: list[Room], steps: list[tuple[bool, int, int]]
) -> None:
    """Place ``gpus`` on the fullest node that has them, or give back the newest placement."""
    rooms = list(rooms)
    classes = NodeClasses(rooms)
    placed: list[tuple[int, int]] = []
    agree(classes, rooms)
    for remove, pick, gpus in steps:
        if remove and placed:
            where, amount = placed.pop(pick % len(placed))
            level, whole = rooms[where]
            rooms[where] = (level + amount, whole + amount)
        else:
            where_or_none = fullest_with(classes, gpus)
            if where_or_none is None:
                where = pick % len(rooms)  # nothing holds it: shrink some node's room anyway
                amount = min(rooms[where][0], rooms[where][1])
            else:
                where, amount = where_or_none, gpus
            level, whole = rooms[where]
            rooms[where] = (level - amount, whole - amount)
            placed.append((where, amount))
        classes.move(where, rooms[where])
        agree(classes, rooms)


@pytest.mark.parametrize(
    ("moves", "expected"),
    [
        ([], {(4, 4): 0, (8, 8): 1}),
        ([(0, (8, 8))], {(4, 4): 2, (8, 8): 0}),
        ([(0, (8, 8)), (0, (4, 4))], {(4, 4): 0, (8, 8): 1}),
        ([(1, (0, 0)), (2, (0, 0))], {(4, 4): 0, (8, 8): None, (0, 0): 1}),
    ],
)
def test_first_node_of_a_class_follows_moves(moves: list[tuple[int, Room]], expected: dict[Room, int | None]) -> None:
    classes = NodeClasses([(4, 4), (8, 8), (4, 4)])
    for where, key in moves:
        classes.move(where, key)
    for key, first in expected.items():
        assert classes.first(key) == first


def test_the_greedy_room_keeps_its_classes_equal_to_its_free_room() -> None:
    """Every take and give of the greedy's room moves the node to the class of its new room."""
    nodes = [node(f"n{i}", cpu="64", memory="256Gi", gpus=g) for i, g in enumerate((8, 4, 8, 2))]
    problem = build_problem(snapshot(nodes=nodes, pods=[pod("ns/p", gpus=2)]), Policy(time_limit_s=1))
    room = greedy.Room(problem)
    request = tuple(2 if name == "nvidia.com/gpu" else 0 for name in problem.resources)
    for where in (0, 2, 0, 1):
        room.take(where, request)
        assert room.level_classes.key_of == [
            (room._level(row), whole) for row, whole in zip(room.free, room.whole, strict=True)
        ]
    assert room.fullest_with(4) == 0  # nodes 0 and 2 have 4 left; node 0 first
    room.give(0, request)
    assert room.fullest_with(6) == 0 and room.fullest_with(7) is None
