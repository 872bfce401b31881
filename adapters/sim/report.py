"""Side-by-side results as people read them: markdown tables and PNG plots.

Tables are plain GitHub markdown (what ``vcsat bench`` prints and ``benchmarks/SIMULATIONS.md``
holds); plots are matplotlib PNGs written with the non-interactive Agg backend, one file per figure,
named after the workload.
"""

from __future__ import annotations

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


def _failed(s: Summary) -> str:
    return ", ".join(f"{n} {why}" for why, n in sorted(s.failed.items())) or "0"


def _ratio(value: float | None, reference: float | None) -> str:
    if value is None or not reference:
        return "–"
    return f"{value / reference:.2f}×"


def jobs_table(summaries: Sequence[Summary], reference: str = "volcano") -> str:
    """Outcomes of a workload over time, one row per scheduler; JCT also relative to ``reference``."""
    ref = next((s for s in summaries if s.scheduler == reference), None)
    rows = [
        [
            f"**{s.scheduler}**",
            f"{s.completed}/{s.jobs}",
            _failed(s),
            pct(s.gpu_alloc_busy),
            pct(s.gpu_alloc_mean),
            minutes(s.jct_mean),
            _ratio(s.jct_mean, ref.jct_mean if ref else None),
            minutes(s.jct_p50),
            minutes(s.jct_p99),
            minutes(s.wait_mean),
            minutes(s.wait_p99),
            hours(s.makespan),
            str(s.timeouts),
            number(s.partial_gpu_hours, 1),
            str(s.evictions),
        ]
        for s in summaries
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


def fairness_table(summaries: Sequence[Summary]) -> str:
    queues = sorted({q for s in summaries for q in s.queue_shares})
    headers = ["scheduler", "fairness error", "Jain", *(f"{q} held/deserved" for q in queues)]
    rows = []
    for s in summaries:
        shares = [
            f"{pct(s.queue_shares[q][0])} / {pct(s.queue_shares[q][1])}" if q in s.queue_shares else "–" for q in queues
        ]
        rows.append([f"**{s.scheduler}**", pct(s.fairness_error), number(s.jain_index, 3), *shares])
    return table(headers, rows)


def placement_table(summaries: Sequence[Summary]) -> str:
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
        "rejected",
        "errors",
    ]
    rows = [
        [
            f"**{s.scheduler}**",
            str(s.multi_gpu_jobs),
            pct(s.one_node_share),
            pct(s.one_rack_share),
            number(s.bandwidth_mean, 1),
            str(s.cycles),
            seconds(s.cycle_mean),
            seconds(s.cycle_p99),
            seconds(s.cycle_max),
            pct(s.optimal_share),
            pct(s.gap_mean, 2),
            str(s.rejected),
            str(s.errors),
        ]
        for s in summaries
    ]
    return table(headers, rows)


def saturation_table(summaries: Sequence[Summary]) -> str:
    """The FGD experiment: allocated GPU share at each arrived level; a bound row first."""
    levels = [level for level in ARRIVED_LEVELS if any(level in s.alloc_at for s in summaries)]
    headers = ["scheduler", *(f"arrived {level:.0%}" for level in levels), "at the end", "cycle mean (s)"]
    rows = [["*bound: min(arrived, 100%)*", *(pct(min(level, 1.0)) for level in levels), pct(1.0), "–"]]
    for s in summaries:
        rows.append(
            [
                f"**{s.scheduler}**",
                *(pct(s.alloc_at.get(level)) for level in levels),
                f"{pct(s.final_alloc)} of {pct(s.arrived_final, 0)}",
                seconds(s.cycle_mean),
            ]
        )
    return table(headers, rows)


# --- plots -----------------------------------------------------------------------------------


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_saturation(results: Sequence[SimResult], path: Path, title: str) -> Path:
    """Left: allocated against arrived GPUs; right: the GPUs left unallocated as the cluster
    saturates (the FGD paper's view), from 70% arrived on."""
    plt = _pyplot()
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
    plt = _pyplot()
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
    plt = _pyplot()
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
    plt = _pyplot()
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
