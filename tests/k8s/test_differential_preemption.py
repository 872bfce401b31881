"""kube-scheduler as the oracle for preemption: pending pods that fit only by evicting.

Each case (tests/k8s/preemption_cases.py: nodes nearly full of lower-priority pods, some under
PodDisruptionBudgets, some holding a host port or repelling the pending pods' app; one or two
higher-priority pending pods) is created on the real API server, PodDisruptionBudgets with the
status a disruption controller would write (none runs here), and then:

1. vcsat decides: the case read back from the API server (pending pods as a server-side dry run
   stores them) is solved with the preempt action on (gang, enqueue, reclaim and fairness off):
   each pending pod is bound, nominated (its victims evicted) or left waiting.
2. kube-scheduler decides freely: the pending pods are created and waited for until bound or
   refused for good (PodScheduled False, a ``preemption:`` message and no nominated node, stable
   for a while). Its victims are the running pods it deleted. Every pod kube-scheduler places
   (with or without preemption), vcsat places or nominates too: in its batch, or asked again with
   that pod alone pending when the two chose different pods for the same room.
3. vcsat's victims suffice: the case's running pods are made again, vcsat's victims deleted, and
   vcsat's placed and nominated pods created pinned to its nodes with ``preemptionPolicy: Never``
   (kube-scheduler may evict nothing): kube-scheduler must bind every one. Each victim has lower
   priority than a pod nominated to its node.
4. vcsat's victims are a choice DefaultPreemption would accept: when vcsat nominates one pod, the
   case is made again and that pod created pinned to vcsat's node, free to preempt there.
   kube-scheduler must place it, and vcsat's victims must violate no more PodDisruptionBudgets
   than kube-scheduler's and spare higher priorities no worse (the highest victim priority is no
   higher), DefaultPreemption's first two criteria. Victim counts are compared and reported.

The agreement figure (pending pods on which the two agree over pending pods) and the victim
comparisons are printed; the test demands 100%. Reproduce a case with
``VCSAT_DIFF_SEED=<seed> VCSAT_DIFF_PREEMPTION_CASES=1``. The ``long`` variant runs more cases.

    python3 -m pytest tests/k8s/test_differential_preemption.py -q -s
"""

from __future__ import annotations

import contextlib
import copy
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest
from controlplane import KubeScheduler
from preemption_cases import NEVER, PRIORITY_CLASSES, PreemptionCase, make_preemption_case

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.kube.client import NODES, PODS, ApiError, Kube
from vcsat.adapters.kube.client import PRIORITY_CLASSES as PRIORITY_CLASS_RESOURCE
from vcsat.model import Decision, Policy
from vcsat.solver.solve import solve

CASES = int(os.environ.get("VCSAT_DIFF_PREEMPTION_CASES", "60"))
LONG_CASES = int(os.environ.get("VCSAT_DIFF_PREEMPTION_LONG_CASES", "300"))
BASE_SEED = int(os.environ.get("VCSAT_DIFF_SEED", "1"))
SCHEDULER = "default-scheduler"
FREE_WAIT_S = 20.0
"""A bound on kube-scheduler's verdict on a pod, preemption and the retry after it included."""
REFUSAL_STABLE_S = 1.5
"""A refusal counts once it has stood this long (kube-scheduler retries on cluster events)."""
PINNED_WAIT_S = 8.0
NUDGE_AFTER_S = 2.0
POLICY = Policy(
    scheduler_name=SCHEDULER,
    gang=False,
    enqueue=False,
    preempt=True,
    reclaim=False,
    proportion=False,
    drf=False,
    time_limit_s=5.0,
)
"""vcsat as the default scheduler works, with Volcano's preempt action: each pod on its own."""


@dataclass
class Outcome:
    case: PreemptionCase
    pods: int
    kube_placed: int = 0
    kube_preempted: int = 0
    """Pods kube-scheduler placed by evicting (some running pod of the case was deleted)."""
    vcsat_placed: int = 0
    vcsat_nominated: int = 0
    compared: int = 0
    """Nominations whose victims were compared with kube-scheduler's on the same node."""
    fewer_victims: int = 0
    same_victims: int = 0
    more_victims: int = 0
    disagreements: dict[str, list[str]] = field(default_factory=dict)

    def disagree(self, pod: str, what: str) -> None:
        self.disagreements.setdefault(pod, []).append(what)

    def lines(self) -> list[str]:
        return [f"seed {self.case.seed}: {pod}: {what}" for pod, whats in self.disagreements.items() for what in whats]


