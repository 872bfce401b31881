"""Replaying an early cycle's dump: the scheduler marks the dump of a cycle that bound the greedy's
sure placements (``vcsat.io/cycle: early``), and ``vcsat solve`` on it gives that very decision,
so early binding and ``--dump-dir`` go together. Tables of small clusters written as dumps, run
through the real command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from vcsat.adapters.cli import main
from vcsat.adapters.convert.clock import CYCLE_ANNOTATION
from vcsat.adapters.convert.dump import instance_document
from vcsat.adapters.convert.instance_file import read_cycle
from vcsat.adapters.errors import InputError
from vcsat.model import Policy
from vcsat.solver.sure import prepare, sure_decision


def node(name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def pod(name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "schedulerName": "vcsat",
            "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def fits() -> list[dict[str, Any]]:
    """Room for every pod: the greedy's placements are sure."""
    return [node("a", "4"), node("b", "4"), pod("p1", "1"), pod("p2", "2"), pod("p3", "3")]


def contended() -> list[dict[str, Any]]:
    """More asked than there is: not every pod fits, so nothing is sure."""
    return [node("a", "2"), pod("p1", "2"), pod("p2", "2")]


def write(tmp_path: Path, objects: list[dict[str, Any]], *, early: bool) -> Path:
    path = tmp_path / "cycle-000001.instance.json"
    path.write_text(json.dumps(instance_document(objects, now=1_800_000_000.0, early=early)))
    return path


def solve(*args: str) -> tuple[int, dict[str, Any] | None, str]:
    result = CliRunner().invoke(main, ["solve", *args, "--output", "json"])
    decision = json.loads(result.stdout) if result.exit_code == 0 else None
    return result.exit_code, decision, result.stderr


def without_seconds(decision: dict[str, Any]) -> dict[str, Any]:
    return {**decision, "solver": {k: v for k, v in decision["solver"].items() if k != "seconds"}}


@pytest.mark.parametrize(("early", "expected"), [(True, True), (False, False)])
def test_the_dump_says_which_kind_of_cycle_it_was(tmp_path: Path, early: bool, expected: bool) -> None:
    snapshot, is_early = read_cycle(write(tmp_path, fits(), early=early))
    assert is_early is expected
    assert len(snapshot.pods) == 3


def test_an_early_dump_replays_the_sure_decision(tmp_path: Path) -> None:
    path = write(tmp_path, fits(), early=True)
    snapshot, _ = read_cycle(path)
    sure = sure_decision(prepare(snapshot, Policy()))
    assert sure is not None and len(sure.bindings) == 3
    code, decision, _ = solve(str(path))
    assert code == 0 and decision is not None
    assert without_seconds(decision) == without_seconds(json.loads(sure.model_dump_json()))
    assert decision["solver"]["status"] == "FALLBACK"  # the greedy's, as the scheduler bound it


def test_full_search_runs_the_full_cycle_on_an_early_dump(tmp_path: Path) -> None:
    path = write(tmp_path, fits(), early=True)
    code, decision, _ = solve(str(path), "--full-search")
    code_full, full, _ = solve(str(write(tmp_path, fits(), early=False)))
    assert code == code_full == 0 and decision is not None and full is not None
    assert decision["solver"]["status"] != "FALLBACK"
    assert without_seconds(decision) == without_seconds(full)


def test_an_early_dump_where_nothing_is_sure_is_solved_in_full_and_says_so(tmp_path: Path) -> None:
    code, decision, stderr = solve(str(write(tmp_path, contended(), early=True)))
    assert code == 0 and decision is not None
    assert "early cycle" in stderr and "solving the full cycle" in stderr
    assert len(decision["bindings"]) == 1


@pytest.mark.parametrize(
    ("value", "message"),
    [("soon", "must be one of 'full', 'early', not the text 'soon'"), (3, "must be one of 'full', 'early', not int")],
)
def test_a_bad_cycle_kind_names_the_file_and_field(tmp_path: Path, value: Any, message: str) -> None:
    path = tmp_path / "bad.json"
    document = instance_document(fits())
    document["metadata"]["annotations"][CYCLE_ANNOTATION] = value
    path.write_text(json.dumps(document))
    with pytest.raises(InputError) as error:
        read_cycle(path)
    assert str(error.value) == f'{path}: List: metadata.annotations["{CYCLE_ANNOTATION}"]: {message}'
    code, decision, stderr = solve(str(path))
    assert code == 2 and decision is None
    field = f'metadata.annotations["{CYCLE_ANNOTATION}"]'
    assert stderr.strip().splitlines() == [f"vcsat: {path}: List: {field}: {message}"]
