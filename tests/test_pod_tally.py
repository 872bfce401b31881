"""Workload sums kept across cycles (``solver/pricing/pod_tally.py``): over any sequence of pod
lists, with unchanged pods kept as the very same objects (as the live scheduler's converter keeps
them), the kept sums equal a fresh count, and so do the pricing measures that read them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import node, pod, snapshot
from vcsat.model import Pod, Policy
from vcsat.solver.pricing import fragmentation, scarcity
from vcsat.solver.pricing.pod_tally import Tally
from vcsat.solver.problem import build_problem

MODEL = "nvidia.com/gpu.product"


@dataclass(frozen=True, eq=False)
class _Item:
    """A stand-in pod: compared by identity, as the tally compares pods."""

    kind: str
    amount: int


def _added(item: _Item) -> tuple[tuple[str, int], ...]:
    return ((item.kind, item.amount), ("all", item.amount))


def _fresh(items: list[_Item]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for item in items:
        for kind, amount in _added(item):
            counts[kind] += amount
    return {kind: total for kind, total in counts.items() if total}


ITEMS = [_Item(kind, amount) for kind in "abc" for amount in (-2, 0, 1, 3)]


@pytest.mark.parametrize(
    ("lists", "last"),
    [
        ([[0, 1], [1, 2]], {"a": 1, "all": 1}),  # (a,-2) gone, (a,0) kept, (a,1) came
        ([[2, 2], [2]], {"a": 1, "all": 1}),  # one pod twice, then once: counted afresh
        ([[3, 7], []], {}),  # everything gone
        ([[4], [0], [4]], {"b": -2, "all": -2}),  # a pod back after a cycle away
    ],
)
def test_kept_sums_follow_the_pods(lists: list[list[int]], last: dict[str, int]) -> None:
    tally: Tally[str] = Tally(_added)
    for chosen in lists:
        sums = tally.sums([ITEMS[i] for i in chosen])
    assert sums == last


@settings(max_examples=200)
@given(st.lists(st.lists(st.integers(0, len(ITEMS) - 1), max_size=10), min_size=1, max_size=6))
def test_kept_sums_equal_a_fresh_count(lists: list[list[int]]) -> None:
    tally: Tally[str] = Tally(_added)
    for chosen in lists:
        items = [ITEMS[i] for i in chosen]
        sums = tally.sums(tuple(items))
        assert sums == _fresh(items)
        sums["changed by the caller"] = 1  # the caller's copy, not the tally's
        assert tally.sums(tuple(items)) == _fresh(items)


def _pods() -> list[Pod]:
    """Pods of three GPU models (confined or not, bound or pending, whole GPUs or shares)."""
    made: list[Pod] = []
    for i, (model, gpus, milli, bound) in enumerate(
        [
            ("A100", 1, 0, True),
            ("A100", 2, 0, False),
            ("T4", 1, 0, True),
            ("T4", 0, 500, False),
            ("", 1, 0, True),
            ("", 0, 250, False),
            ("T4", 4, 0, False),
            ("A100", 0, 300, True),
        ]
    ):
        where = {"node": f"n-{model or 'T4'}"} if bound else {}
        affinity = f"{MODEL} in ({model})" if model else ()
        made.append(pod(f"ns/p{i}", gpus=gpus, gpu_milli=milli, affinity=affinity, **where))  # type: ignore[arg-type]
    return made


PODS = _pods()
NODES = [
    node(f"n-{model}", cpu="64", memory="256Gi", gpus=8, labels={MODEL: model}) for model in ("A100", "T4", "H100")
]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sets(st.integers(0, len(PODS) - 1)), min_size=1, max_size=5))
def test_measures_from_kept_sums_equal_fresh_ones(chosen: list[set[int]]) -> None:
    policy = Policy(time_limit_s=1.0)
    for picked in chosen:
        snap = snapshot(nodes=NODES, pods=[PODS[i] for i in sorted(picked)])
        problem = build_problem(snap, policy)
        kept_scarcity, kept_workload = scarcity.measure(problem), fragmentation.workload_of(snap)
        kept_tallies = scarcity._DEMAND, fragmentation._TASKS
        scarcity._DEMAND, fragmentation._TASKS = Tally(scarcity._pod_demand), Tally(fragmentation._task_of)
        try:
            fresh_scarcity, fresh_workload = scarcity.measure(problem), fragmentation.workload_of(snap)
        finally:
            scarcity._DEMAND, fragmentation._TASKS = kept_tallies
        assert kept_scarcity == fresh_scarcity
        assert kept_workload == fresh_workload


@dataclass(frozen=True, eq=False)
class _Alike:
    """A stand-in pod whose contribution object it shares with the pods of its spec."""

    added: tuple[tuple[str, int], ...]


_SHARED = [((kind, amount), ("all", amount)) for kind in "abc" for amount in (-2, 0, 1, 3)]


@settings(max_examples=200)
@given(st.lists(st.integers(0, len(_SHARED) - 1), max_size=16))
def test_a_count_of_shared_contributions_is_the_plain_one_in_its_order(chosen: list[int]) -> None:
    # Pods of one spec share one contribution object: counted once times its pods, the sums and
    # the order their kinds first came in are those of adding pod by pod.
    items = [_Alike(_SHARED[i]) for i in chosen]
    plain: dict[str, int] = {}
    for item in items:
        for kind, amount in item.added:
            plain[kind] = plain.get(kind, 0) + amount
    expected = [(kind, total) for kind, total in plain.items() if total]
    assert list(Tally(lambda item: item.added).sums(items).items()) == expected


def _alike(base: Pod, i: int, where: dict[str, object]) -> Pod:
    """A pod of ``base``'s spec (its requests, selector, affinity and tolerations objects), its own state."""
    return base.model_copy(update={"name": f"{base.name}-{i}", **where})


@pytest.mark.parametrize(
    "where",
    [
        {},
        {"node_name": "n-T4", "phase": "Running"},
        {"node_name": "n-T4", "phase": "Succeeded"},
        {"terminating": True},
        {"managed": False, "node_name": "n-T4", "phase": "Running"},
    ],
)
def test_a_pods_demand_is_its_own_whatever_its_spec_mates(where: dict[str, object]) -> None:
    # Each spec's first pod in another state than its mate: the mate's demand is made from its own
    # state, not taken from the first.
    for i, base in enumerate(PODS):
        mate = _alike(base, i, where)
        assert mate.requests is base.requests and mate.affinity is base.affinity
        for p in (base, mate):
            fresh = scarcity._spec_demand(p) if p.managed and (p.bound or p.pending) else ()
            assert scarcity._pod_demand(p) == fresh