@pytest.fixture
def priority_classes(kube: Kube) -> None:
    for name, value in PRIORITY_CLASSES.items():
        never = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name + NEVER},
            "value": value,
            "preemptionPolicy": "Never",
        }
        with contextlib.suppress(ApiError):
            kube.post(PRIORITY_CLASS_RESOURCE.path(), never)
        body = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        try:
            kube.post(PRIORITY_CLASS_RESOURCE.path(), body)
        except ApiError as error:
            if error.status != 409:
                raise


def _run_cases(kube: Kube, first_seed: int, count: int, capsys: pytest.CaptureFixture[str]) -> None:
    oracle = Oracle(kube)
    started = time.monotonic()
    outcomes: list[Outcome] = []
    try:
        for index in range(count):
            outcomes.append(oracle.run(make_preemption_case(first_seed + index)))
    finally:
        oracle.close()
    elapsed = time.monotonic() - started
    pods = sum(outcome.pods for outcome in outcomes)
    disagreeing = [outcome for outcome in outcomes if outcome.disagreements]
    wrong = sum(len(outcome.disagreements) for outcome in outcomes)
    lines = [line for outcome in disagreeing for line in outcome.lines()]
    agreement = 100.0 * (pods - wrong) / pods if pods else 100.0

    def total(name: str) -> int:
        return sum(getattr(outcome, name) for outcome in outcomes)

    summary = (
        f"differential (preemption): {len(outcomes)} cases, {pods} pods, agreement {agreement:.1f}% "
        f"({wrong} pods disagreed on, in {len(disagreeing)} cases; kube-scheduler placed {total('kube_placed')}, "
        f"{total('kube_preempted')} of them by preemption; vcsat bound {total('vcsat_placed')}, "
        f"nominated {total('vcsat_nominated')}; victims compared on the same node {total('compared')}: "
        f"vcsat fewer {total('fewer_victims')}, as many {total('same_victims')}, more {total('more_victims')}; "
        f"{elapsed:.0f}s)"
    )
    with capsys.disabled():
        print(f"\n{summary}")
        for line in lines:
            print(f"  {line}")
    assert not disagreeing, summary + "\n" + "\n".join(lines)


def test_vcsat_preempts_as_kube_scheduler_would(
    priority_classes: None, kube_scheduler: KubeScheduler, kube: Kube, capsys: pytest.CaptureFixture[str]
) -> None:
    _run_cases(kube, BASE_SEED, CASES, capsys)


@pytest.mark.long
def test_vcsat_preempts_as_kube_scheduler_would_many_cases(
    priority_classes: None, kube_scheduler: KubeScheduler, kube: Kube, capsys: pytest.CaptureFixture[str]
) -> None:
    _run_cases(kube, BASE_SEED + CASES, LONG_CASES, capsys)


def test_a_seed_names_one_preemption_case() -> None:
    assert make_preemption_case(3) == make_preemption_case(3)
    assert make_preemption_case(3) != make_preemption_case(4)


@dataclass
class Verdict:
    node: str | None
    message: str = ""


