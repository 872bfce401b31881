"""Inter-pod affinity, anti-affinity and host ports: kube-scheduler's InterPodAffinity and NodePorts.

Each case is a small cluster solved end to end (``solve``) and validated (``check``); the checks
then catch hand-made violations of each rule; the converter reads the new fields and refuses bad
ones in one line; a Hypothesis property asks random instances for zero violations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from builders import gangs, group, node, pod, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_objects import convert, k8s_node, k8s_pod

from vcsat.adapters.errors import InputError
from vcsat.model import Binding, Decision, Node, Pod, Policy, Snapshot
from vcsat.model.cluster import PodAffinityRules, PodAffinityTerm, WeightedPodAffinityTerm
from vcsat.model.selectors import LabelRequirement, LabelSelector, label_selector
from vcsat.solver import check, solve

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
POLICY = Policy(enqueue=False, preempt=False, reclaim=False, time_limit_s=2)


def term(
    key: str = HOST,
    labels: Mapping[str, str] | None = None,
    *,
    namespaces: Sequence[str] = (),
    namespace_selector: LabelSelector | None = None,
    selector: LabelSelector | str | None = "labels",
) -> PodAffinityTerm:
    chosen = label_selector(labels or {}) if selector == "labels" else selector
    assert not isinstance(chosen, str)
    return PodAffinityTerm(
        label_selector=chosen,
        namespaces=tuple(namespaces),
        namespace_selector=namespace_selector,
        topology_key=key,
    )


def rules(*terms: PodAffinityTerm) -> PodAffinityRules:
    return PodAffinityRules(required=terms)


def with_rules(
    p: Pod,
    *,
    labels: Mapping[str, str] | None = None,
    affinity: PodAffinityRules | None = None,
    anti: PodAffinityRules | None = None,
    ports: Sequence[tuple[str, str, int]] = (),
) -> Pod:
    update: dict[str, Any] = {"host_ports": tuple(ports)}
    if labels is not None:
        update["labels"] = dict(labels)
    if affinity is not None:
        update["pod_affinity"] = affinity
    if anti is not None:
        update["pod_anti_affinity"] = anti
    return p.model_copy(update=update)


def cluster(count: int = 6, zones: Sequence[str] = ("a", "a", "a", "b", "b", "b"), cpu: str = "16") -> list[Node]:
    return [node(f"n{i}", cpu=cpu, labels={HOST: f"n{i}", ZONE: zones[i % len(zones)]}) for i in range(count)]


def placed(snap: Snapshot, policy: Policy = POLICY) -> tuple[Decision, dict[str, str]]:
    decision = solve(snap, policy)
    assert check(snap, decision, policy) == []
    return decision, {b.pod: b.node for b in decision.bindings}


def zone_of(snap: Snapshot, node_name: str) -> str:
    return snap.node_by_name[node_name].labels[ZONE]


# --- the cases (each failed before: packed, ignored, or bound together) ----------------


def test_a_gang_with_hostname_anti_affinity_spreads_over_its_nodes() -> None:
    pods, groups = gangs("web", 1, size=4)
    pods = [with_rules(p, labels={"app": "web"}, anti=rules(term(HOST, {"app": "web"}))) for p in pods]
    snap = snapshot(cluster(), pods, groups)
    _, where = placed(snap)
    assert len(where) == 4
    assert len(set(where.values())) == 4


def test_a_pod_with_anti_affinity_to_a_bound_pod_lands_elsewhere() -> None:
    db = with_rules(pod("ns/db", cpu="8", node="n0"), labels={"app": "db"})
    web = with_rules(pod("ns/web", cpu="1"), anti=rules(term(HOST, {"app": "db"})))
    # best fit alone would take n0, the fullest node
    snap = snapshot(cluster(2), [db, web])
    _, where = placed(snap)
    assert where == {"ns/web": "n1"}


def test_required_affinity_by_zone_follows_the_matching_pod() -> None:
    cache = with_rules(pod("ns/cache", cpu="1", node="n4"), labels={"app": "cache"})
    filler = pod("ns/filler", cpu="15", node="n0")  # n0 (zone a) is the best fit otherwise
    app = with_rules(pod("ns/app", cpu="1"), affinity=rules(term(ZONE, {"app": "cache"})))
    snap = snapshot(cluster(), [cache, filler, app])
    _, where = placed(snap)
    assert zone_of(snap, where["ns/app"]) == "b"


def test_two_pods_asking_the_same_host_port_go_to_different_nodes() -> None:
    pods, groups = gangs("proxy", 1, size=2)
    pods = [with_rules(p, ports=[("TCP", "0.0.0.0", 8080)]) for p in pods]
    _, where = placed(snapshot(cluster(2), pods, groups))
    assert len(set(where.values())) == 2


def test_a_gang_with_a_host_port_takes_one_node_per_pod() -> None:
    pods, groups = gangs("agent", 1, size=4)
    pods = [with_rules(p, ports=[("TCP", "", 8080)]) for p in pods]
    _, where = placed(snapshot(cluster(), pods, groups))
    assert len(where) == 4 and len(set(where.values())) == 4


# --- table: feasible and infeasible pairs ---------------------------------------------------------

Case = tuple[str, list[Node], list[Pod], int]


def _cases() -> list[Case]:
    two = cluster(2)
    one = cluster(1)
    web = {"app": "web"}
    return [
        # anti-affinity within a gang: more pods than domains -> the gang waits
        (
            "gang anti > nodes",
            two,
            [with_rules(p, labels=web, anti=rules(term(HOST, web))) for p in gangs("g", size=3)[0]],
            0,
        ),
        (
            "gang anti by zone",
            cluster(),
            [with_rules(p, labels=web, anti=rules(term(ZONE, web))) for p in gangs("g", size=2)[0]],
            2,
        ),
        # a node without the topology key: anti-affinity does not apply there
        (
            "anti, node without key",
            [node("bare", cpu="16"), node("bare2", cpu="16")],
            [with_rules(p, labels=web, anti=rules(term(ZONE, web))) for p in gangs("g", size=2)[0]],
            2,
        ),
        # affinity needs the key on the node
        (
            "affinity, no key",
            [node("bare", cpu="16")],
            [with_rules(pod("ns/a"), labels=web, affinity=rules(term(ZONE, web)))],
            0,
        ),
        # first-pod rule: matches itself, nothing else matches
        ("first pod", one, [with_rules(pod("ns/a"), labels=web, affinity=rules(term(ZONE, web)))], 1),
        # not self-matching, nothing matches: refused
        ("affinity unmet", one, [with_rules(pod("ns/a"), affinity=rules(term(ZONE, {"app": "db"})))], 0),
        # absent labelSelector selects nothing: anti-affinity never binds
        (
            "nil selector",
            one,
            [with_rules(p, labels=web, anti=rules(term(HOST, selector=None))) for p in gangs("g", size=2)[0]],
            2,
        ),
        # empty selector selects every pod (of the namespace)
        ("empty selector", one, [with_rules(pod(f"ns/e{i}"), anti=rules(term(HOST, {}))) for i in range(2)], 1),
        # host ports: different IPs do not clash, the wildcard clashes with any, protocols apart
        ("ports two ips", one, [with_rules(pod(f"ns/p{i}"), ports=[("TCP", f"10.0.0.{i}", 80)]) for i in range(2)], 2),
        (
            "ports wildcard",
            one,
            [
                with_rules(pod("ns/p0"), ports=[("TCP", "10.0.0.1", 80)]),
                with_rules(pod("ns/p1"), ports=[("TCP", "0.0.0.0", 80)]),
            ],
            1,
        ),
        (
            "ports protocols",
            one,
            [with_rules(pod("ns/p0"), ports=[("TCP", "", 53)]), with_rules(pod("ns/p1"), ports=[("UDP", "", 53)])],
            2,
        ),
        # two affinity terms must be met by one pod: two bound pods meeting one each do not count
        (
            "terms met by different pods",
            [
                node("m0", cpu="16", labels={"region": "r1", ZONE: "z1"}),
                node("m1", cpu="16", labels={"region": "r1", ZONE: "z2"}),
            ],
            [
                with_rules(pod("ns/foo", node="m0"), labels={"foo": ""}),
                with_rules(pod("ns/bar", node="m1"), labels={"bar": ""}),
                with_rules(
                    pod("ns/a"),
                    affinity=rules(
                        term("region", selector=label_selector(None, [LabelRequirement(key="foo", operator="Exists")])),
                        term(ZONE, selector=label_selector(None, [LabelRequirement(key="bar", operator="Exists")])),
                    ),
                ),
            ],
            0,
        ),
        # any one anti-affinity term that selects a bound pod in the domain refuses the node
        (
            "any anti term",
            [
                node("m0", cpu="16", labels={"region": "r1", ZONE: "z1"}),
                node("m1", cpu="16", labels={"region": "r1", ZONE: "z2"}),
            ],
            [
                with_rules(pod("ns/b", node="m0"), labels={"foo": "abc", "service": "scan"}),
                with_rules(pod("ns/a"), anti=rules(term("region", {"foo": "abc"}), term(ZONE, {"service": "scan"}))),
            ],
            0,
        ),
        # namespaces: a term looks at its own namespace unless told otherwise
        (
            "other namespace",
            one,
            [with_rules(pod("ns/a"), labels=web), with_rules(pod("x/b"), anti=rules(term(HOST, web)))],
            2,
        ),
        (
            "namespace list",
            one,
            [
                with_rules(pod("ns/a"), labels=web),
                with_rules(pod("x/b"), anti=rules(term(HOST, web, namespaces=["ns"]))),
            ],
            1,
        ),
        (
            "all namespaces",
            one,
            [
                with_rules(pod("ns/a"), labels=web),
                with_rules(pod("x/b"), anti=rules(term(HOST, web, namespace_selector=label_selector({})))),
            ],
            1,
        ),
    ]


@pytest.mark.parametrize(("name", "nodes", "pods", "expected"), _cases(), ids=[c[0] for c in _cases()])
def test_rules_table(name: str, nodes: list[Node], pods: list[Pod], expected: int) -> None:
    groups = [
        group(key, len([p for p in pods if p.group == key])) for key in sorted({p.group for p in pods if p.group})
    ]
    snap = snapshot(nodes, pods, groups)
    _, where = placed(snap)
    assert len(where) == expected


def test_bound_pods_anti_affinity_repels_the_incoming_pod() -> None:
    guard = with_rules(pod("ns/guard", node="n0"), anti=rules(term(ZONE, {"app": "web"})))
    web = with_rules(pod("ns/web"), labels={"app": "web"})
    snap = snapshot(cluster(), [guard, web])
    _, where = placed(snap)
    assert zone_of(snap, where["ns/web"]) == "b"


def test_a_bound_pods_anti_affinity_with_nowhere_else_gives_kube_schedulers_words() -> None:
    guard = with_rules(pod("ns/guard", node="n0"), anti=rules(term(ZONE, {"app": "web"})))
    web = with_rules(pod("ns/web"), labels={"app": "web"})
    snap = snapshot(cluster(3, zones=("a",)), [guard, web])
    decision, where = placed(snap)
    assert where == {}
    assert "didn't satisfy existing pods anti-affinity rules" in decision.podgroups[0].message


def test_unmet_affinity_says_so() -> None:
    app = with_rules(pod("ns/app"), affinity=rules(term(ZONE, {"app": "cache"})))
    decision, _ = placed(snapshot(cluster(), [app]))
    assert "didn't match pod affinity rules" in decision.podgroups[0].message


def test_a_gang_that_needs_more_domains_than_there_are_says_anti_affinity() -> None:
    pods, groups = gangs("web", 1, size=3)
    pods = [with_rules(p, labels={"app": "web"}, anti=rules(term(ZONE, {"app": "web"}))) for p in pods]
    decision, where = placed(snapshot(cluster(), pods, groups))
    assert where == {}
    assert "didn't match pod anti-affinity rules" in decision.podgroups[0].message


def test_a_port_held_by_a_bound_pod_gives_kube_schedulers_words() -> None:
    held = with_rules(pod("ns/held", node="n0"), ports=[("TCP", "", 8080)])
    asks = with_rules(pod("ns/asks"), ports=[("TCP", "0.0.0.0", 8080)])
    decision, where = placed(snapshot(cluster(1), [held, asks]))
    assert where == {}
    assert "didn't have free ports for the requested pod ports" in decision.podgroups[0].message


def test_first_pod_rule_keeps_a_self_affine_gang_in_one_zone() -> None:
    pods, groups = gangs("ring", 1, size=3, cpu="6")
    pods = [with_rules(p, labels={"app": "ring"}, affinity=rules(term(ZONE, {"app": "ring"}))) for p in pods]
    snap = snapshot(cluster(cpu="8"), pods, groups)
    _, where = placed(snap)
    assert len(where) == 3
    assert len({zone_of(snap, n) for n in where.values()}) == 1


def test_two_gangs_that_repel_each_other_take_different_zones() -> None:
    a, ga = gangs("a", 1, size=2, cpu="2")
    b, gb = gangs("b", 1, size=2, cpu="2")
    a = [with_rules(p, labels={"team": "a"}, anti=rules(term(ZONE, {"team": "b"}))) for p in a]
    b = [with_rules(p, labels={"team": "b"}) for p in b]
    snap = snapshot(cluster(), [*a, *b], [*ga, *gb])
    _, where = placed(snap)
    assert len(where) == 4
    zones_a = {zone_of(snap, where[p.key]) for p in a}
    zones_b = {zone_of(snap, where[p.key]) for p in b}
    assert not zones_a & zones_b


def test_affinity_to_a_pending_gang_is_met_in_its_zone() -> None:
    server, gs = gangs("server", 1, size=1, cpu="2")
    server = [with_rules(p, labels={"app": "server"}) for p in server]
    client, gc = gangs("client", 1, size=2, cpu="2")
    client = [with_rules(p, affinity=rules(term(ZONE, {"app": "server"}))) for p in client]
    snap = snapshot(cluster(), [*server, *client], [*gs, *gc])
    _, where = placed(snap)
    assert len(where) == 3
    assert {zone_of(snap, where[p.key]) for p in client} == {zone_of(snap, where[server[0].key])}


def test_pods_without_rules_keep_the_shared_path() -> None:
    from vcsat.solver.problem import build_problem

    pods, groups = gangs("plain", 3, size=2)
    problem = build_problem(snapshot(cluster(), pods, groups), POLICY)
    assert problem.isolated == frozenset() and problem.interpod is None


# --- check catches hand-made violations ----------------------------------------------------------


def _decide(snap: Snapshot, *bindings: tuple[str, str]) -> Decision:
    """The solver's decision with its bindings replaced (other rules may then complain too)."""
    return solve(snap, POLICY).model_copy(update={"bindings": [Binding(pod=p, node=n) for p, n in bindings]})


