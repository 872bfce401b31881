"""``vcsat simulate`` and ``vcsat bench``: the simulator from the command line.

``simulate`` runs one workload under one scheduler and prints its numbers; ``bench`` runs several
schedulers side by side on one or all workloads, prints markdown tables, writes PNG plots, and shows
progress on a terminal. Every experiment runs over several seeds (``--seeds``, default
:data:`DEFAULT_SEEDS`) and the tables show the mean and the range, since one seed's margin may be
noise. ``--quick`` shrinks every experiment (an eighth of the openb cluster, a 16-node synthetic
cluster over three hours, 1 s per vcsat cycle) and runs :data:`QUICK_SEEDS` seeds: a smoke run
(``benchmarks/SIMULATIONS.md`` says which sizes and seeds its tables used).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from vcsat.adapters.errors import InputError
from vcsat.adapters.sim import hetero, report, workloads
from vcsat.adapters.sim.engine import SimResult, simulate
from vcsat.adapters.sim.metrics import Summary, summarize
from vcsat.adapters.sim.schedulers import DEFAULT_NAMES, NAMES, VCSAT, make_scheduler
from vcsat.model import Pod

DEFAULT_SCHEDULERS = DEFAULT_NAMES
Progressed = Callable[[float, float], None]
DEFAULT_SEEDS = 5
"""Seeds per experiment in ``vcsat bench``: one seed's margin can be noise; five show the spread."""
QUICK_SEEDS = 2
"""Seeds with ``--quick``, a smoke run: enough to show a spread, few enough to stay quick."""
HETERO = "openb-hetero"
"""``vcsat bench --workload openb-hetero``: the heterogeneous openb variants, every fraction."""


@dataclass(frozen=True)
class Sizes:
    """How big each experiment is."""

    openb_every: int
    openb_target: float
    synthetic_nodes: int
    synthetic_hours: float
    synthetic_load: float
    synthetic_period: float
    time_limit_s: float


FULL = Sizes(1, 1.3, 64, 8.0, 1.5, 60.0, 2.0)
QUICK = Sizes(8, 1.3, 16, 3.0, 1.5, 120.0, 1.0)


def experiment(name: str, sizes: Sizes, seed: int = 0) -> tuple[workloads.Experiment, list[Pod] | None]:
    """The experiment called ``name`` at ``sizes``, and the workload's pods for FGD (openb only)."""
    if name == "openb":
        exp = workloads.openb(every=sizes.openb_every, target=sizes.openb_target, seed=seed, shuffle=True)
        return exp, workloads.openb_distribution_pods()
    fraction = hetero.fraction_of(name)
    if fraction is not None:
        exp = hetero.openb_hetero(fraction, every=sizes.openb_every, target=sizes.openb_target, seed=seed)
        return exp, hetero.distribution_pods(exp.workload)
    if name == "synthetic":
        exp = workloads.synthetic(
            nodes=sizes.synthetic_nodes,
            hours=sizes.synthetic_hours,
            load=sizes.synthetic_load,
            seed=seed,
            cycle_period=sizes.synthetic_period,
        )
        return exp, None
    if name == "tf-gang":
        return workloads.tf_gang(), None
    known = ", ".join((*workloads.WORKLOADS, *hetero.WORKLOADS))
    raise InputError(f"unknown workload {name!r} (one of {known})", field="--workload")


def run(
    name: str,
    schedulers: Sequence[str],
    sizes: Sizes,
    *,
    seed: int = 0,
    progress: Callable[[str], Progressed] | None = None,
) -> tuple[workloads.Experiment, list[SimResult]]:
    exp, pods = experiment(name, sizes, seed)
    results = []
    for scheduler_name in schedulers:
        scheduler = make_scheduler(scheduler_name, time_limit_s=sizes.time_limit_s, workload_pods=pods, seed=seed)
        callback = progress(scheduler_name) if progress is not None else None
        results.append(simulate(exp.workload, scheduler, exp.options, callback))
    return exp, results


