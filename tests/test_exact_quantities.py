"""Exact quantities (contract §1, issue 10 item 1): pods fit a node or a queue's capability in vcsat
if and only if they fit by Kubernetes' own arithmetic, through the real converter and solve.

kube-scheduler's arithmetic, restated here from its documentation and written apart from the code
under test: a pod's request is the exact sum of its containers' quantities, then rounded up once
to millicores for cpu and to whole units (bytes, counts) for everything else; a node's allocatable
is rounded the same way; a set of pods fits when, per resource, the sum of those integers is at
most the allocatable one.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.model import Decision, Policy, Snapshot
from vcsat.model import resources as res
from vcsat.model.quantity import nanos_to_amount, parse_nanos
from vcsat.solver import check, solve
from vcsat.solver.units import bounded_row, share_row, units_for

POLICY = Policy(time_limit_s=5)
Obj = dict[str, Any]


# --- Kubernetes objects -------------------------------------------------------------------------


def k_node(name: str, **allocatable: str) -> Obj:
    amounts = {"cpu": "64", "memory": "256Gi", "pods": "110", **allocatable}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": amounts, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def k_pod(
    name: str,
    containers: list[dict[str, str]],
    *,
    group: str,
    node: str | None = None,
    priority: int = 0,
) -> Obj:
    spec: Obj = {
        "schedulerName": "vcsat",
        "priority": priority,
        "containers": [{"name": f"c{i}", "resources": {"requests": dict(c)}} for i, c in enumerate(containers)],
    }
    status: Obj = {"phase": "Pending"}
    if node is not None:
        spec["nodeName"] = node
        status = {"phase": "Running"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "annotations": {"scheduling.k8s.io/group-name": group},
        },
        "spec": spec,
        "status": status,
    }


def k_group(name: str, min_member: int = 1, queue: str = "default", running: bool = False) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"minMember": min_member, "queue": queue},
        "status": {"phase": "Running" if running else "Inqueue"},
    }


def k_queue(name: str, *, capability: dict[str, str] | None = None, weight: int = 1) -> Obj:
    spec: Obj = {"weight": weight, "reclaimable": True}
    if capability is not None:
        spec["capability"] = capability
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"state": "Open"},
    }


def solved(*objects: Obj, policy: Policy = POLICY) -> tuple[Snapshot, Decision]:
    snap = snapshot_from_objects(list(objects))
    dec = solve(snap, policy)
    assert check(snap, dec) == []
    return snap, dec


def bound(dec: Decision) -> list[str]:
    return sorted(b.pod for b in dec.bindings)


# --- the cases of the issue ---------------------------------------------------------------------


def test_four_1G_pods_fill_a_4G_node() -> None:
    """The issue's case: requests rounded up to MiB and allocatable down refused the fourth pod."""
    pods = [k_pod(f"p{i}", [{"cpu": "1", "memory": "1G"}], group="g") for i in range(4)]
    _, dec = solved(k_node("n1", memory="4G"), k_group("g", min_member=4), *pods)
    assert bound(dec) == [f"ns/p{i}" for i in range(4)]


def test_one_byte_short_leaves_one_pod_out() -> None:
    pods = [k_pod(f"p{i}", [{"cpu": "1", "memory": "1G"}], group=f"g{i}") for i in range(4)]
    groups = [k_group(f"g{i}") for i in range(4)]
    _, dec = solved(k_node("n1", memory="3999999999"), *groups, *pods)
    assert len(dec.bindings) == 3


def test_a_1G_preemption_evicts_exactly_one_pod() -> None:
    """Volcano's preempt scenario in 1G quantities: a 3G node full of three low-priority 1G pods;
    one high-priority 1G pod takes exactly one victim's room (rounding needed two, or none)."""
    running = [
        k_pod(f"low{i}", [{"cpu": "1", "memory": "1G"}], group=f"low{i}", node="n1", priority=1) for i in range(3)
    ]
    groups = [k_group(f"low{i}", running=True) for i in range(3)]
    high = k_pod("high", [{"cpu": "1", "memory": "1G"}], group="high", priority=100)
    _, dec = solved(k_node("n1", memory="3G"), *groups, *running, k_group("high"), high)
    assert [e.reason for e in dec.evictions] == ["preempt"]
    assert [(n.pod, n.node) for n in dec.nominations] == [("ns/high", "n1")]


