"""Random small clusters for the differential test against kube-scheduler (test_differential.py).

A case is plain Kubernetes objects: nodes, pods already bound to them, and a few pending pods.
Everything is drawn from one ``random.Random(seed)``, so a seed names a case for good. Each
constraint family adds its fields through a generator of its own, and a case uses only the
families it is given, so a family that vcsat does not model yet can be generated (and its
disagreements seen) without touching the others:

- ``resources``: random allocatable (cpu, memory, pods, nvidia.com/gpu) and requests over one or
  two containers, sometimes an init container or a sidecar, as Kubernetes sums them;
- ``exactfill`` (with ``resources``): pending pods asking for exactly the memory a node has left,
  in bytes, next to decimal allocatable (``4G``), where any rounding to coarser units errs;
- ``node``: taints, cordoned nodes, nodeSelector, required node affinity (every operator, on
  labels that some nodes lack or hold as non-integers) and tolerations;
- ``interpod``: app/tier labels on every pod, required podAffinity/podAntiAffinity terms on the
  hostname or zone key, on pending pods and on bound ones (the symmetric rule);
- ``spread``: topologySpreadConstraints (maxSkew 1-2, DoNotSchedule, hostname or zone);
- ``hostports``: container hostPorts on pending and bound pods;
- ``volumes``: claims bound to volumes with node affinity or a zone label, ReadWriteOncePod claims
  that a bound pod holds already;
- ``schedulinggates``: spec.schedulingGates on pending pods (such a pod waits in both schedulers);
- ``csilimits``: CSI volumes (ReadWriteMany, bound claims) that pending and bound pods share, and
  CSINodes giving the driver an attach limit of 0-2 (NodeVolumeLimits counts unique volumes).

Isolation from other cases and other tests sharing the API server: every node carries the label
and the NoSchedule taint ``CASE_KEY=<case>`` and every pending pod selects and tolerates exactly
that, which changes nothing inside the case and keeps everything outside out of it.
Plain module (no pytest, no API calls).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from vcsat.model.quantity import parse_quantity

CASE_KEY = "vcsat-diff/case"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
ZONES = {"zone-a": "region-1", "zone-b": "region-1", "zone-c": "region-2"}
IMAGE = "registry.invalid/app:1"
_APPS = ("web", "db", "cache")

Object = dict[str, Any]


@dataclass
class Case:
    """The objects of one case; ``pending`` pods have no schedulerName yet (the driver sets it)."""

    seed: int
    name: str
    namespace: str
    families: tuple[str, ...]
    nodes: list[Object] = field(default_factory=list)
    storage: list[Object] = field(default_factory=list)
    """CSINodes, StorageClasses, PersistentVolumes and claims, created before the pods, in this order."""
    bound: list[Object] = field(default_factory=list)
    pending: list[Object] = field(default_factory=list)

    def node_names(self) -> list[str]:
        return [node["metadata"]["name"] for node in self.nodes]


Generator = Callable[[random.Random, Case], None]


def make_case(seed: int, families: tuple[str, ...], prefix: str = "diff") -> Case:
    """The case of this seed with these families (the order of FAMILY_GENERATORS, not the caller's)."""
    rng = random.Random(seed)
    name = f"{prefix}{seed}"
    case = Case(seed=seed, name=name, namespace=name, families=families)
    _skeleton(rng, case)
    for family, generate in FAMILY_GENERATORS.items():
        # Every family draws from its own stream, so switching one on or off leaves the others'
        # choices for the same seed as they were.
        if family in families:
            generate(random.Random(f"{seed}/{family}"), case)
    return case


# --- the skeleton every case has -------------------------------------------------------------


def _skeleton(rng: random.Random, case: Case) -> None:
    for index in range(rng.randint(1, 4)):
        node_name = f"{case.name}-n{index}"
        zone = rng.choice(sorted(ZONES))
        labels = {CASE_KEY: case.name, HOSTNAME: node_name, ZONE: zone, REGION: ZONES[zone]}
        allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
        case.nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": node_name, "labels": labels},
                "spec": {"taints": [{"key": CASE_KEY, "value": case.name, "effect": "NoSchedule"}]},
                "status": {
                    "capacity": dict(allocatable),
                    "allocatable": allocatable,
                    "conditions": [{"type": "Ready", "status": "True", "reason": "Test", "message": "test"}],
                },
            }
        )
    names = case.node_names()
    for index in range(rng.randint(0, 5)):
        case.bound.append(_pod(case, f"b{index}", node_name=rng.choice(names)))
    for index in range(rng.choice((1, 1, 1, 2, 2, 3))):
        case.pending.append(_pod(case, f"p{index}"))
    for pod in (*case.bound, *case.pending):
        pod["metadata"]["labels"]["app"] = rng.choice(_APPS)