CHECK_CASES: list[tuple[str, list[Pod], list[tuple[str, str]], str]] = [
    (
        "own anti-affinity",
        [with_rules(pod(f"ns/w{i}"), labels={"a": "w"}, anti=rules(term(HOST, {"a": "w"}))) for i in range(2)],
        [("ns/w0", "n0"), ("ns/w1", "n0")],
        "PodAntiAffinityRulesNotMatch",
    ),
    (
        "bound anti-affinity",
        [
            with_rules(pod("ns/g", node="n0"), anti=rules(term(ZONE, {"a": "w"}))),
            with_rules(pod("ns/w"), labels={"a": "w"}),
        ],
        [("ns/w", "n1")],
        "ExistingPodsAntiAffinityRulesNotMatch",
    ),
    (
        "affinity elsewhere",
        [
            with_rules(pod("ns/c", node="n3"), labels={"a": "c"}),
            with_rules(pod("ns/w"), affinity=rules(term(ZONE, {"a": "c"}))),
        ],
        [("ns/w", "n0")],
        "PodAffinityRulesNotMatch",
    ),
    (
        "first pod twice",
        [with_rules(pod(f"ns/r{i}"), labels={"a": "r"}, affinity=rules(term(ZONE, {"a": "r"}))) for i in range(2)],
        [("ns/r0", "n0"), ("ns/r1", "n3")],
        "PodAffinityRulesNotMatch",
    ),
    (
        "ports",
        [with_rules(pod(f"ns/p{i}"), ports=[("TCP", "", 80)]) for i in range(2)],
        [("ns/p0", "n2"), ("ns/p1", "n2")],
        "NodePortsConflict",
    ),
]


