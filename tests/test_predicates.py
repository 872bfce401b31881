"""The Kubernetes predicates: tables of upstream semantics, a reference model, and speed."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import expr, node, pod, taint, term, toleration
from vcsat.model import Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, Toleration
from vcsat.solver.rules.predicates import (
    NodeIndex,
    compiled,
    eligibility_key,
    eligible_nodes,
    parse_int64,
    predicate_failure,
    tolerates,
    untolerated_taint,
)

# --- tolerations ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tol", "tnt", "expected"),
    [
        ("*", "k=v:NoSchedule", True),
        ("*", "k:NoExecute", True),
        (":NoSchedule", "anything=v:NoSchedule", True),  # empty key + Exists + effect
        (":NoSchedule", "anything=v:NoExecute", False),
        ("k", "k=v:NoExecute", True),  # Exists ignores the value, empty effect matches all
        ("k:NoSchedule", "k=v:NoExecute", False),
        ("k:NoSchedule", "j:NoSchedule", False),
        ("k=v", "k=v:NoSchedule", True),
        ("k=v", "k=w:NoSchedule", False),
        ("k=v:NoSchedule", "j=v:NoSchedule", False),
        ("k=", "k:NoSchedule", True),  # Equal with empty value matches an empty taint value
        ("k=", "k=v:NoSchedule", False),
        (Toleration(key="", operator="Equal", value="v"), "k=v:NoSchedule", True),  # as upstream code
        (Toleration(key="", operator="Equal", value="v"), "k=w:NoSchedule", False),
    ],
)
def test_toleration_matches_taint(tol: str | Toleration, tnt: str, expected: bool) -> None:
    assert tolerates(toleration(tol), taint(tnt)) is expected


def test_untolerated_taint_skips_prefer_no_schedule_and_names_the_first_blocking_one() -> None:
    n = node("n1", taints=["soft:PreferNoSchedule", "gpu=true:NoSchedule", "maint:NoExecute"])
    assert untolerated_taint(pod("ns/p", tolerations=["gpu"]), n) == taint("maint:NoExecute")
    assert untolerated_taint(pod("ns/p"), n) == taint("gpu=true:NoSchedule")
    assert untolerated_taint(pod("ns/p", tolerations=["gpu", "maint"]), n) is None


# --- parse_int64 as Go's strconv.ParseInt(s, 10, 64) ----------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8", 8),
        ("-3", -3),
        ("+8", 8),
        ("007", 7),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("9223372036854775808", None),
        ("", None),
        (" 8", None),
        ("1_000", None),
        ("4.5", None),
        ("0x10", None),
        ("8x", None),
    ],
)
def test_parse_int64(text: str, value: int | None) -> None:
    assert parse_int64(text) == value


# --- predicate_failure: one row per rule, feasible and infeasible -----------------------------

GPU_NODE_LABELS = {"zone": "a", "disk": "ssd", "cores": "8", "odd": "8x"}
CORDON_TOLERATION = "node.kubernetes.io/unschedulable:NoSchedule"


def _n(**kwargs: object) -> Node:
    return node("n1", labels=kwargs.pop("labels", GPU_NODE_LABELS), **kwargs)  # type: ignore[arg-type]


CASES: list[tuple[str, Pod, Node, str | None]] = [
    ("plain", pod("ns/p"), _n(), None),
    ("not ready", pod("ns/p"), _n(ready=False), "NodeNotReady"),
    ("not ready whatever tolerated", pod("ns/p", tolerations=["*"]), _n(ready=False), "NodeNotReady"),
    ("cordoned", pod("ns/p"), _n(unschedulable=True), "NodeUnschedulable"),
    ("cordoned, tolerated", pod("ns/p", tolerations=[CORDON_TOLERATION]), _n(unschedulable=True), None),
    ("cordoned, tolerate all", pod("ns/p", tolerations=["*"]), _n(unschedulable=True), None),
    (
        "cordoned, wrong effect",
        pod("ns/p", tolerations=["node.kubernetes.io/unschedulable:NoExecute"]),
        _n(unschedulable=True),
        "NodeUnschedulable",
    ),
    ("selector match", pod("ns/p", selector={"zone": "a", "disk": "ssd"}), _n(), None),
    ("selector value", pod("ns/p", selector={"zone": "b"}), _n(), "NodeSelectorMismatch"),
    ("selector one of two", pod("ns/p", selector={"zone": "a", "disk": "hdd"}), _n(), "NodeSelectorMismatch"),
    ("selector absent label", pod("ns/p", selector={"rack": "1"}), _n(), "NodeSelectorMismatch"),
    ("selector empty value, absent", pod("ns/p", selector={"rack": ""}), _n(), "NodeSelectorMismatch"),
    ("no affinity", pod("ns/p", affinity=()), _n(), None),
    ("In", pod("ns/p", affinity="zone in (a, b)"), _n(), None),
    ("In fails", pod("ns/p", affinity="zone in (b, c)"), _n(), "NodeAffinityMismatch"),
    ("In absent", pod("ns/p", affinity="rack in (1)"), _n(), "NodeAffinityMismatch"),
    ("NotIn", pod("ns/p", affinity="zone notin (b)"), _n(), None),
    ("NotIn fails", pod("ns/p", affinity="zone notin (a)"), _n(), "NodeAffinityMismatch"),
    ("NotIn absent label passes", pod("ns/p", affinity="rack notin (1)"), _n(), None),
    ("Exists", pod("ns/p", affinity="disk"), _n(), None),
    ("Exists fails", pod("ns/p", affinity="rack"), _n(), "NodeAffinityMismatch"),
    ("DoesNotExist", pod("ns/p", affinity="!rack"), _n(), None),
    ("DoesNotExist fails", pod("ns/p", affinity="!disk"), _n(), "NodeAffinityMismatch"),
    ("Gt", pod("ns/p", affinity="cores > 4"), _n(), None),
    ("Gt equal fails", pod("ns/p", affinity="cores > 8"), _n(), "NodeAffinityMismatch"),
    ("Lt", pod("ns/p", affinity="cores < 16"), _n(), None),
    ("Lt fails", pod("ns/p", affinity="cores < 8"), _n(), "NodeAffinityMismatch"),
    ("Gt non-integer label", pod("ns/p", affinity="odd > 1"), _n(), "NodeAffinityMismatch"),
    ("Lt non-integer label", pod("ns/p", affinity="odd < 100"), _n(), "NodeAffinityMismatch"),
    ("Gt absent label", pod("ns/p", affinity="rack > 1"), _n(), "NodeAffinityMismatch"),
    ("Gt signed label", pod("ns/p", affinity="cores > 4"), _n(labels={"cores": "+8"}), None),
    (
        "Gt overflowing label",
        pod("ns/p", affinity="cores > 4"),
        _n(labels={"cores": "9223372036854775808"}),
        "NodeAffinityMismatch",
    ),
    ("Gt non-integer value", pod("ns/p", affinity="cores > 4.5"), _n(), "NodeAffinityMismatch"),
    (
        "Gt two values",
        pod("ns/p", affinity=term(NodeSelectorRequirement(key="cores", operator="Gt", values=("1", "2")))),
        _n(),
        "NodeAffinityMismatch",
    ),
    (
        "In without values",
        pod("ns/p", affinity=term(NodeSelectorRequirement(key="zone", operator="In"))),
        _n(),
        "NodeAffinityMismatch",
    ),
    (
        "Exists with values",
        pod("ns/p", affinity=term(NodeSelectorRequirement(key="zone", operator="Exists", values=("a",)))),
        _n(),
        "NodeAffinityMismatch",
    ),
    ("terms OR", pod("ns/p", affinity=["zone in (x)", "zone in (a)"]), _n(), None),
    ("terms OR none", pod("ns/p", affinity=["zone in (x)", "zone in (y)"]), _n(), "NodeAffinityMismatch"),
    ("term AND", pod("ns/p", affinity=term("zone in (a)", "disk")), _n(), None),
    ("term AND one fails", pod("ns/p", affinity=term("zone in (a)", "rack")), _n(), "NodeAffinityMismatch"),
    ("empty term", pod("ns/p", affinity=[NodeSelectorTerm()]), _n(), "NodeAffinityMismatch"),
    ("empty term OR good term", pod("ns/p", affinity=[NodeSelectorTerm(), term("zone in (a)")]), _n(), None),
    ("invalid term OR good term", pod("ns/p", affinity=["cores > x", "disk"]), _n(), None),
    ("name field In", pod("ns/p", affinity=term(fields=["metadata.name in (n1)"])), _n(), None),
    (
        "name field In other",
        pod("ns/p", affinity=term(fields=["metadata.name in (n2)"])),
        _n(),
        "NodeAffinityMismatch",
    ),
    ("name field NotIn", pod("ns/p", affinity=term(fields=["metadata.name notin (n2)"])), _n(), None),
    (
        "name field NotIn self",
        pod("ns/p", affinity=term(fields=["metadata.name notin (n1)"])),
        _n(),
        "NodeAffinityMismatch",
    ),
    (
        "field other than name",
        pod("ns/p", affinity=term(fields=["metadata.uid notin (x)"])),
        _n(),
        "NodeAffinityMismatch",
    ),
    (
        "field Exists",
        pod("ns/p", affinity=term(fields=["metadata.name"])),
        _n(),
        "NodeAffinityMismatch",
    ),
    (
        "field In two values",
        pod("ns/p", affinity=term(fields=["metadata.name in (n1, n2)"])),
        _n(),
        "NodeAffinityMismatch",
    ),
    (
        "fields AND labels",
        pod("ns/p", affinity=term("zone in (a)", fields=["metadata.name in (n1)"])),
        _n(),
        None,
    ),
    ("NoSchedule", pod("ns/p"), _n(taints=["gpu=true:NoSchedule"]), "TaintNotTolerated"),
    ("NoExecute", pod("ns/p"), _n(taints=["maint:NoExecute"]), "TaintNotTolerated"),
    ("PreferNoSchedule never blocks", pod("ns/p"), _n(taints=["soft:PreferNoSchedule"]), None),
    (
        "taint tolerated",
        pod("ns/p", tolerations=["gpu=true:NoSchedule"]),
        _n(taints=["gpu=true:NoSchedule"]),
        None,
    ),
    (
        "taint value differs",
        pod("ns/p", tolerations=["gpu=false"]),
        _n(taints=["gpu=true:NoSchedule"]),
        "TaintNotTolerated",
    ),
    (
        "first failure: not ready",
        pod("ns/p", selector={"zone": "b"}),
        _n(ready=False, unschedulable=True),
        "NodeNotReady",
    ),
    (
        "first failure: cordon",
        pod("ns/p", selector={"zone": "b"}),
        _n(unschedulable=True),
        "NodeUnschedulable",
    ),
    (
        "first failure: selector",
        pod("ns/p", selector={"zone": "b"}, affinity="rack"),
        _n(),
        "NodeSelectorMismatch",
    ),
    (
        "first failure: affinity",
        pod("ns/p", affinity="rack"),
        _n(taints=["t:NoSchedule"]),
        "NodeAffinityMismatch",
    ),
]


@pytest.mark.parametrize(("case", "p", "n", "code"), CASES, ids=[c[0] for c in CASES])
def test_predicate_failure(case: str, p: Pod, n: Node, code: str | None) -> None:
    failure = predicate_failure(p, n)
    assert (failure.code if failure else None) == code
    assert reference_passes(p, n) is (code is None)
    assert (n in eligible_nodes(p, [n])) is (code is None)


@pytest.mark.parametrize(
    ("p", "n", "named"),
    [
        (pod("ns/p"), node("n1", taints=["gpu=true:NoSchedule"]), "gpu=true:NoSchedule"),
        (pod("ns/p", selector={"zone": "b"}), node("n1", labels={"zone": "a"}), "zone=b"),
        (pod("ns/p", selector={"rack": "1"}), node("n1"), "lacks label rack"),
        (pod("ns/p", affinity="zone in (b)"), node("n1", labels={"zone": "a"}), "zone In (b) fails (zone=a)"),
        (pod("ns/p", affinity="cores > 4"), node("n1"), "cores > 4 fails (label absent)"),
        (pod("ns/p", affinity=[NodeSelectorTerm()]), node("n1"), "empty term"),
        (pod("ns/p"), node("n1", unschedulable=True), "node.kubernetes.io/unschedulable:NoSchedule"),
        (pod("ns/p"), node("n1", ready=False), "n1 is not Ready"),
    ],
)
def test_failure_message_names_the_label_or_taint(p: Pod, n: Node, named: str) -> None:
    failure = predicate_failure(p, n)
    assert failure is not None
    assert named in failure.message


# --- eligibility keys -------------------------------------------------------------------------


def test_eligibility_key_ignores_what_does_not_filter() -> None:
    a = pod("ns/a", cpu="1", priority=1, selector={"zone": "a", "disk": "ssd"}, tolerations=["x", "y:NoSchedule"])
    b = pod(
        "ns/b",
        cpu="3",
        gpus=2,
        group="ns/g",
        selector={"disk": "ssd", "zone": "a"},
        tolerations=["y:NoSchedule", "x"],
    )
    c = pod("ns/c", selector={"disk": "ssd", "zone": "a"}, tolerations=["x", "y:NoSchedule", "z:PreferNoSchedule"])
    assert eligibility_key(a) == eligibility_key(b) == eligibility_key(c)
    assert hash(eligibility_key(a)) == hash(eligibility_key(b))


@pytest.mark.parametrize(
    "other",
    [
        pod("ns/o", selector={"zone": "b"}),
        pod("ns/o", affinity="zone in (a)"),
        pod("ns/o", tolerations=["x"]),
        pod("ns/o", tolerations=["x:NoExecute"]),
    ],
)
def test_eligibility_key_tells_filters_apart(other: Pod) -> None:
    assert eligibility_key(pod("ns/p")) != eligibility_key(other)


def test_eligible_nodes_keeps_node_order() -> None:
    nodes = [
        node("n0", labels={"zone": "a"}),
        node("n1", labels={"zone": "b"}),
        node("n2", labels={"zone": "a"}, taints=["gpu:NoSchedule"]),
        node("n3", labels={"zone": "a"}, ready=False),
        node("n4", labels={"zone": "a"}, unschedulable=True),
        node("n5", labels={"zone": "a"}),
    ]
    names = [n.name for n in eligible_nodes(pod("ns/p", selector={"zone": "a"}), nodes)]
    assert names == ["n0", "n5"]
    tolerant = pod("ns/p", selector={"zone": "a"}, tolerations=["gpu", CORDON_TOLERATION])
    assert [n.name for n in eligible_nodes(tolerant, nodes)] == ["n0", "n2", "n4", "n5"]
    assert eligible_nodes(pod("ns/p"), []) == []


# --- a reference model, written as plainly as possible, against random inputs -------------------


def reference_passes(p: Pod, n: Node) -> bool:
    """The predicates as the Kubernetes docs state them, with no speed tricks."""
    if not n.ready:
        return False

    def tol_ok(key: str, value: str, effect: str) -> bool:
        for t in p.tolerations:
            effect_ok = t.effect in ("", effect)
            key_ok = t.key in ("", key)
            value_ok = t.operator == "Exists" or t.value == value
            if effect_ok and key_ok and value_ok:
                return True
        return False

    if n.unschedulable and not tol_ok("node.kubernetes.io/unschedulable", "", "NoSchedule"):
        return False
    if any(n.labels.get(k) != v for k, v in p.node_selector.items()):
        return False

    def as_int(text: str | None) -> int | None:
        try:
            ok = text is not None and text.lstrip("+-").isdigit() and text.strip() == text and "_" not in text
            value = int(text) if ok and text is not None else None
        except ValueError:
            return None
        return value if value is not None and -(2**63) <= value < 2**63 else None

    def req_ok(r: NodeSelectorRequirement) -> bool:
        have = n.labels.get(r.key)
        if r.operator == "In":
            return bool(r.values) and have in r.values
        if r.operator == "NotIn":
            return bool(r.values) and have not in r.values
        if r.operator == "Exists":
            return not r.values and have is not None
        if r.operator == "DoesNotExist":
            return not r.values and have is None
        if len(r.values) != 1 or as_int(r.values[0]) is None:
            return False
        label, bound = as_int(have), as_int(r.values[0])
        if label is None or bound is None:
            return False
        return label > bound if r.operator == "Gt" else label < bound

    def field_ok(r: NodeSelectorRequirement) -> bool:
        if r.key != "metadata.name" or r.operator not in ("In", "NotIn") or len(r.values) != 1:
            return False
        return (n.name == r.values[0]) == (r.operator == "In")

    def term_ok(t: NodeSelectorTerm) -> bool:
        if not t.match_expressions and not t.match_fields:
            return False
        return all(map(req_ok, t.match_expressions)) and all(map(field_ok, t.match_fields))

    if p.affinity and not any(term_ok(t) for t in p.affinity):
        return False
    return all(tol_ok(t.key, t.value, t.effect) for t in n.taints if t.effect in ("NoSchedule", "NoExecute"))


LABEL_VALUES = {"zone": ["a", "b"], "disk": ["ssd"], "cores": ["2", "8", "+8", "8x", "-1"]}
TAINTS = ["gpu=true:NoSchedule", "gpu=false:NoSchedule", "maint:NoExecute", "soft:PreferNoSchedule"]
TOLERATIONS = [
    "*",
    "gpu",
    "gpu=true",
    "gpu=true:NoSchedule",
    "gpu:NoExecute",
    ":NoExecute",
    "maint",
    "soft:PreferNoSchedule",
    CORDON_TOLERATION,
]
REQUIREMENTS = [
    "zone in (a)",
    "zone in (a, b)",
    "zone notin (b)",
    "disk",
    "!disk",
    "cores > 4",
    "cores < 4",
    "cores > 4.5",
    "zone > 1",
]
FIELDS = ["metadata.name in (n0)", "metadata.name notin (n1)", "metadata.uid in (n0)"]


@st.composite
def nodes_st(draw: st.DrawFn) -> list[Node]:
    count = draw(st.integers(0, 6))
    out = []
    for i in range(count):
        labels = {key: draw(st.sampled_from(values)) for key, values in LABEL_VALUES.items() if draw(st.booleans())}
        out.append(
            node(
                f"n{i}",
                labels=labels,
                taints=draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique=True)),
                unschedulable=draw(st.booleans()),
                ready=draw(st.integers(0, 4)) > 0,
            )
        )
    return out


@st.composite
def pods_st(draw: st.DrawFn) -> Pod:
    terms = draw(
        st.lists(
            st.builds(
                lambda reqs, fields: term(*reqs, fields=fields),
                st.lists(st.sampled_from(REQUIREMENTS), max_size=2),
                st.lists(st.sampled_from(FIELDS), max_size=1),
            ),
            max_size=2,
        )
    )
    selector = {
        key: draw(st.sampled_from(values)) for key, values in LABEL_VALUES.items() if draw(st.integers(0, 3)) == 0
    }
    return pod(
        "ns/p",
        selector=selector,
        affinity=terms,
        tolerations=draw(st.lists(st.sampled_from(TOLERATIONS), max_size=3)),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes_st(), st.lists(pods_st(), min_size=1, max_size=4))
def test_predicates_agree_with_reference_and_index(nodes: list[Node], pods: list[Pod]) -> None:
    index = NodeIndex(nodes)
    for p in pods:
        expected = [n for n in nodes if reference_passes(p, n)]
        assert [n for n in nodes if predicate_failure(p, n) is None] == expected
        assert eligible_nodes(p, nodes) == expected
        assert eligible_nodes(p, tuple(nodes)) == expected
        assert index.eligible(p) == expected


def test_requirement_parser_round_trips() -> None:
    assert expr("zone in (a, b)") == NodeSelectorRequirement(key="zone", operator="In", values=("a", "b"))
    assert expr("!disk") == NodeSelectorRequirement(key="disk", operator="DoesNotExist")
    assert expr("cores < 8") == NodeSelectorRequirement(key="cores", operator="Lt", values=("8",))


# --- speed ------------------------------------------------------------------------------------


def test_eligibility_of_1000_nodes_and_300_keys_agrees() -> None:
    zones, models = [f"z{i}" for i in range(10)], [f"gpu-{i}" for i in range(8)]
    nodes = tuple(
        node(
            f"n{i:04d}",
            labels={
                "zone": zones[i % 10],
                "gpu-model": models[i % 8],
                "rack": str(i // 40),
                "cores": str(8 * (i % 12)),
            },
            taints=["dedicated=team-a:NoSchedule"] if i % 9 == 0 else [],
            unschedulable=i % 97 == 0,
            ready=i % 101 != 0,
        )
        for i in range(1000)
    )
    pods = [
        pod(
            f"ns/p{k}",
            selector={"zone": zones[k % 10]} if k % 3 == 0 else {},
            affinity=[term(f"gpu-model in ({models[k % 8]}, {models[(k + 1) % 8]})", f"cores > {k}")]
            if k % 2
            else term(f"rack notin ({k})"),
            tolerations=["dedicated=team-a:NoSchedule"] if k % 5 == 0 else [],
        )
        for k in range(300)
    ]
    assert len({eligibility_key(p) for p in pods}) == 300
    compiled.cache_clear()
    index = NodeIndex(nodes)
    lists = [index.eligible(p) for p in pods]
    for k in (0, 7, 299):
        assert lists[k] == [n for n in nodes if predicate_failure(pods[k], n) is None]
        assert eligible_nodes(pods[k], nodes) == lists[k]
