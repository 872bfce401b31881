"""Simulator runs one at a time, each kept as a JSON record, and tables of means over seeds.

``vcsat bench`` runs whole experiments in one process and prints its tables at the end; at the
openb cluster's full size one vcsat run takes minutes, so a session spreads its runs over a few
processes and over time. This script runs single (workload, seed, scheduler) runs and writes each
one's record (allocation at every arrived level, CPU seconds, every job's arrival level, placement
and drop) to ``OUT/NAME_SEED_SCHED[_full].json``; several processes may walk one list of runs, each
run being claimed by a lock file. ``table`` reads the records and prints, per workload, the mean
(min–max) over seeds of each scheduler, vcsat minus the best baseline's mean, and each seed's own
margin; ``drops`` lists the pods one scheduler dropped and another kept up to an arrived level.

vcsat runs deterministically (no wall-clock stop), as the simulator's decisions must not depend on
the machine's load::

    python benchmarks/sim_seeds.py run OUT openb-hetero-33:1:vcsat:full openb-hetero-33:1:firstfit:full
    python benchmarks/sim_seeds.py table OUT [OUT...] [--full]
    python benchmarks/sim_seeds.py drops OUT openb-hetero-33 1 firstfit --upto 90 --full
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

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
    margin, worst = [], []
    for i in range(len(HEADS)):
        best = max(baselines, key=lambda sc: means[sc][i])
        margin.append(f"{means['vcsat'][i] - means[best][i] + 0:+.2f} ({best})")
        own = [
            (_row(runs[(name, s, "vcsat")])[i] - max(_row(runs[(name, s, sc)])[i] for sc in baselines), s)
            for s in seeds
        ]
        low = min(own)
        worst.append(f"{low[0] + 0:+.2f} (s{low[1]})")
    lines.append("| *vcsat − best baseline (means)* | " + " | ".join(margin) + " | | | |")
    lines.append("| *worst seed: vcsat − that seed's best* | " + " | ".join(worst) + " | | | |")
    lines += ["", f"Per seed, vcsat − that seed's best baseline (of {', '.join(baselines)}):", ""]
    lines.append("| seed | " + " | ".join(HEADS) + " |")
    lines.append("|---|" + "---|" * len(HEADS))
    for s in seeds:
        cells = []
        for i in range(len(HEADS)):
            best = max(baselines, key=lambda sc: _row(runs[(name, s, sc)])[i])
            cells.append(f"{_row(runs[(name, s, 'vcsat')])[i] - _row(runs[(name, s, best)])[i] + 0:+.2f} ({best})")
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
