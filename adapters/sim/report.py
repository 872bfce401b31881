"""Side-by-side results as people read them: markdown tables and PNG plots.

Tables are plain GitHub markdown (what ``vcsat bench`` prints and ``benchmarks/SIMULATIONS.md``
holds), one row per scheduler, each cell the mean over the seeds with the range ``(min–max)`` when
the seeds disagree; plots are matplotlib PNGs of the first seed's runs, written with the
non-interactive Agg backend, one file per figure, named after the workload. matplotlib is the
``bench`` extra: without it the tables are written and the plots are skipped.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from vcsat.adapters.sim.engine import SimResult
from vcsat.adapters.sim.metrics import ARRIVED_LEVELS, Summary, allocation_curve

Cell = Callable[[Summary], str]


def pct(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{100 * value:.{digits}f}%"


def minutes(value: float | None) -> str:
    return "–" if value is None else f"{value / 60:.1f}"


def hours(value: float | None) -> str:
    return "–" if value is None else f"{value / 3600:.2f}"


def number(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(["---"] * len(headers)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


Runs = Sequence[Summary]
"""One scheduler's summaries, one per seed, in seed order."""


def spread(values: Sequence[float | None], fmt: Callable[[float | None], str]) -> str:
    """The mean over the seeds, then ``(min–max)`` when the seeds disagree at the shown precision;
    seeds without a value (no job completed, say) are left out of both."""
    present = [v for v in values if v is not None]
    if not present:
        return "–"
    low, high = fmt(min(present)), fmt(max(present))
    text = fmt(sum(present) / len(present))
    return text if low == high else f"{text} ({low}–{high})"


def count(value: float | None) -> str:
    """A count, or the mean of counts (one decimal when it is not whole)."""
    if value is None:
        return "–"
    return str(round(value)) if float(value).is_integer() else f"{value:.1f}"


def _cell(runs: Runs, get: Callable[[Summary], float | None], fmt: Callable[[float | None], str]) -> str:
    return spread([get(s) for s in runs], fmt)


def _failed(runs: Runs) -> str:
    reasons = sorted({why for s in runs for why in s.failed})
    parts = [f"{spread([s.failed.get(why, 0) for s in runs], count)} {why}" for why in reasons]
    return ", ".join(parts) or "0"


def _ratios(runs: Runs, reference: Runs | None) -> list[float | None]:
    """Per seed, the JCT over the reference scheduler's JCT on the same seed."""
    if reference is None:
        return []
    return [
        s.jct_mean / r.jct_mean if s.jct_mean is not None and r.jct_mean else None
        for s, r in zip(runs, reference, strict=True)
    ]