def test_a_queue_with_exactly_room_takes_it_without_reclaim() -> None:
    """Volcano's reclaim scenario in 1G quantities: qa holds 3G of a 4G node and wants more, qb
    asks 1G. The free 1G is exactly qb's pod: it binds and nothing is reclaimed (rounding saw
    952Mi free for a 954Mi pod, and qa 2Mi above its share, so it evicted one of qa's pods)."""
    held = [k_pod(f"a{i}", [{"cpu": "1", "memory": "1G"}], group=f"a{i}", node="n1") for i in range(3)]
    objects = [
        k_node("n1", memory="4G"),
        k_queue("qa"),
        k_queue("qb"),
        *(k_group(f"a{i}", queue="qa", running=True) for i in range(3)),
        *held,
        k_group("a-more", queue="qa"),
        k_pod("a-more", [{"cpu": "1", "memory": "1G"}], group="a-more"),
        k_group("b", queue="qb"),
        k_pod("b", [{"cpu": "1", "memory": "1G"}], group="b"),
    ]
    _, dec = solved(*objects)
    assert bound(dec) == ["ns/b"]
    assert dec.evictions == []


def test_a_2G_capability_holds_two_1G_pods() -> None:
    groups = [k_group(f"g{i}", queue="q") for i in range(3)]
    pods = [k_pod(f"p{i}", [{"cpu": "1", "memory": "1G"}], group=f"g{i}") for i in range(3)]
    _, dec = solved(k_node("n1"), k_queue("q", capability={"memory": "2G"}), *groups, *pods)
    assert len(dec.bindings) == 2


@pytest.mark.parametrize(
    ("memory", "expected"),
    [
        ("333333", 3),  # 999999 bytes of 1000001
        ("333333.5", 2),  # Value() rounds each pod up to 333334: three need 1000002
        ("333334", 2),
    ],
)
def test_odd_bytes_and_fractional_cpu(memory: str, expected: int) -> None:
    """1.5 cores hold three 500m pods; odd byte counts compare exactly, a fraction of a byte
    rounded up per pod as kube-scheduler does."""
    groups = [k_group(f"g{i}") for i in range(4)]
    pods = [k_pod(f"p{i}", [{"cpu": "0.5", "memory": memory}], group=f"g{i}") for i in range(4)]
    _, dec = solved(k_node("n1", cpu="1.5", memory="1000001"), *groups, *pods)
    assert len(dec.bindings) == expected


def test_messages_show_exact_quantities() -> None:
    pods = [k_pod("p0", [{"cpu": "1", "memory": "5G"}], group="g")]
    _, dec = solved(k_node("n1", memory="4G"), k_group("g"), *pods)
    (status,) = dec.podgroups
    assert "5G memory" in status.message, status.message


# --- Hypothesis: vcsat's fit is Kubernetes' fit -------------------------------------------------

_SUFFIXES: dict[str, Fraction] = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
}
_FRACTION_DIGITS = {"n": 0, "u": 3, "m": 6, "": 9}
"""Digits after the point that keep a quantity a whole number of nanos (Kubernetes' finest)."""


def reference_value(text: str) -> Fraction:
    """A quantity string's exact value, by the suffix table of the Kubernetes docs."""
    suffix = text.lstrip("0123456789.")
    return Fraction(text[: len(text) - len(suffix)]) * _SUFFIXES[suffix]


def reference_amount(resource: str, value: Fraction) -> int:
    """kube-scheduler's integer: MilliValue() for cpu, Value() otherwise, both rounding up."""
    return math.ceil(value * 1000) if resource == "cpu" else math.ceil(value)


