"""HyperNodes resolved into a domain tree: Volcano's member semantics, tiers, bandwidths, errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from vcsat.model import HyperNode, HyperNodeMember, Node
from vcsat.model.hypernodes import NODE_TIER, DomainTree, default_tier_bandwidth, resolve_hypernodes


def nodes(*names: str, labels: Mapping[str, Mapping[str, str]] | None = None) -> list[Node]:
    return [Node(name=name, labels=dict((labels or {}).get(name, {}))) for name in names]


def exact(name: str, kind: str = "Node") -> HyperNodeMember:
    return HyperNodeMember(type="HyperNode" if kind == "HyperNode" else "Node", exact_name=name)


def regex(pattern: str) -> HyperNodeMember:
    return HyperNodeMember(type="Node", regex=pattern)


def label(**labels: str) -> HyperNodeMember:
    return HyperNodeMember(type="Node", labels=labels)


def child(name: str) -> HyperNodeMember:
    return exact(name, "HyperNode")


def hn(name: str, tier: int, *members: HyperNodeMember) -> HyperNode:
    return HyperNode(name=name, tier=tier, members=members)


CLUSTER = nodes(
    "r1-n1", "r1-n2", "r2-n1", "r2-n2", "gpu-a", "gpu-b", "lonely",
    labels={"gpu-a": {"rack": "r3", "zone": "z"}, "gpu-b": {"rack": "r3"}},
)  # fmt: skip
TREE = [
    hn("rack1", 1, regex("^r1-")),
    hn("rack2", 1, exact("r2-n1"), exact("r2-n2"), exact("r2-n9")),  # r2-n9 does not exist (yet)
    hn("rack3", 1, label(rack="r3")),
    hn("spine1", 2, child("rack1"), child("rack2")),
    hn("spine2", 2, child("rack3")),
    hn("top", 3, child("spine1"), child("spine2")),
]


@pytest.fixture(scope="module")
def tree() -> DomainTree:
    return resolve_hypernodes(TREE, CLUSTER)


@pytest.mark.parametrize(
    ("node", "tier", "domain"),
    [
        ("r1-n1", 1, "rack1"),
        ("r1-n2", 2, "spine1"),
        ("r2-n2", 1, "rack2"),
        ("r2-n2", 3, "top"),
        ("gpu-a", 1, "rack3"),  # labelMatch
        ("gpu-b", 2, "spine2"),
        ("lonely", 1, None),
        ("nowhere", 1, None),
        ("r1-n1", 4, None),
    ],
)
def test_domain_of(tree: DomainTree, node: str, tier: int, domain: str | None) -> None:
    assert tree.domain_of(node, tier) == domain


def test_tiers_members_and_parents(tree: DomainTree) -> None:
    assert tree.tiers == (1, 2, 3)
    assert tree.hypernodes_of_tier(1) == ("rack1", "rack2", "rack3")
    assert tree.hypernodes_of_tier(2) == ("spine1", "spine2")
    assert tree.nodes_of["rack2"] == {"r2-n1", "r2-n2"}
    assert tree.nodes_of["spine1"] == {"r1-n1", "r1-n2", "r2-n1", "r2-n2"}
    assert tree.nodes_of["top"] == {"r1-n1", "r1-n2", "r2-n1", "r2-n2", "gpu-a", "gpu-b"}
    assert tree.parent["rack3"] == "spine2"
    assert tree.parent["top"] is None
    assert tree.tier_of["spine2"] == 2


@pytest.mark.parametrize(
    ("group", "tier"),
    [
        (["r1-n1"], NODE_TIER),
        (["r1-n1", "r1-n1"], NODE_TIER),
        (["r1-n1", "r1-n2"], 1),
        (["r1-n1", "r2-n1"], 2),
        (["r1-n1", "gpu-a"], 3),
        (["gpu-a", "gpu-b"], 1),
        (["r1-n1", "lonely"], None),
    ],
)
def test_span_tier(tree: DomainTree, group: list[str], tier: int | None) -> None:
    assert tree.span_tier(group) == tier


def test_regex_match_is_a_search_as_in_volcano() -> None:
    # Volcano calls Go's regexp.MatchString: unanchored, so "n1" matches any name containing it.
    found = resolve_hypernodes([hn("h", 1, regex("n1"))], CLUSTER)
    assert found.nodes_of["h"] == {"r1-n1", "r2-n1"}
    anchored = resolve_hypernodes([hn("h", 1, regex("^r2-n1$"))], CLUSTER)
    assert anchored.nodes_of["h"] == {"r2-n1"}


def test_label_match_needs_every_label_and_an_empty_one_matches_nothing() -> None:
    found = resolve_hypernodes(
        [hn("both", 1, label(rack="r3", zone="z")), hn("none", 2, HyperNodeMember(type="Node", labels={}))],
        CLUSTER,
    )
    assert found.nodes_of["both"] == {"gpu-a"}
    assert found.nodes_of["none"] == frozenset()


def test_a_tier_may_be_skipped_on_a_path() -> None:
    found = resolve_hypernodes([hn("rack", 1, regex("^r1-")), hn("pod", 3, child("rack"), exact("r2-n1"))], CLUSTER)
    assert found.domain_of("r1-n1", 2) is None
    assert found.domain_of("r1-n1", 3) == "pod"
    assert found.span_tier(["r1-n1", "r2-n1"]) == 3
    assert found.span_tier(["r1-n1", "r1-n2"]) == 1


def test_no_hypernodes() -> None:
    empty = resolve_hypernodes([], CLUSTER)
    assert empty.tiers == ()
    assert empty.span_tier(["r1-n1", "r1-n2"]) is None
    assert empty.span_tier(["r1-n1"]) == NODE_TIER


# --- bandwidth per tier ---------------------------------------------------------------------------


def test_default_tier_bandwidths(tree: DomainTree) -> None:
    assert tree.bandwidth == {1: 50.0, 2: 25.0, 3: 12.5}
    assert tree.tier_bandwidth(1) == 50.0
    assert tree.tier_bandwidth(4) == 6.25
    assert default_tier_bandwidth(5) == 3.125
    with pytest.raises(ValueError, match="tier 0 is one node"):
        default_tier_bandwidth(0)


def test_tier_bandwidths_can_be_overridden() -> None:
    found = resolve_hypernodes(TREE, CLUSTER, tier_bandwidth={1: 100.0, 2: 40.0, 3: 40.0})
    assert found.bandwidth == {1: 100.0, 2: 40.0, 3: 40.0}
    assert found.tier_bandwidth(2) == 40.0


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({2: 60.0}, "must not grow with the tier: tier 2 has 60 GB/s, more than tier 1's 50 GB/s"),
        ({1: 20.0}, "tier 2 has 25 GB/s, more than tier 1's 20 GB/s"),
        ({1: 0.0}, "tier bandwidth for tier 1: must be a positive number of GB/s, not 0.0"),
        ({1: float("nan")}, "not nan"),
        ({0: 500.0}, "tier bandwidth for tier 0: tiers start at 1"),
    ],
)
def test_bad_tier_bandwidths(overrides: Mapping[int, float], reason: str) -> None:
    with pytest.raises(ValueError) as raised:
        resolve_hypernodes(TREE, CLUSTER, tier_bandwidth=overrides)
    assert reason in str(raised.value)


# --- bad graphs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hypernodes", "reason"),
    [
        ([hn("a", 1), hn("a", 2)], "HyperNode a: defined twice"),
        ([hn("a", 0)], "HyperNode a: tier must be at least 1 (tier 0 is one node), not 0"),
        ([hn("s", 2, child("ghost"))], "HyperNode s: members[0]: HyperNode ghost does not exist"),
        (
            [hn("s", 2, HyperNodeMember(type="HyperNode", regex="rack.*"))],
            "HyperNode s: members[0]: a HyperNode member is named by exactMatch only",
        ),
        (
            [hn("r", 1, HyperNodeMember(type="Node"))],
            "HyperNode r: members[0]: needs exactly one of exactMatch, regexMatch, labelMatch, not none",
        ),
        (
            [hn("r", 1, HyperNodeMember(type="Node", exact_name="x", regex="y"))],
            "not ['exactMatch', 'regexMatch']",
        ),
        ([hn("r", 1, regex("r1-("))], "HyperNode r: members[0]: regexMatch.pattern 'r1-(' is not a regular"),
        ([hn("a", 2, child("b")), hn("b", 1, child("a"))], "HyperNode members form a cycle: a → b → a"),
        ([hn("a", 1, child("a"))], "HyperNode members form a cycle: a → a"),
        (
            [hn("a", 3, child("b")), hn("b", 2, child("c")), hn("c", 1, child("a"))],
            "HyperNode members form a cycle: a → b → c → a",
        ),
        (
            [hn("r", 1), hn("s1", 2, child("r")), hn("s2", 2, child("r"))],
            "HyperNode r: member of both s1 and s2",
        ),
        (
            [hn("r", 2), hn("s", 2, child("r"))],
            "HyperNode s: member HyperNode r has tier 2, not below its own tier 2",
        ),
        (
            [hn("r1", 1, regex("^r1-")), hn("all", 1, regex("-n1$"))],
            "node r1-n1: in two HyperNodes of tier 1: all and r1",
        ),
        (
            [hn("r1", 1, regex("^r1-")), hn("s1", 2, child("r1")), hn("s2", 2, exact("r1-n2"))],
            "node r1-n2: in two HyperNodes of tier 2: s1 and s2",
        ),
        (
            [hn("r1", 1, regex("^r1-")), hn("s2", 2, exact("r1-n2"))],
            "node r1-n2: in s2 (tier 2) and in r1 (tier 1), but r1 is not inside s2",
        ),
    ],
)
def test_bad_hypernode_graph_says_why(hypernodes: Sequence[HyperNode], reason: str) -> None:
    with pytest.raises(ValueError) as raised:
        resolve_hypernodes(hypernodes, CLUSTER)
    assert reason in str(raised.value)


def test_equal_inputs_give_the_last_tree_again_and_changed_ones_a_new_one() -> None:
    """The converter's check and the build ask for one snapshot's tree: the second answer is the
    first tree itself. A changed node, HyperNode or bandwidth is resolved again; a bad graph is
    refused every time (nothing kept for it)."""
    first = resolve_hypernodes(TREE, CLUSTER)
    assert resolve_hypernodes(list(TREE), list(CLUSTER)) is first  # other lists, the same objects
    relabelled = [Node(name=n.name, labels={"rack": "r3"} if n.name == "lonely" else dict(n.labels)) for n in CLUSTER]
    moved = resolve_hypernodes(TREE, relabelled)
    assert moved is not first
    assert moved.nodes_of["rack3"] == {"gpu-a", "gpu-b", "lonely"}
    assert first.nodes_of["rack3"] == {"gpu-a", "gpu-b"}
    faster = resolve_hypernodes(TREE, relabelled, tier_bandwidth={1: 900.0})
    assert faster is not moved and faster.tier_bandwidth(1) == 900.0
    assert resolve_hypernodes(TREE, relabelled).tier_bandwidth(1) == moved.tier_bandwidth(1)
    bad = [hn("r1", 1, regex("^r1-")), hn("all", 1, regex("-n1$"))]
    for _ in range(2):
        with pytest.raises(ValueError, match="in two HyperNodes of tier 1"):
            resolve_hypernodes(bad, CLUSTER)
    assert resolve_hypernodes(TREE, relabelled) == moved