@pytest.mark.parametrize(("name", "pods", "bindings", "rule"), CHECK_CASES, ids=[c[0] for c in CHECK_CASES])
def test_check_catches(name: str, pods: list[Pod], bindings: list[tuple[str, str]], rule: str) -> None:
    snap = snapshot(cluster(), pods)
    rules_found = {v.rule for v in check(snap, _decide(snap, *bindings), POLICY)}
    assert rule in rules_found


def test_check_accepts_a_first_pod_then_its_followers() -> None:
    pods = [with_rules(pod(f"ns/r{i}"), labels={"a": "r"}, affinity=rules(term(ZONE, {"a": "r"}))) for i in range(3)]
    snap = snapshot(cluster(), pods)
    found = [v for v in check(snap, _decide(snap, ("ns/r0", "n0"), ("ns/r1", "n1"), ("ns/r2", "n2")), POLICY)]
    assert [v for v in found if v.rule.startswith("Pod")] == []


# --- converter -------------------------------------------------------------------------------------


def test_converter_reads_terms_ports_labels_and_namespaces() -> None:
    spec_affinity = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "w"}}, "topologyKey": HOST, "matchLabelKeys": ["ver"]}
            ],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 7, "podAffinityTerm": {"labelSelector": {}, "namespaceSelector": {}, "topologyKey": ZONE}}
            ],
        },
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
                    "topologyKey": ZONE,
                    "mismatchLabelKeys": ["ver", "absent"],
                    "namespaces": ["other"],
                }
            ]
        },
    }
    p = k8s_pod("p", metadata__labels={"app": "w", "ver": "2"}, spec__affinity=spec_affinity)
    p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81}]
    p["spec"]["initContainers"] = [
        {"name": "side", "restartPolicy": "Always", "ports": [{"containerPort": 9, "hostPort": 9, "protocol": "UDP"}]},
        {"name": "once", "ports": [{"containerPort": 7, "hostPort": 7}]},
    ]
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns", "labels": {"team": "x"}}}
    snap = convert(k8s_node(), p, ns)
    got = snap.pods[0]
    assert snap.namespaces == {"ns": {"team": "x"}}
    assert got.labels == {"app": "w", "ver": "2"}
    assert set(got.host_ports) == {("TCP", "0.0.0.0", 8080), ("UDP", "0.0.0.0", 9)}
    anti = got.pod_anti_affinity.required[0]
    assert anti.label_selector == label_selector({"app": "w", "ver": "2"})
    assert got.pod_anti_affinity.preferred == (
        WeightedPodAffinityTerm(
            weight=7,
            term=PodAffinityTerm(label_selector=LabelSelector(), namespace_selector=LabelSelector(), topology_key=ZONE),
        ),
    )
    affinity = got.pod_affinity.required[0]
    assert affinity.namespaces == ("other",)
    assert affinity.label_selector is not None
    assert affinity.label_selector.matches({"tier": "x", "ver": "1"})
    assert not affinity.label_selector.matches({"tier": "x", "ver": "2"})


