"""Simulator runs one at a time, each kept as a JSON record, and tables of means over seeds.

``vcsat bench`` runs whole experiments in one process and prints its tables at the end; at the
openb cluster's full size one vcsat run takes minutes, so a session spreads its runs over a few
processes and over time. This script runs single (workload, seed, scheduler) runs and writes each
one's record (allocation at every arrived level, CPU seconds, every job's arrival level, placement
and drop) to ``OUT/NAME_SEED_SCHED[_full].json``; several processes may walk one list of runs, each
run being claimed by a lock file. ``table`` reads the records and prints, per workload, the mean
(min–max) over seeds of each scheduler, vcsat minus the best baseline's mean, and each seed's own
margin; ``plot`` draws the same numbers, one PNG per workload of each scheduler's mean over the seeds
every shown scheduler ran (min–max shaded) and one of vcsat minus the best baseline's mean with each
seed's own margin; ``drops`` lists the pods one scheduler dropped and another kept up to an arrived
level.

vcsat runs deterministically (no wall-clock stop), as the simulator's decisions must not depend on
the machine's load::

    python benchmarks/sim_seeds.py run OUT openb-hetero-33:1:vcsat:full openb-hetero-33:1:firstfit:full
    python benchmarks/sim_seeds.py table OUT [OUT...] [--full]
    python benchmarks/sim_seeds.py plot OUT [OUT...] --full -o benchmarks/plots/
    python benchmarks/sim_seeds.py drops OUT openb-hetero-33 1 firstfit --upto 90 --full
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

LEVELS = ["0.5", "0.7", "0.8", "0.9", "1.0", "1.1", "1.2"]
HEADS = ["50%", "70%", "80%", "90%", "100%", "110%", "120%", "end (130%)"]
ORDER = ["vcsat", "firstfit", "fgd", "kube-default", "volcano", "bestfit"]


def _file(out: Path, name: str, seed: int, scheduler: str, full: bool) -> Path:
    return out / f"{name}_{seed}_{scheduler}{'_full' if full else ''}.json"


def run_one(out: Path, name: str, seed: int, scheduler: str, full: bool) -> dict[str, object] | None:
    """Run one simulation and write its record; None when another process has it or it is done."""
    import vcsat.solver.search.staged as staged
    from vcsat.adapters.sim import commands
    from vcsat.adapters.sim.engine import simulate
    from vcsat.adapters.sim.metrics import summarize
    from vcsat.adapters.sim.schedulers import make_scheduler

    staged.WALL_STOP = False  # decisions must not depend on the machine's load
    path = _file(out, name, seed, scheduler, full)
    if path.exists():
        return None
    try:  # claim it: several processes may walk one list
        os.close(os.open(f"{path}.lock", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return None
    sizes = commands.FULL if full else commands.QUICK
    exp, pods = commands.experiment(name, sizes, seed)
    capacity = sum(node.gpus for node in exp.workload.nodes) * 1000
    arrived, level_of = 0, {}
    for job in sorted(exp.workload.jobs, key=lambda j: j.arrival):
        arrived += sum(task.gpu_milli * task.replicas for task in job.tasks)
        level_of[job.name] = 100 * arrived / capacity
    start = time.process_time()
    scheduler_ = make_scheduler(scheduler, time_limit_s=sizes.time_limit_s, workload_pods=pods, seed=seed)
    result = simulate(exp.workload, scheduler_, exp.options, None)
    cpu = time.process_time() - start
    summary = summarize(result)
    jobs = []
    for job in result.jobs:
        task = job.spec.tasks[0]
        models = [v for term in task.affinity for e in term.match_expressions for v in e.values]
        jobs.append(
            {
                "name": job.spec.name,
                "pct": level_of.get(job.spec.name),
                "milli": task.gpu_milli,
                "model": ",".join(models) or "-",
                "started": job.started,
                "failed": job.failed,
                "placement": job.placement,
            }
        )
    record: dict[str, object] = {
        "name": name,
        "seed": seed,
        "sched": scheduler,
        "full": full,
        "alloc": {str(k): v for k, v in summary.alloc_at.items()},
        "end": summary.final_alloc,
        "cpu": cpu,
        "rejected": summary.rejected,
        "errors": summary.errors,
        "cycles": len(result.cycles),
        "load": Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else None,
        "finished": time.strftime("%H:%M:%S", time.gmtime()),
        "jobs": jobs,
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, default=str))
    tmp.replace(path)
    return record


def _load(dirs: tuple[Path, ...], full: bool) -> dict[tuple[str, int, str], dict[str, object]]:
    """Records by (workload, seed, scheduler); a later directory's record replaces an earlier one's."""
    runs = {}
    for d in dirs:
        for path in sorted(d.glob("*.json")):
            record = json.loads(path.read_text())
            if bool(record.get("full")) == full:
                runs[(record["name"], record["seed"], record["sched"])] = record
    return runs


def _row(record: dict[str, object]) -> list[float]:
    alloc = record["alloc"]
    assert isinstance(alloc, dict)
    return [100 * alloc[k] for k in LEVELS] + [100 * float(record["end"])]  # type: ignore[arg-type]


def _cell(values: list[float], digits: int = 2) -> str:
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def _dropped(record: dict[str, object]) -> float:
    return sum(1 for job in record["jobs"] if job["failed"] == "unplaced")  # type: ignore[attr-defined]


def _own_margins(
    runs: dict[tuple[str, int, str], dict[str, object]], name: str, seed: int, baselines: list[str]
) -> list[tuple[float, str]]:
    """At each column, vcsat minus the best of ``baselines`` on this seed, and which one that is (the
    first in ``baselines`` on a tie)."""
    vcsat = _row(runs[(name, seed, "vcsat")])
    rows = {sc: _row(runs[(name, seed, sc)]) for sc in baselines}
    out = []
    for i in range(len(HEADS)):
        best = max(baselines, key=lambda sc: rows[sc][i])
        out.append((vcsat[i] - rows[best][i], best))
    return out


def table(runs: dict[tuple[str, int, str], dict[str, object]], name: str) -> str:
    """One workload's markdown: means (min–max) over the seeds vcsat ran; a baseline missing one
    of those seeds is shown apart and left out of the comparison."""
    seeds = sorted(s for (n, s, sc) in runs if n == name and sc == "vcsat")
    if not seeds:
        return ""
    have = {sc: [s for s in seeds if (name, s, sc) in runs] for sc in ORDER}
    complete = [sc for sc in ORDER if have[sc] == seeds]
    lines = [
        f"Seeds {', '.join(map(str, seeds))}: mean (min–max) over the seeds, allocated GPUs as % of the cluster's.",
        "",
        "| scheduler | " + " | ".join(HEADS) + " | pods dropped | CPU s | seeds |",
        "|---|" + "---|" * (len(HEADS) + 3),
    ]
    means = {}
    for sc in ORDER:
        if not have[sc]:
            continue
        records = [runs[(name, s, sc)] for s in have[sc]]
        rows = [_row(r) for r in records]
        if sc in complete:
            means[sc] = [statistics.mean(r[i] for r in rows) for i in range(len(HEADS))]
        tag = "" if sc in complete else f" (seed {', '.join(map(str, have[sc]))} only)"
        lines.append(
            f"| **{sc}**{tag} | "
            + " | ".join(_cell([r[i] for r in rows]) for i in range(len(HEADS)))
            + f" | {_cell([_dropped(r) for r in records], 0)} | {_cell([float(r['cpu']) for r in records], 0)}"  # type: ignore[arg-type]
            + f" | {len(records)} |"
        )
    baselines = [sc for sc in means if sc != "vcsat"]
    if "vcsat" not in means or not baselines:
        return "\n".join(lines)
    own = {s: _own_margins(runs, name, s, baselines) for s in seeds}
    margin, worst = [], []
    for i in range(len(HEADS)):
        best = max(baselines, key=lambda sc: means[sc][i])
        margin.append(f"{means['vcsat'][i] - means[best][i] + 0:+.2f} ({best})")
        low = min((own[s][i][0], s) for s in seeds)
        worst.append(f"{low[0] + 0:+.2f} (s{low[1]})")
    lines.append("| *vcsat − best baseline (means)* | " + " | ".join(margin) + " | | | |")
    lines.append("| *worst seed: vcsat − that seed's best* | " + " | ".join(worst) + " | | | |")
    lines += ["", f"Per seed, vcsat − that seed's best baseline (of {', '.join(baselines)}):", ""]
    lines.append("| seed | " + " | ".join(HEADS) + " |")
    lines.append("|---|" + "---|" * len(HEADS))
    for s in seeds:
        lines.append(f"| {s} | " + " | ".join(f"{m + 0:+.2f} ({best})" for m, best in own[s]) + " |")
    return "\n".join(lines)


LEVEL_X = [50, 70, 80, 90, 100, 110, 120, 130]
"""The arrived level (%) each column of ``HEADS`` is drawn at; the end is 130%."""

SIZE = {True: "full", False: "quick"}


@dataclass(frozen=True)
class Band:
    """One scheduler's allocation (% of the cluster's GPUs) at each column: mean, min and max over
    the seeds drawn."""

    mean: list[float]
    low: list[float]
    high: list[float]


@dataclass(frozen=True)
class Curves:
    """The numbers one workload's plots draw, apart from the drawing so they can be checked.

    Every scheduler is drawn over the same seeds, those that all the shown schedulers ran: a mean
    over different seeds would compare different clusters. ``left_out`` names the records that
    this drops. ``margin`` is vcsat's mean minus the best baseline's mean at each column (``best``
    says which baseline), ``own`` each seed's vcsat minus that seed's best baseline, as in ``table``;
    both are empty without vcsat or without a baseline.
    """

    name: str
    full: bool
    seeds: list[int]
    bands: dict[str, Band]
    left_out: dict[str, list[int]]
    margin: list[float]
    best: list[str]
    own: dict[int, list[float]]


def curves(
    runs: dict[tuple[str, int, str], dict[str, object]], name: str, full: bool, schedulers: list[str] | None = None
) -> Curves | None:
    """What to draw for ``name``: the schedulers of ``schedulers`` (default ``ORDER``) that ran it,
    over the seeds they all ran; None when they share no seed."""
    ran = {
        sc: sorted(s for (n, s, sc_) in runs if n == name and sc_ == sc)
        for sc in (schedulers if schedulers is not None else ORDER)
    }
    ran = {sc: seeds for sc, seeds in ran.items() if seeds}
    if not ran:
        return None
    seeds = sorted(set.intersection(*(set(v) for v in ran.values())))
    if not seeds:
        return None
    bands = {}
    for sc in ran:
        rows = [_row(runs[(name, s, sc)]) for s in seeds]
        columns = [[r[i] for r in rows] for i in range(len(HEADS))]
        bands[sc] = Band([statistics.mean(c) for c in columns], [min(c) for c in columns], [max(c) for c in columns])
    left_out = {sc: [s for s in have if s not in seeds] for sc, have in ran.items()}
    baselines = [sc for sc in bands if sc != "vcsat"]
    margin: list[float] = []
    best: list[str] = []
    own: dict[int, list[float]] = {}
    if "vcsat" in bands and baselines:
        for i in range(len(HEADS)):
            top = max(baselines, key=lambda sc: bands[sc].mean[i])
            margin.append(bands["vcsat"].mean[i] - bands[top].mean[i])
            best.append(top)
        own = {s: [m for m, _ in _own_margins(runs, name, s, baselines)] for s in seeds}
    return Curves(name, full, seeds, bands, {sc: v for sc, v in left_out.items() if v}, margin, best, own)


def _seed_list(seeds: list[int]) -> str:
    """One seed as "seed 3", a run of them as "seeds 0–4", others listed: "seeds 0, 2"."""
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"seeds {seeds[0]}–{seeds[-1]}"
    return f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"


COLORS = {
    "vcsat": "tab:red",
    "firstfit": "tab:blue",
    "fgd": "tab:green",
    "kube-default": "tab:orange",
    "volcano": "tab:purple",
    "bestfit": "tab:brown",
}


def plot(c: Curves, out: Path) -> list[Path]:
    """Write ``c``'s allocation plot and, when it has a margin, the margin plot under ``out``."""
    from vcsat.adapters.sim.report import pyplot

    plt = pyplot()
    out.mkdir(parents=True, exist_ok=True)
    stem = f"sim-{c.name}-{SIZE[c.full]}"
    about = f"{c.name}, {SIZE[c.full]} size, {_seed_list(c.seeds)}"
    ticks = [h.replace(" (130%)", "") for h in HEADS]
    fig, ax = plt.subplots(figsize=(8, 5))
    for sc, band in c.bands.items():
        mine = sc == "vcsat"  # drawn thick and on top: it is what the plot is about
        color = COLORS.get(sc, "tab:gray")
        ax.fill_between(LEVEL_X, band.low, band.high, color=color, alpha=0.25 if mine else 0.12, linewidth=0)
        ax.plot(
            LEVEL_X,
            band.mean,
            color=color,
            marker="o" if mine else ".",
            linewidth=2.6 if mine else 1.2,
            zorder=5 if mine else 3,
            label=sc,
        )
    ax.set_xticks(LEVEL_X, ticks)
    ax.set_xlabel("arrived GPU requests (% of the cluster's GPUs)")
    ax.set_ylabel("allocated GPUs (% of the cluster's)")
    ax.grid(alpha=0.3)
    ax.legend(title="mean, min–max shaded", loc="lower right")
    ax.set_title(about)
    paths = [_save(fig, plt, out / f"{stem}-allocation.png")]
    if c.margin:
        # two panels, each on its own scale: the ramp-up's margins are hundredths of a point, the
        # saturation's whole points, and whether each is >= 0 is what is read off them
        fig, panels = plt.subplots(1, 2, figsize=(8, 3.6))
        width = 2.4  # the seeds' dots side by side around their level, so equal margins stay visible
        for ax, cols in zip(panels, (range(0, 4), range(4, len(HEADS))), strict=True):
            xs = [LEVEL_X[i] for i in cols]
            ax.axhline(0, color="0.3", linewidth=0.8)
            ax.plot(xs, [c.margin[i] for i in cols], color=COLORS["vcsat"], marker="o", linewidth=2, zorder=4)
            for k, s in enumerate(c.seeds):
                shift = width * (k / (len(c.seeds) - 1) - 0.5) if len(c.seeds) > 1 else 0.0
                ax.scatter([x + shift for x in xs], [c.own[s][i] for i in cols], s=12, color="0.35", zorder=3)
            ax.set_xticks(xs, [f"{ticks[i]}\n{c.best[i]}" for i in cols], fontsize=7.5)
            ax.grid(alpha=0.3)
        panels[0].set_ylabel("points of the cluster's GPUs")
        panels[0].set_title("ramp-up", fontsize=9)
        panels[1].set_title("saturation", fontsize=9)
        fig.suptitle(f"vcsat − best baseline: {about}\nline: the means' margin; dots: each seed's own", fontsize=9.5)
        paths.append(_save(fig, plt, out / f"{stem}-margin.png"))
    return paths


