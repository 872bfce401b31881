"""The clock and admission times that enqueue's InqueueTimeout reads: the converter takes each Inqueue
PodGroup's admission time from its ``Inqueued`` condition, instance files carry the cycle's clock on
their List (so an offline replay decides as the live cycle did), and the status the scheduler writes
keeps the admission time while the group stays Inqueue."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vcsat.adapters.convert.clock import INQUEUED_CONDITION, NOW_ANNOTATION, format_clock, parse_clock, wall_clock
from vcsat.adapters.convert.dump import instance_document
from vcsat.adapters.convert.instance_file import read_snapshot
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.errors import InputError
from vcsat.adapters.kube.status_writes import _desired_status
from vcsat.model import PodGroup, PodGroupOutcome

AT = "2026-11-29T19:00:00Z"
AT_EPOCH = parse_clock(AT)


def podgroup(phase: str | None, conditions: Any = None) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if phase is not None:
        status["phase"] = phase
    if conditions is not None:
        status["conditions"] = conditions
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "ns"},
        "spec": {"minMember": 1},
        "status": status,
    }


def inqueued(at: Any = AT, status: str = "True") -> dict[str, Any]:
    return {"type": INQUEUED_CONDITION, "status": status, "reason": "Admitted", "lastTransitionTime": at}


UNSCHEDULABLE = {"type": "Unschedulable", "status": "True", "reason": "x", "lastTransitionTime": "2020-01-01T00:00:00Z"}


@pytest.mark.parametrize(
    ("phase", "conditions", "since"),
    [
        ("Inqueue", [inqueued()], AT_EPOCH),
        ("Inqueue", [UNSCHEDULABLE, inqueued("2026-11-29T19:00:00.250000Z")], AT_EPOCH + 0.25),
        ("Inqueue", [UNSCHEDULABLE], None),  # admitted by someone else: no time recorded
        ("Inqueue", None, None),
        ("Inqueue", [inqueued(status="False")], None),
        ("Inqueue", [inqueued(at=None)], None),
        ("Pending", [inqueued()], None),  # a stale condition of a group no longer Inqueue
        ("Running", [inqueued()], None),
        (None, None, None),
    ],
)
def test_inqueue_since_comes_from_the_inqueued_condition(phase: str | None, conditions: Any, since: float) -> None:
    (group,) = snapshot_from_objects([podgroup(phase, conditions)]).podgroups
    assert group.inqueue_since == since


@pytest.mark.parametrize(
    ("conditions", "message"),
    [
        ([inqueued("yesterday")], "status.conditions[0].lastTransitionTime: not an RFC 3339 time: 'yesterday'"),
        ([inqueued(12)], "status.conditions[0].lastTransitionTime: must be a time string, not an integer"),
        (["Inqueued"], "status.conditions[0]: must be a mapping, not a string"),
        ({"type": "Inqueued"}, "status.conditions: must be a list, not a mapping"),
    ],
)
def test_bad_admission_times_name_object_and_field(conditions: Any, message: str) -> None:
    with pytest.raises(InputError) as error:
        snapshot_from_objects([podgroup("Inqueue", conditions)], source="test.yaml")
    assert str(error.value) == f"test.yaml: PodGroup ns/pg: {message}"
    assert "\n" not in str(error.value)


def test_the_converter_passes_the_clock_on() -> None:
    assert snapshot_from_objects([], now=123.5).now == 123.5
    assert snapshot_from_objects([]).now is None


# --- instance files -----------------------------------------------------------------------------


def test_a_dump_replays_with_the_clock_it_was_taken_at(tmp_path: Path) -> None:
    now = wall_clock()
    path = tmp_path / "cycle.json"
    path.write_text(json.dumps(instance_document([podgroup("Inqueue", [inqueued()])], now=now)))
    snapshot = read_snapshot(path)
    assert snapshot.now == now  # exact: the live cycle and its replay compare the same floats
    assert snapshot.podgroups[0].inqueue_since == AT_EPOCH


def test_a_file_without_a_clock_has_none(tmp_path: Path) -> None:
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(instance_document([podgroup("Inqueue", [inqueued()])])))
    assert read_snapshot(path).now is None


def test_the_clock_of_a_yaml_list_in_a_stream(tmp_path: Path) -> None:
    path = tmp_path / "stream.yaml"
    path.write_text(
        f"kind: Queue\napiVersion: scheduling.volcano.sh/v1beta1\nmetadata: {{name: q}}\n---\n"
        f"apiVersion: v1\nkind: List\nmetadata:\n  annotations:\n    {NOW_ANNOTATION}: {AT!r}\nitems: []\n"
    )
    assert read_snapshot(path).now == AT_EPOCH


@pytest.mark.parametrize(
    ("value", "message"), [("'soon'", "not an RFC 3339 time: 'soon'"), ("5", "must be a time string, not an integer")]
)
def test_a_bad_clock_names_the_file_and_field(tmp_path: Path, value: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        f"apiVersion: v1\nkind: List\nmetadata:\n  annotations:\n    {NOW_ANNOTATION}: {value}\nitems: []\n"
    )
    with pytest.raises(InputError) as error:
        read_snapshot(path)
    assert str(error.value) == f'{path}: List: metadata.annotations["{NOW_ANNOTATION}"]: {message}'


def test_clock_text_round_trips_to_the_microsecond() -> None:
    for moment in (0.0, AT_EPOCH, AT_EPOCH + 0.123456, wall_clock()):
        assert parse_clock(format_clock(moment)) == round(moment, 6)


# --- the status the scheduler writes -------------------------------------------------------------


GROUP = PodGroup(namespace="ns", name="pg")


def written(outcome: PodGroupOutcome | None, current: dict[str, Any], placed: int = 0) -> list[dict[str, Any]]:
    status = _desired_status(GROUP, (), outcome, placed, current)
    assert status is not None
    return [c for c in status["conditions"] if c["type"] == INQUEUED_CONDITION]


def test_admission_writes_the_inqueued_condition_and_keeps_its_time() -> None:
    admitted = PodGroupOutcome(podgroup="ns/pg", phase="Inqueue", reason="InsufficientResources", message="m")
    (first,) = written(admitted, {"phase": "Pending"})
    assert (first["status"], first["reason"]) == ("True", "Admitted")
    since = parse_clock(first["lastTransitionTime"])
    assert abs(since - wall_clock()) < 3600  # stamped now (a sanity bound, not a timing)
    (again,) = written(admitted, {"phase": "Inqueue", "conditions": [inqueued()]})
    assert again["lastTransitionTime"] == AT  # still Inqueue: the admission time is kept
    (kept,) = written(None, {"phase": "Inqueue", "conditions": [inqueued()]})
    assert kept["lastTransitionTime"] == AT


@pytest.mark.parametrize(
    ("outcome", "placed"),
    [
        (PodGroupOutcome(podgroup="ns/pg", phase="Pending", reason="InqueueTimeout", message="m"), 0),
        (PodGroupOutcome(podgroup="ns/pg", phase="Running"), 1),
    ],
)
def test_leaving_inqueue_drops_the_condition(outcome: PodGroupOutcome, placed: int) -> None:
    assert written(outcome, {"phase": "Inqueue", "conditions": [inqueued()]}, placed) == []


def _dangling_priority_class() -> dict[str, Any]:
    group = podgroup("Inqueue", [inqueued()])
    group["spec"]["priorityClassName"] = "deleted-meanwhile"
    return group


def test_a_cluster_dump_replays_what_the_live_scheduler_tolerated(tmp_path: Path) -> None:
    """A live cluster can hold a PodGroup whose PriorityClass was deleted; the scheduler reads it
    (priority 0), so the replay of its dump must read it alike rather than refuse the file."""
    path = tmp_path / "cycle.json"
    path.write_text(json.dumps(instance_document([_dangling_priority_class()], now=wall_clock())))
    (group,) = read_snapshot(path).podgroups
    assert group.priority == 0
    assert group.priority == snapshot_from_objects([_dangling_priority_class()], strict=False).podgroups[0].priority


def test_any_other_file_refuses_a_dangling_reference_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "hand-written.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [_dangling_priority_class()]}))
    with pytest.raises(InputError) as raised:
        read_snapshot(path)
    assert str(raised.value) == (
        f"{path}: PodGroup ns/pg: spec.priorityClassName: unknown PriorityClass 'deleted-meanwhile'"
    )