BAD = [
    ({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}}, "topologyKey"),
    (
        {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
                        "topologyKey": HOST,
                    }
                ]
            }
        },
        "operator",
    ),
    (
        {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 101, "podAffinityTerm": {"topologyKey": HOST}}
                ]
            }
        },
        "weight",
    ),
    ({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "x"}}, "must be a list"),
]


@pytest.mark.parametrize(("affinity", "field"), BAD)
def test_bad_terms_are_one_line_errors_naming_the_field(affinity: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as caught:
        convert(k8s_node(), k8s_pod("p", spec__affinity=affinity))
    message = str(caught.value)
    assert "\n" not in message and "Pod ns/p" in message and field in message


def test_a_bad_host_port_is_a_one_line_error() -> None:
    p = k8s_pod("p")
    p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 70000}]
    with pytest.raises(InputError, match=r"Pod ns/p.*hostPort") as caught:
        convert(k8s_node(), p)
    assert "\n" not in str(caught.value)


# --- property -------------------------------------------------------------------------------------


@st.composite
def instances(draw: st.DrawFn) -> Snapshot:
    zones = ["a", "b", "c"]
    count = draw(st.integers(2, 5))
    nodes = [
        node(
            f"n{i}",
            cpu="4",
            labels={HOST: f"n{i}", **({ZONE: draw(st.sampled_from(zones))} if draw(st.booleans()) else {})},
        )
        for i in range(count)
    ]
    apps = ["x", "y", "z"]
    keys = [HOST, ZONE]

    def some_rules(kind: str) -> PodAffinityRules:
        terms = [
            term(draw(st.sampled_from(keys)), {"app": draw(st.sampled_from(apps))})
            for _ in range(draw(st.integers(0, 2)))
        ]
        wanted = [
            WeightedPodAffinityTerm(
                weight=draw(st.integers(1, 100)), term=term(ZONE, {"app": draw(st.sampled_from(apps))})
            )
            for _ in range(draw(st.integers(0, 1)))
        ]
        return PodAffinityRules(required=tuple(terms), preferred=tuple(wanted))

    def some_ports() -> list[tuple[str, str, int]]:
        if not draw(st.booleans()):
            return []
        ip = draw(st.sampled_from(["", "0.0.0.0", "10.0.0.1", "10.0.0.2"]))
        return [(draw(st.sampled_from(["TCP", "UDP"])), ip, 80)]

    pods: list[Pod] = []
    for i in range(draw(st.integers(0, 4))):
        bound = with_rules(
            pod(f"ns/b{i}", cpu="1", node=f"n{draw(st.integers(0, count - 1))}"),
            labels={"app": draw(st.sampled_from(apps))},
            affinity=some_rules("affinity"),
            anti=some_rules("anti"),
            ports=some_ports(),
        )
        pods.append(bound)
    groups = []
    for j in range(draw(st.integers(1, 4))):
        size = draw(st.integers(1, 3))
        gp, gg = gangs(f"g{j}", 1, size=size, cpu="1", created=j, min_member=draw(st.integers(1, size)))
        labels = {"app": draw(st.sampled_from(apps))}
        affinity, anti = some_rules("affinity"), some_rules("anti")
        ports = some_ports()
        pods += [with_rules(p, labels=labels, affinity=affinity, anti=anti, ports=ports) for p in gp]
        groups += gg
    return snapshot(nodes, pods, groups)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_random_instances_with_inter_pod_rules_give_valid_decisions(snap: Snapshot) -> None:
    decision = solve(snap, POLICY)
    assert check(snap, decision, POLICY) == []


