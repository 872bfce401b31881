"""The heterogeneous openb variants (vcsat.adapters.sim.hetero): pods asking for a GPU model."""

from __future__ import annotations

from collections import Counter

import pytest
from click.testing import CliRunner

from vcsat.adapters.cli import main
from vcsat.adapters.sim import hetero
from vcsat.adapters.sim.workloads import GPU_PRODUCT_LABEL, openb


def _spec(job: object) -> tuple[str, ...]:
    terms = job.tasks[0].affinity  # type: ignore[attr-defined]
    return terms[0].match_expressions[0].values if terms else ()


@pytest.fixture(scope="module")
def base() -> object:
    return openb(every=8, seed=3)


@pytest.mark.parametrize("fraction", hetero.FRACTIONS)
def test_the_fraction_of_gpu_pods_asks_for_a_model_that_can_host_it(base: object, fraction: float) -> None:
    workload = hetero.constrain(base.workload, fraction, seed=3)  # type: ignore[attr-defined]
    gpu_jobs = [job for job in workload.jobs if job.tasks[0].gpu_milli]
    asked = [job for job in gpu_jobs if _spec(job)]
    assert abs(len(asked) / len(gpu_jobs) - fraction) < 0.05
    assert all(not _spec(job) for job in workload.jobs if not job.tasks[0].gpu_milli)  # CPU pods: never
    for job in asked:
        hosts = hetero.hosting_models(workload.nodes, job.tasks[0].requests)
        assert set(_spec(job)) & set(hosts)
        assert job.tasks[0].affinity[0].match_expressions[0].key == GPU_PRODUCT_LABEL


def test_models_in_proportion_to_their_gpus(base: object) -> None:
    workload = hetero.constrain(base.workload, 0.5, seed=3)  # type: ignore[attr-defined]
    weights = hetero.model_gpus(workload.nodes)
    drawn = Counter(model for job in workload.jobs for model in _spec(job) if len(_spec(job)) == 1)
    biggest = max(weights, key=lambda m: weights[m])
    assert drawn.most_common(1)[0][0] == biggest
    assert any(len(_spec(job)) > 1 for job in workload.jobs)  # some accept V100M16|V100M32


def test_same_seed_same_draw_and_higher_fractions_constrain_a_superset(base: object) -> None:
    low = hetero.constrain(base.workload, 0.1, seed=3)  # type: ignore[attr-defined]
    again = hetero.constrain(base.workload, 0.1, seed=3)  # type: ignore[attr-defined]
    high = hetero.constrain(base.workload, 0.5, seed=3)  # type: ignore[attr-defined]
    assert low.jobs == again.jobs
    for a, b in zip(low.jobs, high.jobs, strict=True):
        assert not _spec(a) or _spec(b) == _spec(a)


@pytest.mark.parametrize(
    ("name", "fraction"),
    [("openb-hetero-10", 0.1), ("openb-hetero-33", 0.33), ("openb", None), ("openb-hetero-x", None)],
)
def test_workload_names(name: str, fraction: float | None) -> None:
    assert hetero.fraction_of(name) == fraction


def test_bench_runs_a_variant(tmp_path: object) -> None:
    out = tmp_path / "bench"  # type: ignore[operator]
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "--quick",
            "--workload",
            "openb-hetero-25",
            "--schedulers",
            "firstfit",
            "--seeds",
            "1",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "### openb-hetero-25" in result.output and "arrived 50%" in result.output
    assert "ask for a GPU model" in result.output
