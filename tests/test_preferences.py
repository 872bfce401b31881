"""Preferred node affinity and PreferNoSchedule taints (kube-scheduler's NodeAffinity and
TaintToleration scores): a preference changes the node chosen, in the model, the greedy and the
converter, and never costs placed work."""

from __future__ import annotations

import pytest
from builders import group, node, pod, snapshot, term
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_objects import k8s_node, k8s_pod

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.errors import InputError
from vcsat.model import Decision, Policy, Snapshot
from vcsat.model.cluster import PreferredSchedulingTerm
from vcsat.solver.greedy import greedy
from vcsat.solver.problem import build_problem
from vcsat.solver.rules.preferences import node_scores, preference_key
from vcsat.solver.solve import solve
from vcsat.solver.validator.check import check

POLICY = Policy(time_limit_s=5)


def prefer(weight: int, *requirements: str) -> PreferredSchedulingTerm:
    return PreferredSchedulingTerm(weight=weight, preference=term(*requirements))


def with_preferences(p: object, *terms: PreferredSchedulingTerm) -> object:
    return p.model_copy(update={"preferred_affinity": terms})  # type: ignore[attr-defined]


def placed_on(result: Decision) -> dict[str, str]:
    return {b.pod: b.node for b in result.bindings}


def run(snap: Snapshot, policy: Policy = POLICY) -> Decision:
    result = solve(snap, policy)
    assert check(snap, result, policy) == []
    return result


ZONES = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"}), node("c1", labels={"zone": "c"})]


@pytest.mark.parametrize("zone", ["a", "b", "c"])
def test_a_preferred_zone_is_chosen(zone: str) -> None:
    p = with_preferences(pod("ns/p"), prefer(50, f"zone in ({zone})"))
    snap = snapshot(nodes=ZONES, pods=[p])
    assert placed_on(run(snap)) == {"ns/p": f"{zone}1"}


def test_weights_add_up_and_the_heavier_sum_wins() -> None:
    p = with_preferences(
        pod("ns/p"), prefer(30, "zone in (a)"), prefer(40, "zone in (b)"), prefer(20, "zone in (a, c)")
    )
    snap = snapshot(nodes=ZONES, pods=[p])
    assert placed_on(run(snap)) == {"ns/p": "a1"}  # a: 50, b: 40, c: 20


def test_the_greedy_follows_the_preference_too() -> None:
    p = with_preferences(pod("ns/p"), prefer(10, "zone in (c)"))
    problem = build_problem(snapshot(nodes=ZONES, pods=[p]), POLICY)
    hint = greedy(problem)
    assert {node for (_s, node) in hint.shape_slots} == {2}


def test_prefer_no_schedule_taints_are_avoided_unless_tolerated() -> None:
    nodes = [node("t1", taints=["spot:PreferNoSchedule"]), node("u1")]
    assert placed_on(run(snapshot(nodes=nodes, pods=[pod("ns/p")]))) == {"ns/p": "u1"}
    # A pod tolerating the taint is indifferent; preferring t1 then takes it there.
    tolerant = with_preferences(pod("ns/q", tolerations=["spot"]), prefer(1, "kubernetes.io/hostname in (t1)"))
    nodes = [node("t1", taints=["spot:PreferNoSchedule"], labels={"kubernetes.io/hostname": "t1"}), node("u1")]
    assert placed_on(run(snapshot(nodes=nodes, pods=[tolerant]))) == {"ns/q": "t1"}


def test_a_preference_never_costs_placed_work() -> None:
    """Both 3-cpu pods prefer n-a (room for one): one goes there, the other elsewhere; none waits."""
    pods = [with_preferences(pod(f"ns/p{i}", cpu="3"), prefer(100, "zone in (a)")) for i in range(2)]
    snap = snapshot(nodes=[node("n-a", cpu="4", labels={"zone": "a"}), node("n-b", cpu="4")], pods=pods)
    assert sorted(placed_on(run(snap)).values()) == ["n-a", "n-b"]


