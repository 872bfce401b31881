"""Why no node takes a pod (solver/no_node.py): kube-scheduler's node-by-node count, and the same
count whichever gangs asked before.

The table names each kind of refusal; the property holds the remembered, array-based count to a
plain walk over the nodes written here (the predicate, then the rules between pods, then the
allocatable room), on random nodes, requests and refusals.
"""

from __future__ import annotations

import pytest
from builders import node, pod
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Node, Pod
from vcsat.model import resources as res
from vcsat.solver.no_node import NoNodeCounts
from vcsat.solver.rules import predicates

NODES = (
    node("a", cpu="4", labels={"zone": "x"}),
    node("b", cpu="8", labels={"zone": "x"}),
    node("c", cpu="8", labels={"zone": "y"}),
    node("d", cpu="16", labels={"zone": "x"}, taints=["gpu=only:NoSchedule"]),
    node("e", cpu="16", labels={"zone": "x"}, ready=False),
)


def _request(p: Pod) -> dict[str, int]:
    return {name: amount for name, amount in p.requests.items() if name != res.GPU_MILLI}


@pytest.mark.parametrize(
    ("asking", "refused", "could_ever", "counts"),
    [
        (
            pod("ns/big", cpu="6", selector={"zone": "x"}),
            None,
            True,
            "1 NodeNotReady (node e is not Ready); "
            "1 NodeSelectorMismatch (node c has zone=y; nodeSelector wants zone=x); "
            "1 TaintNotTolerated (node d has taint gpu=only:NoSchedule that the pod does not tolerate); "
            "1 too small for 6000m cpu, 1024Mi memory, 1 pods; 1 without 6000m cpu, 1024Mi memory, 1 pods free now",
        ),
        (
            pod("ns/huge", cpu="12"),
            None,
            False,
            "1 NodeNotReady (node e is not Ready); "
            "1 TaintNotTolerated (node d has taint gpu=only:NoSchedule that the pod does not tolerate); "
            "3 too small for 12000m cpu, 1024Mi memory, 1 pods",
        ),
        (
            pod("ns/apart", cpu="2"),
            {1: "node(s) didn't match pod anti-affinity rules", 4: "never counted: e fails a predicate first"},
            True,
            "1 NodeNotReady (node e is not Ready); "
            "1 TaintNotTolerated (node d has taint gpu=only:NoSchedule that the pod does not tolerate); "
            "1 node(s) didn't match pod anti-affinity rules; 2 without 2000m cpu, 1024Mi memory, 1 pods free now",
        ),
        (
            pod("ns/alone", cpu="6"),
            {1: "node(s) didn't match pod anti-affinity rules", 2: "node(s) didn't match pod anti-affinity rules"},
            False,
            "1 NodeNotReady (node e is not Ready); "
            "1 TaintNotTolerated (node d has taint gpu=only:NoSchedule that the pod does not tolerate); "
            "2 node(s) didn't match pod anti-affinity rules; 1 too small for 6000m cpu, 1024Mi memory, 1 pods",
        ),
    ],
    ids=["predicates-small-and-busy", "too-small-everywhere", "rules-between-pods", "refused-where-it-would-fit"],
)
def test_the_count(asking: Pod, refused: dict[int, str] | None, could_ever: bool, counts: str) -> None:
    answer = NoNodeCounts(NODES).why(predicates.eligibility_key(asking), _request(asking), refused)
    assert answer == (could_ever, counts)


def test_an_answer_does_not_depend_on_what_was_asked_before() -> None:
    first, second = pod("ns/first", cpu="6", selector={"zone": "x"}), pod("ns/second", cpu="12")
    refused = {1: "node(s) didn't match pod anti-affinity rules"}
    queries = [(first, None), (first, refused), (second, None), (first, None)]
    shared = NoNodeCounts(NODES)
    asked = [shared.why(predicates.eligibility_key(p), _request(p), r) for p, r in queries]
    assert asked == [NoNodeCounts(NODES).why(predicates.eligibility_key(p), _request(p), r) for p, r in queries]
    assert asked[1] != asked[0]  # the rules between pods are this pod's: never taken from another's answer


def _walked(nodes: tuple[Node, ...], asking: Pod, refused: dict[int, str]) -> tuple[bool, str]:
    """The count as one walk over the nodes, in the order kube-scheduler's filters run."""
    failures: dict[str, int] = {}
    first_message: dict[str, str] = {}
    between: dict[str, int] = {}
    too_small = free_later = 0
    request = _request(asking)
    for i, candidate in enumerate(nodes):
        failure = predicates.predicate_failure(asking, candidate)
        if failure is not None:
            failures[failure.code] = failures.get(failure.code, 0) + 1
            first_message.setdefault(failure.code, failure.message)
        elif i in refused:
            between[refused[i]] = between.get(refused[i], 0) + 1
        elif all(amount <= candidate.allocatable.get(name, 0) for name, amount in request.items()):
            free_later += 1
        else:
            too_small += 1
    parts = [f"{n} {code} ({first_message[code]})" for code, n in sorted(failures.items())]
    parts += [f"{n} {why}" for why, n in sorted(between.items())]
    if too_small:
        parts.append(f"{too_small} too small for {res.format_vector(request)}")
    if free_later:
        parts.append(f"{free_later} without {res.format_vector(request)} free now")
    return free_later > 0, "; ".join(parts)


_NODE = st.builds(
    lambda i, cpu, zone, tainted, ready, gpus: node(
        f"n{i}",
        cpu=str(cpu),
        gpus=gpus,
        labels={"zone": zone},
        taints=["gpu=only:NoSchedule"] if tainted else [],
        ready=ready,
    ),
    st.just(0),
    st.integers(1, 16),
    st.sampled_from(["x", "y"]),
    st.booleans(),
    st.booleans(),
    st.sampled_from([0, 0, 4]),
)
_POD = st.builds(
    lambda cpu, gpus, zone, tolerates: pod(
        "ns/p",
        cpu=str(cpu),
        gpus=gpus,
        selector={"zone": zone} if zone else None,
        tolerations=["gpu=only:NoSchedule"] if tolerates else [],
    ),
    st.integers(0, 16),
    st.sampled_from([0, 0, 1, 8]),
    st.sampled_from([None, "x", "y"]),
    st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_NODE, min_size=1, max_size=12),
    st.lists(_POD, min_size=1, max_size=4),
    st.sets(st.integers(0, 11), max_size=4),
)
def test_the_remembered_count_is_the_walk_over_the_nodes(
    nodes: list[Node], pods: list[Pod], refusing: set[int]
) -> None:
    named = tuple(n.model_copy(update={"name": f"n{i}"}) for i, n in enumerate(nodes))
    counts = NoNodeCounts(named)
    refused = {i: "node(s) didn't match pod anti-affinity rules" for i in refusing if i < len(named)}
    for asking in pods:
        key = predicates.eligibility_key(asking)
        assert counts.why(key, _request(asking)) == _walked(named, asking, {})
        assert counts.why(key, _request(asking), refused) == _walked(named, asking, refused)
