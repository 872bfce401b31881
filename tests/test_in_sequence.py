"""benchmarks/in_sequence.py: files solved one after another in one process decide as each alone.

Two miniature shape files, each read twice in turn in one process (so every cycle after the first
follows a snapshot sharing no object with it, or an equal one): every digest equals the one a
process of its own gives for that file and trade count (the carries build afresh or carry, and
either way decide as a fresh process). ``compare`` names the lines that differ.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripts import load_script
from shape_files import shape_file

in_sequence = load_script("benchmarks/in_sequence.py", "in_sequence")


def test_files_in_sequence_decide_as_each_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = [shape_file(tmp_path, "contended", 40, 3), shape_file(tmp_path, "default", 40, 4)]
    in_sequence.in_sequence(files, [0, 2], 2)
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 8
    for path in files:  # each alone: the carries forgotten, as in a process of its own
        for count in (0, 2):
            _forget_everything()
            in_sequence.in_sequence([path], [count], 1)
            alone = json.loads(capsys.readouterr().out)
            assert {row["digest"] for row in rows if row["file"] == str(path) and row["trades"] == count} == {
                alone["digest"]
            }


def _forget_everything() -> None:
    from vcsat.solver import admission_groups, changes, node_side
    from vcsat.solver.pricing import fragmentation, pod_tally, scarcity

    for module in (changes, node_side, admission_groups):
        module.forget()
    scarcity._DEMAND = pod_tally.Tally(scarcity._pod_demand)
    fragmentation._TASKS = pod_tally.Tally(fragmentation._task_of)


@pytest.mark.parametrize(
    ("first", "second", "said"),
    [
        (["a 0 x", "a 2 y"], ["a 0 x", "a 2 y"], ["2 of 2 the same"]),
        (["a 0 x", "a 2 y"], ["a 0 x", "a 2 z"], ['{"file": "a", "trades": 2, "digest": "y"}', "1 of 2 the same"]),
        (["b 0 x"], ["a 0 x"], ['{"file": "b", "trades": 0, "digest": "x"}', "0 of 1 the same"]),
    ],
)
def test_compare_names_the_lines_that_differ(
    tmp_path: Path, first: list[str], second: list[str], said: list[str]
) -> None:
    paths = []
    for name, lines in (("first", first), ("second", second)):
        path = tmp_path / f"{name}.jsonl"
        rows = [dict(zip(("file", "trades", "digest"), line.split(), strict=True)) for line in lines]
        path.write_text("\n".join(json.dumps({**row, "trades": int(row["trades"])}) for row in rows))
        paths.append(path)
    assert in_sequence.compare(*paths) == said