def section(name: str, exp: workloads.Experiment, results: Sequence[Sequence[SimResult]], out: Path | None) -> str:
    """The markdown of one workload's results, ``results[i]`` being scheduler i's runs over the seeds;
    plots of the first seed's runs written under ``out`` when given."""
    runs = [[summarize(result) for result in seeds] for seeds in results]
    parts = [f"### {name}", "", exp.workload.description, ""]
    if name.startswith("openb"):
        parts += [report.saturation_table(runs), ""]
    else:
        parts += [report.jobs_table(runs), ""]
        if any(s.queue_shares for seeds in runs for s in seeds):
            parts += [report.fairness_table(runs), ""]
    parts += [report.placement_table(runs), ""]
    flat_results = [result for seeds in results for result in seeds]
    parts += _problems(name, [s for seeds in runs for s in seeds], flat_results, out)
    if out is not None and report.can_plot():
        plots = _plots(name, [seeds[0] for seeds in results], out)
        parts += [f"![{path.stem}](plots/{path.name})" for path in plots]
        parts.append("")
    return "\n".join(parts)


def _problems(name: str, summaries: Sequence[Summary], results: Sequence[SimResult], out: Path | None) -> list[str]:
    """Notes on decisions that failed validation or raised; the first failing snapshot of each
    scheduler is written under ``out/failures`` to reproduce it."""
    notes = []
    for summary, result in zip(summaries, results, strict=True):
        if summary.rejected:
            notes.append(
                f"- {summary.scheduler}: {summary.rejected} decisions failed validation; "
                f"first: {summary.first_violation}"
            )
        if summary.errors:
            notes.append(
                f"- {summary.scheduler}: {summary.errors} cycles raised instead of deciding; "
                f"first: {summary.first_error}"
            )
            failing = result.extra.get("error_snapshot")
            if out is not None and failing:
                path = out / "failures" / f"{name}-{result.scheduler}.snapshot.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                if not path.exists():  # the first failing seed's
                    path.write_text(failing)
                notes.append(f"  (its first failing snapshot: `failures/{path.name}`)")
    return [*notes, ""] if notes else []


def _plots(name: str, results: Sequence[SimResult], out: Path) -> list[Path]:
    plots = out / "plots"
    if name.startswith("openb"):
        title = f"{name}: allocated GPUs as the workload arrives"
        return [report.plot_saturation(results, plots / f"sim-{name}-allocation.png", title)]
    return [
        report.plot_allocation(results, plots / f"sim-{name}-allocation.png", f"{name}: GPUs allocated over time"),
        report.plot_jct(results, plots / f"sim-{name}-jct.png", f"{name}: job completion times"),
        report.plot_cycles(results, plots / f"sim-{name}-cycles.png", f"{name}: seconds per scheduling cycle"),
    ]


def _names(values: Sequence[str]) -> list[str]:
    names = [part.strip() for value in values for part in value.split(",") if part.strip()]
    for name in names:
        if name not in NAMES:
            raise InputError(f"unknown scheduler {name!r} (one of {', '.join(NAMES)})", field="--schedulers")
    return names or list(DEFAULT_SCHEDULERS)


def _progress_bar(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )


