"""Counts of pods with a property carried across live snapshots (``solver/pod_facts.py``): after any
sequence of snapshots sharing pods, the carried count of bound pods with inter-pod terms is a fresh
count's (pods added, removed, bound, finished, given or losing terms, a snapshot counted twice, one
sharing few pods); nothing is carried while the live scheduler does not carry; and the inter-pod
isolation hook answers as it does afresh."""

from __future__ import annotations

from collections.abc import Iterator

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Pod, Snapshot
from vcsat.model.cluster import LabelSelector, PodAffinityRules, PodAffinityTerm, WeightedPodAffinityTerm
from vcsat.solver import changes, pod_facts, pod_sums
from vcsat.solver.rules.interpod import interpod_interaction

FACT = pod_facts.bound_with_pod_terms
TERM = PodAffinityTerm(label_selector=LabelSelector(), topology_key="kubernetes.io/hostname")


@pytest.fixture(autouse=True)
def _carrying() -> Iterator[None]:
    pod_facts.forget()
    changes.forget()
    pod_sums.carry()
    yield
    pod_sums.carry(False)
    pod_facts.forget()
    changes.forget()


def _with_terms(pod: Pod, *, anti: bool = False, preferred: bool = False) -> Pod:
    rules = (
        PodAffinityRules(preferred=(WeightedPodAffinityTerm(weight=1, term=TERM),))
        if preferred
        else (PodAffinityRules(required=(TERM,)))
    )
    return pod.model_copy(update={"pod_anti_affinity" if anti else "pod_affinity": rules})


def _fresh(snapshot: Snapshot) -> int:
    return sum(
        1 for pod in snapshot.pods if pod.bound and (not pod.pod_affinity.empty or not pod.pod_anti_affinity.empty)
    )


A0 = b.pod("ns/a0", node="n0")
A1 = b.pod("ns/a1")
B0 = _with_terms(b.pod("ns/b0", node="n1"))
B1 = _with_terms(b.pod("ns/b1", node="n0"), anti=True, preferred=True)
C0 = _with_terms(b.pod("ns/c0"))  # pending: terms, but holds no room
D0 = b.pod("ns/d0", node="n1")
BASE = (A0, A1, B0, B1, C0, D0)

SEQUENCES: list[tuple[str, list[tuple[Pod, ...]]]] = [
    # (what, the snapshots' pods after BASE's, each counted in turn)
    ("nothing changed", [BASE]),
    ("the same snapshot counted again", []),
    ("a bound pod with terms added", [(*BASE, _with_terms(b.pod("ns/e0", node="n1")))]),
    ("a bound pod with terms removed", [(A0, A1, B1, C0, D0)]),
    ("a pending pod with terms bound", [(A0, A1, B0, B1, _with_terms(b.pod("ns/c0", node="n0")), D0)]),
    ("a bound pod with terms finished", [(A0, A1, b.pod("ns/b0", node="n1", phase="Succeeded"), B1, C0, D0)]),
    ("a bound pod given terms", [(_with_terms(A0, anti=True), A1, B0, B1, C0, D0)]),
    ("a bound pod losing its terms", [(A0, A1, b.pod("ns/b0", node="n1"), B1, C0, D0)]),
    ("an equal copy is another pod", [(A0, A1, B0.model_copy(), B1, C0, D0)]),
    ("one change after another", [(*BASE, _with_terms(b.pod("ns/e0", node="n1"))), (A0, A1, B1, C0, D0), BASE]),
    ("everything new (counted afresh)", [tuple(p.model_copy() for p in BASE)]),
    ("nothing left", [()]),
]


@pytest.mark.parametrize(("what", "sequence"), SEQUENCES, ids=[s[0] for s in SEQUENCES])
def test_a_carried_count_is_the_fresh_one(what: str, sequence: list[tuple[Pod, ...]]) -> None:
    first = b.snapshot(pods=BASE)
    assert pod_facts.count(first, FACT) == _fresh(first) == 2
    snapshots = [first] if not sequence else [b.snapshot(pods=pods) for pods in sequence]
    for snapshot in snapshots:
        assert pod_facts.count(snapshot, FACT) == _fresh(snapshot), what


def test_the_carried_path_reads_only_the_changed_pods() -> None:
    asked: list[str] = []

    def fact(pod: Pod) -> bool:
        asked.append(pod.key)
        return FACT(pod)

    before = b.snapshot(pods=BASE)
    assert pod_facts.count(before, fact) == 2
    asked.clear()
    added = _with_terms(b.pod("ns/e0", node="n1"))
    after = b.snapshot(pods=(A0, A1, B1, C0, D0, added))
    assert pod_facts.count(after, fact) == 2
    assert sorted(asked) == ["ns/b0", "ns/e0"]  # the gone pod and the new one, no other


def test_nothing_is_carried_unless_the_live_scheduler_carries() -> None:
    pod_sums.carry(False)
    asked: list[str] = []

    def fact(pod: Pod) -> bool:
        asked.append(pod.key)
        return FACT(pod)

    before = b.snapshot(pods=BASE)
    pod_facts.count(before, fact)
    pod_facts.count(b.snapshot(pods=(*BASE, b.pod("ns/e0"))), fact)
    assert len(asked) == len(BASE) * 2 + 1  # each snapshot counted afresh


# --- random sequences of snapshots --------------------------------------------------------------

_pods = st.lists(
    st.tuples(
        st.sampled_from([f"ns/p{i}" for i in range(8)]),
        st.sampled_from([None, "n0", "n1"]),
        st.sampled_from([None, "Succeeded"]),
        st.sampled_from(["none", "affinity", "anti", "preferred"]),
    ),
    max_size=8,
    unique_by=lambda t: t[0],
)


def _made(spec: tuple[str, str | None, str | None, str], last: dict[tuple[object, ...], Pod]) -> Pod:
    """The pod of a spec: last snapshot's very object for a spec seen before (kept), else a new one."""
    found = last.get(spec)
    if found is not None:
        return found
    key, node, phase, terms = spec
    pod = b.pod(key, node=node, phase="Succeeded" if phase and node else None)
    if terms != "none":
        pod = _with_terms(pod, anti=terms == "anti", preferred=terms == "preferred")
    return pod


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_pods, st.booleans()), min_size=1, max_size=6))
def test_any_sequence_of_snapshots_counts_as_afresh(
    steps: list[tuple[list[tuple[str, str | None, str | None, str]], bool]],
) -> None:
    kept: dict[tuple[object, ...], Pod] = {}
    for specs, keep in steps:
        pods = tuple(sorted((_made(spec, kept if keep else {}) for spec in specs), key=lambda p: p.key))
        kept = {spec: pod for spec, pod in zip(sorted(specs), pods, strict=True)}
        snapshot = b.snapshot(pods=pods)
        assert pod_facts.count(snapshot, FACT) == _fresh(snapshot)
        # the isolation hook answers as a fresh count makes it answer
        carried = interpod_interaction(snapshot, [p for p in snapshot.pods if p.pending])
        pod_sums.carry(False)
        alone = interpod_interaction(snapshot, [p for p in snapshot.pods if p.pending])
        pod_sums.carry()
        assert (carried is None) == (alone is None)
