"""benchmarks/process_phases.py: the whole ``vcsat solve`` process's phases, from a child process
run as the console script: every phase from start-up to exit is there, none negative, together no
more than the whole; the decision it reports is the one printed; a bad input's exit status is
reported, not hidden."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tests.scripts import load_script
from vcsat.adapters.cli import main

process_phases = load_script("benchmarks/process_phases.py", "process_phases")

PHASES = ("startup", "imports", "read_snapshot", "solve", "check", "output", "to_exit", "exit")


def test_the_phases_of_one_run_add_up_to_at_most_the_whole(tmp_path: Path) -> None:
    instance = tmp_path / "cluster.json"
    made = CliRunner().invoke(
        main, ["generate", "--nodes", "6", "--pending-jobs", "8", "--seed", "2", "-o", str(instance)]
    )
    assert made.exit_code == 0, made.output
    out = tmp_path / "decision.json"
    report = process_phases.one_run([str(instance), "--time-limit", "30", "-o", "json"], out, 30.0)
    assert report["exit_status"] == 0
    assert tuple(report["seconds"]) == PHASES
    assert all(seconds >= 0 for seconds in report["seconds"].values())
    assert sum(report["seconds"].values()) <= report["wall"] + 0.01  # rounding
    assert report["over_limit"] == round(report["wall"] - 30.0, 3)
    assert 0 < report["from_clock"] <= report["wall"]
    printed = json.loads(out.read_text())["solver"]
    assert report["decision"] == {key: printed[key] for key in ("status", "objective", "bound", "skipped")}
    assert {"build", "greedy", "decode", "explain"} <= set(report["inner"])


def test_a_failing_command_reports_its_status(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node"}]}')
    report = process_phases.one_run([str(bad), "-o", "json"], tmp_path / "out.json", None)
    assert report["exit_status"] == 2
    assert report["decision"] is None and report["over_limit"] is None
    assert "exit" not in report["seconds"]  # it ended before the one-shot exit: no decision printed
