"""The inter-pod index of one snapshot (:class:`vcsat.solver.rules.interpod.InterPod`) and the
shared fit counts of the problem build, against plain references.

- Bound pods are indexed by labels only when they carry a label some pending term's anchor
  (``key In (values)``) asks for, and only while every pending term has one: the refusals, the
  preference scores and the static parts the index gives must be those of an index over every
  bound pod (the reference: the same class with the filter off).
- Profile numbers: two pods get the same number exactly when their profiles are equal (rules
  compared by value, whether or not the pods share the rule objects).
- Signatures: a pod's is its profile number when it has rules or some term (a pending pod's, a
  bound pod's required anti-affinity, or a bound pod's term that scores incoming pods) selects
  it, None otherwise; asked again, the same answer (the reference: every term tested directly).
- Fit counts shared between shapes of one request and eligibility: every shape's counts are those
  a direct computation over its own eligible nodes gives.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from builders import node, pod, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcsat.model import Node, Pod, Policy, Snapshot
from vcsat.model.cluster import PodAffinityRules, PodAffinityTerm, WeightedPodAffinityTerm
from vcsat.model.selectors import LabelRequirement, LabelSelector
from vcsat.solver.problem import build_problem
from vcsat.solver.rules import interpod
from vcsat.solver.rules.interpod import InterPod, profile

HOST = "kubernetes.io/hostname"
ZONE = "zone"
APP = "app"
TIER = "tier"


@contextmanager
def every_bound_pod_indexed() -> Iterator[None]:
    """The reference: the anchor filter off (every bound pod indexed by its labels)."""
    kept = interpod._anchor_values
    interpod._anchor_values = lambda terms: None  # type: ignore[assignment]
    try:
        yield
    finally:
        interpod._anchor_values = kept


def selector(operator: str, key: str, values: tuple[str, ...]) -> LabelSelector:
    return LabelSelector(requirements=(LabelRequirement(key=key, operator=operator, values=values),))


def term(key: str, sel: LabelSelector | None) -> PodAffinityTerm:
    return PodAffinityTerm(label_selector=sel, topology_key=key)


def nodes(count: int = 4) -> list[Node]:
    return [node(f"n{i}", cpu="16", labels={HOST: f"n{i}", ZONE: "ab"[i % 2]}) for i in range(count)]


def with_rules(p: Pod, labels: dict[str, str], affinity: PodAffinityRules, anti: PodAffinityRules) -> Pod:
    return p.model_copy(update={"labels": labels, "pod_affinity": affinity, "pod_anti_affinity": anti})


def answers(snap: Snapshot, pending: list[Pod]) -> tuple[object, ...]:
    state = InterPod(snap, pending)
    node_range = range(len(snap.nodes))
    statics = []
    for p in pending:
        found = state.static(p)
        statics.append((found.affinity_counts, found.forbidden, found.self_match, found.justifiable))
    return (
        [dict(state.refused(p)) for p in pending],
        [state.preference(p, node_range) for p in pending],
        statics,
        [state.signature(p) is not None for p in pending],
        state.active,
    )


def compare(snap: Snapshot) -> None:
    pending = [p for p in snap.pods if p.pending]
    fast = answers(snap, pending)
    with every_bound_pod_indexed():
        reference = answers(snap, pending)
    assert fast == reference


ANCHORED_ANTI = PodAffinityRules(required=(term(HOST, selector("In", APP, ("web",))),))
ANCHORED_AFFINITY = PodAffinityRules(required=(term(ZONE, selector("In", APP, ("db",))),))
UNANCHORED_ANTI = PodAffinityRules(required=(term(HOST, selector("Exists", TIER, ())),))
PREFERRED = PodAffinityRules(
    preferred=(WeightedPodAffinityTerm(weight=5, term=term(ZONE, selector("In", TIER, ("front", "back")))),)
)
NONE = PodAffinityRules()


@pytest.mark.parametrize(
    ("affinity", "anti", "indexed"),
    [
        # Anchored terms: only the bound pods carrying app=web, app=db (or tier front/back) count.
        (NONE, ANCHORED_ANTI, {"b-web"}),
        (ANCHORED_AFFINITY, NONE, {"b-db"}),
        (ANCHORED_AFFINITY, ANCHORED_ANTI, {"b-web", "b-db"}),
        (PREFERRED, NONE, {"b-front"}),
        # A term with no anchor may select any pod: every bound pod is indexed.
        (NONE, UNANCHORED_ANTI, {"b-web", "b-db", "b-front", "b-other"}),
    ],
)
def test_bound_pods_are_indexed_by_the_anchors_of_the_pending_terms(
    affinity: PodAffinityRules, anti: PodAffinityRules, indexed: set[str]
) -> None:
    ns = nodes()
    bound = [
        pod("default/b-web", node="n0", labels={APP: "web"}),
        pod("default/b-db", node="n1", labels={APP: "db"}),
        pod("default/b-front", node="n2", labels={TIER: "front"}),
        pod("default/b-other", node="n3", labels={APP: "cache", "x": "y"}),
    ]
    incoming = with_rules(pod("default/p"), {APP: "api"}, affinity, anti)
    snap = snapshot(ns, [*bound, incoming])
    state = InterPod(snap, [incoming])
    by_name = {p.key.split("/")[1]: interpod.label_key(p) for p in bound}
    assert {name for name, key in by_name.items() if key in state.bound_nodes} == indexed
    compare(snap)


def test_equal_profiles_share_one_number_and_different_ones_do_not() -> None:
    ns = nodes()
    a1 = with_rules(pod("default/a1"), {APP: "web"}, NONE, ANCHORED_ANTI)
    a2 = with_rules(pod("default/a2"), {APP: "web"}, NONE, ANCHORED_ANTI)
    b = with_rules(pod("default/b"), {APP: "web"}, NONE, UNANCHORED_ANTI)
    c = with_rules(pod("default/c"), {APP: "db"}, NONE, ANCHORED_ANTI)
    snap = snapshot(ns, [a1, a2, b, c])
    state = InterPod(snap, [a1, a2, b, c])
    numbers = [state.profile_of(p) for p in (a1, a2, b, c)]
    assert numbers[0] == numbers[1]
    assert len(set(numbers[1:])) == 3
    assert state.profile_of(a1) == numbers[0]  # asked again: the same number


def test_rules_equal_by_value_but_distinct_objects_share_one_number() -> None:
    ns = nodes()
    shared = with_rules(pod("default/s1"), {APP: "web"}, NONE, ANCHORED_ANTI)
    again = with_rules(pod("default/s2"), {APP: "web"}, NONE, ANCHORED_ANTI)  # the same objects
    rebuilt = PodAffinityRules(required=(term(HOST, selector("In", APP, ("web",))),))
    assert rebuilt == ANCHORED_ANTI and rebuilt is not ANCHORED_ANTI
    copy = with_rules(pod("default/s3"), {APP: "web"}, PodAffinityRules(), rebuilt)  # equal values
    swapped = with_rules(pod("default/s4"), {APP: "web"}, ANCHORED_ANTI, NONE)  # affinity, not anti
    snap = snapshot(ns, [shared, again, copy, swapped])
    state = InterPod(snap, [shared, again, copy, swapped])
    numbers = [state.profile_of(p) for p in (shared, again, copy, swapped)]
    assert numbers[0] == numbers[1] == numbers[2]
    assert numbers[3] != numbers[0]
    assert state.profiles[numbers[0]] == profile(copy)


def reference_signature(snap: Snapshot, pending: list[Pod], state: InterPod, p: Pod) -> int | None:
    """Every term that makes a pod take part, tested directly against the pod."""
    terms = [(t, q.namespace) for q in pending for t in interpod.all_terms(q)]
    for q in snap.pods:
        if q.bound and q.node_name is not None:
            terms += [(t, q.namespace) for t in q.pod_anti_affinity.required]
            terms += [(t, q.namespace) for t in q.pod_affinity.required]
            terms += [(w.term, q.namespace) for r in (q.pod_affinity, q.pod_anti_affinity) for w in r.preferred]
    key = interpod.label_key(p)
    selected = any(interpod.selects(t, owner, key, snap.namespaces) for t, owner in terms)
    return state.profile_of(p) if interpod.has_rules(p) or selected else None


LABEL_VALUES = {APP: ("web", "db", "cache"), TIER: ("front", "back")}


@st.composite
def selectors(draw: st.DrawFn) -> LabelSelector | None:
    if draw(st.booleans()) and draw(st.booleans()):
        return None
    key = draw(st.sampled_from(sorted(LABEL_VALUES)))
    operator = draw(st.sampled_from(["In", "In", "NotIn", "Exists", "DoesNotExist"]))
    values = (
        tuple(sorted(draw(st.sets(st.sampled_from(LABEL_VALUES[key]), min_size=1, max_size=2))))
        if operator in ("In", "NotIn")
        else ()
    )
    return selector(operator, key, values)


@st.composite
def rule_sets(draw: st.DrawFn) -> PodAffinityRules:
    required = tuple(
        term(draw(st.sampled_from([HOST, ZONE])), draw(selectors())) for _ in range(draw(st.integers(0, 2)))
    )
    preferred = tuple(
        WeightedPodAffinityTerm(
            weight=draw(st.integers(1, 100)), term=term(draw(st.sampled_from([HOST, ZONE])), draw(selectors()))
        )
        for _ in range(draw(st.integers(0, 1)))
    )
    return PodAffinityRules(required=required, preferred=preferred)


@st.composite
def labels(draw: st.DrawFn) -> dict[str, str]:
    return {key: draw(st.sampled_from(values)) for key, values in LABEL_VALUES.items() if draw(st.booleans())}


@st.composite
def instances(draw: st.DrawFn) -> Snapshot:
    ns = nodes(draw(st.integers(1, 5)))
    pods: list[Pod] = []
    for i in range(draw(st.integers(0, 8))):
        at = draw(st.sampled_from(ns)).name
        rules = draw(rule_sets()) if draw(st.booleans()) else NONE
        anti = draw(rule_sets()) if draw(st.booleans()) else NONE
        pods.append(with_rules(pod(f"default/b{i}", node=at), draw(labels()), rules, anti))
    for i in range(draw(st.integers(1, 6))):
        cpu = draw(st.sampled_from(["1", "2", "4"]))
        rules = draw(rule_sets()) if draw(st.booleans()) else NONE
        pods.append(with_rules(pod(f"default/p{i}", cpu=cpu), draw(labels()), rules, draw(rule_sets())))
    return snapshot(ns, pods)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_the_anchor_filter_changes_no_answer_of_the_index(snap: Snapshot) -> None:
    compare(snap)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_profile_numbers_partition_pods_as_their_profiles_do(snap: Snapshot) -> None:
    pending = [p for p in snap.pods if p.pending]
    state = InterPod(snap, pending)
    for a in pending:
        for b in pending:
            assert (state.profile_of(a) == state.profile_of(b)) == (profile(a) == profile(b))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_every_shape_has_its_own_fit_counts(snap: Snapshot) -> None:
    # Pending pods of a few requests, some with inter-pod rules (isolated shapes), some without.
    problem = build_problem(snap, Policy(enqueue=False, preempt=False, reclaim=False))
    refused_by_class = {c: problem.isolation.refused(problem.classes[c].pods[0]) for c in problem.isolated}
    for shape in problem.shapes:
        refused = refused_by_class.get(shape.isolated, {}) if shape.isolated is not None else {}
        expected = {}
        for n, free in enumerate(problem.free):
            if n in refused or not _eligible(problem, shape, n):
                continue
            fits = min(
                (room // amount for room, amount in zip(free, shape.request, strict=True) if amount > 0),
                default=1 << 30,
            )
            if fits > 0:
                expected[n] = fits
        assert shape.upper == expected
        assert shape.nodes == tuple(sorted(expected))


def _eligible(problem: object, shape: object, n: int) -> bool:
    from vcsat.solver.problem import Problem, Shape

    assert isinstance(problem, Problem) and isinstance(shape, Shape)
    return bool(problem.node_index.mask(shape.eligibility) >> n & 1)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_signatures_are_those_of_every_term_tested_directly(snap: Snapshot) -> None:
    pending = [p for p in snap.pods if p.pending]
    state = InterPod(snap, pending)
    for _ in range(2):  # the second time from what the first kept
        for p in pending:
            assert state.signature(p) == reference_signature(snap, pending, state, p)
