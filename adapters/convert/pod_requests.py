"""A pod's resource requests as kube-scheduler counts them: containers, sidecars, init containers, overhead.

The total is summed in exact nanos and rounded once, so it is the very integer kube-scheduler
compares. Pods of one job ask alike, so :func:`pod_requests_key` gives the text their requests depend
on and the converter reads each distinct spelling once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vcsat.adapters.convert.fields import MAPPING_TYPES, type_name
from vcsat.adapters.convert.reader import KubeObject, child
from vcsat.adapters.convert.spelling import spelling
from vcsat.model import resources as res

_POD_LEVEL_RESOURCES = (res.CPU, res.MEMORY)


def read_pod_requests(obj: KubeObject, spec: Mapping[str, Any]) -> dict[str, int]:
    """The pod's requests as kube-scheduler counts them (rounded up once, on the exact total), with
    ``pods: 1``."""
    requests = obj.amounts(_pod_request_nanos(obj, spec), "spec.containers")
    requests[res.PODS] = 1
    return requests


def pod_requests_key(spec: Mapping[str, Any]) -> bytes | str | None:
    """Everything a pod's requests depend on, spelled (:mod:`.spelling`); None when the spec is too odd to key."""
    containers = spec.get("containers")
    init_containers = spec.get("initContainers") or []
    if type(containers) is not list or type(init_containers) is not list:
        return None
    try:
        return spelling(
            (
                [container.get("resources") for container in containers],
                [(container.get("resources"), container.get("restartPolicy")) for container in init_containers],
                spec.get("overhead"),
                spec.get("resources"),
            )
        )
    except AttributeError:  # a container that is no mapping: the slow path says where
        return None


def _pod_request_nanos(obj: KubeObject, spec: Mapping[str, Any]) -> dict[str, int]:
    """Requests as Kubernetes' PodRequests counts them, in exact nanos.

    Containers are summed; restartable init containers (sidecars) run alongside them and add to
    the sum; each ordinary init container runs alone with the sidecars started before it, and the
    pod needs the largest of those moments too. Pod-level ``spec.resources`` replaces the cpu and
    memory total, and ``spec.overhead`` comes on top.
    """
    containers = obj.sequence(spec, "containers", "spec.containers")
    if not containers:
        obj.fail("spec.containers", "missing (a pod has at least one container)")
    total: dict[str, int] = {}
    for index, container in enumerate(containers):
        _add(total, _container_requests(obj, container, f"spec.containers[{index}]"))

    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for index, container in enumerate(obj.sequence(spec, "initContainers", "spec.initContainers")):
        path = f"spec.initContainers[{index}]"
        requests = _container_requests(obj, container, path)
        restart_policy = obj.string(container, "restartPolicy", f"{path}.restartPolicy")
        if restart_policy == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            moment = sidecars
        else:
            moment = dict(requests)
            _add(moment, sidecars)
        for name, amount in moment.items():
            if amount > init_peak.get(name, 0):
                init_peak[name] = amount
    for name, amount in init_peak.items():
        if amount > total.get(name, 0):
            total[name] = amount

    pod_resources = obj.mapping(spec, "resources", "spec.resources")
    if pod_resources:
        pod_requests = _defaulted_requests(obj, pod_resources, "spec.resources")
        for name in _POD_LEVEL_RESOURCES:
            if name in pod_requests:
                total[name] = pod_requests[name]
    _add(total, obj.nanos_map(spec, "overhead", "spec.overhead"))
    return total


def _container_requests(obj: KubeObject, container: Any, path: str) -> dict[str, int]:
    if not isinstance(container, MAPPING_TYPES):
        obj.fail(path, f"must be a mapping, not {type_name(container)}")
    resources = obj.mapping(container, "resources", f"{path}.resources")
    if not resources:
        return {}
    requests = _defaulted_requests(obj, resources, f"{path}.resources")
    for name, amount in requests.items():
        # Kubernetes refuses fractions of countable resources (one GPU, not 0.5).
        if amount % 10**9 and not (name in res.MILLI_UNIT_RESOURCES or res.is_byte_resource(name)):
            obj.fail(_request_field(path, resources, name), "must be a whole number")
    return requests


def _defaulted_requests(obj: KubeObject, resources: Mapping[str, Any], path: str) -> dict[str, int]:
    """``requests``, with a limit standing in for a request that is not given (as the API server defaults)."""
    requests = obj.nanos_map(resources, "requests", f"{path}.requests")
    limits = obj.nanos_map(resources, "limits", f"{path}.limits")
    for name, amount in limits.items():
        requests.setdefault(name, amount)
    return requests


def _request_field(path: str, resources: Mapping[str, Any], name: str) -> str:
    requests = resources.get("requests")
    where = "requests" if isinstance(requests, MAPPING_TYPES) and name in requests else "limits"
    return child(f"{path}.resources.{where}", name)


def request_path(spec: Mapping[str, Any], name: str) -> str:
    """The first place a pod asks for ``name``, for an error about its total."""
    for list_name in ("containers", "initContainers"):
        containers = spec.get(list_name) or []
        for index, container in enumerate(containers):
            resources = container.get("resources") or {}
            for where in ("requests", "limits"):
                if name in (resources.get(where) or {}):
                    return child(f"spec.{list_name}[{index}].resources.{where}", name)
    return child("spec.overhead", name)


def _add(total: dict[str, int], more: Mapping[str, int]) -> None:
    for name, amount in more.items():
        total[name] = total.get(name, 0) + amount
