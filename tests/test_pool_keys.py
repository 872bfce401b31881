"""Scarce GPU pools come from what a node is (its GPU model), never from where it is (its host,
rack or zone): vcsat.solver.pricing.pool_keys."""

from __future__ import annotations

import pytest
from builders import node, pod, snapshot, term

from vcsat.model import Policy, Snapshot
from vcsat.model.cluster import NodeSelectorTerm
from vcsat.solver import check, solve
from vcsat.solver.pricing import scarcity
from vcsat.solver.pricing.pool_keys import is_location, pool_key
from vcsat.solver.problem import build_problem
from vcsat.solver.rules.predicates import EligibilityKey

MODEL = "nvidia.com/gpu.product"
RACK = "topology.vcsat.io/rack"
HOST = "kubernetes.io/hostname"
GREEDY = Policy(search=False)
SEARCH = Policy(time_limit_s=5.0, num_workers=1)


def key(selector: dict[str, str] | None = None, *terms: NodeSelectorTerm) -> EligibilityKey:
    return EligibilityKey(frozenset((selector or {}).items()), tuple(terms), frozenset())


@pytest.mark.parametrize(
    ("label", "where"),
    [
        (HOST, True),
        ("topology.kubernetes.io/zone", True),
        ("failure-domain.beta.kubernetes.io/region", True),
        (RACK, True),
        (MODEL, False),
        ("node.kubernetes.io/instance-type", False),
        ("pool", False),
    ],
)
def test_which_labels_say_where(label: str, where: bool) -> None:
    assert is_location(label) is where


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param(key({MODEL: "H100"}), key({MODEL: "H100"}), id="a model stays"),
        pytest.param(key({HOST: "n1"}), key(), id="a host selector goes"),
        pytest.param(key({MODEL: "H100", RACK: "r3"}), key({MODEL: "H100"}), id="model in a rack: the model"),
        pytest.param(
            key(None, term(f"{MODEL} in (H100)", f"{RACK} in (r3)")),
            key(None, term(f"{MODEL} in (H100)")),
            id="affinity: the model's requirement stays",
        ),
        pytest.param(key(None, term(fields=["metadata.name in (n1)"])), key(), id="a node name: anywhere"),
        pytest.param(
            key(None, term(f"{MODEL} in (H100)"), term(f"{HOST} in (n1)")),
            key(),
            id="a model or a host: anywhere (the host term accepts every kind)",
        ),
        pytest.param(
            key(None, term(f"{MODEL} in (H100)", fields=["metadata.name in (n1)"])),
            key(None, term(f"{MODEL} in (H100)")),
            id="a model on a named node: the model",
        ),
    ],
)
def test_pool_key(given: EligibilityKey, expected: EligibilityKey) -> None:
    assert pool_key(given) == expected


def gpu_node(name: str, model: str, rack: str, gpus: int = 1) -> object:
    return node(name, cpu="16", memory="64Gi", gpus=gpus, labels={MODEL: model, RACK: rack, HOST: name})


NODES = [gpu_node("a1", "A", "r1"), gpu_node("a2", "A", "r2"), gpu_node("b1", "B", "r1"), gpu_node("b2", "B", "r2")]


def cluster(*pods: object) -> Snapshot:
    return snapshot(nodes=NODES, pods=list(pods))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "pinned",
    [
        pod("ns/seen", gpus=1, selector={HOST: "a1"}, node="a1"),
        pod("ns/seen", gpus=1, selector={RACK: "r1"}, node="a1"),
        pod("ns/seen", gpus=1, affinity=term(fields=["metadata.name in (a1)"]), node="a1"),
        pod("ns/seen", gpus=1, affinity=f"{RACK} in (r1)"),
    ],
    ids=["host selector", "rack selector", "node name", "pending, rack affinity"],
)
def test_pods_pinned_to_a_place_make_no_pool(pinned: object) -> None:
    snap = cluster(pinned, pod("ns/free", gpus=1))
    assert scarcity.measure(build_problem(snap, GREEDY)) is None


def test_a_model_in_a_rack_is_demand_for_the_model() -> None:
    snap = cluster(pod("ns/seen", gpus=1, selector={MODEL: "A", RACK: "r1"}, node="a1"), pod("ns/free", gpus=1))
    problem = build_problem(snap, GREEDY)
    measure = scarcity.measure(problem)
    assert measure is not None
    pools = {problem.nodes[i].name: measure.pool_of[i] for i in range(len(problem.nodes))}
    assert pools["a1"] == pools["a2"] != pools["b1"] == pools["b2"]
    # The model's pool is the one priced: unconfined work goes to B.
    decision = solve(snap, SEARCH)
    assert check(snap, decision, SEARCH) == []
    assert {b.pod: b.node for b in decision.bindings}["ns/free"] in {"b1", "b2"}


@pytest.mark.parametrize("policy", [GREEDY, SEARCH], ids=["greedy", "search"])
def test_a_host_someone_was_pinned_to_is_not_kept_free(policy: Policy) -> None:
    # Best fit's choice is a1 (one GPU left against a2's two). A pod pinned to host a1 holds the
    # other: as a pool, a1 would look wanted and the free pod would be sent to a2.
    nodes = [gpu_node("a1", "A", "r1", gpus=2), gpu_node("a2", "A", "r2", gpus=2)]
    pinned = pod("ns/seen", gpus=1, selector={HOST: "a1"}, node="a1", gpu_ids=[0])
    snap = snapshot(nodes=nodes, pods=[pinned, pod("ns/free", gpus=1)])  # type: ignore[list-item]
    decision = solve(snap, policy)
    assert check(snap, decision, policy) == []
    assert {b.pod: b.node for b in decision.bindings}["ns/free"] == "a1"
