"""kube-scheduler as the oracle: vcsat and the genuine kube-scheduler judge the same random clusters.

Each case (tests/k8s/differential_cases.py: a few nodes with zone, region and hostname labels,
pods bound to them, one to three pending pods; seeded, so a seed names a case) is created on the
real API server, and then:

1. vcsat decides: the case's objects are read back from the API server (pending pods as a
   server-side dry run stores them) into a v1 List, as ``kubectl get -o yaml`` prints them, and
   solved pod by pod (gang, enqueue, preemption and fairness off: lone pods, as the default
   scheduler sees them).
2. kube-scheduler decides freely: the pending pods are created with schedulerName
   default-scheduler and each is waited for until bound or reported Unschedulable (or
   SchedulingGated) in its PodScheduled condition. Every pod it binds, vcsat must place too: when
   vcsat's batch left it out, vcsat is asked again with kube-scheduler's other bindings fixed, and
   must place it then (the two may pick different pods when they compete for room).
3. kube-scheduler checks vcsat: those pods are deleted and created again pinned to vcsat's nodes
   (each required node-affinity term gains ``matchFields metadata.name In [node]``); kube-scheduler
   must bind every one. It places them one at a time and retries a refused pod on cluster events,
   so a refusal is only final after ``PINNED_WAIT_S``.
4. Both judge every node: when all the case's families are node-local (``NODE_LOCAL_FAMILIES``:
   a copy of a pod on one node cannot change what another node allows), each pending pod is
   copied once per node, pinned there, and vcsat must place exactly the copies kube-scheduler
   binds. This is where a subtle misreading of one rule shows even when other nodes would have
   done as well.

Between cases the case's pods and nodes are deleted. The agreement figure (pending pods on which
the two agree over pending pods) is printed; the test demands 100% and prints every disagreement
with its seed. Reproduce one case with ``VCSAT_DIFF_SEED=<seed> VCSAT_DIFF_CASES=1
VCSAT_DIFF_FAMILIES=<the run's families>``.

Constraint families are switched on by name in ``FAMILIES`` below: one line each. Each family runs
on its own on top of the resource and node predicates, and then all together (see :func:`runs`);
``VCSAT_DIFF_FAMILIES=resources,node,interpod`` runs one mix instead. The test itself holds the API server's other tests
off its cases: every case node is tainted and labelled for its case alone (see
differential_cases.py), and kube-scheduler runs only while this module does.

Run it alone (kube-scheduler is built by tools/controlplane/build.sh with the API server):

    python3 -m pytest tests/k8s/test_differential.py -q -s
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest
from controlplane import KubeScheduler
from differential_cases import CASE_KEY, FAMILY_GENERATORS, Case, make_case

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.kube.client import NODES, PODS, ApiError, Kube
from vcsat.model import Policy
from vcsat.solver.solve import solve

FAMILIES: dict[str, bool] = {
    "resources": True,  # NodeResourcesFit: cpu, memory, pods, nvidia.com/gpu; init containers, sidecars
    "exactfill": True,  # NodeResourcesFit to the byte (exact quantities)
    "node": True,  # NodeAffinity, nodeSelector, TaintToleration, NodeUnschedulable
    "interpod": True,  # InterPodAffinity: required podAffinity / podAntiAffinity, symmetry
    "spread": True,  # PodTopologySpread: DoNotSchedule, maxSkew, minDomains
    "hostports": True,  # NodePorts
    "volumes": True,  # VolumeBinding (bound claims' node affinity), VolumeZone, VolumeRestrictions (RWOP)
    "schedulinggates": True,  # SchedulingGates
    "csilimits": True,  # NodeVolumeLimits: CSINode attach limits, unique (shared) CSI volumes
}
"""The families a case draws from; switch one on once vcsat models it."""

BASE_FAMILIES = ("resources", "node")
"""Every run draws these; each other family also gets a run of its own on top of them, so that it
is not drowned by the others (with every family at once most pods fit nowhere), and one run mixes
them all."""

CASES = int(os.environ.get("VCSAT_DIFF_CASES", "200"))
BASE_SEED = int(os.environ.get("VCSAT_DIFF_SEED", "1"))
SCHEDULER = "default-scheduler"
PINNED_WAIT_S = 6.0
"""How long a pinned pod may stay unbound: covers kube-scheduler's retry after a cluster event
(a 1 s backoff, see controlplane.write_scheduler_config) several times over."""
FREE_WAIT_S = 30.0
"""A bound on waiting for kube-scheduler's first verdict on a pod (it takes milliseconds)."""
POLICY = Policy(
    scheduler_name=SCHEDULER,
    gang=False,
    enqueue=False,
    preempt=False,
    reclaim=False,
    proportion=False,
    drf=False,
    time_limit_s=5.0,
)
"""vcsat as the default scheduler works: each pod on its own, nothing admitted or evicted."""


