"""The simulator: small deterministic runs whose every number can be checked by hand, the trace
loader, the metrics' definitions, and ``vcsat bench`` / ``vcsat simulate`` end to end."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.builders import node
from vcsat.adapters.cli import app as cli
from vcsat.adapters.errors import InputError
from vcsat.adapters.sim import report, workloads
from vcsat.adapters.sim.engine import CycleRecord, JobSpec, SimOptions, SimResult, TaskSpec, Workload, simulate
from vcsat.adapters.sim.metrics import bottleneck, jain, percentile, summarize, water_fill
from vcsat.adapters.sim.schedulers import DEFAULT_NAMES, make_scheduler
from vcsat.model import Queue
from vcsat.model import resources as res

GPU_POD = {res.CPU: 1000, res.MEMORY: 1024 * res.MIB, res.PODS: 1, res.GPU: 1}


def job(name: str, arrival: float, duration: float, gpus: int = 1, pods: int = 1, queue: str = "default") -> JobSpec:
    requests = {**GPU_POD, res.GPU: gpus}
    return JobSpec(name=name, tasks=(TaskSpec("w", pods, requests),), arrival=arrival, duration=duration, queue=queue)


def small_cluster(jobs: list[JobSpec]) -> Workload:
    return Workload(name="small", nodes=(node("n1", cpu="16", memory="64Gi", gpus=2),), jobs=tuple(jobs))


def run(workload: Workload, scheduler: str, **options: Any) -> SimResult:
    return simulate(workload, make_scheduler(scheduler, time_limit_s=1.0), SimOptions(**options))


SCHEDULERS = ["vcsat", "volcano", "kube-default", "bestfit", "firstfit", "fgd"]


# --- the engine ---------------------------------------------------------------------------------


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_fifo_on_one_node_by_hand(scheduler: str) -> None:
    # Two GPUs. a (2 GPUs, 100 s) at 0; b (1 GPU, 50 s) at 10; c (1 GPU, 30 s) at 20.
    # Cycles every 10 s: a runs 0–100; b and c both start at 100; c ends 130, b ends 150.
    workload = small_cluster([job("a", 0, 100, gpus=2), job("b", 10, 50), job("c", 20, 30)])
    result = run(workload, scheduler, cycle_period=10.0)
    times = {j.spec.name: (j.started, j.finished) for j in result.jobs}
    assert times == {"a": (0.0, 100.0), "b": (100.0, 150.0), "c": (100.0, 130.0)}
    summary = summarize(result)
    assert summary.makespan == 150.0
    assert summary.jct_mean == pytest.approx((100 + 140 + 110) / 3)
    assert summary.wait_mean == pytest.approx((0 + 90 + 80) / 3)
    # 2 GPUs held 0–100, 2 held 100–130, 1 held 130–150: (200 + 60 + 20) / (2 × 150).
    assert summary.gpu_alloc_mean == pytest.approx(280 / 300)
    assert result.rejected == 0


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_every_pod_is_accounted_for(scheduler: str) -> None:
    jobs = [job(f"j{i}", arrival=7.0 * i, duration=40.0 + 13 * i, gpus=1 + i % 2, pods=1 + i % 3) for i in range(8)]
    workload = Workload(
        name="mix",
        nodes=tuple(node(f"n{i}", cpu="16", memory="64Gi", gpus=4) for i in range(2)),
        jobs=tuple(jobs),
    )
    result = run(workload, scheduler, cycle_period=5.0)
    assert len(result.jobs) == len(jobs)
    for record in result.jobs:
        assert len(record.pod_keys) == record.spec.pods
        assert (record.finished is not None) != bool(record.failed)
        if record.finished is not None and record.restarts == 0:
            assert record.started is not None and record.started >= record.spec.arrival
            assert record.finished - record.started == pytest.approx(record.spec.duration)
    assert result.samples[-1].running_pods == 0 and result.samples[-1].pending_pods == 0
    assert result.rejected == 0


def test_a_job_that_never_fits_is_given_up() -> None:
    workload = small_cluster([job("big", 0, 10, gpus=4), job("ok", 0, 10)])
    result = run(workload, "volcano", cycle_period=1.0, drop_unplaced_after=1)
    assert {j.spec.name: j.failed for j in result.jobs} == {"big": "unplaced", "ok": ""}


@pytest.mark.parametrize("scheduler", ["vcsat", "kube-default"])
def test_the_run_ends_when_nothing_can_change(scheduler: str) -> None:
    workload = small_cluster([job("big", 0, 10, gpus=4), job("ok", 0, 10)])
    result = run(workload, scheduler, cycle_period=1.0)
    assert {j.spec.name: j.failed for j in result.jobs} == {"big": "stuck", "ok": ""}
    assert result.end_time == 10.0  # when "ok" completed; "big" was tried again then, in vain


def test_node_failures_restart_the_jobs_on_them() -> None:
    workload = small_cluster([job(f"j{i}", 0, 3600) for i in range(2)])
    result = run(workload, "bestfit", cycle_period=60.0, node_mtbf=1800.0, node_repair=300.0, horizon=50000.0)
    assert sum(j.restarts for j in result.jobs) > 0
    assert all(j.finished is not None for j in result.jobs)


# --- the TensorFlow gang experiment -----------------------------------------------------------


def tiny_tf() -> workloads.Experiment:
    # 3 jobs of 1 ps + 4 one-GPU workers on 2 nodes × 4 GPUs: two fit together, not three. Pods
    # created interleaved, so placing pod by pod gives every job some workers and none all four.
    return workloads.tf_gang(
        nodes=2,
        gpus_per_node=4,
        jobs=3,
        workers=4,
        gpus_per_worker=1,
        run_time=600.0,
        timeout=300.0,
        max_restarts=2,
        cycle_period=30.0,
    )


def test_pod_by_pod_scheduling_deadlocks_the_gangs() -> None:
    exp = tiny_tf()
    result = simulate(exp.workload, make_scheduler("kube-default"), exp.options)
    summary = summarize(result)
    assert summary.completed == 0
    assert summary.failed == {"timeout": 3}
    assert summary.timeouts == 9  # every job timed out on each of its 3 tries
    assert summary.partial_gpu_hours > 0 and summary.max_partial_jobs == 3


@pytest.mark.parametrize("scheduler", ["vcsat", "volcano"])
def test_gang_scheduling_finishes_them_all(scheduler: str) -> None:
    exp = tiny_tf()
    result = simulate(exp.workload, make_scheduler(scheduler, time_limit_s=1.0), exp.options)
    summary = summarize(result)
    assert summary.completed == 3 and summary.timeouts == 0 and summary.partial_gpu_hours == 0
    assert summary.makespan == 1200.0  # two jobs, then the third
    assert result.rejected == 0


# --- the openb trace ----------------------------------------------------------------------------


NODES_CSV = """sn,cpu_milli,memory_mib,gpu,model
node-0,32000,131072,2,T4
node-1,64000,262144,8,V100M32
node-2,16000,65536,0,
"""
PODS_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
PODS_CSV = (
    PODS_HEADER
    + """creation_time,deletion_time,scheduled_time