class Oracle:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.pool = ThreadPoolExecutor(max_workers=8)

    def close(self) -> None:
        self.pool.shutdown(wait=True)

    def _all(self, calls: Iterable[Callable[[], Any]]) -> list[Any]:
        futures = [self.pool.submit(call) for call in calls]
        return [future.result() for future in futures]

    def run(self, case: PreemptionCase) -> Outcome:
        outcome = Outcome(case=case, pods=len(case.pending))
        with self._created(case):
            pending = [_scheduled_by_default(pod) for pod in case.pending]
            stored = self._all(partial(self.kube.post, self._pods(case), pod, dryRun="All") for pod in pending)
            for pod in stored:
                pod.update(kind="Pod", apiVersion="v1")
            cluster = self._read_back(case)
            priority = {
                pod["metadata"]["name"]: int(pod["spec"].get("priority") or 0)
                for pod in cluster
                if pod["kind"] == "Pod"
            }
            priority.update({pod["metadata"]["name"]: int(pod["spec"].get("priority") or 0) for pod in stored})
            decision = self._vcsat(case, [*cluster, *stored])
            placed = {b.pod.split("/", 1)[1]: b.node for b in decision.bindings}
            nominated = {n.pod.split("/", 1)[1]: n.node for n in decision.nominations}
            victims = [e.pod.split("/", 1)[1] for e in decision.evictions]
            outcome.vcsat_placed, outcome.vcsat_nominated = len(placed), len(nominated)

            # 2. kube-scheduler free.
            running = {pod["metadata"]["name"]: pod["spec"]["nodeName"] for pod in cluster if pod["kind"] == "Pod"}
            free, gone = self._kube_scheduler(case, pending, running)
            kube_placed = {name: verdict.node for name, verdict in free.items() if verdict.node is not None}
            outcome.kube_placed = len(kube_placed)
            outcome.kube_preempted = len(kube_placed) if gone else 0
            for pod in stored:
                name = pod["metadata"]["name"]
                if name in kube_placed and name not in placed and name not in nominated:
                    alone = self._vcsat(case, [*cluster, pod])
                    if not alone.bindings and not alone.nominations:
                        outcome.disagree(
                            name,
                            f"kube-scheduler places it on {kube_placed[name]} (evicting {sorted(gone)}), "
                            f"vcsat neither binds nor nominates it (even alone: {_why(alone)})",
                        )

            # 3. vcsat's victims suffice, and each is below a pod nominated to its node.
            chosen = {**placed, **nominated}
            top = {}
            for name, node in nominated.items():
                top[node] = max(top.get(node, -(2**31)), priority[name])
            for victim in victims:
                node = running.get(victim)
                if node is None or priority[victim] >= top.get(node, -(2**31)):
                    outcome.disagree(
                        victim,
                        f"vcsat evicts it (node {node}, priority {priority.get(victim)}) for no lower-priority reason",
                    )
            if chosen:
                self._reset(case)
                self._delete_pods(case, victims)
                pinned = [
                    _pinned(pod, chosen[pod["metadata"]["name"]], never=True)
                    for pod in pending
                    if pod["metadata"]["name"] in chosen
                ]
                verdicts, _ = self._kube_scheduler(case, pinned, {}, until_bound=PINNED_WAIT_S)
                for pod in pinned:
                    name = pod["metadata"]["name"]
                    if verdicts[name].node != chosen[name]:
                        outcome.disagree(
                            name,
                            f"vcsat puts it on {chosen[name]} evicting {victims}; with those gone kube-scheduler "
                            f"still refuses it there ({verdicts[name].message})",
                        )

            # 4. The same node, kube-scheduler free to choose the victims.
            if len(nominated) == 1 and not placed:
                ((name, node),) = nominated.items()
                self._reset(case)
                pod = next(pod for pod in pending if pod["metadata"]["name"] == name)
                verdicts, theirs = self._kube_scheduler(case, [_pinned(pod, node, never=False)], running)
                if verdicts[name].node != node:
                    outcome.disagree(
                        name,
                        f"pinned to vcsat's node {node}, kube-scheduler cannot preempt there "
                        f"({verdicts[name].message})",
                    )
                else:
                    outcome.compared += 1
                    ours = [v for v in victims if running.get(v) == node]
                    mine = _violations(ours, case, cluster)
                    kubes = _violations(sorted(theirs), case, cluster)
                    if mine > kubes:
                        outcome.disagree(
                            name,
                            f"on {node} vcsat's victims {ours} violate {mine} disruption budgets, "
                            f"kube-scheduler's {sorted(theirs)} {kubes}",
                        )
                    elif (
                        mine == kubes
                        and ours
                        and theirs
                        and max(priority[v] for v in ours) > max(priority[v] for v in theirs)
                    ):
                        outcome.disagree(
                            name,
                            f"on {node} vcsat's victims {ours} reach priority {max(priority[v] for v in ours)}, "
                            f"kube-scheduler's {sorted(theirs)} only {max(priority[v] for v in theirs)}",
                        )
                    if len(ours) < len(theirs):
                        outcome.fewer_victims += 1
                    elif len(ours) == len(theirs):
                        outcome.same_victims += 1
                    else:
                        outcome.more_victims += 1
        return outcome

    # --- the case on the API server -----------------------------------------------------------

    def _pods(self, case: PreemptionCase) -> str:
        return PODS.path(namespace=case.namespace)

    @contextlib.contextmanager
    def _created(self, case: PreemptionCase) -> Iterator[None]:
        self.kube.post(
            "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": case.namespace}}
        )
        try:
            self._all(partial(self.kube.post, NODES.path(), node) for node in case.nodes)
            for budget in case.budgets:
                body = {key: value for key, value in budget.items() if key != "status"}
                self.kube.post(_budgets_path(case), body)
                self.kube.patch(
                    f"{_budgets_path(case)}/{budget['metadata']['name']}/status", {"status": budget["status"]}
                )
            self._all(partial(self.kube.post, self._pods(case), pod) for pod in case.bound)
            yield
        finally:
            self._clean(case)

    def _read_back(self, case: PreemptionCase) -> list[dict[str, Any]]:
        """The case's namespace, nodes, budgets and running pods, and the PriorityClasses, as the
        API server stores them (kind set)."""
        from differential_cases import CASE_KEY

        def listed(path: str, kind: str, api_version: str, **params: Any) -> list[dict[str, Any]]:
            items = self.kube.get(path, **params)["items"]
            for item in items:
                item.update(kind=kind, apiVersion=api_version)
            return items

        namespace = self.kube.get(f"/api/v1/namespaces/{case.namespace}")
        namespace.update(kind="Namespace", apiVersion="v1")
        classes = [
            obj
            for obj in listed(PRIORITY_CLASS_RESOURCE.path(), "PriorityClass", "scheduling.k8s.io/v1")
            if obj["metadata"]["name"] in PRIORITY_CLASSES
        ]
        return [
            namespace,
            *classes,
            *listed(NODES.path(), "Node", "v1", labelSelector=f"{CASE_KEY}={case.name}"),
            *listed(_budgets_path(case), "PodDisruptionBudget", "policy/v1"),
            *listed(self._pods(case), "Pod", "v1"),
        ]

    def _reset(self, case: PreemptionCase) -> None:
        """Every pod of the case gone, the running ones made again as the case has them."""
        self.kube.delete(self._pods(case), None, gracePeriodSeconds=0)
        deadline = time.monotonic() + 30
        while self.kube.get(self._pods(case))["items"]:
            assert time.monotonic() < deadline, f"pods of {case.name} not deleted"
            time.sleep(0.05)
        self._all(partial(self.kube.post, self._pods(case), pod) for pod in case.bound)

    def _delete_pods(self, case: PreemptionCase, names: Iterable[str]) -> None:
        self._all(
            partial(self.kube.delete, PODS.path(namespace=case.namespace, name=name), gracePeriodSeconds=0)
            for name in names
        )

    def _clean(self, case: PreemptionCase) -> None:
        self.kube.delete(self._pods(case), None, gracePeriodSeconds=0)
        with contextlib.suppress(ApiError):
            self.kube.delete(_budgets_path(case), None)
        from differential_cases import CASE_KEY

        self.kube.delete(NODES.path(), None, labelSelector=f"{CASE_KEY}={case.name}")
        with contextlib.suppress(ApiError):
            self.kube.delete(f"/api/v1/namespaces/{case.namespace}")

    # --- the two schedulers -------------------------------------------------------------------

    def _vcsat(self, case: PreemptionCase, items: list[dict[str, Any]]) -> Decision:
        snapshot = snapshot_from_objects(items, scheduler_name=SCHEDULER, source=f"case {case.seed}")
        return solve(snapshot, POLICY)

    def _kube_scheduler(
        self,
        case: PreemptionCase,
        pods: list[dict[str, Any]],
        running: Mapping[str, str],
        until_bound: float | None = None,
    ) -> tuple[dict[str, Verdict], set[str]]:
        """Create the pods; each one's verdict (bound, or refused for good), and which of
        ``running`` were deleted meanwhile. ``until_bound``: wait that long for every binding.

        kube-scheduler does not always try a preemptor again once its victims are gone (the
        deletions it makes during its asynchronous preemption do not always requeue the pod; it
        then waits for the next flush of unschedulable pods, minutes later). A pod still unbound
        :data:`NUDGE_AFTER_S` after the last victim went is therefore made again, once: the same
        pod, new, which kube-scheduler tries at once.
        """
        names = {pod["metadata"]["name"] for pod in pods}
        originals = {pod["metadata"]["name"]: pod for pod in pods}
        nudged: set[str] = set()
        last_gone: tuple[int, float] = (0, time.monotonic())
        self._all(partial(self.kube.post, self._pods(case), pod) for pod in pods)
        deadline = time.monotonic() + (until_bound or FREE_WAIT_S)
        refused_since: dict[str, float] = {}
        verdicts: dict[str, Verdict] = {}
        while True:
            now = time.monotonic()
            listing = self.kube.get(self._pods(case))["items"]
            present = {pod["metadata"]["name"] for pod in listing if not pod["metadata"].get("deletionTimestamp")}
            gone = len(set(running) - present)
            if gone != last_gone[0]:
                last_gone = (gone, now)
            for pod in listing:
                name = pod["metadata"]["name"]
                if name not in names:
                    continue
                node = pod["spec"].get("nodeName")
                if node:
                    verdicts[name] = Verdict(node)
                    continue
                message = _refusal(pod)
                if (
                    until_bound is None
                    and message is not None
                    and "preemption:" in message
                    and not (pod.get("status") or {}).get("nominatedNodeName")
                ):
                    refused_since.setdefault(name, now)
                    if now - refused_since[name] >= REFUSAL_STABLE_S:
                        verdicts[name] = Verdict(None, message)
                else:
                    refused_since.pop(name, None)
                    if message is not None:
                        verdicts.setdefault(name, Verdict(None, message))
                        if verdicts[name].node is None:
                            verdicts[name] = Verdict(None, message)
            settled = all(
                name in verdicts
                and (
                    verdicts[name].node is not None
                    or (until_bound is None and name in refused_since and now - refused_since[name] >= REFUSAL_STABLE_S)
                )
                for name in names
            )
            if settled or now > deadline:
                break
            if gone and now - last_gone[1] >= NUDGE_AFTER_S:
                stuck = [
                    name
                    for name in sorted(names - nudged)
                    if (name not in verdicts or verdicts[name].node is None) and name not in refused_since
                ]
                if stuck:
                    self._delete_pods(case, stuck)
                    self._all(partial(self.kube.post, self._pods(case), originals[name]) for name in stuck)
                    nudged.update(stuck)
                    for name in stuck:
                        verdicts.pop(name, None)
            time.sleep(0.1)
        for name in names:
            verdicts.setdefault(name, Verdict(None, "no verdict in time"))
        return verdicts, set(running) - present