def _pod(case: Case, name: str, node_name: str | None = None) -> Object:
    spec: Object = {
        "containers": [{"name": "main", "image": IMAGE, "resources": {"requests": {"cpu": "100m"}}}],
        "terminationGracePeriodSeconds": 0,
    }
    if node_name is None:
        spec["nodeSelector"] = {CASE_KEY: case.name}
        spec["tolerations"] = [{"key": CASE_KEY, "operator": "Equal", "value": case.name, "effect": "NoSchedule"}]
    else:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": case.namespace, "labels": {}},
        "spec": spec,
    }


# --- resources --------------------------------------------------------------------------------

_CPU = ("500m", "1500m", "2", "4", "4", "7500m", "8", "16")
_MEMORY = ("1Gi", "2Gi", "4Gi", "3900Mi", "4G", "8G", "6Gi", "16Gi")
_CPU_REQUEST = ("50m", "100m", "250m", "500m", "1", "1200m", "2", "3")
_MEMORY_REQUEST = ("64Mi", "128Mi", "500Mi", "1Gi", "1G", "1500M", "2Gi", "3Gi")


def _resources(rng: random.Random, case: Case) -> None:
    for node in case.nodes:
        allocatable = {
            "cpu": rng.choice(_CPU),
            "memory": rng.choice(_MEMORY),
            "pods": str(rng.randint(2, 10)),
        }
        if rng.random() < 0.4:
            allocatable["nvidia.com/gpu"] = str(rng.randint(0, 4))
        node["status"]["allocatable"] = allocatable
        node["status"]["capacity"] = dict(allocatable)
    for pod in (*case.bound, *case.pending):
        pod["spec"]["containers"] = [_container(rng, f"c{index}") for index in range(rng.choice((1, 1, 2)))]
        roll = rng.random()
        if roll < 0.15:
            pod["spec"]["initContainers"] = [_container(rng, "init")]
        elif roll < 0.25:
            sidecar = _container(rng, "sidecar")
            sidecar["restartPolicy"] = "Always"
            pod["spec"]["initContainers"] = [sidecar]
    # Bound pods sit where they fit, as a scheduler would have put them (a bound pod that does not
    # fit is refused as input by vcsat; Kubernetes' kubelet would reject it). One that fits
    # nowhere is left out.
    free = {node["metadata"]["name"]: _amounts(node["status"]["allocatable"]) for node in case.nodes}
    kept = []
    for pod in case.bound:
        need = pod_requests(pod)
        fits = [name for name, room in free.items() if all(room.get(k, Fraction(0)) >= v for k, v in need.items())]
        if not fits:
            continue
        node_name = rng.choice(fits)
        pod["spec"]["nodeName"] = node_name
        for key, amount in need.items():
            free[node_name][key] -= amount
        kept.append(pod)
    case.bound[:] = kept


def _amounts(quantities: dict[str, str]) -> dict[str, Fraction]:
    return {name: parse_quantity(value) for name, value in quantities.items()}