@st.composite
def quantities(draw: st.DrawFn, *, whole: bool = False, large: bool = False) -> str:
    suffix = draw(st.sampled_from([""] if whole else sorted(_SUFFIXES)))
    magnitude = {"n": 10**10, "u": 10**7, "m": 10**4, "": 10, "k": 10, "M": 10, "G": 4, "Ki": 10**4}
    top = magnitude.get(suffix, 8) * (10**3 if large else 1)
    number = str(draw(st.integers(0, top)))
    digits = 0 if whole else _FRACTION_DIGITS.get(suffix, 3)
    if digits and draw(st.booleans()):
        number += "." + "".join(draw(st.lists(st.sampled_from("0123456789"), min_size=1, max_size=digits)))
    return number + suffix


RESOURCES = ("cpu", "memory", "ephemeral-storage", "example.com/foo")


@st.composite
def fit_cases(draw: st.DrawFn) -> tuple[dict[str, str], list[list[dict[str, str]]]]:
    allocatable = {r: draw(quantities(whole=r == "example.com/foo", large=True)) for r in RESOURCES}
    pods = []
    for _ in range(draw(st.integers(1, 3))):
        containers = []
        for _ in range(draw(st.integers(1, 2))):
            names = draw(st.lists(st.sampled_from(RESOURCES), min_size=1, max_size=4, unique=True))
            containers.append({r: draw(quantities(whole=r == "example.com/foo")) for r in names})
        pods.append(containers)
    return allocatable, pods


def kubernetes_fits(allocatable: dict[str, str], pods: list[list[dict[str, str]]]) -> bool:
    used: dict[str, int] = {}
    for containers in pods:
        total: dict[str, Fraction] = {}
        for container in containers:
            for name, text in container.items():
                total[name] = total.get(name, Fraction(0)) + reference_value(text)
        for name, value in total.items():
            used[name] = used.get(name, 0) + reference_amount(name, value)
    room = {name: reference_amount(name, reference_value(text)) for name, text in allocatable.items()}
    return all(amount <= room.get(name, 0) for name, amount in used.items() if amount > 0)


@settings(max_examples=60, deadline=None)
@given(case=fit_cases())
def test_a_gang_fits_a_node_in_vcsat_iff_it_fits_by_kubernetes_arithmetic(
    case: tuple[dict[str, str], list[list[dict[str, str]]]],
) -> None:
    allocatable, pods = case
    objects = [
        k_node("n1", **allocatable),
        k_group("g", min_member=len(pods)),
        *(k_pod(f"p{i}", containers, group="g") for i, containers in enumerate(pods)),
    ]
    _, dec = solved(*objects, policy=Policy(time_limit_s=5, enqueue=False))
    assert (len(dec.bindings) == len(pods)) == kubernetes_fits(allocatable, pods)


@given(
    divisor=st.integers(1, 10**12),
    multiples=st.lists(st.integers(1, 10**4), min_size=1, max_size=5),
    counts=st.lists(st.integers(0, 50), min_size=5, max_size=5),
    room=st.integers(-(10**16), 10**16),
)
def test_common_divisor_keeps_fit_exact(divisor: int, multiples: list[int], counts: list[int], room: int) -> None:
    requests = [[m * divisor] for m in multiples]
    units = units_for(["memory"], requests)
    assert res.MIB % units.divisor[0] == 0
    assert all(r[0] % units.divisor[0] == 0 for r in requests)
    if divisor % res.MIB == 0:
        assert units.divisor[0] == res.MIB  # whole MiB: the unit the model counted before
    exact = sum(k * r[0] for k, r in zip(counts, requests, strict=False)) <= room
    small = sum(k * units.request(0, r[0]) for k, r in zip(counts, requests, strict=False)) <= units.room(0, room)
    assert exact == small


@given(
    deserved=st.integers(1, 10**15),
    divisor=st.integers(1, 10**12),
    held=st.integers(0, 10**15),
    fill=st.integers(0, 1000),
    added=st.integers(0, 10**4),
)
def test_share_rows_keep_their_solutions(deserved: int, divisor: int, held: int, fill: int, added: int) -> None:
    coef, factor, constant = share_row(deserved, 1000, divisor, held)
    exact = deserved * fill <= 1000 * held + 1000 * divisor * added
    assert exact == (coef * fill <= constant + factor * added)