def runs() -> list[tuple[str, ...]]:
    """The family mixes the test runs, each over :data:`CASES` cases: one per family on top of
    :data:`BASE_FAMILIES`, then all of them together; ``VCSAT_DIFF_FAMILIES`` names one mix instead."""
    override = os.environ.get("VCSAT_DIFF_FAMILIES")
    if override:
        names = tuple(name.strip() for name in override.split(",") if name.strip())
        unknown = sorted(set(names) - set(FAMILY_GENERATORS))
        assert not unknown, f"VCSAT_DIFF_FAMILIES: unknown families {unknown}; known: {sorted(FAMILY_GENERATORS)}"
        return [names]
    on = tuple(name for name, enabled in FAMILIES.items() if enabled)
    extra = [name for name in on if name not in BASE_FAMILIES]
    return [(*BASE_FAMILIES, name) for name in extra] + [on]


@dataclass
class Verdict:
    """kube-scheduler's word on one pod: the node it bound, or why it refused."""

    node: str | None
    reason: str = ""
    message: str = ""


@dataclass
class Outcome:
    case: Case
    pods: int
    kube_bound: int = 0
    """Pending pods kube-scheduler bound when free to choose."""
    vcsat_placed: int = 0
    """Pending pods vcsat placed (each then checked pinned to its node)."""
    disagreements: dict[str, list[str]] = field(default_factory=dict)
    """Pending pod name -> what the two schedulers disagree about."""

    def disagree(self, pod: str, what: str) -> None:
        self.disagreements.setdefault(pod, []).append(what)

    def lines(self) -> list[str]:
        return [f"seed {self.case.seed}: {pod}: {what}" for pod, whats in self.disagreements.items() for what in whats]


@pytest.mark.parametrize("run", list(enumerate(runs())), ids=lambda run: "+".join(run[1]))
def test_vcsat_agrees_with_kube_scheduler(
    run: tuple[int, tuple[str, ...]], kube_scheduler: KubeScheduler, kube: Kube, capsys: pytest.CaptureFixture[str]
) -> None:
    number, families = run
    # Each run its own seeds, so that the families shared by every run meet new clusters each time.
    first_seed = BASE_SEED + number * CASES
    oracle = Oracle(kube)
    started = time.monotonic()
    outcomes: list[Outcome] = []
    try:
        for index in range(CASES):
            outcomes.append(oracle.run(make_case(first_seed + index, families)))
    finally:
        oracle.close()
    elapsed = time.monotonic() - started

    pods = sum(outcome.pods for outcome in outcomes)
    disagreeing = [outcome for outcome in outcomes if outcome.disagreements]
    wrong = sum(len(outcome.disagreements) for outcome in outcomes)
    lines = [line for outcome in disagreeing for line in outcome.lines()]
    agreement = 100.0 * (pods - wrong) / pods if pods else 100.0
    summary = (
        f"differential: {len(outcomes)} cases, {pods} pods, agreement {agreement:.1f}% "
        f"({wrong} pods disagreed on, in {len(disagreeing)} cases; "
        f"kube-scheduler bound {sum(outcome.kube_bound for outcome in outcomes)}, "
        f"vcsat placed {sum(outcome.vcsat_placed for outcome in outcomes)}; "
        f"families {', '.join(families)}; {elapsed:.0f}s)"
    )
    with capsys.disabled():  # the figure shows in every run, captured output or not
        print(f"\n{summary}")
        for line in lines:
            print(f"  {line}")
    assert not disagreeing, summary + "\n" + "\n".join(lines)