# --- preferred terms: the score level -------------------------------------------------------------


def preferred(key: str, labels: Mapping[str, str], weight: int) -> PodAffinityRules:
    return PodAffinityRules(preferred=(WeightedPodAffinityTerm(weight=weight, term=term(key, labels)),))


@pytest.mark.parametrize(
    ("incoming", "bound_rules", "zone"),
    [
        # its preferred affinity draws it to the cache's zone (best fit alone picks n0 in zone a)
        ({"affinity": preferred(ZONE, {"app": "cache"}, 50)}, {}, "b"),
        # its preferred anti-affinity pushes it away from the cache's zone
        ({"anti": preferred(ZONE, {"app": "cache"}, 50)}, {}, "a"),
        # a bound pod's required affinity toward it scores too (hard pod affinity weight 1)
        ({"labels": {"app": "client"}}, {"affinity": rules(term(ZONE, {"app": "client"}))}, "b"),
    ],
)
def test_preferred_terms_choose_the_zone(incoming: dict[str, Any], bound_rules: dict[str, Any], zone: str) -> None:
    cache = with_rules(pod("ns/cache", cpu="1", node="n4"), labels={"app": "cache"}, **bound_rules)
    filler = pod("ns/filler", cpu="12", node="n0")
    app = with_rules(pod("ns/app", cpu="1"), **incoming)
    snap = snapshot(cluster(), [cache, filler, app])
    _, where = placed(snap)
    assert zone_of(snap, where["ns/app"]) == zone


