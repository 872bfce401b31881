"""Random small clusters where pending pods fit only by evicting: the differential test's
preemption family (test_differential_preemption.py).

A case is one to three nodes nearly full of lower-priority pods (priority classes
:data:`PRIORITY_CLASSES`), some of them covered by PodDisruptionBudgets that allow no or one
disruption, some holding a host port or carrying required anti-affinity against the pending pods'
app; and one or two higher-priority pending pods that ask for a large share of a node, sometimes
the host port or the app that a running pod repels. Now and then a pending pod is of the running
pods' own priority (it may not preempt them) or too large for any node (nothing helps).

Everything is drawn from one ``random.Random(seed)``, so a seed names a case for good. Nodes and
pods are isolated from other tests as in differential_cases.py (the case's taint and label).
Plain module (no pytest, no API calls).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from differential_cases import CASE_KEY, HOSTNAME, IMAGE, REGION, ZONE, ZONES

Object = dict[str, Any]

PRIORITY_CLASSES = {"vcsat-diff-low": 100, "vcsat-diff-mid": 500, "vcsat-diff-high": 1000}
"""Cluster-wide PriorityClasses the cases name (created by the test, shared by every case)."""
NEVER = "-never"
"""Suffix of each class's twin with ``preemptionPolicy: Never`` (the API server takes a pod's
preemption policy from its class only)."""
_APPS = ("web", "db", "cache")
_PORT = 8080


@dataclass
class PreemptionCase:
    seed: int
    name: str
    namespace: str
    nodes: list[Object] = field(default_factory=list)
    bound: list[Object] = field(default_factory=list)
    budgets: list[Object] = field(default_factory=list)
    """PodDisruptionBudgets, each with the status a disruption controller would write."""
    pending: list[Object] = field(default_factory=list)

    def node_names(self) -> list[str]:
        return [node["metadata"]["name"] for node in self.nodes]


def make_preemption_case(seed: int, prefix: str = "pre") -> PreemptionCase:
    rng = random.Random(f"preemption/{seed}")
    name = f"{prefix}{seed}"
    case = PreemptionCase(seed=seed, name=name, namespace=name)
    for index in range(rng.randint(1, 3)):
        node_name = f"{name}-n{index}"
        zone = rng.choice(sorted(ZONES))
        allocatable = {"cpu": rng.choice(("2", "3", "4")), "memory": "8Gi", "pods": str(rng.randint(3, 8))}
        case.nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": node_name,
                    "labels": {CASE_KEY: name, HOSTNAME: node_name, ZONE: zone, REGION: ZONES[zone]},
                },
                "spec": {"taints": [{"key": CASE_KEY, "value": name, "effect": "NoSchedule"}]},
                "status": {
                    "capacity": dict(allocatable),
                    "allocatable": allocatable,
                    "conditions": [{"type": "Ready", "status": "True", "reason": "Test", "message": "test"}],
                },
            }
        )
    _running(rng, case)
    _budgets(rng, case)
    _pending(rng, case)
    return case


def _millicores(quantity: str) -> int:
    return int(quantity.removesuffix("m")) if quantity.endswith("m") else int(quantity) * 1000


def _running(rng: random.Random, case: PreemptionCase) -> None:
    """Fill each node to within half a core with lower-priority pods (a few of middle priority)."""
    number = 0
    for node in case.nodes:
        node_name = node["metadata"]["name"]
        room = _millicores(node["status"]["allocatable"]["cpu"])
        slots = int(node["status"]["allocatable"]["pods"]) - 1
        while room > 500 and slots > 0:
            cpu = min(room, rng.choice((250, 500, 500, 1000, 1500)))
            pod = _pod(case, f"b{number}", f"{cpu}m", rng.choice(("vcsat-diff-low",) * 3 + ("vcsat-diff-mid",)))
            pod["spec"]["nodeName"] = node_name
            labels = pod["metadata"]["labels"]
            labels["app"] = rng.choice(_APPS)
            if rng.random() < 0.15:
                _host_port(pod)
            if rng.random() < 0.15:
                _anti_affinity(pod, rng.choice(_APPS), rng.choice((HOSTNAME, HOSTNAME, ZONE)))
            case.bound.append(pod)
            room -= cpu
            slots -= 1
            number += 1


def _budgets(rng: random.Random, case: PreemptionCase) -> None:
    for index, app in enumerate(rng.sample(_APPS, rng.randint(0, 2))):
        covered = [pod for pod in case.bound if pod["metadata"]["labels"]["app"] == app]
        allowed = rng.choice((0, 0, 1))
        case.budgets.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": f"pdb{index}", "namespace": case.namespace},
                "spec": {
                    "minAvailable": max(0, len(covered) - allowed),
                    "selector": {"matchLabels": {"app": app}},
                },
                "status": {
                    "disruptionsAllowed": allowed,
                    "currentHealthy": len(covered),
                    "desiredHealthy": max(0, len(covered) - allowed),
                    "expectedPods": len(covered),
                    "observedGeneration": 1,
                },
            }
        )


def _pending(rng: random.Random, case: PreemptionCase) -> None:
    largest = max(_millicores(node["status"]["allocatable"]["cpu"]) for node in case.nodes)
    for index in range(rng.choice((1, 1, 1, 2))):
        # Now and then a pod that fits on no node, whatever goes.
        cpu = largest + 500 if rng.random() < 0.08 else rng.choice((750, 1000, 1500, 2000, largest))
        priority_class = "vcsat-diff-mid" if rng.random() < 0.15 else "vcsat-diff-high"
        pod = _pod(case, f"p{index}", f"{cpu}m", priority_class)
        pod["spec"]["nodeSelector"] = {CASE_KEY: case.name}
        pod["spec"]["tolerations"] = [
            {"key": CASE_KEY, "operator": "Equal", "value": case.name, "effect": "NoSchedule"}
        ]
        pod["metadata"]["labels"]["app"] = rng.choice(_APPS)
        if rng.random() < 0.25:
            _host_port(pod)
        if rng.random() < 0.15:
            _anti_affinity(pod, rng.choice(_APPS), HOSTNAME)
        case.pending.append(pod)


def _pod(case: PreemptionCase, name: str, cpu: str, priority_class: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": case.namespace, "labels": {}},
        "spec": {
            "containers": [{"name": "main", "image": IMAGE, "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}],
            "terminationGracePeriodSeconds": 0,
            "priorityClassName": priority_class,
        },
    }


def _host_port(pod: Object) -> None:
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": _PORT}]


def _anti_affinity(pod: Object, app: str, key: str) -> None:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    pod["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