def test_a_seed_names_one_case_and_families_do_not_disturb_each_other() -> None:
    every = tuple(FAMILY_GENERATORS)
    assert make_case(7, every) == make_case(7, every)
    assert make_case(7, every) != make_case(8, every)
    # Switching a family on leaves the nodes' predicates drawn as before.
    base = make_case(7, ("node",))
    more = make_case(7, ("node", "interpod"))
    assert [node["spec"] for node in base.nodes] == [node["spec"] for node in more.nodes]


class Oracle:
    """Runs cases against the API server and the kube-scheduler watching it."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.pool = ThreadPoolExecutor(max_workers=8)

    def close(self) -> None:
        self.pool.shutdown(wait=True)

    def _all(self, calls: Iterable[Callable[[], Any]]) -> list[Any]:
        """Run the calls side by side (the API server takes them in parallel); their results in order."""
        futures = [self.pool.submit(call) for call in calls]
        return [future.result() for future in futures]

    def run(self, case: Case) -> Outcome:
        outcome = Outcome(case=case, pods=len(case.pending))
        self.kube.post(
            "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": case.namespace}}
        )
        try:
            self._all(partial(self.kube.post, NODES.path(), node) for node in case.nodes)
            self._create_storage(case)
            self._all(partial(self.kube.post, self._pods(case), pod) for pod in case.bound)
            pending = [_with_scheduler(pod) for pod in case.pending]
            stored = self._all(partial(self.kube.post, self._pods(case), pod, dryRun="All") for pod in pending)
            for pod in stored:
                pod.update(kind="Pod", apiVersion="v1")
            cluster = self._read_back(case)
            chosen = self._vcsat(case, [*cluster, *stored])
            free = self._kube_scheduler(case, pending, FREE_WAIT_S, until_bound=False)
            outcome.kube_bound = sum(verdict.node is not None for verdict in free.values())
            outcome.vcsat_placed = len(chosen)
            self._must_place(case, outcome, cluster, stored, chosen, free)
            self._delete_pods(case, [pod["metadata"]["name"] for pod in pending])
            pinned = [
                _pinned(pod, chosen[pod["metadata"]["name"]], PIN_SUFFIX)
                for pod in pending
                if pod["metadata"]["name"] in chosen
            ]
            verdicts = self._kube_scheduler(case, pinned, PINNED_WAIT_S, until_bound=True) if pinned else {}
            for pod in pinned:
                name = pod["metadata"]["name"]
                verdict = verdicts[name]
                original = name.removesuffix(PIN_SUFFIX)
                if verdict.node != chosen[original]:
                    outcome.disagree(
                        original,
                        f"vcsat chose node {chosen[original]}, kube-scheduler refuses it pinned there "
                        f"({verdict.reason}: {verdict.message})",
                    )
            self._delete_pods(case, [pod["metadata"]["name"] for pod in pinned])
            if set(case.families) <= NODE_LOCAL_FAMILIES:
                for pod in stored:
                    self._every_node(case, outcome, cluster, pod)
        finally:
            self._clean(case)
        return outcome

    # --- vcsat --------------------------------------------------------------------------------

    def _read_back(self, case: Case) -> list[dict[str, Any]]:
        """The case's nodes, bound pods and namespace as the API server stores them (kind set)."""
        nodes = self.kube.get(NODES.path(), labelSelector=f"{CASE_KEY}={case.name}")["items"]
        pods = self.kube.get(PODS.path(namespace=case.namespace))["items"]
        namespace = self.kube.get(f"/api/v1/namespaces/{case.namespace}")
        for node in nodes:
            node.update(kind="Node", apiVersion="v1")
        for pod in pods:
            pod.update(kind="Pod", apiVersion="v1")
        namespace.update(kind="Namespace", apiVersion="v1")
        storage = [self.kube.get(_storage_path(obj)) for obj in case.storage]
        for obj, stored in zip(case.storage, storage, strict=True):
            stored.update(kind=obj["kind"], apiVersion=obj["apiVersion"])
        return [namespace, *nodes, *storage, *pods]

    def _create_storage(self, case: Case) -> None:
        """CSINodes, StorageClasses, volumes, then claims, each claim marked Bound in its status."""
        for kind in STORAGE_KINDS:
            objects = [obj for obj in case.storage if obj["kind"] == kind]
            self._all(partial(self.kube.post, _storage_path(obj, collection=True), obj) for obj in objects)
            if kind == "PersistentVolumeClaim":
                self._all(
                    partial(self.kube.patch, _storage_path(obj) + "/status", {"status": obj["status"]})
                    for obj in objects
                )

    def _pods(self, case: Case) -> str:
        return PODS.path(namespace=case.namespace)

    def _vcsat(self, case: Case, items: list[dict[str, Any]]) -> dict[str, str]:
        """vcsat's placements of the pending pods: pod name -> node."""
        snapshot = snapshot_from_objects(items, scheduler_name=SCHEDULER, source=f"case {case.seed}")
        decision = solve(snapshot, POLICY)
        assert not decision.evictions and not decision.nominations, decision
        return {binding.pod.split("/", 1)[1]: binding.node for binding in decision.bindings}

    def _must_place(
        self,
        case: Case,
        outcome: Outcome,
        cluster: list[dict[str, Any]],
        stored: list[dict[str, Any]],
        chosen: Mapping[str, str],
        free: Mapping[str, Verdict],
    ) -> None:
        """Every pod kube-scheduler bound, vcsat places: in its batch, or with kube-scheduler's
        other bindings fixed when the two chose different pods for the same room."""
        bound = {name: verdict.node for name, verdict in free.items() if verdict.node is not None}
        for pod in stored:
            name = pod["metadata"]["name"]
            node = bound.get(name)
            if node is None or name in chosen:
                continue
            fixed = []
            for other in stored:
                other_name = other["metadata"]["name"]
                if other_name == name:
                    fixed.append(other)
                elif other_name in bound:
                    other = copy.deepcopy(other)
                    other["spec"]["nodeName"] = bound[other_name]
                    fixed.append(other)
            again = self._vcsat(case, [*cluster, *fixed])
            if name not in again:
                outcome.disagree(
                    name,
                    f"kube-scheduler binds it to {node}, vcsat leaves it unplaced"
                    " (even with kube-scheduler's other bindings fixed)",
                )

    def _every_node(self, case: Case, outcome: Outcome, cluster: list[dict[str, Any]], pod: dict[str, Any]) -> None:
        """Both schedulers judge the pod on every node at once: one copy pinned to each node.

        Sound only for families where copies on different nodes cannot affect each other
        (NODE_LOCAL_FAMILIES); then vcsat must place exactly the copies kube-scheduler binds.
        """
        name = pod["metadata"]["name"]
        nodes = case.node_names()
        copies = [_pinned(pod, node, f"-at{index}") for index, node in enumerate(nodes)]
        for copy_ in copies:
            copy_["metadata"].pop("uid", None)
        placed = self._vcsat(case, [*cluster, *copies])
        verdicts = self._kube_scheduler(case, copies, FREE_WAIT_S, until_bound=False)
        for node, copy_ in zip(nodes, copies, strict=True):
            verdict = verdicts[copy_["metadata"]["name"]]
            ours = placed.get(copy_["metadata"]["name"])
            if (verdict.node is not None) != (ours is not None):
                theirs = "binds it" if verdict.node else f"refuses it ({verdict.reason}: {verdict.message})"
                mine = "places it" if ours else "leaves it unplaced"
                outcome.disagree(name, f"pinned to node {node}: kube-scheduler {theirs}, vcsat {mine}")
        self._delete_pods(case, [copy_["metadata"]["name"] for copy_ in copies])

    # --- kube-scheduler -----------------------------------------------------------------------

    def _kube_scheduler(
        self, case: Case, pods: list[dict[str, Any]], wait_s: float, *, until_bound: bool
    ) -> dict[str, Verdict]:
        """Create the pods and wait for kube-scheduler's verdict on each.

        ``until_bound``: a refusal is not final, wait for a binding until ``wait_s`` runs out.
        """
        names = {pod["metadata"]["name"] for pod in pods}
        self._all(partial(self.kube.post, self._pods(case), pod) for pod in pods)
        deadline = time.monotonic() + wait_s
        verdicts: dict[str, Verdict] = {}

        def settled() -> bool:
            if until_bound:
                return all(name in verdicts and verdicts[name].node is not None for name in names)
            return names <= verdicts.keys()

        listing = self.kube.get(PODS.path(namespace=case.namespace))
        for pod in listing["items"]:
            _record(pod, names, verdicts)
        version = listing["metadata"]["resourceVersion"]
        while not settled():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            watch = self.kube.watch(
                PODS,
                resource_version=version,
                timeout_s=max(1, math.ceil(remaining)),
                fieldSelector=f"metadata.namespace={case.namespace}",
            )
            try:
                for event in watch:
                    obj = event.get("object") or {}
                    version = (obj.get("metadata") or {}).get("resourceVersion", version)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        _record(obj, names, verdicts)
                    if settled() or time.monotonic() > deadline:
                        break
            finally:
                watch.close()
        for name in names:
            verdicts.setdefault(name, Verdict(None, "Timeout", f"no verdict within {wait_s:.0f}s"))
        return verdicts

    # --- cleaning up --------------------------------------------------------------------------

    def _delete_pods(self, case: Case, names: list[str]) -> None:
        self._all(
            partial(self.kube.delete, PODS.path(namespace=case.namespace, name=name), gracePeriodSeconds=0)
            for name in names
        )

    def _clean(self, case: Case) -> None:
        self.kube.delete(PODS.path(namespace=case.namespace), None, gracePeriodSeconds=0)
        for obj in reversed(case.storage):
            # The protection finalizers wait for a controller this control plane does not run.
            path = _storage_path(obj)
            with contextlib.suppress(ApiError):
                self.kube.patch(path, {"metadata": {"finalizers": None}})
                self.kube.delete(path)
        self.kube.delete(NODES.path(), None, labelSelector=f"{CASE_KEY}={case.name}")
        with contextlib.suppress(ApiError):
            self.kube.delete(f"/api/v1/namespaces/{case.namespace}")