@click.command("bench")
@click.option("--quick", is_flag=True, help=f"Small sizes and {QUICK_SEEDS} seeds: a smoke run, not for reporting.")
@click.option(
    "--workload",
    type=click.Choice([*workloads.WORKLOADS, *hetero.WORKLOADS, HETERO, "all"]),
    default="all",
    show_default=True,
    help=f"One workload; {HETERO}: its {len(hetero.WORKLOADS)} fractions; all: {', '.join(workloads.WORKLOADS)}.",
)
@click.option(
    "--schedulers",
    multiple=True,
    metavar="NAMES",
    help=f"Comma-separated, from {', '.join(NAMES)} (default: all but {NAMES[-1]}).",
)
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(file_okay=False),
    default="vcsat-bench",
    show_default=True,
    help="Directory for results.md and the PNG plots.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The first seed.")
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    metavar="N",
    help=f"Run every experiment with seeds SEED..SEED+N-1 (the workload's draws and each scheduler's); "
    f"tables show the mean and the range (min–max). Default {DEFAULT_SEEDS}, or {QUICK_SEEDS} with --quick.",
)
def bench(quick: bool, workload: str, schedulers: tuple[str, ...], out: str, seed: int, seeds: int | None) -> None:
    """Run schedulers side by side on the simulator's workloads over several seeds; print markdown,
    write plots (with the bench extra)."""
    names = _names(schedulers)
    sizes = QUICK if quick else FULL
    groups = {"all": list(workloads.WORKLOADS), HETERO: list(hetero.WORKLOADS)}
    chosen = groups.get(workload, [workload])
    out_dir = Path(out)
    console = Console(stderr=True)
    started = time.monotonic()
    sections = []
    seeds = seeds or (QUICK_SEEDS if quick else DEFAULT_SEEDS)
    seed_list = list(range(seed, seed + seeds))
    with _progress_bar(console) as bar:
        for name in chosen:
            tasks = {s: bar.add_task(f"{name} · {s}", total=float(seeds)) for s in names}
            by_scheduler: dict[str, list[SimResult]] = {s: [] for s in names}
            exp: workloads.Experiment | None = None
            for index, one_seed in enumerate(seed_list):

                def progress(scheduler: str, tasks: dict[str, TaskID] = tasks, index: int = index) -> Progressed:
                    def update(done: float, total: float) -> None:
                        bar.update(tasks[scheduler], completed=index + done / max(total, 1))

                    return update

                drawn, results = run(name, names, sizes, seed=one_seed, progress=progress)
                exp = exp or drawn  # the description (job counts) of the first seed's draw
                for result in results:
                    by_scheduler[result.scheduler].append(result)
            for task in tasks.values():
                bar.update(task, completed=float(seeds))
            assert exp is not None
            sections.append(section(name, exp, [by_scheduler[s] for s in names], out_dir))
    span = f"seed {seed}" if seeds == 1 else f"{seeds} seeds, {seed}–{seed + seeds - 1}"
    heading = f"## Simulations ({'quick' if quick else 'full'}; {span}; {time.monotonic() - started:.0f} s)"
    markdown = "\n\n".join([heading, *sections])
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.md").write_text(markdown + "\n")
    click.echo(markdown)
    if report.can_plot():
        click.echo(f"wrote {out_dir / 'results.md'} and plots under {out_dir / 'plots'}", err=True)
    else:
        click.echo(
            f"wrote {out_dir / 'results.md'}; no plots: they need the bench extra, "
            "pip install 'vcsat[bench]' (matplotlib)",
            err=True,
        )


@click.command("simulate")
@click.argument("workload", type=click.Choice([*workloads.WORKLOADS, *hetero.WORKLOADS]))
@click.option("--scheduler", default=VCSAT, show_default=True, help=f"One of {', '.join(NAMES)}.")
@click.option("--quick", is_flag=True, help="The small size of the experiment.")
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    metavar="S",
    help="vcsat's seconds per cycle (default 2, or 1 with --quick).",
)
@click.option("--seed", type=int, default=0, show_default=True)
def simulate_command(workload: str, scheduler: str, quick: bool, time_limit: float | None, seed: int) -> None:
    """Replay WORKLOAD under one scheduler and print what it measured."""
    names = _names([scheduler])
    sizes = QUICK if quick else FULL
    if time_limit is not None:
        sizes = Sizes(**{**sizes.__dict__, "time_limit_s": time_limit})
    console = Console(stderr=True)
    with _progress_bar(console) as bar:
        task = bar.add_task(f"{workload} · {names[0]}", total=1.0)

        def progress(_: str) -> Progressed:
            return lambda done, total: bar.update(task, completed=done / max(total, 1))

        exp, results = run(workload, names, sizes, seed=seed, progress=progress)
    click.echo(section(workload, exp, [[result] for result in results], None))
    summary: Summary = summarize(results[0])
    click.echo(f"simulated {results[0].end_time / 3600:.2f} h in {summary.wall_seconds:.1f} s", err=True)
    sys.stdout.flush()
