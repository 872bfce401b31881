"""The notices of a live conversion (one :class:`ConversionMemo` kept across cycles) are a fresh
conversion's: what the notices read of a raw node or PodGroup is kept on its identified object, and
the walks are skipped when a check says no object can need a notice; neither may hide a change."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_objects import k8s_node, k8s_pod, k8s_podgroup, k8s_queue

from vcsat.adapters.convert import notices
from vcsat.adapters.convert.reuse import ConversionMemo
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.model.cluster import Notice

BAD_TOPOLOGY = json.dumps({"nodes": [{"id": "g0", "kind": "gpu"}], "edges": []})
TOPOLOGIES: dict[str, str | None] = {
    "none": None,
    "valid": "preset:hgx-h100-8",
    "bad": BAD_TOPOLOGY,
    "worse": "{not json",
    "empty": "",
}
POLICY = [{"name": "ring", "subGroupSize": 2, "minSubGroups": 1}]


def _node(name: str, topology: str = "none") -> dict[str, Any]:
    text = TOPOLOGIES[topology]
    annotations = {} if text is None else {"vcsat.io/gpu-topology": text}
    return k8s_node(name, gpus=8, metadata__annotations=annotations)


def _group(name: str, queue: str = "q", sub_groups: bool = False) -> dict[str, Any]:
    return k8s_podgroup(name, queue=queue, minMember=1, **({"subGroupPolicy": POLICY} if sub_groups else {}))


def _pod(name: str, group: str | None, scheduler: str = "vcsat", node: str | None = None) -> dict[str, Any]:
    return k8s_pod(name, group=group, scheduler=scheduler, node=node)


def _seen(found: tuple[Notice, ...]) -> list[tuple[str, str, str, str]]:
    return [(n.kind, n.key, n.reason, n.message) for n in found]


def _fresh(objects: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    return _seen(snapshot_from_objects(copy.deepcopy(objects), strict=False).notices)


def _live(objects: list[dict[str, Any]], memo: ConversionMemo) -> list[tuple[str, str, str, str]]:
    return _seen(snapshot_from_objects(objects, strict=False, memo=memo).notices)


def _base() -> dict[str, dict[str, Any]]:
    """One cluster's objects by a name of this test's; each state below replaces some by new dicts
    (as an informer replaces a changed object), the others are the very same dicts."""
    return {
        "n1": _node("n1"),
        "n2": _node("n2", "valid"),
        "q": k8s_queue("q"),
        "g1": _group("g1"),
        "g2": _group("g2"),
        "a": _pod("a", "g1"),
        "b": _pod("b", "g2"),
        "c": _pod("c", None),
    }


CASES: dict[str, list[dict[str, Any]]] = {
    "a node's annotation turns invalid": [{"n1": _node("n1", "bad")}],
    "an invalid annotation turns valid": [{"n1": _node("n1", "bad")}, {"n1": _node("n1", "valid")}],
    "an invalid annotation turns otherwise invalid": [{"n1": _node("n1", "bad")}, {"n1": _node("n1", "worse")}],
    "an empty annotation": [{"n1": _node("n1", "empty")}],
    "a valid annotation goes": [{"n2": _node("n2")}, {"n2": _node("n2", "bad")}],
    "a node goes": [{"n1": _node("n1", "bad")}, {"n1": None}],
    "a PodGroup asks for sub-groups, then stops": [{"g1": _group("g1", sub_groups=True)}, {"g1": _group("g1")}],
    "a PodGroup asking for sub-groups goes": [{"g2": _group("g2", sub_groups=True)}, {"g2": None}],
    "the queue goes and comes back": [{"q": None}, {"q": k8s_queue("q")}],
    "a PodGroup names another, missing queue": [{"g2": _group("g2", queue="elsewhere")}],
    "a PodGroup goes, its pod dangles": [{"g1": None}, {"g1": _group("g1")}],
    "a new pod names a missing PodGroup": [{"d": _pod("d", "g9")}, {"d": None}],
    "a pod moves to a missing PodGroup": [{"c": _pod("c", "g9")}, {"c": _pod("c", "g1")}],
    "another scheduler's pod names a missing PodGroup": [{"d": _pod("d", "g9", scheduler="other")}],
    "a bound pod names a missing PodGroup": [{"d": _pod("d", "g9", node="n1")}],
    "everything relisted": [{name: "relist" for name in ("n1", "n2", "q", "g1", "g2", "a", "b", "c")}],
    "nothing changes": [{}, {}],
}


def _apply(state: dict[str, dict[str, Any]], change: dict[str, Any]) -> None:
    for name, obj in change.items():
        if obj is None:
            state.pop(name, None)
        elif obj == "relist":
            state[name] = copy.deepcopy(state[name])
        else:
            state[name] = copy.deepcopy(obj)


def test_each_case_gives_a_fresh_conversions_notices() -> None:
    for name, changes in CASES.items():
        memo = ConversionMemo()
        state = _base()
        # The base state first, then each change: a notice appearing and going again.
        assert _live(list(state.values()), memo) == _fresh(list(state.values())) == [], name
        kinds: set[str] = set()
        for change in changes:
            _apply(state, change)
            objects = list(state.values())
            live = _live(objects, memo)
            assert live == _fresh(objects), name
            kinds |= {reason for _, _, reason, _ in live}
        assert (
            kinds
            or name in ("a valid annotation goes", "nothing changes", "everything relisted")
            or ("another scheduler" in name or "bound pod" in name)
        ), f"{name}: no notice ever seen, the case tests nothing"


def test_a_raw_object_is_read_once_while_it_is_the_same_dict(monkeypatch: Any) -> None:
    reads: list[str] = []
    read = notices._sub_group_policies

    def counted(raw: Any) -> Any:
        reads.append(raw["metadata"]["name"])
        return read(raw)

    monkeypatch.setattr(notices, "_sub_group_policies", counted)
    memo = ConversionMemo()
    state = _base()
    _live(list(state.values()), memo)
    assert sorted(reads) == ["g1", "g2"]
    reads.clear()
    _live(list(state.values()), memo)
    assert reads == []
    _apply(state, {"g2": _group("g2", sub_groups=True)})
    assert [n[2] for n in _live(list(state.values()), memo)] == ["SubGroupPolicyIgnored"]
    assert reads == ["g2"]


# --- any sequence of states ---------------------------------------------------------------------

_NODES = ("n1", "n2", "n3")
_GROUPS = ("g1", "g2", "g3")
_QUEUES = ("q1", "q2")
_PODS = ("p1", "p2", "p3", "p4")

_node_spec = st.one_of(st.none(), st.sampled_from(sorted(TOPOLOGIES)))
_group_spec = st.one_of(st.none(), st.tuples(st.sampled_from((*_QUEUES, "q3")), st.booleans()))
_pod_spec = st.one_of(
    st.none(),
    st.tuples(
        st.sampled_from((None, *_GROUPS, "g4")),
        st.sampled_from(("vcsat", "other")),
        st.sampled_from((None, *_NODES)),
    ),
)
_state = st.fixed_dictionaries(
    {
        **{name: _node_spec for name in _NODES},
        **{name: _group_spec for name in _GROUPS},
        **{name: st.booleans() for name in _QUEUES},
        **{name: _pod_spec for name in _PODS},
    }
)


def _make(name: str, spec: Any) -> dict[str, Any] | None:
    if spec is None or spec is False:
        return None
    if name in _NODES:
        return _node(name, spec)
    if name in _GROUPS:
        queue, sub_groups = spec
        return _group(name, queue=queue, sub_groups=sub_groups)
    if name in _QUEUES:
        return k8s_queue(name)
    group, scheduler, node = spec
    return _pod(name, group, scheduler=scheduler, node=node)


@settings(max_examples=150, deadline=None)
@given(st.lists(_state, min_size=1, max_size=6), st.data())
def test_any_sequence_of_states_gives_a_fresh_conversions_notices(states: list[dict[str, Any]], data: Any) -> None:
    memo = ConversionMemo()
    made: dict[str, tuple[Any, dict[str, Any] | None]] = {}
    for state in states:
        objects = []
        for name, spec in state.items():
            last = made.get(name)
            # An unchanged object is the very same dict, unless relisted (a new dict of it).
            if last is None or last[0] != spec or data.draw(st.booleans(), label=f"relist {name}"):
                last = made[name] = (spec, _make(name, spec))
            if last[1] is not None:
                objects.append(last[1])
        assert _live(objects, memo) == _fresh(objects)