def test_the_solvers_safety_net_sees_a_broken_rule() -> None:
    from vcsat.solver.problem import build_problem
    from vcsat.solver.rules.interpod_tracker import broken

    pods, groups = gangs("agent", 1, size=2)
    pods = [with_rules(p, ports=[("TCP", "", 8080)]) for p in pods]
    problem = build_problem(snapshot(cluster(2), pods, groups), POLICY)
    (shape,) = [s.index for s in problem.shapes]
    assert broken(problem, {(shape, 0): 2})
    assert not broken(problem, {(shape, 0): 1, (shape, 1): 1})


def test_self_affine_gangs_that_match_each_other_share_one_first_domain() -> None:
    # Two profiles (one with a host port) whose pods all match each other's affinity: whichever
    # pod goes first, the others must join its node.
    pods: list[Pod] = []
    groups = []
    for j, ports in enumerate([[("TCP", "", 80)], [], []]):
        gp, gg = gangs(f"g{j}", 1, cpu="1", created=j)
        near_x = rules(term(HOST, {"app": "x"}))
        pods += [with_rules(p, labels={"app": "x"}, affinity=near_x, ports=ports) for p in gp]
        groups += gg
    snap = snapshot(cluster(2), pods, groups)
    _, where = placed(snap)
    assert len(where) == 3 and len(set(where.values())) == 1


