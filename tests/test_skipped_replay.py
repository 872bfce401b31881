"""Replaying a cycle that skipped steps for time: the scheduler's dump records them
(``vcsat.io/skipped``, from ``SolverStats.skipped``) and ``vcsat solve`` on it skips them too, so it
gives the decision the scheduler applied although the replay itself has the time. A bad record is
bad input: one line naming the file and field, exit status 2."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_early_cycle_replay import contended, fits, without_seconds

from vcsat.adapters.cli import main
from vcsat.adapters.convert.clock import SKIPPED_ANNOTATION
from vcsat.adapters.convert.dump import instance_document
from vcsat.adapters.convert.instance_file import read_cycle
from vcsat.adapters.errors import InputError
from vcsat.model import Policy
from vcsat.solver import solve

FIELD = f'metadata.annotations["{SKIPPED_ANNOTATION}"]'


def _cli(path: Path) -> tuple[int, dict[str, Any] | None, str]:
    result = CliRunner().invoke(main, ["solve", str(path), "--output", "json"])
    decision = json.loads(result.stdout) if result.exit_code == 0 else None
    return result.exit_code, decision, result.stderr


def _dumped(tmp_path: Path, objects: list[dict[str, Any]], skipped: list[str]) -> Path:
    path = tmp_path / "cycle-000001.instance.json"
    path.write_text(json.dumps(instance_document(objects, now=1_800_000_000.0, skipped=skipped)))
    return path


def _comparable(decision: dict[str, Any]) -> dict[str, Any]:
    solver = {k: v for k, v in without_seconds(decision)["solver"].items() if k != "wall_stopped"}
    return {**decision, "solver": solver}


@pytest.mark.parametrize("objects", [contended(), fits()], ids=["contended", "fits"])
def test_a_dump_of_a_wall_stopped_cycle_replays_its_decision(tmp_path: Path, objects: list[dict[str, Any]]) -> None:
    snapshot, _ = read_cycle(_dumped(tmp_path, objects, []))
    live = solve(snapshot, Policy(), started=time.monotonic() - 3600, wall=True)  # out of time after the greedy
    assert live.solver.skipped and live.solver.wall_stopped
    path = _dumped(tmp_path, objects, live.solver.skipped)
    skipped: list[str] = []
    read_cycle(path, skipped=skipped)
    assert skipped == live.solver.skipped
    code, replay, stderr = _cli(path)
    assert code == 0 and replay is not None
    assert _comparable(replay) == _comparable(json.loads(live.model_dump_json()))
    assert "skipped " + ", ".join(live.solver.skipped) + " for time" in stderr
    # Without the record the replay, which has the time, runs every step.
    code, full, _ = _cli(_dumped(tmp_path, objects, []))
    assert code == 0 and full is not None and full["solver"]["skipped"] == []


@pytest.mark.parametrize("objects", [contended(), fits()], ids=["contended", "fits"])
def test_a_dump_of_a_cycle_whose_eviction_phase_ran_on_its_minimum_replays_it(
    tmp_path: Path, objects: list[dict[str, Any]]
) -> None:
    path = _dumped(tmp_path, objects, ["eviction_budget"])
    snapshot, _ = read_cycle(path)
    live = solve(snapshot, Policy(), wall=False, skip=["eviction_budget"])
    code, replay, stderr = _cli(path)
    assert code == 0 and replay is not None
    assert _comparable(replay) == _comparable(json.loads(live.model_dump_json()))
    assert "skipped eviction_budget for time" in stderr


@pytest.mark.parametrize("ran", [0, 2])
def test_a_dump_of_a_cycle_whose_exchange_was_cut_replays_the_trades_it_ran(tmp_path: Path, ran: int) -> None:
    """The record of an exchange the clock ended after ``ran`` trades (``exchange_trades=N``) is read
    back and replayed: the replay runs the same trades and records the same cut."""
    record = ["search", f"exchange_trades={ran}"]
    path = _dumped(tmp_path, contended(), record)
    snapshot, _ = read_cycle(path)
    live = solve(snapshot, Policy(), wall=False, skip=record)
    code, replay, stderr = _cli(path)
    assert code == 0 and replay is not None
    assert _comparable(replay) == _comparable(json.loads(live.model_dump_json()))
    assert f"skipped search, exchange_trades={ran} for time" in stderr


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "search,later",
            "unknown step 'later' (expected some of second_fill, third_fill, whole_fill, search, top_up, neighbourhood,"
            " exchange, exchange_across, exchange_fair, whole_bound, evictions, eviction_budget, or exchange_trades=N)",
        ),
        (3, "must be a comma-separated string of step names, not int"),
    ],
)
def test_a_bad_record_names_the_file_and_field(tmp_path: Path, value: Any, message: str) -> None:
    path = tmp_path / "bad.json"
    document = instance_document(contended())
    document["metadata"]["annotations"][SKIPPED_ANNOTATION] = value
    path.write_text(json.dumps(document))
    if not isinstance(value, str):
        with pytest.raises(InputError):
            read_cycle(path, skipped=[])
    code, decision, stderr = _cli(path)
    assert code == 2 and decision is None
    assert stderr.strip().splitlines() == [f"vcsat: {path}: List: {FIELD}: {message}"]
