"""The one-shot exit of ``vcsat solve`` (:mod:`vcsat.adapters.cli.one_shot`) loses nothing.

- As the console script, in a fresh process, the command ends with ``os._exit`` after printing: the
  decision written to a file (far larger than one write buffer) or a pipe is whole and the same as
  the one an in-process run prints, and the exit status is the contract's (0 done, 2 bad input).
- Called inside another program (click's runner), nothing ends the process: ``leave`` returns and
  the collector stays on.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from vcsat.adapters.cli import main, one_shot

CONSOLE_SCRIPT = "from vcsat.adapters.cli import main; main()"
"""What the ``vcsat`` console script runs: ``main()`` on this process's own arguments."""
BUFFERED = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
"""The child's environment with its output buffered, as a user's usually is: what it printed
reaches the file only when flushed."""


def _instance(tmp_path: Path, nodes: int, jobs: int) -> Path:
    path = tmp_path / f"cluster-{nodes}.json"
    result = CliRunner().invoke(
        main, ["generate", "--nodes", str(nodes), "--pending-jobs", str(jobs), "--seed", "3", "-o", str(path)]
    )
    assert result.exit_code == 0, result.output
    return path


def _without_timing(text: str) -> dict[str, Any]:
    decision: dict[str, Any] = json.loads(text)
    del decision["solver"]["seconds"]  # the only field the clock sets when nothing is cut for time
    return decision


@pytest.mark.parametrize(("nodes", "jobs", "to_file"), [(4, 6, True), (100, 300, True), (100, 300, False)])
def test_the_console_script_prints_the_whole_decision_and_its_status(
    tmp_path: Path, nodes: int, jobs: int, to_file: bool
) -> None:
    path = _instance(tmp_path, nodes, jobs)
    policy = tmp_path / "policy.yaml"
    policy.write_text("preempt: false\nreclaim: false\nrelative_gap: 0.5\n")  # the greedy's decision: quick
    arguments = ["solve", str(path), "-o", "json", "--time-limit", "60", "--workers", "1", "--policy", str(policy)]
    out = tmp_path / "decision.json"
    with out.open("w") as sink:
        process = subprocess.run(
            [sys.executable, "-c", CONSOLE_SCRIPT, *arguments],
            stdout=sink if to_file else subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            check=False,
            env=BUFFERED,
        )
    assert process.returncode == 0, process.stderr
    printed = out.read_text() if to_file else process.stdout
    assert printed.endswith("}\n")
    in_process = CliRunner().invoke(main, arguments)
    assert in_process.exit_code == 0, in_process.output
    assert _without_timing(printed) == _without_timing(in_process.stdout)
    if nodes > 4:
        assert len(printed) > 64 * 1024  # more than a write buffer or a pipe holds: all flushed


def test_the_console_script_keeps_the_bad_input_status(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node"}]}')
    process = subprocess.run(
        [sys.executable, "-c", CONSOLE_SCRIPT, "solve", str(path), "-o", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert process.returncode == 2
    assert process.stdout == ""
    assert process.stderr.count("\n") == 1 and "Traceback" not in process.stderr


def test_inside_another_program_nothing_ends_the_process() -> None:
    assert gc.isenabled()
    assert one_shot.collector_off() is False
    assert gc.isenabled()
    assert one_shot.leave(0) is None  # returned: this process goes on