def test_whole_mib_clusters_get_the_rows_they_had_in_mib() -> None:
    mib = res.MIB
    assert units_for(["cpu", "memory", "pods"], [[1500, 3 * 2**30, 1], [250, 512 * mib, 1]]).divisor == (1, mib, 1)
    assert units_for(["memory"], [[10**9], [2**30]]).divisor == (512,)
    assert share_row(40 * 1024 * mib, 1000, mib, 7 * mib) == (40 * 1024, 1000, 7000)


# --- how amounts read ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "amount", "text"),
    [
        ("memory", 2**31, "2048Mi"),  # whole MiB read as before
        ("memory", 10**9, "1G"),
        ("memory", 1023 * 1024, "1023Ki"),
        ("memory", 1024000, "1024k"),  # the shortest exact spelling
        ("memory", 1500000, "1500k"),
        ("memory", 1000001, "1000001"),
        ("hugepages-2Mi", 4 * 10**9, "4G"),
        ("cpu", 1500, "1500m"),
        ("nvidia.com/gpu", 4, "4"),
    ],
)
def test_amounts_print_as_exact_quantities(name: str, amount: int, text: str) -> None:
    assert res.format_quantity(name, amount) == text
    assert res.format_amount(name, amount) == f"{text} {name}"


@given(amount=st.integers(0, 2**53), name=st.sampled_from(["memory", "ephemeral-storage", "cpu", "pods"]))
def test_printed_quantities_parse_back_to_the_amount(amount: int, name: str) -> None:
    assert nanos_to_amount(name, parse_nanos(res.format_quantity(name, amount))) == amount


# --- huge amounts that share no divisor ---------------------------------------------------------


def test_huge_odd_amounts_solve_without_overflow() -> None:
    """Memory near 2⁵³ bytes with requests that share no divisor: the solver's rows would pass
    int64 in CP-SAT unless kept in bounds; the decision is still exact and valid."""
    big = 2**53 - 1

    def jobs(queue: str, count: int, memory: int) -> list[Obj]:
        out: list[Obj] = []
        for i in range(count):
            name = f"{queue}-{i}"
            out += [k_group(name, queue=queue), k_pod(name, [{"cpu": "1", "memory": str(memory)}], group=name)]
        return out

    nodes = [k_node(f"n{i}", memory=str(big)) for i in range(4)]
    capped = k_queue("qa", capability={"memory": str(big)})
    _, dec = solved(*nodes, capped, *jobs("qa", 8, big // 7 + 1))
    assert len(dec.bindings) == 6  # ⌊big / (big // 7 + 1)⌋: the capability, exactly
    # Two queues: fair-share rows with these amounts too.
    _, dec = solved(*nodes, capped, k_queue("qb", weight=2), *jobs("qa", 8, big // 3 + 1), *jobs("qb", 8, big // 5 + 7))
    assert dec.solver.status in ("OPTIMAL", "FEASIBLE")
    assert dec.bindings


@given(
    coef=st.integers(0, 2**70),
    constant=st.integers(0, 2**70),
    terms=st.lists(st.tuples(st.integers(0, 2**70), st.integers(0, 10**4)), max_size=4),
    fill=st.integers(0, 1000),
    data=st.data(),
)
def test_bounded_rows_stay_small_and_relax(
    coef: int, constant: int, terms: list[tuple[int, int]], fill: int, data: st.DataObject
) -> None:
    coefs, uppers = [t for t, _ in terms], [u for _, u in terms]
    values = [data.draw(st.integers(0, u)) for u in uppers]
    small_coef, small_constant, small_terms = bounded_row(coef, 1000, constant, coefs, uppers)
    assert max(small_coef * 1000, small_constant + sum(t * u for t, u in zip(small_terms, uppers, strict=True))) < 2**62
    if coef * fill <= constant + sum(t * y for t, y in zip(coefs, values, strict=True)):
        assert small_coef * fill <= small_constant + sum(t * y for t, y in zip(small_terms, values, strict=True))