PIN_SUFFIX = "-pin"
NODE_LOCAL_FAMILIES = frozenset({"resources", "exactfill", "node", "hostports", "schedulinggates"})
"""Families under which a pod's copies pinned to different nodes cannot affect one another."""
STORAGE_KINDS = ("CSINode", "StorageClass", "PersistentVolume", "PersistentVolumeClaim")


def _storage_path(obj: Mapping[str, Any], *, collection: bool = False) -> str:
    kind, metadata = obj["kind"], obj["metadata"]
    if kind == "StorageClass":
        base = "/apis/storage.k8s.io/v1/storageclasses"
    elif kind == "CSINode":
        base = "/apis/storage.k8s.io/v1/csinodes"
    elif kind == "PersistentVolume":
        base = "/api/v1/persistentvolumes"
    else:
        base = f"/api/v1/namespaces/{metadata['namespace']}/persistentvolumeclaims"
    return base if collection else f"{base}/{metadata['name']}"


def _with_scheduler(pod: Mapping[str, Any]) -> dict[str, Any]:
    pod = copy.deepcopy(dict(pod))
    pod["spec"]["schedulerName"] = SCHEDULER
    return pod


def _pinned(pod: Mapping[str, Any], node: str, suffix: str) -> dict[str, Any]:
    """The pod renamed, with every required node-affinity term also demanding ``node`` by name."""
    pod = copy.deepcopy(dict(pod))
    pod["metadata"]["name"] += suffix
    by_name = {"key": "metadata.name", "operator": "In", "values": [node]}
    affinity = pod["spec"].setdefault("affinity", {})
    required = affinity.setdefault("nodeAffinity", {}).setdefault(
        "requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": [{}]}
    )
    for term in required["nodeSelectorTerms"]:
        term.setdefault("matchFields", []).append(by_name)
    return pod


def _record(pod: Mapping[str, Any], names: set[str], verdicts: dict[str, Verdict]) -> None:
    name = pod["metadata"]["name"]
    if name not in names:
        return
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        verdicts[name] = Verdict(node)
        return
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            verdicts[name] = Verdict(None, condition.get("reason", ""), condition.get("message", ""))


pytestmark = pytest.mark.k8s