def _times(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def _label(runs: Runs) -> str:
    return f"**{runs[0].scheduler}**"


def jobs_table(runs_by_scheduler: Sequence[Runs], reference: str = "volcano") -> str:
    """Outcomes of a workload over time, one row per scheduler; JCT also relative to ``reference``
    (per seed, then averaged)."""
    ref = next((runs for runs in runs_by_scheduler if runs[0].scheduler == reference), None)
    rows = [
        [
            _label(runs),
            f"{spread([s.completed for s in runs], count)}/{spread([s.jobs for s in runs], count)}",
            _failed(runs),
            _cell(runs, lambda s: s.gpu_alloc_busy, pct),
            _cell(runs, lambda s: s.gpu_alloc_mean, pct),
            _cell(runs, lambda s: s.jct_mean, minutes),
            spread(_ratios(runs, ref), _times),
            _cell(runs, lambda s: s.jct_p50, minutes),
            _cell(runs, lambda s: s.jct_p99, minutes),
            _cell(runs, lambda s: s.wait_mean, minutes),
            _cell(runs, lambda s: s.wait_p99, minutes),
            _cell(runs, lambda s: s.makespan, hours),
            _cell(runs, lambda s: s.timeouts, count),
            _cell(runs, lambda s: s.partial_gpu_hours, lambda v: number(v, 1)),
            _cell(runs, lambda s: s.evictions, count),
        ]
        for runs in runs_by_scheduler
    ]
    headers = [
        "scheduler",
        "completed",
        "failed",
        "GPU alloc while jobs wait",
        "GPU alloc overall",
        "JCT mean (min)",
        f"JCT vs {reference}",
        "JCT p50",
        "JCT p99",
        "wait mean (min)",
        "wait p99",
        "makespan (h)",
        "gang timeouts",
        "partial GPU-h",
        "evictions",
    ]
    return table(headers, rows)


def _queue_share(queue: str, which: int) -> Callable[[Summary], float | None]:
    """A queue's time-averaged held (0) or deserved (1) share."""
    return lambda s: s.queue_shares[queue][which] if queue in s.queue_shares else None


def _alloc_at(level: float) -> Callable[[Summary], float | None]:
    return lambda s: s.alloc_at.get(level)


def fairness_table(runs_by_scheduler: Sequence[Runs]) -> str:
    queues = sorted({q for runs in runs_by_scheduler for s in runs for q in s.queue_shares})
    headers = ["scheduler", "fairness error", "Jain", *(f"{q} held/deserved" for q in queues)]
    rows = []
    for runs in runs_by_scheduler:
        shares = [f"{_cell(runs, _queue_share(q, 0), pct)} / {_cell(runs, _queue_share(q, 1), pct)}" for q in queues]
        rows.append(
            [
                _label(runs),
                _cell(runs, lambda s: s.fairness_error, pct),
                _cell(runs, lambda s: s.jain_index, lambda v: number(v, 3)),
                *shares,
            ]
        )
    return table(headers, rows)


def placement_table(runs_by_scheduler: Sequence[Runs]) -> str:
    headers = [
        "scheduler",
        "multi-GPU jobs",
        "in one node",
        "in one rack",
        "bottleneck GB/s",
        "cycles",
        "cycle mean (s)",
        "cycle p99 (s)",
        "cycle max (s)",
        "proved optimal",
        "mean gap",
        "worst gap",
        "fallbacks",
        "rejected",
        "errors",
    ]
    rows = [
        [
            _label(runs),
            _cell(runs, lambda s: s.multi_gpu_jobs, count),
            _cell(runs, lambda s: s.one_node_share, pct),
            _cell(runs, lambda s: s.one_rack_share, pct),
            _cell(runs, lambda s: s.bandwidth_mean, lambda v: number(v, 1)),
            _cell(runs, lambda s: s.cycles, count),
            _cell(runs, lambda s: s.cycle_mean, seconds),
            _cell(runs, lambda s: s.cycle_p99, seconds),
            _cell(runs, lambda s: s.cycle_max, seconds),
            _cell(runs, lambda s: s.optimal_share, pct),
            _cell(runs, lambda s: s.gap_mean, lambda v: pct(v, 2)),
            _cell(runs, lambda s: s.gap_worst, lambda v: pct(v, 2)),
            _cell(runs, lambda s: s.fallbacks, count),
            _cell(runs, lambda s: s.rejected, count),
            _cell(runs, lambda s: s.errors, count),
        ]
        for runs in runs_by_scheduler
    ]
    return table(headers, rows)


def saturation_table(runs_by_scheduler: Sequence[Runs]) -> str:
    """The FGD experiment: allocated GPU share at each arrived level; a bound row first."""
    levels = [level for level in ARRIVED_LEVELS if any(level in s.alloc_at for runs in runs_by_scheduler for s in runs)]
    headers = ["scheduler", *(f"arrived {level:.0%}" for level in levels), "at the end", "cycle mean (s)"]
    rows = [["*bound: min(arrived, 100%)*", *(pct(min(level, 1.0)) for level in levels), pct(1.0), "–"]]
    for runs in runs_by_scheduler:
        rows.append(
            [
                _label(runs),
                *(_cell(runs, _alloc_at(level), pct) for level in levels),
                f"{_cell(runs, lambda s: s.final_alloc, pct)} of "
                f"{_cell(runs, lambda s: s.arrived_final, lambda v: pct(v, 0))}",
                _cell(runs, lambda s: s.cycle_mean, seconds),
            ]
        )
    return table(headers, rows)


# --- plots -----------------------------------------------------------------------------------


def can_plot() -> bool:
    """Whether matplotlib is installed: it comes with the ``bench`` extra, not with the scheduler."""
    return importlib.util.find_spec("matplotlib") is not None


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (files only, no display), imported only when a plot
    is drawn (see :func:`can_plot`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_saturation(results: Sequence[SimResult], path: Path, title: str) -> Path:
    """Left: allocated against arrived GPUs; right: the GPUs left unallocated as the cluster
    saturates (the FGD paper's view), from 70% arrived on."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    top = 100 * max((curve[-1][0] for curve in map(allocation_curve, results) if curve), default=1.3)
    left.plot([0, 100, top], [0, 100, 100], color="0.7", linestyle="--", label="bound")
    right.plot([70, 100, top], [30, 0, 0], color="0.7", linestyle="--", label="bound")
    for result in results:
        curve = allocation_curve(result)
        xs = [100 * x for x, _ in curve]
        left.plot(xs, [100 * y for _, y in curve], label=result.scheduler)
        right.plot(xs, [100 - 100 * y for _, y in curve], label=result.scheduler)
    left.set_ylabel("allocated GPUs (%)")
    left.set_xlim(0, top)
    left.set_ylim(0, 102)
    right.set_ylabel("unallocated GPUs (%)")
    right.set_xlim(70, top)
    right.set_ylim(0, 30)
    for ax in (left, right):
        ax.set_xlabel("arrived GPU requests (% of the cluster's GPUs)")
        ax.grid(alpha=0.3)
    right.legend()
    fig.suptitle(title)
    return _save(fig, plt, path)


def plot_allocation(results: Sequence[SimResult], path: Path, title: str) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for result in results:
        capacity = result.gpu_capacity_milli or 1
        xs = [s.time / 3600 for s in result.samples]
        ys = [100 * s.gpu_milli / capacity for s in result.samples]
        ax.step(xs, ys, where="post", label=result.scheduler, linewidth=1)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("allocated GPUs (%)")
    ax.set_ylim(0, 102)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(title)
    return _save(fig, plt, path)


def plot_jct(results: Sequence[SimResult], path: Path, title: str) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for result in results:
        jct = sorted((job.finished - job.spec.arrival) / 60 for job in result.jobs if job.finished is not None)
        if jct:
            ax.step(
                jct,
                [(i + 1) / len(result.jobs) for i in range(len(jct))],
                where="post",
                label=result.scheduler,
            )
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (min, log)")
    ax.set_ylabel("share of jobs completed")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(title)
    return _save(fig, plt, path)


def plot_cycles(results: Sequence[SimResult], path: Path, title: str) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    data = [[c.seconds for c in r.cycles] or [0.0] for r in results]
    ax.boxplot(data, showfliers=True)
    ax.set_xticks(range(1, len(results) + 1), [r.scheduler for r in results])
    ax.set_yscale("log")
    ax.set_ylabel("seconds per cycle (log)")
    ax.grid(alpha=0.3, axis="y")
    ax.set_title(title)
    return _save(fig, plt, path)


def _save(fig: Any, plt: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