def test_the_greedy_retries_a_gang_whose_affinity_needs_a_younger_gang() -> None:
    from vcsat.solver.greedy import greedy
    from vcsat.solver.problem import build_problem

    client, gc = gangs("client", 1, size=2, cpu="2", created=0)
    client = [with_rules(p, affinity=rules(term(ZONE, {"app": "server"}))) for p in client]
    server, gs = gangs("server", 1, size=1, cpu="2", created=5)
    server = [with_rules(p, labels={"app": "server"}) for p in server]
    problem = build_problem(snapshot(cluster(), [*client, *server], [*gc, *gs]), POLICY)
    assert len(greedy(problem).placed) == 2


def test_a_preference_is_met_on_nodes_otherwise_interchangeable() -> None:
    # n0..n4 have the same free room; only the preference tells zone b's n3, n4 from zone a's.
    cache = with_rules(pod("ns/cache", cpu="15.5", node="n5"), labels={"app": "cache"})
    app = with_rules(pod("ns/app", cpu="1"), affinity=preferred(ZONE, {"app": "cache"}, 10))
    snap = snapshot(cluster(), [cache, app])
    _, where = placed(snap)
    assert where["ns/app"] in ("n3", "n4")


# --- the first-pod rule is judged on the final state ------------------------------------------------


