"""Pods whose specs differ only in their containers: the rest of the spec is read once.

A job's pods repeat one spec but for the containers' sizes, so the converter reads the rest of a
spec (priority, scheduler, affinity, tolerations, gates, spread) once and, for every new spelling of
the containers, only the requests and host ports (:func:`vcsat.adapters.convert.pods._other_containers`).
Each pod must still come out as if read alone (fields and the values the model derives from them),
and a pod whose containers are bad must fail with the error a reading of it alone gives.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_objects import k8s_node, k8s_pod, k8s_podgroup, k8s_queue
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.errors import InputError
from vcsat.model.cluster import Pod, Snapshot
from vcsat.model.derived import derived

Obj = dict[str, Any]

CONTEXT = [k8s_node("n1", gpus=64), k8s_node("n2", gpus=64), k8s_podgroup("pg", queue="q"), k8s_queue("q")]
REST: Obj = {
    "schedulerName": "vcsat",
    "priority": 7,
    "tolerations": [{"operator": "Exists"}],
    "nodeSelector": {"zone": "a"},
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
            }
        }
    },
    "schedulingGates": [],
}


def _container(cpu: str, gpus: int = 0, **extra: Any) -> Obj:
    requests: Obj = {"cpu": cpu, **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    return {"name": "main", "resources": {"requests": requests}, **extra}


def _pod(name: str, containers: list[Obj], *, rest: Obj | None = None, **extra: Any) -> Obj:
    pod = k8s_pod(name, **extra)
    spec = pod["spec"]
    spec.pop("containers")
    pod["spec"] = {**copy.deepcopy(rest if rest is not None else REST), **spec, "containers": copy.deepcopy(containers)}
    return pod


CONTAINERS = [
    pytest.param([_container("1")], id="cpu"),
    pytest.param([_container("2", gpus=2)], id="gpus"),
    pytest.param([_container("500m", **{"ports": [{"containerPort": 80, "hostPort": 8080}]})], id="host-port"),
    pytest.param(
        [
            {
                "name": "main",
                "resources": {"requests": {"cpu": "1", "vcsat.io/gpu-milli": "250"}},
            }
        ],
        id="gpu-share",
    ),
    pytest.param([_container("1"), _container("3")], id="two-containers"),
]


def _derived_values(pod: Pod) -> dict[str, Any]:
    """Every value the model derives from a pod's fields, computed afresh (not read off the pod)."""
    names = [name for name, value in vars(Pod).items() if isinstance(value, derived)]
    fresh = Pod.model_construct(**{name: getattr(pod, name) for name in Pod.model_fields})
    return {name: getattr(fresh, name) for name in names}


def _carried(pod: Pod) -> dict[str, Any]:
    """The derived values a pod already holds (what the converter put in with its fields)."""
    names = [name for name, value in vars(Pod).items() if isinstance(value, derived)]
    return {name: pod.__dict__[name] for name in names if name in pod.__dict__}


def _alone(raw: Obj) -> Snapshot:
    return snapshot_from_objects([*copy.deepcopy(CONTEXT), copy.deepcopy(raw)], source="t.yaml")


@pytest.mark.parametrize("containers", CONTAINERS)
def test_a_pod_differing_only_in_its_containers_comes_out_as_read_alone(containers: list[Obj]) -> None:
    first = _pod("a", [_container("4")], node="n1", status={"phase": "Running"})
    second = _pod("b", containers, group="pg")
    together = snapshot_from_objects([*copy.deepcopy(CONTEXT), first, copy.deepcopy(second)], source="t.yaml")
    pod = together.pod_by_key["ns/b"]
    assert pod == _alone(second).pod_by_key["ns/b"]
    carried = _carried(pod)
    assert {"gpus", "gpu_milli", "held"} <= carried.keys()
    fresh = _derived_values(pod)
    assert all(fresh[name] == value and type(fresh[name]) is type(value) for name, value in carried.items())
    # The rest of the spec is shared with the first pod; the requests are its own reading.
    assert pod.tolerations is together.pod_by_key["ns/a"].tolerations