def pod_requests(pod: Object) -> dict[str, Fraction]:
    """What the pod needs, as Kubernetes counts it: containers and sidecars summed, the largest
    init-container moment if bigger, plus one pod."""
    spec = pod["spec"]

    def requests(container: Object) -> dict[str, Fraction]:
        resources = container.get("resources") or {}
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        return _amounts(merged)

    total: dict[str, Fraction] = {"pods": Fraction(1)}
    for container in spec["containers"]:
        for key, amount in requests(container).items():
            total[key] = total.get(key, Fraction(0)) + amount
    sidecars: dict[str, Fraction] = {}
    for container in spec.get("initContainers") or ():
        own = requests(container)
        if container.get("restartPolicy") == "Always":
            for key, amount in own.items():
                total[key] = total.get(key, Fraction(0)) + amount
                sidecars[key] = sidecars.get(key, Fraction(0)) + amount
            continue
        for key, amount in own.items():
            moment = amount + sidecars.get(key, Fraction(0))
            total[key] = max(total.get(key, Fraction(0)), moment)
    return total


def _container(rng: random.Random, name: str) -> Object:
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    if rng.random() < 0.85:
        requests["cpu"] = rng.choice(_CPU_REQUEST)
    if rng.random() < 0.7:
        requests["memory"] = rng.choice(_MEMORY_REQUEST)
    if "memory" not in requests and rng.random() < 0.3:
        # Only a limit: the API server makes it the request too.
        limits["memory"] = rng.choice(_MEMORY_REQUEST)
    if rng.random() < 0.1:
        requests["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = str(rng.randint(1, 2))
    resources: Object = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": IMAGE, "resources": resources}


# --- exact fills ---------------------------------------------------------------------------------


def _exact_fill(rng: random.Random, case: Case) -> None:
    """Some pending pods ask for exactly the memory left on one node, often a decimal amount (a
    node of ``4G`` holding ``1Gi``): it fits by Kubernetes' byte arithmetic and by nothing coarser."""
    for node in case.nodes:
        if rng.random() < 0.5:
            node["status"]["allocatable"]["memory"] = rng.choice(("4G", "6G", "5000M", "8G"))
            node["status"]["capacity"] = dict(node["status"]["allocatable"])
    left = {node["metadata"]["name"]: _amounts(node["status"]["allocatable"]) for node in case.nodes}
    for pod in case.bound:
        room = left[pod["spec"]["nodeName"]]
        for key, amount in pod_requests(pod).items():
            room[key] = room.get(key, Fraction(0)) - amount
    for pod in case.pending:
        if rng.random() < 0.5:
            continue
        room = left[rng.choice(case.node_names())]
        memory = room.get("memory", Fraction(0))
        if memory <= 0:
            continue
        container = pod["spec"]["containers"][0]
        requests = container.setdefault("resources", {}).setdefault("requests", {})
        # Exact bytes: the other containers' memory moves into this one's so the pod's total is
        # the node's remaining memory to the byte.
        others = sum(
            (
                pod_requests({"spec": {"containers": [c]}}).get("memory", Fraction(0))
                for c in pod["spec"]["containers"][1:]
            ),
            Fraction(0),
        )
        mine = memory - others
        if mine <= 0 or pod["spec"].get("initContainers"):
            continue
        requests["memory"] = str(int(mine))
        container["resources"].get("limits", {}).pop("memory", None)


# --- node predicates --------------------------------------------------------------------------

_DISKS = ("ssd", "hdd")
_GENERATIONS = ("1", "2", "3", "5", "8", "10", "v4")
_TAINTS = (
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "infra", "effect": "NoExecute"},
    {"key": "dedicated", "value": "infra", "effect": "PreferNoSchedule"},
    {"key": "spot", "effect": "NoSchedule"},
    {"key": "maintenance", "value": "soon", "effect": "NoExecute"},
)
_TOLERATIONS = (
    {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Equal", "value": "infra"},
    {"key": "dedicated", "operator": "Exists"},
    {"key": "spot", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "spot", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": "maintenance", "operator": "Exists", "effect": "NoExecute"},
    {"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "PreferNoSchedule"},
    {"key": "spot", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
    {"operator": "Exists"},
)
_LABEL_KEYS = (ZONE, REGION, HOSTNAME, "disk", "gen")


def _node_predicates(rng: random.Random, case: Case) -> None:
    for node in case.nodes:
        labels = node["metadata"]["labels"]
        if rng.random() < 0.7:
            labels["disk"] = rng.choice(_DISKS)
        if rng.random() < 0.7:
            labels["gen"] = rng.choice(_GENERATIONS)
        if rng.random() < 0.5:
            node["spec"]["taints"].extend(dict(t) for t in rng.sample(_TAINTS, rng.randint(1, 2)))
        if rng.random() < 0.1:
            node["spec"]["unschedulable"] = True
    for pod in case.pending:
        spec = pod["spec"]
        if rng.random() < 0.25:
            key = rng.choice(_LABEL_KEYS)
            spec["nodeSelector"][key] = _label_value(rng, case, key)
        if rng.random() < 0.4:
            terms = [_node_selector_term(rng, case) for _ in range(rng.choice((1, 1, 2)))]
            affinity = spec.setdefault("affinity", {})
            affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        taints = [taint for node in case.nodes for taint in node["spec"]["taints"] if taint["key"] != CASE_KEY]
        if taints and rng.random() < 0.7:
            # Near misses are where a wrong reading of the rules shows: the same key with another
            # value or effect, Exists with or without an effect.
            for taint in rng.sample(taints, min(len(taints), rng.randint(1, 2))):
                spec["tolerations"].append(_toleration_like(rng, taint))
        if rng.random() < 0.2:
            spec["tolerations"].append(dict(rng.choice(_TOLERATIONS)))


def _toleration_like(rng: random.Random, taint: Object) -> Object:
    toleration: Object = {"key": taint["key"]}
    if rng.random() < 0.4:
        toleration["operator"] = "Exists"
    else:
        toleration["operator"] = "Equal"
        toleration["value"] = taint.get("value", "") if rng.random() < 0.7 else rng.choice(("gpu", "infra", "soon", ""))
    roll = rng.random()
    if roll < 0.5:
        toleration["effect"] = taint["effect"]
    elif roll < 0.8:
        toleration["effect"] = rng.choice(("NoSchedule", "NoExecute", "PreferNoSchedule"))
    return toleration


def _label_value(rng: random.Random, case: Case, key: str) -> str:
    if key == ZONE:
        return rng.choice(sorted(ZONES))
    if key == REGION:
        return rng.choice(sorted(set(ZONES.values())))
    if key == HOSTNAME:
        return rng.choice(case.node_names())
    if key == "disk":
        return rng.choice(_DISKS)
    return rng.choice(_GENERATIONS)


def _node_selector_term(rng: random.Random, case: Case) -> Object:
    requirements = []
    for _ in range(rng.choice((1, 1, 2))):
        operator = rng.choice(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
        if operator in ("Gt", "Lt"):
            requirements.append({"key": "gen", "operator": operator, "values": [str(rng.randint(0, 6))]})
            continue
        key = rng.choice(_LABEL_KEYS)
        requirement: Object = {"key": key, "operator": operator}
        if operator in ("In", "NotIn"):
            requirement["values"] = sorted({_label_value(rng, case, key) for _ in range(rng.randint(1, 2))})
        requirements.append(requirement)
    return {"matchExpressions": requirements}


# --- inter-pod affinity and anti-affinity -------------------------------------------------------

_TIERS = ("front", "back")


def _interpod(rng: random.Random, case: Case) -> None:
    for pod in (*case.bound, *case.pending):
        labels = pod["metadata"]["labels"]
        labels["app"] = rng.choice(_APPS)
        if rng.random() < 0.5:
            labels["tier"] = rng.choice(_TIERS)
    for pod in case.bound:
        if rng.random() < 0.2:
            _add_pod_term(rng, pod, "podAntiAffinity")
    for pod in case.pending:
        if rng.random() < 0.35:
            _add_pod_term(rng, pod, "podAffinity")
        if rng.random() < 0.45:
            _add_pod_term(rng, pod, "podAntiAffinity")


def _add_pod_term(rng: random.Random, pod: Object, kind: str) -> None:
    selector: Object
    if rng.random() < 0.7:
        selector = {"matchLabels": {"app": rng.choice(_APPS)}}
    else:
        selector = {
            "matchExpressions": [
                {"key": "tier", "operator": rng.choice(("In", "NotIn")), "values": [rng.choice(_TIERS)]}
            ]
        }
    term = {"labelSelector": selector, "topologyKey": rng.choice((HOSTNAME, HOSTNAME, ZONE))}
    affinity = pod["spec"].setdefault("affinity", {})
    affinity.setdefault(kind, {}).setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)


# --- pod topology spread ------------------------------------------------------------------------


def _spread(rng: random.Random, case: Case) -> None:
    # Bound pods mostly share the pending pods' app, so that the counts per domain are uneven
    # and the constraints bite.
    apps = [pod["metadata"]["labels"]["app"] for pod in case.pending]
    for pod in case.bound:
        if rng.random() < 0.7:
            pod["metadata"]["labels"]["app"] = rng.choice(apps)
    for pod in case.pending:
        if rng.random() < 0.7:
            constraint: Object = {
                "maxSkew": rng.choice((1, 1, 1, 2)),
                "topologyKey": rng.choice((HOSTNAME, ZONE)),
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": pod["metadata"]["labels"]["app"]}},
            }
            if rng.random() < 0.2:
                constraint["minDomains"] = rng.randint(2, 4)
            pod["spec"]["topologySpreadConstraints"] = [constraint]


# --- host ports ---------------------------------------------------------------------------------

_PORTS = (8080, 8443)


def _hostports(rng: random.Random, case: Case) -> None:
    for pod in (*case.bound, *case.pending):
        if rng.random() < 0.6:
            port: Object = {"containerPort": 80, "hostPort": rng.choice(_PORTS)}
            if rng.random() < 0.2:
                port["protocol"] = "UDP"
            if rng.random() < 0.2:
                port["hostIP"] = rng.choice(("127.0.0.1", "0.0.0.0"))
            pod["spec"]["containers"][0]["ports"] = [port]


# --- volumes ------------------------------------------------------------------------------------

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"


def _volumes(rng: random.Random, case: Case) -> None:
    """Claims already bound to volumes that only some nodes reach: a local volume's node affinity
    (hostname or zone), a zone label on the volume (VolumeZone), and ReadWriteOncePod claims that a
    bound pod already uses (VolumeRestrictions). Only bound claims: binding a claim needs the volume
    controller, which this control plane does not run."""
    storage_class = f"{case.name}-local"
    case.storage.append(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": storage_class, "labels": {CASE_KEY: case.name}},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    users = [pod for pod in case.pending if rng.random() < 0.5]
    for index, pod in enumerate(users):
        claim = f"data-{index}"
        volume = f"{case.name}-pv{index}"
        mode = "ReadWriteOncePod" if rng.random() < 0.25 else "ReadWriteOnce"
        pv: Object = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": volume, "labels": {CASE_KEY: case.name}},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": [mode],
                "storageClassName": storage_class,
                "persistentVolumeReclaimPolicy": "Retain",
                "claimRef": {"kind": "PersistentVolumeClaim", "namespace": case.namespace, "name": claim},
                "local": {"path": f"/mnt/{volume}"},
            },
        }
        where = rng.random()
        if where < 0.5:
            key, value = HOSTNAME, rng.choice(case.node_names())
        elif where < 0.8:
            key, value = ZONE, rng.choice(sorted(ZONES))
        else:
            key, value = "", ""
        if key:
            pv["spec"]["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]
                }
            }
        else:
            # No node affinity: a volume any node reaches, limited by its zone label alone.
            del pv["spec"]["local"]
            pv["spec"]["hostPath"] = {"path": f"/mnt/{volume}"}
            pv["metadata"]["labels"][ZONE] = rng.choice(sorted(ZONES))
        case.storage.append(pv)
        case.storage.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": claim,
                    "namespace": case.namespace,
                    "labels": {CASE_KEY: case.name},
                    "annotations": {BIND_COMPLETED: "yes"},
                },
                "spec": {
                    "accessModes": [mode],
                    "resources": {"requests": {"storage": "1Gi"}},
                    "storageClassName": storage_class,
                    "volumeName": volume,
                },
                "status": {"phase": "Bound", "accessModes": [mode], "capacity": {"storage": "1Gi"}},
            }
        )
        mount = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
        pod["spec"]["volumes"] = mount
        if mode == "ReadWriteOncePod" and case.bound and rng.random() < 0.5:
            rng.choice(case.bound)["spec"]["volumes"] = [dict(m) for m in mount]


