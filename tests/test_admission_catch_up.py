"""Admission by fit's catch-up (``_State._catch_up``) and the room's request rows, against the plain forms.

The catch-up tests whether the candidate gang is refused outright once, then after each admitted
gang taken compares the gang's largest GPU count (found once) with the most GPU room left; it read
the candidate's pods again before every take. A request's rows are made from its sorted items,
without the vector over all columns, which only the ``argmin`` fallback reads. Verdicts, messages
and the room left must be the plain forms'.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_enqueue_index import SLOW_OK, TIGHT, overcommitted_clusters

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.model import Pod, Snapshot
from vcsat.model import resources as res
from vcsat.solver import admission_room, enqueue


def _plain_catch_up(self: enqueue._State, gang: list[Pod]) -> bool:
    """The catch-up as it was: the outright refusal asked of the whole gang before every take."""
    room, queued = self.room, self.to_place
    assert room is not None
    while queued:
        if room.refuses_outright(gang):
            return False
        room.take(self._unbound_gang(queued.popleft()))
    return True


def _both(snap: Snapshot, monkeypatch: pytest.MonkeyPatch) -> None:
    rooms: list[admission_room.FreeRoom] = []
    made = enqueue._FreeRoom

    def keep(*args: Any) -> admission_room.FreeRoom:
        room = made(*args)
        rooms.append(room)
        return room

    with monkeypatch.context() as patch:
        patch.setattr(enqueue, "_FreeRoom", keep)
        now = enqueue.admit(snap, TIGHT)
        patch.setattr(enqueue._State, "_catch_up", _plain_catch_up)
        plain = enqueue.admit(snap, TIGHT)
    assert now == plain
    assert len(rooms) in (0, 2)
    if rooms:
        assert (rooms[0].free == rooms[1].free).all()


@settings(max_examples=40, deadline=None, suppress_health_check=SLOW_OK)
@given(snap=overcommitted_clusters())
def test_overcommitted_clusters_admit_as_with_the_plain_catch_up(
    snap: Snapshot, monkeypatch: pytest.MonkeyPatch
) -> None:
    _both(snap, monkeypatch)


@settings(max_examples=10, deadline=None, suppress_health_check=SLOW_OK)
@given(seed=st.integers(0, 10_000), busy=st.sampled_from([0.5, 0.8, 0.95]))
def test_generated_clusters_admit_as_with_the_plain_catch_up(
    seed: int, busy: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = GeneratorOptions(nodes=30, pending_jobs=80, seed=seed, busy_gpu_fraction=busy)
    _both(snapshot_from_objects(generate_instance(options)["items"], source="generated"), monkeypatch)


@pytest.mark.parametrize(
    ("requests", "most"),
    [({}, 0), ({res.CPU: 1000}, 0), ({res.GPU: 2, res.CPU: 1}, 2), ({res.GPU: 0}, 0)],
)
def test_most_gpus_of_one_pod(requests: dict[str, int], most: int) -> None:
    pod = Pod(namespace="ns", name="p", requests=requests)
    assert admission_room.FreeRoom.most_gpus([pod]) == most


def _plain_vector(room: admission_room.FreeRoom, asked: tuple[tuple[str, int], ...]) -> np.ndarray[Any, Any]:
    request = np.zeros(len(room.columns), dtype=np.int64)
    for name, amount in asked:
        if amount > 0:
            request[room.columns[name]] = amount
    return request


@settings(max_examples=40, deadline=None, suppress_health_check=SLOW_OK)
@given(snap=overcommitted_clusters(), seed=st.integers(0, 10_000))
def test_a_request_s_rows_are_those_of_its_vector(snap: Snapshot, seed: int) -> None:
    room = admission_room.FreeRoom(snap)
    names = [*room.columns, "example.com/none"]
    rng = random.Random(seed)
    for _ in range(20):
        requests = {name: rng.choice([-1, 0, 0, 1, 3, 2000]) for name in rng.sample(names, rng.randint(0, len(names)))}
        asked, vector = room._request(requests)
        assert asked == tuple(sorted(requests.items()))
        if any(amount > 0 and name not in room.columns for name, amount in asked):
            assert vector is None
            continue
        assert vector is not None
        plain = _plain_vector(room, asked)
        columns, pairs, gpu, cpu, checks = vector
        assert columns == np.flatnonzero(plain).tolist()
        assert pairs == tuple((column, int(plain[column])) for column in columns)
        assert (room._array(vector) == plain).all()
        assert gpu == (int(plain[room.columns[res.GPU]]) if res.GPU in room.columns else 0)
        assert cpu == (int(plain[room.columns[res.CPU]]) if res.CPU in room.columns else 0)
        assert [amount for _, amount in checks] == [amount for _, amount in pairs]