def test_the_third_pod_of_a_containers_spelling_shares_its_requests() -> None:
    pods = [_pod("a", [_container("4")]), _pod("b", [_container("2")]), _pod("c", [_container("2")])]
    together = snapshot_from_objects([*copy.deepcopy(CONTEXT), *pods], source="t.yaml")
    b, c = together.pod_by_key["ns/b"], together.pod_by_key["ns/c"]
    assert b.requests == c.requests == {"cpu": 2000, "pods": 1}
    assert b.requests is c.requests
    assert together.pod_by_key["ns/a"].requests["cpu"] == 4000


def test_a_pod_with_another_rest_is_read_in_full() -> None:
    other = {**REST, "priority": 9}
    pods = [_pod("a", [_container("4")]), _pod("b", [_container("2")], rest=other)]
    together = snapshot_from_objects([*copy.deepcopy(CONTEXT), *pods], source="t.yaml")
    assert together.pod_by_key["ns/b"].priority == 9
    assert together.pod_by_key["ns/a"].priority == 7


# The message named alone and with a bad phase too: the requests are read before the pod's own
# fields, the host ports after them.
BAD_CONTAINERS = [
    pytest.param([_container("eight")], ("not a quantity",) * 2, id="quantity"),
    pytest.param(
        [{"name": "main", "resources": {"requests": {"vcsat.io/gpu-milli": "1200"}}}],
        ("1 to 1000",) * 2,
        id="share-range",
    ),
    pytest.param(
        [{"name": "main", "resources": {"requests": {"vcsat.io/gpu-milli": "500", "nvidia.com/gpu": "1"}}}],
        ("cannot be asked together",) * 2,
        id="share-and-gpu",
    ),
    pytest.param(
        [_container("1", **{"ports": [{"containerPort": 80, "hostPort": 70000}]})],
        ("hostPort", "status.phase"),
        id="port",
    ),
]


@pytest.mark.parametrize(("containers", "message"), BAD_CONTAINERS)
@pytest.mark.parametrize("own_error", [False, True], ids=["containers-only", "and-phase"])
def test_bad_containers_after_a_good_pod_fail_as_alone(
    containers: list[Obj], message: tuple[str, str], own_error: bool
) -> None:
    extra: Obj = {"status": {"phase": "Bogus"}} if own_error else {}
    bad = _pod("b", containers, **extra)
    with pytest.raises(InputError) as alone:
        _alone(bad)
    with pytest.raises(InputError) as after_a_good_one:
        snapshot_from_objects(
            [*copy.deepcopy(CONTEXT), _pod("a", [_container("4")]), copy.deepcopy(bad)], source="t.yaml"
        )
    assert str(after_a_good_one.value) == str(alone.value)
    assert "Pod ns/b" in str(alone.value) and message[own_error] in str(alone.value)


_RESTS = [REST, {**REST, "priority": 1}, {**REST, "tolerations": []}, {"schedulerName": "other"}]
_SIZES = [[_container("1")], [_container("2", gpus=1)], [_container("1"), _container("1", gpus=2)]]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(_RESTS) - 1),
            st.integers(0, len(_SIZES) - 1),
            st.sampled_from([None, "n1", "n2"]),
            st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_pods_of_mixed_rests_and_containers_come_out_as_read_alone(
    choices: list[tuple[int, int, Any, str, bool]],
) -> None:
    raws = [
        _pod(f"p{index}", _SIZES[size], rest=_RESTS[rest], node=node, status={"phase": phase})
        for index, (rest, size, node, phase, _) in enumerate(choices)
    ]
    # Terminating pods too: the states a pod read like an earlier one is given depend on it.
    for raw, (*_, terminating) in zip(raws, choices, strict=True):
        if terminating:
            raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    together = snapshot_from_objects([*copy.deepcopy(CONTEXT), *copy.deepcopy(raws)], source="t.yaml")
    for raw in raws:
        key = f"ns/{raw['metadata']['name']}"
        pod = together.pod_by_key[key]
        alone = _alone(raw).pod_by_key[key]
        # The GPU indices of a pod bound without them depend on the other pods of its node.
        assert pod.model_copy(update={"gpu_ids": None}) == alone.model_copy(update={"gpu_ids": None})
        fresh = _derived_values(pod)
        assert all(fresh[name] == value for name, value in _carried(pod).items())