def _first_pod_beside_a_matching_pod() -> Snapshot:
    """The differential test's seed 280: p1 (app=web) wants a web pod on its node and may only take
    n1; p2 (app=web, no rules) fits n0 and n1, n0 the better fit. Bound p2 first, p1 alone on n1
    would lack a web pod beside it: the binder does not order bindings, so both go to n1."""
    web = {"app": "web"}
    nodes = [
        node("n0", cpu="2", labels={HOST: "n0", "pool": "a"}),
        node("n1", cpu="4", labels={HOST: "n1", "pool": "a"}),
        node("n2", cpu="4", labels={HOST: "n2"}),
    ]
    p1 = with_rules(pod("ns/p1", cpu="1", selector={HOST: "n1"}), labels=web, affinity=rules(term(HOST, web)))
    p2 = with_rules(pod("ns/p2", cpu="1", selector={"pool": "a"}), labels=web)
    return snapshot(nodes, [p1, p2])


def test_a_first_pod_and_a_matching_pod_without_rules_share_the_domain() -> None:
    _, where = placed(_first_pod_beside_a_matching_pod())
    assert where == {"ns/p1": "n1", "ns/p2": "n1"}


def test_the_greedy_keeps_a_matching_pod_in_the_first_pods_domain() -> None:
    from vcsat.solver.problem import build_problem
    from vcsat.solver.rules.interpod import AFFINITY_REASON
    from vcsat.solver.rules.interpod_tracker import Tracker, broken

    problem = build_problem(_first_pod_beside_a_matching_pod(), POLICY)
    assert problem.interpod is not None
    (p1,) = [c.index for c in problem.classes if c.pods[0].key == "ns/p1"]
    (p2,) = [c.index for c in problem.classes if c.pods[0].key == "ns/p2"]
    tracker = Tracker(problem, problem.interpod)
    tracker.place(p1, 1)
    assert tracker.why(p2, 0) == AFFINITY_REASON and tracker.why(p2, 1) is None
    tracker.remove(p1, 1)
    tracker.place(p2, 0)
    assert tracker.why(p1, 1) == AFFINITY_REASON
    shape = {c: problem.classes[c].shape for c in (p1, p2)}
    assert broken(problem, {(shape[p1], 1): 1, (shape[p2], 0): 1})
    assert not broken(problem, {(shape[p1], 1): 1, (shape[p2], 1): 1})


def test_check_refuses_a_first_pod_with_a_matching_pod_elsewhere() -> None:
    snap = _first_pod_beside_a_matching_pod()
    found = check(snap, _decide(snap, ("ns/p1", "n1"), ("ns/p2", "n0")), POLICY)
    assert [(v.rule, v.subject) for v in found if "Affinity" in v.rule] == [("PodAffinityRulesNotMatch", "ns/p1")]
    together = check(snap, _decide(snap, ("ns/p1", "n1"), ("ns/p2", "n1")), POLICY)
    assert [v for v in together if "Affinity" in v.rule] == []


def test_a_matching_pod_with_affinity_of_its_own_also_takes_the_first_pod_rule_away() -> None:
    # p2 (app=web) must sit beside the bound db on n0; p1 (app=web, wants a web pod beside it) may
    # only take n1. Bound p2 first, p1 on n1 breaks its affinity: the final state decides, so
    # only one of them is placed.
    web = {"app": "web"}
    nodes = [node(f"n{i}", cpu="4", labels={HOST: f"n{i}"}) for i in range(2)]
    db = with_rules(pod("ns/db", cpu="1", node="n0"), labels={"app": "db"})
    p1 = with_rules(pod("ns/p1", cpu="1", selector={HOST: "n1"}), labels=web, affinity=rules(term(HOST, web)))
    p2 = with_rules(pod("ns/p2", cpu="1"), labels=web, affinity=rules(term(HOST, {"app": "db"})))
    snap = snapshot(nodes, [db, p1, p2])
    _, where = placed(snap)
    assert where in ({"ns/p2": "n0"}, {"ns/p1": "n1"})
    found = check(snap, _decide(snap, ("ns/p1", "n1"), ("ns/p2", "n0")), POLICY)
    assert [(v.rule, v.subject) for v in found if "Affinity" in v.rule] == [("PodAffinityRulesNotMatch", "ns/p1")]
