"""Dominant Resource Fairness: dominant shares and the reference progressive filling."""

from __future__ import annotations

from fractions import Fraction

import pytest
from builders import group, node, pod, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import resources as res
from vcsat.solver.shares import dominant_share, drf_progressive_filling, job_dominant_shares, job_usage

GIB = 2**30
PAPER_NODE = {res.CPU: 9000, res.MEMORY: 18 * GIB}


def test_drf_paper_example() -> None:
    """Ghodsi et al. 2011, §4: A's tasks ⟨1 CPU, 4 GiB⟩, B's ⟨3 CPU, 1 GiB⟩ on 9 CPU, 18 GiB."""
    counts = drf_progressive_filling(
        PAPER_NODE,
        {"A": {res.CPU: 1000, res.MEMORY: 4 * GIB}, "B": {res.CPU: 3000, res.MEMORY: 1 * GIB}},
    )
    assert counts == {"A": 3, "B": 2}
    # Both end with a dominant share of 2/3: A on memory (12 of 18 GiB), B on cpu (6 of 9).
    assert dominant_share({res.CPU: 3000, res.MEMORY: 12 * GIB}, PAPER_NODE) == Fraction(2, 3)
    assert dominant_share({res.CPU: 6000, res.MEMORY: 2 * GIB}, PAPER_NODE) == Fraction(2, 3)


@pytest.mark.parametrize(
    ("request_", "total", "expected"),
    [
        ({res.CPU: 1000, res.MEMORY: 4 * GIB}, PAPER_NODE, Fraction(2, 9)),
        ({res.CPU: 3000, res.MEMORY: 1 * GIB}, PAPER_NODE, Fraction(1, 3)),
        ({}, PAPER_NODE, Fraction(0)),
        ({res.CPU: 1000, res.PODS: 1}, {res.CPU: 10_000, res.PODS: 2}, Fraction(1, 10)),
        ({res.GPU: 1}, PAPER_NODE, Fraction(1)),
        ({res.GPU: 2, res.CPU: 1000}, {res.GPU: 8, res.CPU: 9000}, Fraction(1, 4)),
    ],
    ids=["paper-A", "paper-B", "nothing", "pods-ignored", "missing-resource-counts-1", "gpu-dominates"],
)
def test_dominant_share(request_: dict[str, int], total: dict[str, int], expected: Fraction) -> None:
    assert dominant_share(request_, total) == expected


@pytest.mark.parametrize(
    ("capacity", "demands", "limits", "expected"),
    [
        ({res.CPU: 10}, {"a": {res.CPU: 1}, "b": {res.CPU: 1}}, None, {"a": 5, "b": 5}),
        ({res.CPU: 10}, {"a": {res.CPU: 1}, "b": {res.CPU: 1}}, {"a": 2}, {"a": 2, "b": 8}),
        ({res.CPU: 10}, {"a": {res.CPU: 1}, "b": {res.CPU: 20}}, None, {"a": 10, "b": 0}),
        ({res.CPU: 10}, {"a": {res.CPU: 1}}, {"a": 0}, {"a": 0}),
        ({res.CPU: 6}, {"a": {res.CPU: 2}, "b": {res.CPU: 2}}, None, {"a": 2, "b": 1}),
    ],
    ids=["equal", "bounded-job-frees-room", "too-big-job-gets-none", "zero-limit", "tie-goes-to-first"],
)
def test_progressive_filling_table(
    capacity: dict[str, int],
    demands: dict[str, dict[str, int]],
    limits: dict[str, int] | None,
    expected: dict[str, int],
) -> None:
    assert drf_progressive_filling(capacity, demands, limits) == expected


def test_progressive_filling_refuses_an_endless_job() -> None:
    with pytest.raises(ValueError, match="never stop"):
        drf_progressive_filling({res.CPU: 4}, {"a": {}})
    assert drf_progressive_filling({res.CPU: 4}, {"a": {}}, {"a": 3}) == {"a": 3}


def test_job_shares_from_a_snapshot() -> None:
    snap = snapshot(
        nodes=[node("n1", cpu="9", memory="18Gi")],
        pods=[
            pod("ns/a-0", cpu="1", memory="4Gi", group="ns/a", node="n1"),
            pod("ns/a-1", cpu="1", memory="4Gi", group="ns/a", node="n1"),
            pod("ns/b-0", cpu="3", memory="1Gi", group="ns/b", node="n1"),
            pod("ns/lone", cpu="1", memory="1Gi", node="n1"),
            pod("ns/waiting", cpu="1", memory="1Gi", group="ns/b"),
            pod("kube-system/ds", cpu="1", memory="1Gi", node="n1", managed=False),
        ],
        groups=[group("ns/a"), group("ns/b")],
    )
    assert set(job_usage(snap)) == {"ns/a", "ns/b", "ns/lone"}
    total = {res.CPU: 9000, res.MEMORY: 18 * GIB}
    shares = job_dominant_shares(snap, total)
    assert shares == {"ns/a": Fraction(4, 9), "ns/b": Fraction(1, 3), "ns/lone": Fraction(1, 9)}


# --- properties of progressive filling --------------------------------------------------------

vectors = st.fixed_dictionaries({res.CPU: st.integers(1, 6), res.MEMORY: st.integers(0, 6)})


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries({res.CPU: st.integers(0, 30), res.MEMORY: st.integers(0, 30)}),
    st.lists(vectors, min_size=1, max_size=5),
    st.lists(st.one_of(st.none(), st.integers(0, 8)), min_size=5, max_size=5),
)
def test_progressive_filling_properties(
    capacity: dict[str, int], demand_list: list[dict[str, int]], limit_list: list[int | None]
) -> None:
    demands = {f"j{i}": demand for i, demand in enumerate(demand_list)}
    limits = {job: limit for job, limit in zip(demands, limit_list, strict=False) if limit is not None}
    counts = drf_progressive_filling(capacity, demands, limits)

    used = res.total(res.scale(demands[job], counts[job]) for job in demands)
    left = res.sub(capacity, used)
    # Feasible, and within each job's bound.
    assert all(amount >= 0 for amount in left.values())
    assert all(counts[job] <= limits.get(job, counts[job]) for job in demands)
    # Pareto-efficient: no job that may take more has a next task that fits in what is left.
    for job in demands:
        if counts[job] < limits.get(job, counts[job] + 1):
            assert not res.fits(demands[job], left)
    # DRF: a job that ends poorer than another was before that one's last task could not take a
    # task even in the room that last task took (shares only grow, so it was blocked then).
    share = {job: dominant_share(res.scale(demands[job], counts[job]), capacity) for job in demands}
    for poor in demands:
        if counts[poor] >= limits.get(poor, counts[poor] + 1):
            continue
        for rich in demands:
            if rich == poor or counts[rich] == 0:
                continue
            before_last = dominant_share(res.scale(demands[rich], counts[rich] - 1), capacity)
            if before_last > share[poor]:
                assert not res.fits(demands[poor], res.add(left, demands[rich]))