def test_a_gang_with_preferences_still_places_whole() -> None:
    pods = [with_preferences(pod(f"ns/g-{i}", cpu="2", group="ns/g"), prefer(5, "zone in (b)")) for i in range(3)]
    snap = snapshot(
        nodes=[node("a1", cpu="4", labels={"zone": "a"}), node("b1", cpu="4", labels={"zone": "b"})],
        pods=pods,
        groups=[group("ns/g", 3)],
    )
    nodes = sorted(placed_on(run(snap)).values())
    assert nodes == ["a1", "b1", "b1"]


def test_scores_follow_kube_scheduler_normalisation() -> None:
    nodes = [node("a", labels={"x": "1"}), node("b", labels={"x": "2"}), node("c")]
    key = preference_key(with_preferences(pod("ns/p"), prefer(20, "x in (1)"), prefer(10, "x")), tainted=False)  # type: ignore[arg-type]
    assert key is not None
    # raw a 30, b 10, c 0; normalised ×100/30 → 100, 33, 0; plugin weight 2; less the least (0).
    assert node_scores(key, nodes, [0, 1, 2]) == {0: 200, 1: 66}
    assert preference_key(pod("ns/q"), tainted=False) is None


def test_no_preference_no_level() -> None:
    problem = build_problem(snapshot(nodes=ZONES, pods=[pod("ns/p")]), POLICY)
    assert not problem.preferring


# --- converter --------------------------------------------------------------------------------


def _preferred(*entries: object) -> dict[str, object]:
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": list(entries)}}


def test_the_converter_reads_preferred_terms() -> None:
    entry = {"weight": 7, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}}
    objects = [
        k8s_node("a1", metadata__labels={"zone": "a"}),
        k8s_node("b1", metadata__labels={"zone": "b"}),
        k8s_pod("p", spec__affinity=_preferred(entry)),
    ]
    snap = snapshot_from_objects(objects, source="t.yaml")
    (converted,) = snap.pods
    assert [(t.weight, t.preference.match_expressions[0].values) for t in converted.preferred_affinity] == [(7, ("b",))]
    assert placed_on(run(snap)) == {"ns/p": "b1"}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"weight": 0, "preference": {}}, "weight: must be at least 1"),
        ({"weight": 101, "preference": {}}, "weight: must be 1 to 100"),
        ({"preference": {}}, "weight: missing"),
        ("x", "must be a mapping"),
    ],
)
def test_the_converter_refuses_bad_preferred_terms(entry: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        snapshot_from_objects([k8s_node(), k8s_pod("p", spec__affinity=_preferred(entry))], source="t.yaml")


# --- property ---------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@example(weights=[(1, "a")], cpus=[4, 4, 4, 1, 3], taint_b=False)  # equal work, another pod count
@given(
    weights=st.lists(st.tuples(st.integers(1, 100), st.sampled_from(["a", "b", "c"])), max_size=3),
    cpus=st.lists(st.integers(1, 4), min_size=1, max_size=5),
    taint_b=st.booleans(),
)
def test_preferences_keep_placed_work_and_decisions_check(
    weights: list[tuple[int, str]], cpus: list[int], taint_b: bool
) -> None:
    nodes = [
        node("a1", cpu="4", labels={"zone": "a"}),
        node("b1", cpu="4", labels={"zone": "b"}, taints=["spot:PreferNoSchedule"] if taint_b else []),
        node("c1", cpu="4", labels={"zone": "c"}),
    ]
    terms = tuple(prefer(w, f"zone in ({z})") for w, z in weights)
    plain = [pod(f"ns/p{i}", cpu=c) for i, c in enumerate(cpus)]
    preferring = [with_preferences(p, *terms) for p in plain]
    without = run(snapshot(nodes=nodes, pods=plain))
    with_ = run(snapshot(nodes=nodes, pods=preferring))
    # Placed work is what preferences must not cost; the number of pods may differ at equal work
    # (4+4+4 or 4+4+1+3 cpus on three 4-cpu nodes), as the levels below placed work choose.
    assert with_.solver.objective == without.solver.objective