def _budgets_path(case: PreemptionCase) -> str:
    return f"/apis/policy/v1/namespaces/{case.namespace}/poddisruptionbudgets"


def _refusal(pod: Mapping[str, Any]) -> str | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("message", ""))
    return None


def _scheduled_by_default(pod: Mapping[str, Any]) -> dict[str, Any]:
    pod = copy.deepcopy(dict(pod))
    pod["spec"]["schedulerName"] = SCHEDULER
    return pod


def _pinned(pod: Mapping[str, Any], node: str, *, never: bool) -> dict[str, Any]:
    """The pod (same name) demanding ``node`` by name; ``never``: it may evict nothing."""
    pod = copy.deepcopy(dict(pod))
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    pod["spec"].setdefault("affinity", {})["nodeAffinity"] = {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
    }
    if never:
        pod["spec"]["priorityClassName"] += NEVER
    return pod


def _violations(victims: Iterable[str], case: PreemptionCase, cluster: list[dict[str, Any]]) -> int:
    """How many of the victims break a disruption budget, counted as DefaultPreemption counts them:
    in turn, each victim takes one of the allowed disruptions of every budget selecting it, and
    is a violation when some such budget has none left."""
    labels = {pod["metadata"]["name"]: pod["metadata"].get("labels") or {} for pod in cluster if pod["kind"] == "Pod"}
    allowed = {b["metadata"]["name"]: int(b["status"]["disruptionsAllowed"]) for b in case.budgets}
    count = 0
    for victim in victims:
        violated = False
        for budget in case.budgets:
            selector = budget["spec"]["selector"]["matchLabels"]
            if all(labels[victim].get(k) == v for k, v in selector.items()):
                allowed[budget["metadata"]["name"]] -= 1
                if allowed[budget["metadata"]["name"]] < 0:
                    violated = True
        count += violated
    return count


def _why(decision: Decision) -> str:
    return "; ".join(f"{o.reason}: {o.message}" for o in decision.podgroups if o.reason) or "no reason given"


pytestmark = pytest.mark.k8s
