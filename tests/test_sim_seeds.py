"""benchmarks/sim_seeds.py's tables: means and ranges over seeds, vcsat against the best baseline's
mean, each seed's own margin, and a baseline that misses a seed kept out of the comparison."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from tests.scripts import load_script

sim_seeds = load_script("benchmarks/sim_seeds.py", "sim_seeds")


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


# --- plot: the numbers drawn, and the files --------------------------------------------------------

Spec = tuple[int, str, float, float]
"""(seed, scheduler, share at every arrived level, share at the end)"""


def runs_of(specs: list[Spec], name: str = "w") -> dict[tuple[str, int, str], dict[str, object]]:
    out = {}
    for seed, sched, level, end in specs:
        rec = record(seed, sched, level, end)
        rec["name"] = name
        out[(name, seed, sched)] = rec
    return out


TWO_SEEDS = [(0, "vcsat", 0.50, 0.96), (1, "vcsat", 0.48, 0.94), (0, "firstfit", 0.51, 0.92)]
TWO_SEEDS += [(1, "firstfit", 0.47, 0.92), (0, "kube-default", 0.40, 0.93), (1, "kube-default", 0.40, 0.95)]


@pytest.mark.parametrize(
    ("specs", "schedulers", "seeds", "vcsat_50", "vcsat_end", "left_out", "margin", "best", "own"),
    [
        # vcsat 49 (48–50) at 50% and 95 (94–96) at the end; first fit's 49 is the best mean at 50%,
        # kube-default's 94 at the end; seed 0 trails its first fit by a point at 50%
        (
            TWO_SEEDS,
            None,
            [0, 1],
            (49, 48, 50),
            (95, 94, 96),
            {},
            (0, 1),
            ("firstfit", "kube-default"),
            {0: (-1, 3), 1: (1, -1)},
        ),
        # vcsat's seed 2 has no baseline: left out, the means are over seeds 0 and 1 alone
        (
            [*TWO_SEEDS, (2, "vcsat", 0.10, 0.10)],
            None,
            [0, 1],
            (49, 48, 50),
            (95, 94, 96),
            {"vcsat": [2]},
            (0, 1),
            ("firstfit", "kube-default"),
            {0: (-1, 3), 1: (1, -1)},
        ),
        # kube-default ran seed 0 only: every scheduler is drawn over seed 0
        (
            [r for r in TWO_SEEDS if r[:2] != (1, "kube-default")],
            None,
            [0],
            (50, 50, 50),
            (96, 96, 96),
            {"vcsat": [1], "firstfit": [1]},
            (-1, 3),
            ("firstfit", "kube-default"),
            {0: (-1, 3)},
        ),
        # unless it is not shown: then seeds 0 and 1 again, first fit the only baseline
        (
            [r for r in TWO_SEEDS if r[:2] != (1, "kube-default")],
            ["vcsat", "firstfit"],
            [0, 1],
            (49, 48, 50),
            (95, 94, 96),
            {},
            (0, 3),
            ("firstfit", "firstfit"),
            {0: (-1, 4), 1: (1, 2)},
        ),
    ],
)
def test_curves(
    specs: list[Spec],
    schedulers: list[str] | None,
    seeds: list[int],
    vcsat_50: tuple[float, float, float],
    vcsat_end: tuple[float, float, float],
    left_out: dict[str, list[int]],
    margin: tuple[float, float],
    best: tuple[str, str],
    own: dict[int, tuple[float, float]],
) -> None:
    c = sim_seeds.curves(runs_of(specs), "w", True, schedulers)
    assert c is not None
    assert c.seeds == seeds
    band = c.bands["vcsat"]
    assert (band.mean[0], band.low[0], band.high[0]) == pytest.approx(vcsat_50)
    assert (band.mean[-1], band.low[-1], band.high[-1]) == pytest.approx(vcsat_end)
    assert c.left_out == left_out
    assert (c.margin[0], c.margin[-1]) == pytest.approx(margin)
    assert (c.best[0], c.best[-1]) == best
    assert {s: (m[0], m[-1]) for s, m in c.own.items()} == {s: pytest.approx(v) for s, v in own.items()}


@pytest.mark.parametrize(
    ("specs", "drawn"),
    [
        ([(0, "vcsat", 0.5, 0.9), (1, "firstfit", 0.5, 0.9)], None),  # no seed both ran
        ([(0, "firstfit", 0.5, 0.9), (0, "fgd", 0.4, 0.9)], ["firstfit", "fgd"]),  # no vcsat: no margin
        ([(0, "vcsat", 0.5, 0.9)], ["vcsat"]),  # no baseline: no margin
    ],
)
def test_curves_without_a_comparison(specs: list[Spec], drawn: list[str] | None) -> None:
    c = sim_seeds.curves(runs_of(specs), "w", True)
    if drawn is None:
        assert c is None
        return
    assert c is not None
    assert list(c.bands) == drawn
    assert c.margin == [] and c.best == [] and c.own == {}


SCHEDULERS = ["vcsat", "firstfit", "fgd", "kube-default"]
shares = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def some_runs(draw: st.DrawFn) -> list[Spec]:
    """Records of up to four schedulers on seeds 0-3, each scheduler on its own set of seeds."""
    specs = []
    for sched in draw(st.lists(st.sampled_from(SCHEDULERS), min_size=1, max_size=4, unique=True)):
        for seed in draw(st.lists(st.integers(0, 3), min_size=1, max_size=4, unique=True)):
            specs.append((seed, sched, draw(shares), draw(shares)))
    return specs


@given(some_runs())
def test_curves_are_the_common_seeds_own_numbers(specs: list[Spec]) -> None:
    """Each band is the mean, min and max over exactly the seeds every scheduler ran; the records of
    other seeds change nothing; the margins are the means' and each seed's, as ``table`` has them."""
    runs = runs_of(specs)
    c = sim_seeds.curves(runs, "w", True)
    ran = {sc: {s for (_, s, sc_) in runs if sc_ == sc} for sc in SCHEDULERS}
    common = set.intersection(*(v for v in ran.values() if v))
    if not common:
        assert c is None
        return
    assert c is not None
    assert c.seeds == sorted(common)
    assert c.left_out == {sc: sorted(v - common) for sc, v in ran.items() if v - common}
    kept = {k: r for k, r in runs.items() if k[1] in common}
    assert sim_seeds.curves(kept, "w", True) == dataclasses.replace(c, left_out={})
    for sc, band in c.bands.items():
        per_seed = [sim_seeds._row(runs[("w", s, sc)]) for s in c.seeds]
        for i in range(len(sim_seeds.HEADS)):
            column = [r[i] for r in per_seed]
            assert band.low[i] == min(column) and band.high[i] == max(column)
            assert band.mean[i] == pytest.approx(sum(column) / len(column))
    baselines = [sc for sc in c.bands if sc != "vcsat"]
    if "vcsat" not in c.bands or not baselines:
        assert c.margin == []
        return
    for i in range(len(sim_seeds.HEADS)):
        assert c.margin[i] == pytest.approx(c.bands["vcsat"].mean[i] - max(c.bands[b].mean[i] for b in baselines))
        for s in c.seeds:
            row = sim_seeds._row
            assert c.own[s][i] == pytest.approx(
                row(runs[("w", s, "vcsat")])[i] - max(row(runs[("w", s, b)])[i] for b in baselines)
            )
    table = rows(sim_seeds.table(kept, "w"))
    assert [cell.split(" ")[0] for cell in table["*vcsat − best baseline (means)*"][: len(c.margin)]] == [
        f"{m + 0:+.2f}" for m in c.margin
    ]


def test_cli_plot_writes_the_files(tmp_path: Path) -> None:
    records = tmp_path / "records"
    records.mkdir()
    specs = [*TWO_SEEDS, (2, "vcsat", 0.1, 0.1), (3, "firstfit", 0.1, 0.1), (4, "firstfit", 0.1, 0.1)]
    specs += [(5, "firstfit", 0.1, 0.1)]
    for (name, seed, sched), rec in {**runs_of(specs, "w"), **runs_of(TWO_SEEDS[2:4], "b")}.items():
        (records / f"{name}_{seed}_{sched}_full.json").write_text(json.dumps(rec))
    quick = record(0, "vcsat", 0.5, 0.9)
    quick.update(name="q", full=False)
    (records / "q_0_vcsat.json").write_text(json.dumps(quick))
    out = tmp_path / "plots"
    result = CliRunner().invoke(sim_seeds.main, ["plot", str(records), "--full", "-o", str(out)])
    assert result.exit_code == 0, result.output
    written = sorted(p.name for p in out.iterdir())
    # "b" has first fit alone (no margin); the quick record "q" is not drawn with --full
    assert written == ["sim-b-full-allocation.png", "sim-w-full-allocation.png", "sim-w-full-margin.png"]
    assert all((out / n).read_bytes().startswith(b"\x89PNG") for n in written)
    assert "w (full; seeds 0, 1; vcsat, firstfit, kube-default)" in result.output
    assert "left out: vcsat seed 2; firstfit seeds 3–5" in result.output


def test_cli_plot_without_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "matplotlib" else real(n, *a))
    result = CliRunner().invoke(sim_seeds.main, ["plot", str(tmp_path), "-o", str(tmp_path / "p")])
    assert result.exit_code == 1
    assert "pip install 'vcsat[bench]'" in result.output
    assert not (tmp_path / "p").exists()
