"""Pod topology spread (DoNotSchedule): kube-scheduler's rule through solve(), the greedy fallback,
check() and the converter; a Hypothesis property over random small instances."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import bind, decision, evict, gangs, group, node, nominate, pod, snapshot, spread
from tests.test_objects import convert, k8s_node, k8s_pod
from vcsat.adapters.cli import app as cli
from vcsat.adapters.errors import InputError
from vcsat.model import Decision, Node, Pod, Policy, Snapshot
from vcsat.solver.greedy import greedy
from vcsat.solver.placement.decode import bindings
from vcsat.solver.problem import build_problem
from vcsat.solver.rules.predicates import untolerated_taint
from vcsat.solver.solve import solve, spread_broken
from vcsat.solver.validator.check import check

WEB = {"app": "web"}


def zones(*names: str, per_zone: int = 2, cpu: str = "16", taints: dict[str, list[str]] | None = None) -> list[Node]:
    return [
        node(f"n{z}{i}", cpu=cpu, labels={"zone": z}, taints=(taints or {}).get(z, []))
        for z in names
        for i in range(per_zone)
    ]


def web(name: str, *constraints: Any, labels: dict[str, str] | None = None, **kw: Any) -> Pod:
    return pod(f"ns/{name}", cpu="1", labels=labels or WEB, spread=constraints or [spread("zone", 1, WEB)], **kw)


def per_zone(snap: Snapshot, dec: Decision) -> Counter[str]:
    where = snap.node_by_name
    return Counter(where[b.node].labels.get("zone", "-") for b in dec.bindings)


def greedy_decision(snap: Snapshot) -> list[tuple[str, str]]:
    problem = build_problem(snap, Policy())
    assignment = greedy(problem)
    placed = bindings(problem, assignment, assignment.shape_slots)
    assert not spread_broken(problem, placed)
    return [(b.pod, b.node) for b in placed]


def solved(snap: Snapshot, **policy: Any) -> Decision:
    dec = solve(snap, Policy(**policy))
    assert check(snap, dec, Policy(**policy)) == [], dec
    return dec


# --- the bullet: maxSkew 1 over zones, six pods ----------------------------------------


def test_six_pods_spread_over_three_zones() -> None:
    pods, groups = gangs("job", size=6, cpu="1", labels=WEB, spread=[spread("zone", 1, WEB)])
    snap = snapshot(nodes=zones("a", "b", "c"), pods=pods, groups=groups)
    dec = solved(snap)
    assert len(dec.bindings) == 6
    assert per_zone(snap, dec) == {"a": 2, "b": 2, "c": 2}


def test_greedy_fallback_spreads_too() -> None:
    snap = snapshot(nodes=zones("a", "b", "c"), pods=[web(f"p{i}") for i in range(6)])
    placed = greedy_decision(snap)
    assert Counter(snap.node_by_name[n].labels["zone"] for _, n in placed) == {"a": 2, "b": 2, "c": 2}


# --- table: what each field of the constraint changes ------------------------------------------

CASES: list[tuple[str, Snapshot, dict[str, int], int]] = []
"""(name, snapshot, placements per zone, pods left waiting)."""


def case(name: str, nodes: list[Node], pods: list[Pod], expected: dict[str, int], waiting: int) -> None:
    CASES.append((name, snapshot(nodes=nodes, pods=pods), expected, waiting))


existing_a = [pod(f"ns/old{i}", node="na0", labels=WEB) for i in range(2)]
case(
    "existing skew: new pods avoid the fuller zone",
    zones("a", "b", "c"),
    [*existing_a, web("p0"), web("p1")],
    {"b": 1, "c": 1},
    0,
)
case(
    "existing pods of another namespace do not count",
    zones("a", "b"),
    [*(pod(f"other/old{i}", node="na0", labels=WEB) for i in range(3)), web("p0"), web("p1")],
    {"a": 1, "b": 1},
    0,
)
case(
    "terminating pods do not count",
    zones("a", "b"),
    [*(pod(f"ns/old{i}", node="na0", labels=WEB, terminating=True) for i in range(3)), web("p0"), web("p1")],
    {"a": 1, "b": 1},
    0,
)
case(
    "minDomains above the domains there are: the minimum is 0",
    zones("a", "b"),
    [web(f"p{i}", spread("zone", 1, WEB, min_domains=3)) for i in range(4)],
    {"a": 1, "b": 1},
    2,
)
case(
    "minDomains met: the usual minimum",
    zones("a", "b"),
    [web(f"p{i}", spread("zone", 1, WEB, min_domains=2)) for i in range(4)],
    {"a": 2, "b": 2},
    0,
)
case(
    "nodeAffinityPolicy Honor: a zone the pod may not use is no domain",
    zones("a", "b", "c"),
    [web(f"p{i}", affinity="zone in (a,b)") for i in range(4)],
    {"a": 2, "b": 2},
    0,
)
case(
    "nodeAffinityPolicy Ignore: that zone's 0 is the minimum",
    zones("a", "b", "c"),
    [web(f"p{i}", spread("zone", 1, WEB, affinity_policy="Ignore"), affinity="zone in (a,b)") for i in range(4)],
    {"a": 1, "b": 1},
    2,
)
case(
    "nodeTaintsPolicy Ignore (default): a tainted zone's 0 is the minimum",
    zones("a", "b", "c", taints={"c": ["dedicated=x:NoSchedule"]}),
    [web(f"p{i}") for i in range(4)],
    {"a": 1, "b": 1},
    2,
)
case(
    "nodeTaintsPolicy Honor: an untolerated zone is no domain",
    zones("a", "b", "c", taints={"c": ["dedicated=x:NoSchedule"]}),
    [web(f"p{i}", spread("zone", 1, WEB, taints_policy="Honor")) for i in range(4)],
    {"a": 2, "b": 2},
    0,
)
old_hash = {"app": "web", "hash": "old"}
new_hash = {"app": "web", "hash": "new"}
case(
    "without matchLabelKeys the old revision's pods count",
    zones("a", "b", "c"),
    [
        *(pod(f"ns/old{i}", node="na0", labels=old_hash) for i in range(3)),
        *(web(f"p{i}", labels=new_hash) for i in range(3)),
    ],
    {"b": 2, "c": 1},
    0,
)
case(
    "matchLabelKeys: only the pod's own revision counts",
    zones("a", "b", "c"),
    [
        *(pod(f"ns/old{i}", node="na0", labels=old_hash) for i in range(3)),
        *(web(f"p{i}", spread("zone", 1, WEB, match_label_keys=["hash"]), labels=new_hash) for i in range(3)),
    ],
    {"a": 1, "b": 1, "c": 1},
    0,
)
case(
    "nodes without the topology key take no pod and count as no domain",
    [*zones("a", "b"), node("bare0", cpu="16"), node("bare1", cpu="16")],
    [web(f"p{i}") for i in range(4)],
    {"a": 2, "b": 2},
    0,
)
case(
    "maxSkew 2 lets a zone run two ahead",
    zones("a", "b", per_zone=1, cpu="3"),
    [web(f"p{i}", spread("zone", 2, WEB)) for i in range(5)],
    {"a": 3, "b": 2},
    0,
)
case(
    "a pod that does not match its own selector spreads the others",
    zones("a", "b"),
    [
        *(pod(f"ns/old{i}", node="na0", labels=WEB) for i in range(2)),
        web("p0", spread("zone", 1, WEB), labels={"app": "sidecar"}),
    ],
    {"b": 1},
    0,
)
case(
    "pods matching but carrying nothing count in the same cycle",
    zones("a", "b", per_zone=1, cpu="4"),
    [*(pod(f"ns/plain{i}", cpu="1", labels=WEB, selector={"zone": "a"}) for i in range(3)), web("p0"), web("p1")],
    {"a": 3, "b": 2},
    0,
)


@pytest.mark.parametrize(("name", "snap", "expected", "waiting"), CASES, ids=[c[0] for c in CASES])
def test_spread_case(name: str, snap: Snapshot, expected: dict[str, int], waiting: int) -> None:
    dec = solved(snap)
    assert dict(per_zone(snap, dec)) == expected
    assert sum(1 for o in dec.podgroups if o.phase != "Running") == waiting
    greedy_placed = greedy_decision(snap)
    fallback = decision(snap, bindings=[bind(p, n) for p, n in greedy_placed])
    assert check(snap, fallback) == []


def test_hostname_spread() -> None:
    nodes = [node(f"n{i}", cpu="16", labels={"kubernetes.io/hostname": f"n{i}"}) for i in range(4)]
    pods = [web(f"p{i}", spread("kubernetes.io/hostname", 1, WEB)) for i in range(8)]
    snap = snapshot(nodes=nodes, pods=pods)
    dec = solved(snap)
    assert Counter(b.node for b in dec.bindings) == {f"n{i}": 2 for i in range(4)}


def test_missing_label_everywhere_is_unschedulable_in_kube_scheduler_words() -> None:
    snap = snapshot(nodes=[node("n1", cpu="16")], pods=[web("p0")])
    dec = solved(snap)
    assert dec.bindings == []
    (outcome,) = dec.podgroups
    assert outcome.reason == "Unschedulable"
    assert "node(s) didn't match pod topology spread constraints (missing required label)" in (outcome.message or "")


def test_skew_bound_gang_names_the_spread_filter() -> None:
    pods, groups = gangs("job", size=4, cpu="1", labels=WEB, spread=[spread("zone", 1, WEB, min_domains=3)])
    snap = snapshot(nodes=zones("a", "b"), pods=pods, groups=groups)
    dec = solved(snap)
    assert dec.bindings == []
    (outcome,) = dec.podgroups
    assert outcome.reason == "Unschedulable"
    assert "node(s) didn't match pod topology spread constraints" in (outcome.message or "")


def test_schedule_anyway_spreads_when_it_costs_nothing() -> None:
    nodes = zones("a", "b", "c", per_zone=1)
    pods = [web(f"p{i}", spread("zone", 1, WEB, anyway=True)) for i in range(6)]
    dec = solved(snapshot(nodes=nodes, pods=pods))
    assert dict(per_zone(snapshot(nodes=nodes, pods=pods), dec)) == {"a": 2, "b": 2, "c": 2}


def test_schedule_anyway_never_blocks() -> None:
    snap = snapshot(
        nodes=zones("a", per_zone=1), pods=[web(f"p{i}", spread("zone", 1, WEB, anyway=True)) for i in range(3)]
    )
    dec = solved(snap)
    assert len(dec.bindings) == 3


def test_spread_bound_pods_preempt_as_default_preemption_does() -> None:
    """hi0 fits on nb0 (zones 2 and 2); hi1 fits nowhere without an eviction. DefaultPreemption
    removes one counted web pod on a node where hi1 then keeps the zones within skew (either node
    does: 2 against 2); one victim, and hi1 nominated to its node."""
    nodes = zones("a", "b", per_zone=1, cpu="2")
    low = [pod(f"ns/low{i}", cpu="1", node=n, priority=0, labels=WEB) for i, n in enumerate(["na0", "na0", "nb0"])]
    high = [web(f"hi{i}", priority=100) for i in range(2)]
    snap = snapshot(nodes=nodes, pods=[*low, *high])
    dec = solved(snap)
    assert [(b.pod, b.node) for b in dec.bindings] == [("ns/hi0", "nb0")]
    assert len(dec.evictions) == 1 and len(dec.nominations) == 1
    (victim,) = dec.evictions
    assert snap.pod_by_key[victim.pod].node_name == dec.nominations[0].node


# --- check() catches hand-made violations -------------------------------------------------------


def test_check_catches_all_in_one_zone() -> None:
    snap = snapshot(nodes=zones("a", "b", "c"), pods=[web(f"p{i}") for i in range(6)])
    bad = decision(snap, bindings=[bind(f"ns/p{i}", f"na{i % 2}") for i in range(6)])
    rules = {v.rule for v in check(snap, bad)}
    assert rules == {"PodTopologySpread"}


def test_check_catches_a_missing_label() -> None:
    snap = snapshot(nodes=[*zones("a"), node("bare", cpu="16")], pods=[web("p0")])
    violations = check(snap, decision(snap, bindings=[bind("ns/p0", "bare")]))
    assert [v.rule for v in violations] == ["PodTopologySpread"]
    assert "missing required label" in violations[0].message


def test_check_reads_min_domains_and_policies() -> None:
    snap = snapshot(
        nodes=zones("a", "b", "c", taints={"c": ["dedicated=x:NoSchedule"]}),
        pods=[web("p0", spread("zone", 1, WEB, min_domains=4, taints_policy="Honor")), web("p1")],
    )
    # Both land in zone a: p0's domains are a and b (fewer than 4: minimum 0), 2 − 0 > 1.
    dec = decision(snap, bindings=[bind("ns/p0", "na0"), bind("ns/p1", "na1")])
    assert {v.subject for v in check(snap, dec)} == {"ns/p0", "ns/p1"}
    ok = decision(snap, bindings=[bind("ns/p0", "na0"), bind("ns/p1", "nb0")])
    assert check(snap, ok) == []


def test_check_judges_the_state_after_evictions_too() -> None:
    nodes = zones("a", "b", per_zone=1)
    old = [pod("ns/old0", node="nb0", labels=WEB)]
    snap = snapshot(nodes=nodes, pods=[*old, web("p0"), web("p1")])
    both_a = decision(snap, bindings=[bind("ns/p0", "na0"), bind("ns/p1", "na0")])
    assert check(snap, both_a) == []  # a 2, b 1
    evicted = decision(snap, bindings=[bind("ns/p0", "na0"), bind("ns/p1", "na0")], evictions=[evict("ns/old0")])
    assert "PodTopologySpread" in {v.rule for v in check(snap, evicted)}  # b is 0 once old0 is gone
    nominated = decision(
        snap, bindings=[bind("ns/p0", "na0")], nominations=[nominate("ns/p1", "na0")], evictions=[evict("ns/old0")]
    )
    assert {v.subject for v in check(snap, nominated) if v.rule == "PodTopologySpread"} == {"ns/p0", "ns/p1"}


# --- converter ----------------------------------------------------------------------------------

SPREAD_OBJ = {
    "maxSkew": 1,
    "topologyKey": "zone",
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
    "minDomains": 2,
    "nodeAffinityPolicy": "Ignore",
    "nodeTaintsPolicy": "Honor",
    "matchLabelKeys": ["hash"],
}


def test_converter_reads_topology_spread_constraints() -> None:
    snap = convert(
        k8s_node("n1", metadata__labels={"zone": "a"}),
        k8s_pod("p1", metadata__labels={"app": "web", "hash": "h1"}, spec__topologySpreadConstraints=[SPREAD_OBJ]),
    )
    (pod_,) = snap.pods
    assert pod_.labels == {"app": "web", "hash": "h1"}
    (rule,) = pod_.spread_constraints
    assert (rule.max_skew, rule.topology_key, rule.min_domains) == (1, "zone", 2)
    assert (rule.node_affinity_policy, rule.node_taints_policy, rule.match_label_keys) == ("Ignore", "Honor", ("hash",))
    assert rule.selector is not None and rule.selector.matches({"app": "web", "tier": "x"})
    assert not rule.selector.matches({"app": "web"})


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"maxSkew": 0}, "maxSkew", "at least 1"),
        ({"maxSkew": None}, "maxSkew", "missing"),
        ({"topologyKey": ""}, "topologyKey", "missing"),
        ({"whenUnsatisfiable": "Sometimes"}, "whenUnsatisfiable", "DoNotSchedule or ScheduleAnyway"),
        ({"whenUnsatisfiable": "ScheduleAnyway"}, "minDomains", "DoNotSchedule"),
        ({"nodeTaintsPolicy": "Maybe"}, "nodeTaintsPolicy", "Honor or Ignore"),
        ({"matchLabelKeys": [3]}, "matchLabelKeys[0]", "label key"),
        ({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}, "values", "at least one value"),
    ],
)
def test_converter_refuses_bad_constraints(change: dict[str, Any], field: str, words: str) -> None:
    bad = {**SPREAD_OBJ, **change}
    with pytest.raises(InputError) as caught:
        convert(k8s_node("n1"), k8s_pod("p1", spec__topologySpreadConstraints=[bad]))
    text = str(caught.value)
    assert "Pod ns/p1" in text and f"spec.topologySpreadConstraints[0].{field}".split(".values")[0] in text
    assert words in text and "\n" not in text


def test_cli_exits_2_on_a_bad_constraint(tmp_path: Path) -> None:
    import yaml

    bad = {**SPREAD_OBJ, "maxSkew": -1}
    objects = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [k8s_node("n1"), k8s_pod("p1", spec__topologySpreadConstraints=[bad])],
    }
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump(objects))
    result = CliRunner().invoke(cli.main, ["solve", str(path)])
    assert result.exit_code == 2
    assert "spec.topologySpreadConstraints[0].maxSkew" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


# --- property: random small instances keep every constraint --------------------------------------


@st.composite
def instances(draw: st.DrawFn) -> Snapshot:
    zone_names = ["a", "b", "c"][: draw(st.integers(1, 3))]
    nodes = []
    for i in range(draw(st.integers(2, 6))):
        labels = {"kubernetes.io/hostname": f"n{i}"}
        if draw(st.booleans()) or i < len(zone_names):
            labels["zone"] = zone_names[i % len(zone_names)]
        taint = ["t=x:NoSchedule"] if draw(st.integers(0, 4)) == 0 else []
        nodes.append(node(f"n{i}", cpu=str(draw(st.integers(1, 4))), labels=labels, taints=taint))
    apps = [{"app": "x"}, {"app": "y"}, {"app": "x", "hash": "h2"}]
    pods: list[Pod] = []
    for i in range(draw(st.integers(0, 4))):
        host = draw(st.sampled_from(nodes)).name
        pods.append(pod(f"ns/old{i}", cpu="0.5", node=host, labels=draw(st.sampled_from(apps))))
    groups_ = []
    for g in range(draw(st.integers(1, 3))):
        labels = draw(st.sampled_from(apps))
        rules = [
            spread(
                draw(st.sampled_from(["zone", "kubernetes.io/hostname"])),
                draw(st.integers(1, 2)),
                {"app": labels["app"]},
                min_domains=draw(st.integers(1, 3)),
                affinity_policy=draw(st.sampled_from(["Honor", "Ignore"])),
                taints_policy=draw(st.sampled_from(["Honor", "Ignore"])),
                match_label_keys=draw(st.sampled_from([[], ["hash"]])),
                anyway=draw(st.integers(0, 3)) == 0,
            )
            for _ in range(draw(st.integers(0, 2)))
        ]
        size = draw(st.integers(1, 4))
        gang = draw(st.booleans())
        tolerate = ["t"] if draw(st.booleans()) else []
        for i in range(size):
            pods.append(
                pod(
                    f"ns/g{g}-{i}",
                    cpu="1",
                    labels=labels,
                    spread=rules,
                    group=f"ns/g{g}" if gang else None,
                    tolerations=tolerate,
                    created=float(g),
                )
            )
        if gang:
            groups_.append(group(f"ns/g{g}", min_member=draw(st.integers(1, size))))
    return snapshot(nodes=nodes, pods=pods, groups=groups_)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_random_instances_keep_every_spread_constraint(snap: Snapshot) -> None:
    dec = solve(snap, Policy(time_limit_s=2.0))
    assert check(snap, dec) == [], [str(v) for v in check(snap, dec)]
    fallback = decision(snap, bindings=[bind(p, n) for p, n in greedy_decision(snap)])
    assert [v for v in check(snap, fallback) if v.rule == "PodTopologySpread"] == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.randoms(use_true_random=False))
def test_solver_rule_and_validator_agree_on_random_placements(snap: Snapshot, rng: Any) -> None:
    """The solver's spread state and the validator's independent reading judge the same final
    states alike (placements onto nodes that carry the keys and whose taints the pod tolerates:
    the solver never places elsewhere, and the spread counts leave untolerated nodes out under
    ``nodeTaintsPolicy: Honor``; the validator also judges the rest)."""
    problem = build_problem(snap, Policy())
    pending = [p for p in snap.pods if p.pending]
    placed = []
    for p in pending:
        keys = [c.topology_key for c in p.spread_constraints if c.hard]
        fitting = [n.name for n in snap.nodes if all(k in n.labels for k in keys) and untolerated_taint(p, n) is None]
        if fitting and rng.random() < 0.7:
            placed.append(bind(p.key, rng.choice(fitting)))
    dec = decision(snap, bindings=placed)
    flagged = any(v.rule == "PodTopologySpread" for v in check(snap, dec))
    assert flagged == spread_broken(problem, list(dec.bindings))