def _save(fig: Any, plt: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


@click.group()
def main() -> None:
    """Simulator runs kept one by one, and tables over seeds."""


@main.command("run")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.argument("specs", nargs=-1)
def run_command(out: Path, specs: tuple[str, ...]) -> None:
    """Run each SPEC (NAME:SEED:SCHEDULER[:full]) in turn unless done or claimed."""
    out.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        parts = spec.split(":")
        if len(parts) not in (3, 4) or (len(parts) == 4 and parts[3] != "full") or not parts[1].isdigit():
            click.echo(f"spec {spec!r}: expected NAME:SEED:SCHEDULER[:full]", err=True)
            sys.exit(2)
        record = run_one(out, parts[0], int(parts[1]), parts[2], len(parts) == 4)
        if record is not None:
            row = " ".join(f"{h}:{v:.2f}" for h, v in zip(HEADS, _row(record), strict=True))
            click.echo(
                f"{record['finished']} {spec} cpu={float(record['cpu']):.1f} {row} dropped={_dropped(record):.0f}"
            )  # type: ignore[arg-type]


@main.command("table")
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--full", is_flag=True, help="The full-size runs (default: the quick ones).")
def table_command(dirs: tuple[Path, ...], full: bool) -> None:
    """Markdown tables of every workload's runs found in DIRS (a later directory wins)."""
    runs = _load(dirs, full)
    for name in sorted({n for (n, _, _) in runs}):
        click.echo(f"\n##### {name}\n\n{table(runs, name)}")


@main.command("plot")
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--full", is_flag=True, help="The full-size runs (default: the quick ones).")
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Folder for PNGs.")
@click.option(
    "--scheduler", "schedulers", multiple=True, help="Draw only these (repeatable; default: every one that ran)."
)
def plot_command(dirs: tuple[Path, ...], full: bool, out: Path, schedulers: tuple[str, ...]) -> None:
    """PNGs of every workload's runs found in DIRS (a later directory wins): allocation per
    scheduler over the seeds all of them ran, and vcsat minus the best baseline."""
    from vcsat.adapters.sim.report import can_plot

    if not can_plot():
        click.echo("no plots: they need the bench extra, pip install 'vcsat[bench]' (matplotlib)", err=True)
        sys.exit(1)
    runs = _load(dirs, full)
    for name in sorted({n for (n, _, _) in runs}):
        c = curves(runs, name, full, list(schedulers) or None)
        if c is None:
            click.echo(f"{name}: no seed that every shown scheduler ran, not drawn")
            continue
        paths = plot(c, out)
        dropped = "; ".join(f"{sc} {_seed_list(v)}" for sc, v in c.left_out.items())
        click.echo(
            f"{name} ({SIZE[full]}; {_seed_list(c.seeds)}; {', '.join(c.bands)}): "
            + ", ".join(str(p) for p in paths)
            + (f"; left out: {dropped}" if dropped else "")
        )


@main.command("drops")
@click.argument("out", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("name")
@click.argument("seed", type=int)
@click.argument("baseline")
@click.option("--upto", type=float, default=130.0, help="Pods arriving up to this arrived level (%).")
@click.option("--full", is_flag=True)
def drops_command(out: Path, name: str, seed: int, baseline: str, upto: float, full: bool) -> None:
    """Pods vcsat dropped and BASELINE kept, and back, arriving up to --upto."""
    runs = _load((out,), full)
    a = {j["name"]: j for j in runs[(name, seed, "vcsat")]["jobs"]}  # type: ignore[attr-defined]
    b = {j["name"]: j for j in runs[(name, seed, baseline)]["jobs"]}  # type: ignore[attr-defined]
    for title, x, y in ((f"vcsat drops, {baseline} keeps", a, b), (f"{baseline} drops, vcsat keeps", b, a)):
        rows = sorted(
            (j["pct"], n, j["milli"], j["model"])
            for n, j in x.items()
            if j["failed"] == "unplaced" and y[n]["failed"] != "unplaced" and j["pct"] is not None and j["pct"] <= upto
        )
        click.echo(f"{title}: {len(rows)} pods, {sum(r[2] for r in rows) / 1000:.2f} GPUs")
        for pct, n, milli, model in rows:
            click.echo(f"   {pct:6.1f}% {n} {milli / 1000:g}gpu@{model}")


if __name__ == "__main__":
    main()
