"""The converter's common cases read without its general checks: each must give what they give.

A HyperNode member named by ``exactMatch`` alone, a PodGroup's ``minResources`` spelled as another
group's, an object of a file identified in one loop: each is read by a short path, and must come out
as the general reading makes it, and fail as it fails (the same one line).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_objects import k8s_node, k8s_podgroup, k8s_queue
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.errors import InputError
from vcsat.model.cluster import HyperNodeMember

Obj = dict[str, Any]


def _hypernode(name: str, tier: int, *members: Any) -> Obj:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": list(members)},
    }


def _exact(name: Any, kind: Any = "Node", **selector: Any) -> Obj:
    return {"type": kind, "selector": {"exactMatch": {"name": name}, **selector}}


NODES = [k8s_node("a"), k8s_node("b"), k8s_node("c")]

MEMBERS = [
    pytest.param(_exact("a"), HyperNodeMember(type="Node", exact_name="a"), id="node"),
    pytest.param(_exact("x"), HyperNodeMember(type="Node", exact_name="x"), id="absent-node"),
    pytest.param(
        _exact("a", regexMatch=None, labelMatch=None), HyperNodeMember(type="Node", exact_name="a"), id="nulls"
    ),
    pytest.param(
        {"type": "Node", "selector": {"regexMatch": {"pattern": "^a"}}},
        HyperNodeMember(type="Node", regex="^a"),
        id="regex",
    ),
    pytest.param(
        {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"k": "v"}}}},
        HyperNodeMember(type="Node", labels={"k": "v"}),
        id="labels",
    ),
]


@pytest.mark.parametrize(("raw", "member"), MEMBERS)
def test_a_hypernode_member_reads_as_the_model_says(raw: Obj, member: HyperNodeMember) -> None:
    snapshot = snapshot_from_objects([*copy.deepcopy(NODES), _hypernode("r", 1, raw)], source="t.yaml")
    assert snapshot.hypernodes[0].members == (member,)


BAD_MEMBERS = [
    pytest.param(_exact(""), "exactMatch.name: missing", id="empty-name"),
    pytest.param(_exact(None), "exactMatch.name: missing", id="null-name"),
    pytest.param(_exact(3), "exactMatch.name: must be a string", id="number-name"),
    pytest.param(_exact("a", "Rack"), "must be Node or HyperNode", id="type"),
    pytest.param(_exact("a", regexMatch={"pattern": "a"}), "exactly one of", id="two-selectors"),
    pytest.param({"type": "Node", "selector": []}, "selector: must be a mapping", id="selector-list"),
    pytest.param({"type": "Node", "selector": {"exactMatch": "a"}}, "exactMatch: must be a mapping", id="exact-text"),
]


@pytest.mark.parametrize(("raw", "message"), BAD_MEMBERS)
def test_a_bad_hypernode_member_after_good_ones_names_its_place(raw: Obj, message: str) -> None:
    objects = [*copy.deepcopy(NODES), _hypernode("r", 1, _exact("a"), _exact("b"), raw)]
    with pytest.raises(InputError, match=r"HyperNode r: spec\.members\[2\]") as caught:
        snapshot_from_objects(objects, source="t.yaml")
    assert message in str(caught.value)


def test_a_topology_of_exact_members_resolves_to_its_nodes() -> None:
    objects = [
        *copy.deepcopy(NODES),
        _hypernode("r1", 1, _exact("a"), _exact("b")),
        _hypernode("r2", 1, _exact("c"), _exact("gone")),
        _hypernode("s", 2, _exact("r1", "HyperNode"), _exact("r2", "HyperNode")),
    ]
    snapshot = snapshot_from_objects(objects, source="t.yaml")
    from vcsat.model.hypernodes import resolve_hypernodes

    tree = resolve_hypernodes(snapshot.hypernodes, snapshot.nodes)
    assert tree.nodes_of["r1"] == frozenset({"a", "b"})
    assert tree.nodes_of["r2"] == frozenset({"c"})
    assert tree.nodes_of["s"] == frozenset({"a", "b", "c"})


def test_a_node_in_two_racks_is_refused_with_exact_members() -> None:
    objects = [*copy.deepcopy(NODES), _hypernode("r1", 1, _exact("a")), _hypernode("r2", 1, _exact("a"))]
    with pytest.raises(InputError, match="node a: in two HyperNodes of tier 1: r1 and r2"):
        snapshot_from_objects(objects, source="t.yaml")


def _group(name: str, min_member: int, min_resources: Any, queue: str = "q") -> Obj:
    return k8s_podgroup(name, queue=queue, minMember=min_member, minResources=min_resources)


def test_podgroups_spelling_min_resources_alike_share_them_and_read_as_alone() -> None:
    groups = [
        _group("a", 2, {"cpu": "4", "memory": "8Gi"}),
        _group("b", 3, {"cpu": "4", "memory": "8Gi"}),
        _group("c", 3, {"cpu": "4", "memory": "8Gi"}, queue="r"),
        _group("d", 2, {"cpu": "4.0", "memory": "8Gi"}),
    ]
    context = [k8s_queue("q"), k8s_queue("r")]
    together = snapshot_from_objects([*context, *copy.deepcopy(groups)], source="t.yaml")
    by_name = {group.name: group for group in together.podgroups}
    for raw in groups:
        alone = snapshot_from_objects([*context, copy.deepcopy(raw)], source="t.yaml")
        assert by_name[raw["metadata"]["name"]] == alone.podgroups[0]
    assert by_name["a"].min_resources is by_name["b"].min_resources is by_name["c"].min_resources
    assert by_name["d"].min_resources == by_name["a"].min_resources


def test_a_podgroup_with_bad_min_resources_after_a_good_one_names_itself() -> None:
    groups = [_group("a", 2, {"cpu": "4"}), _group("b", 3, {"cpu": "four"})]
    with pytest.raises(InputError, match=r"PodGroup ns/b: spec\.minResources\.cpu"):
        snapshot_from_objects([k8s_queue("q"), *groups], source="t.yaml")


_KINDS = st.sampled_from(["Node", "Queue", "PodGroup", "ConfigMap"])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(_KINDS, st.sampled_from(["x", "y", "z"]), st.sampled_from([None, "ns", "other"]))))
def test_objects_identified_in_one_loop_come_out_as_read_one_by_one(choices: list[tuple[str, str, Any]]) -> None:
    """Objects of kinds read and not read, with keys that may repeat: every object of a kind read
    is in the snapshot under its key, and the first key listed twice is the error named."""
    objects: list[Obj] = []
    for kind, name, namespace in choices:
        if kind == "Node":
            obj = k8s_node(name)
        elif kind == "Queue":
            obj = k8s_queue(name)
        elif kind == "PodGroup":
            obj = k8s_podgroup(name, queue="x")
        else:
            obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
        if namespace is None:
            obj["metadata"].pop("namespace", None)
        else:
            obj["metadata"]["namespace"] = namespace
        objects.append(obj)
    objects.append(k8s_queue("x"))
    seen: set[tuple[str, str]] = set()
    twice = None
    for obj in objects:
        kind, metadata = obj["kind"], obj["metadata"]
        if kind == "ConfigMap":
            continue
        key = f"{metadata.get('namespace', 'default')}/{metadata['name']}" if kind == "PodGroup" else metadata["name"]
        if (kind, key) in seen and twice is None:
            twice = f"{kind} {key}"
        seen.add((kind, key))
    if twice is not None:
        with pytest.raises(InputError, match="duplicate object") as caught:
            snapshot_from_objects(copy.deepcopy(objects), source="t.yaml")
        assert twice in str(caught.value)
        return
    snapshot = snapshot_from_objects(copy.deepcopy(objects), source="t.yaml")
    assert sorted(node.name for node in snapshot.nodes) == sorted(k[1] for k in seen if k[0] == "Node")
    assert sorted(group.key for group in snapshot.podgroups) == sorted(k[1] for k in seen if k[0] == "PodGroup")