p-late,4000,8192,1,500,,LS,Running,20,100,20
p-early,8000,16384,2,1000,V100M32|T4,LS,Running,10,100,10
p-cpu,2000,4096,0,0,,BE,Running,15,100,15
"""
)


@pytest.fixture
def trace_dir(tmp_path: Path) -> Path:
    (tmp_path / "openb_node_list_gpu_node.csv").write_text(NODES_CSV)
    (tmp_path / "openb_pod_list_default.csv").write_text(PODS_CSV)
    return tmp_path


def test_openb_nodes_carry_the_gpu_model_label(trace_dir: Path) -> None:
    nodes = workloads.openb_nodes(trace_dir)
    assert [(n.name, n.gpus, n.labels.get(workloads.GPU_PRODUCT_LABEL)) for n in nodes] == [
        ("node-0", 2, "T4"),
        ("node-1", 8, "V100M32"),
        ("node-2", 0, None),
    ]
    assert nodes[1].allocatable == {res.CPU: 64000, res.MEMORY: 262144 * res.MIB, res.PODS: 110, res.GPU: 8}


def test_openb_pods_in_trace_order_with_shares_and_gpu_types(trace_dir: Path) -> None:
    pods = workloads.openb_pods("default", trace_dir)
    assert [p.name for p in pods] == ["p-early", "p-cpu", "p-late"]
    early, cpu, late = (workloads.as_pod(p) for p in pods)
    assert early.requests == {res.CPU: 8000, res.MEMORY: 16384 * res.MIB, res.PODS: 1, res.GPU: 2}
    assert early.affinity[0].match_expressions[0].values == ("T4", "V100M32")
    assert late.requests == {res.CPU: 4000, res.MEMORY: 8192 * res.MIB, res.PODS: 1, res.GPU_MILLI: 500}
    assert res.GPU not in cpu.requests and res.GPU_MILLI not in cpu.requests


def test_openb_experiment_arrives_until_the_target(trace_dir: Path) -> None:
    exp = workloads.openb(target=1.0, directory=trace_dir)
    arrived = sum(j.gpu_milli for j in exp.workload.jobs)
    assert 10_000 <= arrived < 10_000 + 2_000  # 10 GPUs in the cluster; the last pod asks at most 2
    assert [j.name for j in exp.workload.jobs[:3]] == ["p-early", "p-cpu", "p-late"]
    assert all(not j.podgroup and math.isinf(j.duration) for j in exp.workload.jobs)


def test_openb_seeds_are_other_workloads_only_when_shuffled() -> None:
    # The quick-size cluster never uses the trace up: without shuffling, every seed is one workload.
    def names(seed: int, shuffle: bool) -> list[str]:
        return [j.name for j in workloads.openb(every=8, target=0.3, seed=seed, shuffle=shuffle).workload.jobs]

    assert names(0, False) == names(1, False)
    assert names(0, True) != names(1, True)
    assert names(1, True) == names(1, True)
    trace = {p.name for p in workloads.openb_pods("default")}
    assert set(names(1, True)) <= trace and len(set(names(1, True))) == len(names(1, True))


@pytest.mark.parametrize("scheduler", ["fgd", "bestfit", "vcsat"])
def test_openb_run_allocates_and_stops(trace_dir: Path, scheduler: str) -> None:
    exp = workloads.openb(target=1.2, directory=trace_dir)
    pods = [workloads.as_pod(p) for p in workloads.openb_pods("default", trace_dir)]
    result = simulate(exp.workload, make_scheduler(scheduler, time_limit_s=1.0, workload_pods=pods), exp.options)
    summary = summarize(result)
    assert result.rejected == 0
    assert summary.final_alloc is not None and 0 < summary.final_alloc <= 1
    assert summary.arrived_final is not None and summary.arrived_final >= 1.2


def test_the_trace_ships_with_the_package_and_an_env_var_points_elsewhere(
    trace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(workloads.OPENB_DIR_ENV, raising=False)
    packaged = workloads.openb_dir()
    assert packaged.parts[-3:] == ("adapters", "data", "openb")
    assert {"NOTICE", "openb_node_list_gpu_node.csv", *workloads.OPENB_TRACES.values()} <= {
        p.name for p in packaged.iterdir()
    }
    assert len(workloads.openb_nodes(every=100)) == 13  # 1,213 nodes in the trace
    monkeypatch.setenv(workloads.OPENB_DIR_ENV, str(trace_dir))
    assert workloads.openb_dir() == trace_dir
    assert [n.name for n in workloads.openb_nodes()] == ["node-0", "node-1", "node-2"]


def test_bad_trace_is_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "openb_node_list_gpu_node.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,lots,1,1,T4\n")
    with pytest.raises(InputError, match=r"openb_node_list_gpu_node.csv: line 2: cpu_milli: not an integer"):
        workloads.openb_nodes(tmp_path)


# --- metrics --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("capacity", "weights", "demand", "expected"),
    [
        (12, {"a": 2, "b": 1}, {"a": 100, "b": 100}, {"a": 8, "b": 4}),
        (12, {"a": 2, "b": 1}, {"a": 2, "b": 100}, {"a": 2, "b": 10}),
        (12, {"a": 1, "b": 1}, {"a": 3, "b": 3}, {"a": 3, "b": 3}),
        (12, {"a": 1, "b": 1}, {"a": 0, "b": 30}, {"a": 0, "b": 12}),
    ],
)
def test_water_fill(
    capacity: float, weights: dict[str, float], demand: dict[str, float], expected: dict[str, float]
) -> None:
    assert water_fill(capacity, weights, demand) == pytest.approx(expected)


def test_jain_and_percentile() -> None:
    assert jain([1, 1, 1]) == pytest.approx(1.0)
    assert jain([1, 0, 0]) == pytest.approx(1 / 3)
    assert percentile([1, 2, 3, 4], 0.5) == pytest.approx(2.5)
    assert percentile([], 0.5) is None


@pytest.mark.parametrize(("gpus", "width"), [([0, 1], 32.0), ([0, 3], 32.0), ([0, 4], 16.0), ([2, 5, 6], 16.0)])
def test_bottleneck_bandwidth_on_two_pcie_switches(gpus: list[int], width: float) -> None:
    assert bottleneck(workloads.pcie_2x4_topology(), gpus) == width


def test_fairness_against_weighted_deserved_shares() -> None:
    # Queue a (weight 3) and b (weight 1), 4 GPUs, both always want more: a deserves 3, b 1. FIFO
    # gives b's older jobs everything first: the error is how far that is from 3/1.
    jobs = [job(f"b{i}", 0, 100, queue="b") for i in range(4)] + [job(f"a{i}", 1, 100, queue="a") for i in range(4)]
    workload = Workload(
        name="fair",
        nodes=(node("n1", cpu="16", memory="64Gi", gpus=4),),
        jobs=tuple(jobs),
        queues=(Queue(name="a", weight=3), Queue(name="b", weight=1)),
    )
    summary = summarize(run(workload, "firstfit", cycle_period=10.0))
    held_a, deserved_a = summary.queue_shares["a"]
    assert deserved_a > held_a
    assert summary.fairness_error is not None and summary.fairness_error > 0.4


@pytest.mark.parametrize(
    ("scheduler", "cycles", "expected"),
    [
        # OPTIMAL cycles have no gap; FEASIBLE and FALLBACK cycles all count; an ERROR decided nothing.
        (
            "vcsat",
            [("OPTIMAL", 10, 10), ("FEASIBLE", 90, 100), ("FALLBACK", 50, 100), ("ERROR", 0, 0)],
            (0.25, (0.1 + 0.5) / 2, 0.5, 1),
        ),
        ("vcsat", [("OPTIMAL", 10, 10), ("OPTIMAL", 0, 0)], (1.0, 0.0, 0.0, 0)),
        ("vcsat-greedy", [("FALLBACK", 0, 0.5), ("FALLBACK", 8, 8)], (0.0, 0.25, 0.5, 2)),
        ("firstfit", [("FALLBACK", 5, 0)], (None, None, None, None)),  # a baseline proves no bound
    ],
)
def test_cycle_summary_gaps_over_every_cycle_not_proved_optimal(
    scheduler: str, cycles: list[tuple[str, float, float]], expected: tuple[float | None, ...]
) -> None:
    result = run(small_cluster([]), "firstfit")
    result.scheduler = scheduler
    result.cycles = [CycleRecord(float(i), 0.1, status, o, b, 0, 0, 0, 0) for i, (status, o, b) in enumerate(cycles)]
    summary = summarize(result)
    assert (summary.optimal_share, summary.gap_mean, summary.gap_worst, summary.fallbacks) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([0.5, 0.5, 0.5], "50.0%"),  # the seeds agree: no range
        ([0.5, 0.6, 0.7], "60.0% (50.0%–70.0%)"),
        ([None, 0.2, 0.4], "30.0% (20.0%–40.0%)"),  # a seed without a value is left out
        ([None, None], "–"),
    ],
)
def test_a_cell_is_the_mean_over_seeds_with_its_range(values: list[float | None], expected: str) -> None:
    assert report.spread(values, report.pct) == expected


def test_counts_over_seeds() -> None:
    assert report.spread([3, 3], report.count) == "3"
    assert report.spread([2, 3], report.count) == "2.5 (2–3)"


# --- the commands -----------------------------------------------------------------------------


def test_bench_prints_markdown_and_writes_plots(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    result = CliRunner().invoke(
        cli.main,
        [
            "bench",
            "--quick",
            "--workload",
            "tf-gang",
            "--schedulers",
            "vcsat,kube-default",
            "--seeds",
            "2",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("## Simulations (quick; 2 seeds, 0–1;")
    assert "| **kube-default** | 0/6 | 6 timeout |" in result.output
    assert "| **vcsat** | 6/6 | 0 |" in result.output
    assert (out / "results.md").read_text().startswith("## Simulations (quick")
    assert sorted(p.name for p in (out / "plots").iterdir()) == [
        "sim-tf-gang-allocation.png",
        "sim-tf-gang-cycles.png",
        "sim-tf-gang-jct.png",
    ]


def test_bench_without_matplotlib_writes_the_tables_and_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "can_plot", lambda: False)
    out = tmp_path / "bench"
    result = CliRunner().invoke(
        cli.main,
        ["bench", "--quick", "--workload", "tf-gang", "--schedulers", "firstfit", "--seeds", "1", "-o", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert "no plots: they need the bench extra, pip install 'vcsat[bench]'" in result.stderr
    assert (out / "results.md").exists() and not (out / "plots").exists()
    assert "![" not in (out / "results.md").read_text()


def test_simulate_one_scheduler() -> None:
    result = CliRunner().invoke(cli.main, ["simulate", "tf-gang", "--scheduler", "volcano", "--quick"])
    assert result.exit_code == 0, result.output
    assert "| **volcano** | 6/6 | 0 |" in result.output


def test_unknown_scheduler_is_bad_usage(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli.main, ["bench", "--quick", "--schedulers", "slurm", "-o", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "vcsat: --schedulers: unknown scheduler 'slurm' (one of vcsat, vcsat-no-fit, vcsat-no-timeout, "
        "vcsat-greedy, volcano, volcano-gpu, kube-default, bestfit, firstfit, fgd, vcsat-evict)"
    ]


@pytest.mark.parametrize(("name", "evicts"), [("vcsat", False), ("vcsat-evict", True)])
def test_vcsat_runs_volcano_default_actions_unless_told_to_evict(name: str, evicts: bool) -> None:
    """The bench compares schedulers under the same actions (Volcano's default: no preempt or
    reclaim); the evicting variant is there to measure what evictions cost."""
    scheduler = make_scheduler(name)
    assert (scheduler.policy.preempt, scheduler.policy.reclaim) == (evicts, evicts)
    assert (name in DEFAULT_NAMES) is not evicts


@pytest.mark.parametrize(
    ("name", "field", "value"),
    [
        ("vcsat-no-fit", "admit_by_fit", False),
        ("vcsat-no-timeout", "inqueue_timeout_s", None),
        ("vcsat-greedy", "search", False),
    ],
)
def test_each_ablation_turns_one_part_off(name: str, field: str, value: object) -> None:
    full, ablated = make_scheduler("vcsat").policy, make_scheduler(name).policy
    assert getattr(ablated, field) == value != getattr(full, field)
    assert ablated.model_copy(update={field: getattr(full, field)}) == full
    assert name in DEFAULT_NAMES


def test_the_greedy_ablation_never_searches() -> None:
    workload = small_cluster([job("a", 0, 100, gpus=2), job("b", 10, 50), job("c", 20, 30)])
    summary = summarize(run(workload, "vcsat-greedy", cycle_period=10.0))
    assert summary.cycles > 0 and summary.fallbacks == summary.cycles
    assert summary.optimal_share == 0.0