# --- scheduling gates ---------------------------------------------------------------------------


def _scheduling_gates(rng: random.Random, case: Case) -> None:
    for pod in case.pending:
        if rng.random() < 0.25:
            pod["spec"]["schedulingGates"] = [{"name": "example.com/hold"}]


# --- CSI attach limits -----------------------------------------------------------------------------

CSI_DRIVER = "diff.csi.vcsat.test"


def _csi_limits(rng: random.Random, case: Case) -> None:
    """One to three CSI volumes bound to ReadWriteMany claims; each pending pod mounts up to two of
    them and some bound pods one, so volumes are shared by pending pods and held on nodes already;
    most nodes get a CSINode with an attach limit of 0 to 2 for the driver (the others none)."""
    claims = []
    for index in range(rng.randint(1, 3)):
        claim = f"csi-{index}"
        volume = f"{case.name}-csi{index}"
        claims.append(claim)
        case.storage.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": volume, "labels": {CASE_KEY: case.name}},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteMany"],
                    "storageClassName": "",
                    "persistentVolumeReclaimPolicy": "Retain",
                    "claimRef": {"kind": "PersistentVolumeClaim", "namespace": case.namespace, "name": claim},
                    "csi": {"driver": CSI_DRIVER, "volumeHandle": f"{case.name}-handle{index}"},
                },
            }
        )
        case.storage.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": claim,
                    "namespace": case.namespace,
                    "labels": {CASE_KEY: case.name},
                    "annotations": {BIND_COMPLETED: "yes"},
                },
                "spec": {
                    "accessModes": ["ReadWriteMany"],
                    "resources": {"requests": {"storage": "1Gi"}},
                    "storageClassName": "",
                    "volumeName": volume,
                },
                "status": {"phase": "Bound", "accessModes": ["ReadWriteMany"], "capacity": {"storage": "1Gi"}},
            }
        )

    def mount(pod: Object, names: list[str]) -> None:
        volumes = pod["spec"].setdefault("volumes", [])
        volumes.extend({"name": name, "persistentVolumeClaim": {"claimName": name}} for name in names)

    for pod in case.pending:
        if rng.random() < 0.8:
            mount(pod, rng.sample(claims, rng.randint(1, min(2, len(claims)))))
    for pod in case.bound:
        if rng.random() < 0.4:
            mount(pod, [rng.choice(claims)])
    for name in case.node_names():
        if rng.random() < 0.8:
            limit = {"count": rng.randint(0, 2)}
            driver = {"name": CSI_DRIVER, "nodeID": name, "topologyKeys": [], "allocatable": limit}
            case.storage.append(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSINode",
                    "metadata": {"name": name, "labels": {CASE_KEY: case.name}},
                    "spec": {"drivers": [driver]},
                }
            )


FAMILY_GENERATORS: dict[str, Generator] = {
    "resources": _resources,
    "exactfill": _exact_fill,
    "node": _node_predicates,
    "interpod": _interpod,
    "spread": _spread,
    "hostports": _hostports,
    "volumes": _volumes,
    "schedulinggates": _scheduling_gates,
    "csilimits": _csi_limits,
}
"""Every family a case can draw, in the order they are applied."""
