"""benchmarks/sim_seeds.py's tables: means and ranges over seeds, vcsat against the best baseline's
mean, each seed's own margin, and a baseline that misses a seed kept out of the comparison."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "sim_seeds.py"
_spec = importlib.util.spec_from_file_location("sim_seeds", SCRIPT)
assert _spec is not None and _spec.loader is not None
sim_seeds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sim_seeds)


def record(seed: int, sched: str, level: float, end: float, drops: int = 0) -> dict[str, object]:
    """A run whose allocation is ``level`` (a share) at every arrived level, ``end`` at the end, of
    three pods the first ``drops`` of which were dropped."""
    jobs = [
        {"name": f"p{i}", "pct": 10.0 * i, "milli": 1000, "model": "-", "failed": "unplaced" if i < drops else None}
        for i in range(3)
    ]
    return {
        "name": "w",
        "seed": seed,
        "sched": sched,
        "full": True,
        "alloc": {k: level for k in sim_seeds.LEVELS},
        "end": end,
        "cpu": 1.0,
        "jobs": jobs,
    }


def rows(text: str) -> dict[str, list[str]]:
    out = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| scheduler") and not line.startswith("| seed"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            out[cells[0]] = cells[1:]
    return out


def test_means_ranges_and_margins() -> None:
    runs = {
        ("w", s, sc): record(s, sc, level, end)
        for s, sc, level, end in [
            (0, "vcsat", 0.50, 0.96),
            (1, "vcsat", 0.48, 0.94),
            (0, "firstfit", 0.51, 0.92),
            (1, "firstfit", 0.47, 0.92),
            (0, "kube-default", 0.40, 0.93),
            (1, "kube-default", 0.40, 0.95),
        ]
    }
    table = rows(sim_seeds.table(runs, "w"))
    assert table["**vcsat**"][0] == "49.00 (48.00–50.00)"
    assert table["**vcsat**"][7] == "95.00 (94.00–96.00)"
    assert table["**firstfit**"][0] == "49.00 (47.00–51.00)"
    # equal means at 50%: the margin is zero; at the end kube-default's mean (94) is the best
    assert table["*vcsat − best baseline (means)*"][0].startswith("+0.00")
    assert table["*vcsat − best baseline (means)*"][7] == "+1.00 (kube-default)"
    # seed 0 trails its own first fit by a point at 50%; seed 1 trails its own kube-default at the end
    assert table["*worst seed: vcsat − that seed's best*"][0] == "-1.00 (s0)"
    assert table["*worst seed: vcsat − that seed's best*"][7] == "-1.00 (s1)"
    assert table["0"][0] == "-1.00 (firstfit)"
    assert table["1"][0] == "+1.00 (firstfit)"


def test_a_baseline_missing_a_seed_is_shown_apart() -> None:
    runs = {
        ("w", 0, "vcsat"): record(0, "vcsat", 0.5, 0.9),
        ("w", 1, "vcsat"): record(1, "vcsat", 0.5, 0.9),
        ("w", 0, "firstfit"): record(0, "firstfit", 0.4, 0.8),
        ("w", 1, "firstfit"): record(1, "firstfit", 0.4, 0.8),
        ("w", 0, "fgd"): record(0, "fgd", 0.6, 0.99),
    }
    table = rows(sim_seeds.table(runs, "w"))
    assert "**fgd** (seed 0 only)" in table
    assert table["*vcsat − best baseline (means)*"][0] == "+10.00 (firstfit)"


def test_cli_table_and_drops(tmp_path: Path) -> None:
    vcsat = record(0, "vcsat", 0.5, 0.9, drops=2)
    first_fit = record(0, "firstfit", 0.5, 0.9, drops=1)
    for rec in (vcsat, first_fit):
        (tmp_path / f"w_0_{rec['sched']}_full.json").write_text(json.dumps(rec))
    result = CliRunner().invoke(sim_seeds.main, ["table", str(tmp_path), "--full"])
    assert result.exit_code == 0, result.output
    assert "##### w" in result.output
    result = CliRunner().invoke(sim_seeds.main, ["drops", str(tmp_path), "w", "0", "firstfit", "--full"])
    assert result.exit_code == 0, result.output
    assert "vcsat drops, firstfit keeps: 1 pods, 1.00 GPUs" in result.output
    assert "p1" in result.output


@pytest.mark.parametrize("spec", ["w:0", "w:x:vcsat", "w:0:vcsat:half"])
def test_bad_spec_exits_2(tmp_path: Path, spec: str) -> None:
    result = CliRunner().invoke(sim_seeds.main, ["run", str(tmp_path), spec])
    assert result.exit_code == 2
    assert spec in result.output
