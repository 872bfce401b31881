"""The solver-independent validator of contract §3: does a decision keep every hard rule?

It exists so that no decision is trusted because the solver built it: tests run it on every
decision, and production runs it before anything is applied. It is written straight from the
contract, shares nothing with the solver's model (only :mod:`vcsat.solver.rules.predicates` and
:mod:`vcsat.model.resources`; volumes and node capacity are judged by its own
:mod:`vcsat.solver.validator.volumes` and :mod:`vcsat.solver.validator.capacity`),
and indexes by node and group once so that a large decision checks in linear time.

Where the contract leaves a choice, the choice made here (each is the stricter or the Kubernetes /
Volcano reading):

- Only what the decision changes is judged: a node, queue or GPU that is already over its limit and
  gets nothing new is not the decision's fault. Capacity and quota are checked on the resources the
  new placements request (kube-scheduler's NodeResourcesFit and Volcano's ``LessEqualWithDimension``
  do the same); every pod takes one ``pods`` slot whether or not its requests say so.
- "Now" is before evictions take effect: bindings must fit beside every bound pod, victims included,
  and must not take a victim's GPU. "After" is bound − evicted + bindings + nominations.
- A bound GPU pod without ``vcsat.io/gpu-ids`` holds the lowest indices no other pod holds
  (contract §1), resolved oldest first exactly as the loader (``adapters/convert/snapshot.py``) does.
- Queue usage counts the managed pods of the queue (pods of other schedulers belong to no queue).
  A pod whose PodGroup is not in the snapshot has no queue: placing it is ``UnknownPodGroup``.
- A pod with scheduling gates or with ``spec.resourceClaims`` must not be placed; a pod without a
  PodGroup counts against the queue its ``scheduling.volcano.sh/queue-name`` names (else ``default``).
- Victims must be pods of ours (managed); Volcano never evicts another scheduler's pods.
- With ``policy.gang`` off both gang rules (placement and victim) are off.
- A PodGroup whose placements include a nomination may stay non-Running with reason
  ``WaitingForEviction`` (its pods bind only after the victims are gone); otherwise phase is
  Running iff any of its pending pods got a placement, and reason is empty iff Running.
- Podgroup entries are sorted by podgroup key ascending (plain string order).
- Solver stats use the maximisation convention: ``bound >= objective``; OPTIMAL with
  ``relative_gap == 0`` means ``bound == objective`` (both to a relative 1e-6); WITHIN_GAP means
  ``bound - objective <= relative_gap * max(1, |bound|)``.

Violations come back sorted by (rule, subject, message).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Final, Literal, NamedTuple

from vcsat.model import Decision, Node, Pod, Policy, Snapshot
from vcsat.model import resources as res
from vcsat.model.cluster import DEFAULT_QUEUE, PodGroup, Queue
from vcsat.model.conformance import protection as victim_protection
from vcsat.model.gpus import gpu_holdings
from vcsat.model.queue_rule import queue_in
from vcsat.solver.pauses import no_gc_pauses
from vcsat.solver.rules.predicates import PREDICATE_CODES, CompiledKey, compiled, eligibility_key
from vcsat.solver.validator import volumes as check_volumes
from vcsat.solver.validator.capacity import capacity_violations
from vcsat.solver.validator.interpod import (
    INTERPOD_RULES,
    BoundIndex,
    affinity_after_evictions,
    check_interpod,
)
from vcsat.solver.validator.network_topology import RULE as TOPOLOGY_RULE
from vcsat.solver.validator.network_topology import topology_violations
from vcsat.solver.validator.spread import RULE as SPREAD_RULE
from vcsat.solver.validator.spread import spread_violations

WHOLE_GPU_MILLI: Final = 1000
WAITING_FOR_EVICTION: Final = "WaitingForEviction"
_TOLERANCE: Final = 1e-6

RULES: Final = (
    "UnknownPod",
    "PodNotManaged",
    "PodNotPending",
    "DuplicatePlacement",
    "UnknownNode",
    "SchedulingGated",
    "ResourceClaimsUnsupported",
    *PREDICATE_CODES,
    *check_volumes.RULES,
    "PodTopologySpread",
    *INTERPOD_RULES,
    "CapacityNow",
    "CapacityAfterEvictions",
    "GpuIndices",
    "GpuConflict",
    "GpuShareOverflow",
    "UnknownPodGroup",
    "GangUnsatisfied",
    "GangTaskUnsatisfied",
    TOPOLOGY_RULE,
    "UnknownQueue",
    "QueueClosed",
    "QueueOverCapability",
    "UnknownVictim",
    "DuplicateEviction",
    "VictimNotRunning",
    "VictimProtected",
    "PreemptUnjustified",
    "ReclaimUnjustified",
    "VictimGangBroken",
    "PodGroupMissing",
    "PodGroupUnexpected",
    "PodGroupDuplicate",
    "PodGroupPhase",
    "PodGroupReason",
    "PodGroupOrder",
    "SolverStats",
)
"""Every rule code :func:`check` may report (the predicate codes are those of ``predicates``)."""


@dataclass(frozen=True, slots=True, order=True)
class Violation:
    """One broken rule: its code, what it is about (pod/podgroup key, node or queue name), and why."""

    rule: str
    subject: str
    message: str

    def __str__(self) -> str:
        return f"{self.rule} {self.subject}: {self.message}"


class _Placement(NamedTuple):
    """A binding or nomination whose pod exists, is pending and placed once; node may be unknown."""

    kind: Literal["binding", "nomination"]
    pod: Pod
    node: Node | None
    gpus: tuple[int, ...]
    gpus_ok: bool
    gang: str
    """The PodGroup key, or the pod's own key for a pod without one."""


_DEFAULT_POLICY: Final = Policy()


def check(snapshot: Snapshot, decision: Decision, policy: Policy = _DEFAULT_POLICY) -> list[Violation]:
    """Every hard rule of contract §3 the decision breaks; empty when it keeps them all."""
    with no_gc_pauses():
        return _Checker(snapshot, decision, policy).run()


def gang_key(pod: Pod) -> str:
    """What a pod is placed with: its PodGroup, or itself (a gang of one)."""
    group = pod.group
    return group if group is not None else pod.key


def gpu_count(pod: Pod) -> int:
    """How many device indices the pod's decision lists: its whole GPUs, or one for a share."""
    gpus = pod.gpus
    if gpus > 0:
        return gpus
    return 1 if pod.gpu_milli > 0 else 0


class _Checker:
    """One validation run: accepted placements and victims first, then each rule over them."""

    def __init__(self, snapshot: Snapshot, decision: Decision, policy: Policy) -> None:
        self.snapshot = snapshot
        self.decision = decision
        self.policy = policy
        self.out: list[Violation] = []
        self.placements: list[_Placement] = []
        self.victims: dict[str, Pod] = {}
        self._placed_queues: list[str | None] | None = None
        self._compiled: dict[tuple[int, int, int], CompiledKey] = {}
        """The node predicates per pod spec: by the identities of the node selector, affinity
        and tolerations its pods share (the snapshot holds them while the check runs)."""

    def run(self) -> list[Violation]:
        self._placements()
        self._evictions()
        self._spread()
        self._interpod()
        self._capacity()
        self._volumes()
        self._gpus()
        self._gangs()
        self._network_topology()
        self._queues()
        self._victim_justification()
        self._victim_gangs()
        self._podgroups()
        self._solver()
        return sorted(self.out)

    def _flag(self, rule: str, subject: str, message: str) -> None:
        self.out.append(Violation(rule, subject, message))

    # --- identity, predicates, GPU index lists ------------------------------------------------

    def _placements(self) -> None:
        pods, nodes = self.snapshot.pod_by_key, self.snapshot.node_by_name
        entries: list[tuple[Literal["binding", "nomination"], str, str, Sequence[int]]] = [
            ("binding", b.pod, b.node, b.gpus) for b in self.decision.bindings
        ]
        entries += [("nomination", n.pod, n.node, n.gpus) for n in self.decision.nominations]
        seen: set[str] = set()
        for kind, key, node_name, gpus in entries:
            pod = pods.get(key)
            if pod is None:
                self._flag("UnknownPod", key, f"{kind} of a pod not in the snapshot")
                continue
            if key in seen:
                self._flag("DuplicatePlacement", key, f"placed again, as {kind} to {node_name}")
                continue
            seen.add(key)
            if not pod.managed:
                self._flag("PodNotManaged", key, f"{kind} of a pod of another scheduler")
                continue
            if not pod.pending:
                self._flag("PodNotPending", key, f"{kind} of a pod that is {_why_not_pending(pod)}")
                continue
            if pod.scheduling_gates:
                # kube-scheduler places no pod while spec.schedulingGates lists a gate.
                gates = list(pod.scheduling_gates)
                self._flag("SchedulingGated", key, f"{kind} of a pod with scheduling gates {gates}")
            if pod.resource_claims:
                # Devices claimed through dynamic resource allocation are outside what vcsat models.
                self._flag(
                    "ResourceClaimsUnsupported",
                    key,
                    f"{kind} of a pod with spec.resourceClaims {list(pod.resource_claims)}, which vcsat does not model",
                )
            node = nodes.get(node_name)
            if node is None:
                self._flag("UnknownNode", key, f"{kind} to node {node_name}, which is not in the snapshot")
            else:
                failure = self._predicates(pod).failure(node)
                if failure is not None:
                    self._flag(failure.code, key, failure.message)
            gpus_ok = self._gpu_list(kind, pod, node, gpus)
            self.placements.append(_Placement(kind, pod, node, tuple(gpus), gpus_ok, gang_key(pod)))

    def _predicates(self, pod: Pod) -> CompiledKey:
        """The node predicates of ``pod`` (``predicate_failure``'s), made once per pod spec."""
        spec = (id(pod.node_selector), id(pod.affinity), id(pod.tolerations))
        found = self._compiled.get(spec)
        if found is None:
            found = self._compiled[spec] = compiled(eligibility_key(pod))
        return found

    def _gpu_list(self, kind: str, pod: Pod, node: Node | None, gpus: Sequence[int]) -> bool:
        wanted = gpu_count(pod)
        problem = ""
        if len(gpus) != wanted:
            share = f" (a {pod.gpu_milli}/1000 GPU share)" if pod.gpus == 0 and pod.gpu_milli else ""
            problem = f"lists {len(gpus)} GPU indices, the pod needs {wanted}{share}"
        elif len(set(gpus)) != len(gpus):
            problem = f"lists GPU indices {list(gpus)} with repeats"
        elif node is not None and gpus and (min(gpus) < 0 or max(gpus) >= node.gpus):  # each in 0..gpus-1
            problem = f"lists GPU indices {list(gpus)}, node {node.name} has GPUs 0..{node.gpus - 1}"
            if node.gpus == 0:
                problem = f"lists GPU indices {list(gpus)}, node {node.name} has no GPUs"
        if problem:
            self._flag("GpuIndices", pod.key, f"{kind} {problem}")
        return not problem

    def _interpod(self) -> None:
        """Inter-pod affinity, anti-affinity and host ports (:mod:`vcsat.solver.validator.interpod`)."""
        new = [(p.pod, p.node) for p in self.placements if p.node is not None]
        index = BoundIndex(self.snapshot)  # the bound pods read once for every call below
        # Without a term on a bound pod or a new one's term or host port, check_interpod finds
        # nothing (now or after evictions): the one scan for it is made here, once.
        rules = index.anti_anywhere or any(
            pod.host_ports or pod.pod_affinity.required or pod.pod_anti_affinity.required for pod, _ in new
        )
        if not rules:
            pass
        elif self.victims or any(p.kind == "nomination" for p in self.placements):
            # Bindings now, beside the victims; everything after evictions (nominations wait for them).
            now = [(p.pod, p.node) for p in self.placements if p.node is not None and p.kind == "binding"]
            seen: set[tuple[str, str, str]] = set()
            found_now = check_interpod(self.snapshot, now, index=index)
            found_after = check_interpod(self.snapshot, new, set(self.victims), index=index)
            for found in [*found_now, *found_after]:
                if (found.rule, found.subject, found.message) not in seen:
                    seen.add((found.rule, found.subject, found.message))
                    self._flag(found.rule, found.subject, found.message)
        else:
            for found in check_interpod(self.snapshot, new, index=index):
                self._flag(found.rule, found.subject, found.message)
        for found in affinity_after_evictions(self.snapshot, self.victims, new, index):
            self._flag(found.rule, found.subject, found.message)

    # --- evictions: identity and protection ---------------------------------------------------

    def _evictions(self) -> None:
        pods = self.snapshot.pod_by_key
        seen: set[str] = set()
        for eviction in self.decision.evictions:
            key = eviction.pod
            if key in seen:
                self._flag("DuplicateEviction", key, "evicted more than once")
                continue
            seen.add(key)
            pod = pods.get(key)
            if pod is None:
                self._flag("UnknownVictim", key, "eviction of a pod not in the snapshot")
                continue
            if not pod.bound:
                self._flag("VictimNotRunning", key, f"eviction of a pod that holds no room ({_state(pod)})")
                continue
            # A protected victim still counts as evicted below, so that its one fault is not
            # reported again as capacity or gang trouble of the pods that replace it.
            self.victims[key] = pod
            protection = victim_protection(pod)
            if protection:
                self._flag("VictimProtected", key, f"{eviction.reason} victim {protection}")

    # --- pod topology spread (check_spread.py) -------------------------------------------------

    def _spread(self) -> None:
        if not any(p.pod.spread_constraints for p in self.placements if p.node is not None):
            return
        now: dict[str, list[Pod]] = defaultdict(list)
        after: dict[str, list[Pod]] = defaultdict(list)
        for name, pods in self.snapshot.pods_on_node.items():
            now[name].extend(pods)
            after[name].extend(pod for pod in pods if pod.key not in self.victims)
        judged: list[tuple[Pod, Node, str]] = []
        for placement in self.placements:
            if placement.node is None:
                continue
            after[placement.node.name].append(placement.pod)
            if placement.kind == "binding":
                now[placement.node.name].append(placement.pod)
                judged.append((placement.pod, placement.node, "before evictions"))
            judged.append((placement.pod, placement.node, "after evictions"))
        if not self.victims and not any(p.kind == "nomination" for p in self.placements):
            # One final state: judge it once.
            judged = [(pod, node, "before evictions") for pod, node, state in judged if state == "before evictions"]
        states = {"before evictions": now, "after evictions": after}
        seen: set[tuple[str, str]] = set()
        for key, message in spread_violations(self.snapshot, judged, states):
            if (key, message.split(" (")[0]) not in seen:
                seen.add((key, message.split(" (")[0]))
                self._flag(SPREAD_RULE, key, message)

    # --- node capacity ------------------------------------------------------------------------

    def _capacity(self) -> None:
        placed = [(p.kind, p.pod, p.node) for p in self.placements if p.node is not None]
        for rule, subject, message in capacity_violations(self.snapshot, placed, self.victims):
            self._flag(rule, subject, message)

    # --- volumes (check_volumes: the validator's own reading of kube-scheduler's volume plugins)

    def _volumes(self) -> None:
        placed = [(p.pod, p.node) for p in self.placements if p.node is not None]
        nominated = {p.pod.key for p in self.placements if p.node is not None and p.kind == "nomination"}
        found = check_volumes.volume_violations(self.snapshot, placed, self.victims.keys(), nominated)
        for rule, subject, message in found:
            self._flag(rule, subject, message)

    # --- GPU devices --------------------------------------------------------------------------

    def _gpus(self) -> None:
        by_node: dict[str, list[_Placement]] = defaultdict(list)
        for placement in self.placements:
            if placement.node is not None and placement.gpus_ok and placement.gpus:
                by_node[placement.node.name].append(placement)
        for name, placed in sorted(by_node.items()):
            node = self.snapshot.node_by_name[name]
            on_node = self.snapshot.pods_on_node.get(name, ())
            if _apart(node, on_node, placed):
                continue  # no state of this node could be reported (see _apart)
            bound = _bound_gpu_holds(node, on_node)
            new = [_Hold(p.pod.key, p.gpus, p.pod.gpu_milli if p.pod.gpus == 0 else 0) for p in placed]
            bindings = [hold for hold, p in zip(new, placed, strict=True) if p.kind == "binding"]
            staying = [hold for hold in bound if hold.pod not in self.victims]
            reported: set[tuple[str, int]] = set()
            self._gpu_state(name, bound, bindings, "now", reported)
            if len(staying) != len(bound) or len(new) != len(bindings):
                # Else "after evictions" is the same state as "now", already judged.
                self._gpu_state(name, staying, new, "after evictions", reported)

    def _gpu_state(
        self, node: str, held: list[_Hold], new: list[_Hold], when: str, reported: set[tuple[str, int]]
    ) -> None:
        fresh = {i for hold in new for i in hold.ids}
        taken = [i for hold in held for i in hold.ids if i in fresh]
        if (
            not taken
            and len(fresh) == sum(len(hold.ids) for hold in new)
            and all(hold.milli <= WHOLE_GPU_MILLI for hold in new)
        ):
            # Each new index has one holder, and no share alone is over a whole GPU: nothing below
            # could be reported (the common case, judged without the per-index tables).
            return
        whole: dict[int, list[str]] = defaultdict(list)
        shares: dict[int, list[tuple[str, int]]] = defaultdict(list)
        for hold in (*held, *new):
            for i in hold.ids:
                if i not in fresh:
                    continue
                if hold.milli:
                    shares[i].append((hold.pod, hold.milli))
                else:
                    whole[i].append(hold.pod)
        for i in sorted(fresh):
            holders, shared = whole.get(i, []), shares.get(i, [])
            if (len(holders) > 1 or (holders and shared)) and ("GpuConflict", i) not in reported:
                reported.add(("GpuConflict", i))
                names = ", ".join([*holders, *(f"{pod} ({milli}/1000)" for pod, milli in shared)])
                self._flag("GpuConflict", node, f"GPU {i} {when} held by {names}")
            total = sum(milli for _, milli in shared)
            if total > WHOLE_GPU_MILLI and ("GpuShareOverflow", i) not in reported:
                reported.add(("GpuShareOverflow", i))
                names = ", ".join(f"{pod} ({milli})" for pod, milli in shared)
                self._flag("GpuShareOverflow", node, f"GPU {i} {when} shares sum to {total}/1000: {names}")

    # --- gangs --------------------------------------------------------------------------------

    def _group_of(self, pod: Pod) -> PodGroup | None:
        return None if pod.group is None else self.snapshot.podgroup_by_key.get(pod.group)

    def _network_topology(self) -> None:
        if not self.policy.topology:
            return
        placed = [(p.gang, p.node.name) for p in self.placements if p.node is not None and p.pod.group is not None]
        for group, why in topology_violations(self.snapshot, placed, set(self.victims)):
            self._flag(TOPOLOGY_RULE, group, why)

    def _gangs(self) -> None:
        placed: dict[str, list[Pod]] = defaultdict(list)
        groups = self.snapshot.podgroup_by_key
        for placement in self.placements:
            if placement.pod.group is None:
                continue
            if placement.pod.group not in groups:
                self._flag(
                    "UnknownPodGroup",
                    placement.pod.key,
                    f"{placement.kind} of a pod whose PodGroup {placement.pod.group} is not in the snapshot",
                )
                continue
            placed[placement.pod.group].append(placement.pod)
        if not self.policy.gang:
            return
        for key, new in sorted(placed.items()):
            group = self.snapshot.podgroup_by_key[key]
            if _whole_alone(group, new):
                continue  # the pods staying only add to what already keeps every minimum
            staying = [
                p for p in self.snapshot.pods_of_group.get(key, ()) if p.gang_ready and p.key not in self.victims
            ]
            have = len(staying) + len(new)
            if have < group.min_member:
                self._flag(
                    "GangUnsatisfied",
                    key,
                    f"{len(new)} placed + {len(staying)} running or succeeded = {have} < minMember {group.min_member}",
                )
            for task, minimum in sorted(group.min_task_member.items()):
                count = sum(1 for p in staying if p.task == task) + sum(1 for p in new if p.task == task)
                if count < minimum:
                    self._flag("GangTaskUnsatisfied", key, f"task {task}: {count} placed or running < {minimum}")

    # --- queues -------------------------------------------------------------------------------

    def _queue_name(self, pod: Pod) -> str | None:
        """The pod's queue; None when its PodGroup is missing. A pod without a PodGroup is in the
        queue its ``scheduling.volcano.sh/queue-name`` annotation names, else ``default``."""
        if pod.group is None:
            return pod.queue_name or DEFAULT_QUEUE
        group = self._group_of(pod)
        return None if group is None else group.queue

    def _placement_queues(self) -> list[str | None]:
        """:meth:`_queue_name` of each placement's pod, in order (looked up once per PodGroup)."""
        if self._placed_queues is None:
            by_group: dict[str, str | None] = {}
            names: list[str | None] = []
            for placement in self.placements:
                pod = placement.pod
                if pod.group is None:
                    names.append(pod.queue_name or DEFAULT_QUEUE)
                    continue
                if pod.group not in by_group:
                    by_group[pod.group] = self._queue_name(pod)
                names.append(by_group[pod.group])
            self._placed_queues = names
        return self._placed_queues

    def _queue(self, name: str) -> Queue | None:
        queue = self.snapshot.queue_by_name.get(name)
        if queue is None and name == DEFAULT_QUEUE:
            return Queue(name=DEFAULT_QUEUE)
        return queue

    def _queues(self) -> None:
        new_by_queue: dict[str, list[Pod]] = defaultdict(list)
        unknown: dict[str, set[str]] = defaultdict(set)
        known: dict[str, bool] = {}
        for placement, name in zip(self.placements, self._placement_queues(), strict=True):
            if name is None:
                continue
            if name not in known:
                known[name] = self._queue(name) is not None
            if not known[name]:
                unknown[name].add(placement.gang)
                continue
            new_by_queue[name].append(placement.pod)
        for name, gangs in sorted(unknown.items()):
            for gang in sorted(gangs):
                self._flag("UnknownQueue", gang, f"gets new placements in queue {name}, not in the snapshot")
        if not new_by_queue:
            return
        capped = {name for name in new_by_queue if (self._queue(name) or Queue(name=name)).capability is not None}
        used: dict[str, list[Pod]] = defaultdict(list)
        groups = self.snapshot.podgroup_by_key
        for pod in self.snapshot.pods if capped else ():
            if pod.bound and pod.key not in self.victims:
                name = queue_in(pod, groups)
                if name in capped:
                    used[name].append(pod)
        for name, new in sorted(new_by_queue.items()):
            queue = self._queue(name)
            assert queue is not None
            if not queue.open:
                self._flag("QueueClosed", name, f"queue is Closed but gets {len(new)} new placements")
            if queue.capability is None:
                continue
            requested = {r for pod in new for r, amount in pod.requests.items() if amount > 0}
            held, added = res.total(p.requests for p in used[name]), res.total(p.requests for p in new)
            for resource, cap in sorted(queue.capability.items()):
                if resource not in requested:
                    continue
                have, more = held.get(resource, 0), added.get(resource, 0)
                if have + more > cap:
                    self._flag(
                        "QueueOverCapability",
                        name,
                        f"{resource}: {res.format_amount(resource, have)} held + "
                        f"{res.format_amount(resource, more)} new > capability "
                        f"{res.format_amount(resource, cap)}",
                    )

    # --- evictions: why, and what they leave of a gang ----------------------------------------

    def _victim_justification(self) -> None:
        if not self.victims:
            return
        reasons: dict[str, str] = {}
        for eviction in self.decision.evictions:
            reasons.setdefault(eviction.pod, eviction.reason)  # a repeat is DuplicateEviction
        top_priority: dict[str, int] = {}
        queues_placed: set[str] = set()
        for placement, name in zip(self.placements, self._placement_queues(), strict=True):
            if name is None:
                continue
            queues_placed.add(name)
            top_priority[name] = max(top_priority.get(name, placement.pod.priority), placement.pod.priority)
        for key, victim in self.victims.items():
            queue_name = self._queue_name(victim)
            if reasons[key] == "preempt":
                best = top_priority.get(queue_name) if queue_name is not None else None
                if best is None or best <= victim.priority:
                    seen = "no new placement" if best is None else f"highest new priority {best}"
                    self._flag(
                        "PreemptUnjustified",
                        key,
                        f"victim of priority {victim.priority} in queue {queue_name}: {seen} there",
                    )
                continue
            queue = self._queue(queue_name) if queue_name is not None else None
            if queue is None:
                self._flag("ReclaimUnjustified", key, "victim's queue is unknown")
            elif not queue.reclaimable:
                self._flag("ReclaimUnjustified", key, f"victim's queue {queue.name} is not reclaimable")
            elif not queues_placed - {queue.name}:
                self._flag("ReclaimUnjustified", key, f"no new placement in a queue other than {queue.name}")

    def _victim_gangs(self) -> None:
        if not self.policy.gang:
            return
        hit: dict[str, int] = defaultdict(int)
        for victim in self.victims.values():
            if victim.group is not None:
                hit[victim.group] += 1
        for key, evicted in sorted(hit.items()):
            group = self.snapshot.podgroup_by_key.get(key)
            if group is None:
                continue
            running = sum(1 for p in self.snapshot.pods_of_group.get(key, ()) if p.bound)
            left = running - evicted
            if 0 < left < group.min_member:
                self._flag(
                    "VictimGangBroken",
                    key,
                    f"evicting {evicted} of {running} running leaves {left} < minMember {group.min_member}",
                )

    # --- podgroup outcomes --------------------------------------------------------------------

    def _podgroups(self) -> None:
        # Each pod's group read once (a model field: docs/compiled-build.md).
        expected = {pod.key if (group := pod.group) is None else group for pod in self.snapshot.pods if pod.pending}
        placed = {p.gang for p in self.placements}
        nominated = {p.gang for p in self.placements if p.kind == "nomination"}
        keys = [outcome.podgroup for outcome in self.decision.podgroups]
        for before, after in pairwise(keys):
            if before > after:
                self._flag("PodGroupOrder", "podgroups", f"{before} comes before {after}; want key order")
                break
        seen: set[str] = set()
        for outcome in self.decision.podgroups:
            key = outcome.podgroup
            if key in seen:
                self._flag("PodGroupDuplicate", key, "more than one entry")
                continue
            seen.add(key)
            if key not in expected:
                self._flag("PodGroupUnexpected", key, "entry for a podgroup with no pending pods")
                continue
            running = outcome.phase == "Running"
            waiting = key in nominated and outcome.reason == WAITING_FOR_EVICTION
            if key in placed and not running and not waiting:
                allowed = f" (or reason {WAITING_FOR_EVICTION}: it is nominated)" if key in nominated else ""
                self._flag("PodGroupPhase", key, f"placed, but phase is {outcome.phase}{allowed}")
            elif key not in placed and running:
                self._flag("PodGroupPhase", key, "phase Running but none of its pods was placed")
            elif running == bool(outcome.reason):
                want = "empty when Running" if running else f"set when {outcome.phase}"
                self._flag("PodGroupReason", key, f"reason {outcome.reason!r} must be {want}")
        for key in sorted(expected - seen):
            self._flag("PodGroupMissing", key, "has pending pods but no podgroups entry")

    # --- solver stats -------------------------------------------------------------------------

    def _solver(self) -> None:
        stats = self.decision.solver
        numbers = {"objective": stats.objective, "bound": stats.bound, "seconds": stats.seconds}
        for name, value in numbers.items():
            if not math.isfinite(value):
                self._flag("SolverStats", "solver", f"{name} is {value}")
                return
        if stats.seconds < 0:
            self._flag("SolverStats", "solver", f"seconds {stats.seconds} < 0")
        if stats.status == "FALLBACK":
            return
        slack = _TOLERANCE * max(1.0, abs(stats.objective), abs(stats.bound))
        if stats.bound < stats.objective - slack:
            self._flag("SolverStats", "solver", f"bound {stats.bound} < objective {stats.objective} (maximisation)")
            return
        exact = stats.status == "OPTIMAL" and not self.policy.relative_gap
        if exact and stats.bound > stats.objective + slack:
            self._flag("SolverStats", "solver", f"OPTIMAL but bound {stats.bound} > objective {stats.objective}")
        tolerance = self.policy.relative_gap * max(1.0, abs(stats.bound))
        if stats.status == "WITHIN_GAP" and stats.bound - stats.objective > tolerance + slack:
            self._flag(
                "SolverStats",
                "solver",
                f"WITHIN_GAP but bound {stats.bound} is more than relative_gap {self.policy.relative_gap} "
                f"above objective {stats.objective}",
            )


class _Hold(NamedTuple):
    """GPU indices one pod holds: whole devices (milli 0) or a share of each listed device."""

    pod: str
    ids: tuple[int, ...]
    milli: int


def _whole_alone(group: PodGroup, new: list[Pod]) -> bool:
    """Whether the new pods alone reach the group's minMember and each task's minimum: then the
    running or succeeded pods beside them cannot make any count fall short, and are not read."""
    if len(new) < group.min_member:
        return False
    return all(sum(1 for p in new if p.task == task) >= minimum for task, minimum in group.min_task_member.items())


def _apart(node: Node, bound: Iterable[Pod], placed: list[_Placement]) -> bool:
    """Whether the placements' GPU indices on ``node`` are all distinct, none is held by a pod
    bound there (by :mod:`vcsat.model.gpus`' rule) and no share is over a whole GPU: then neither
    state :meth:`_Checker._gpu_state` judges (bindings beside every bound pod, every placement
    beside the pods staying) has an index with two holders or shares over a GPU, since each
    holds a part of these pods. Most nodes are so: judged from sets, with no hold listed."""
    fresh: set[int] = set()
    listed = 0
    for placement in placed:
        if placement.pod.gpus == 0 and placement.pod.gpu_milli > WHOLE_GPU_MILLI:
            return False
        fresh.update(placement.gpus)
        listed += len(placement.gpus)
    if len(fresh) != listed:
        return False
    pods = {pod.key: pod for pod in bound if pod.gpus or pod.gpu_milli}
    if not pods:
        return True
    holdings = gpu_holdings(node.gpus, pods.values())
    if not fresh.isdisjoint(holdings.share.values()):
        return False
    return all(fresh.isdisjoint(ids) for ids in holdings.whole.values())


def _bound_gpu_holds(node: Node, bound: Iterable[Pod]) -> list[_Hold]:
    """What the bound pods of a node hold, by the one rule of :mod:`vcsat.model.gpus`."""
    # Pods without GPUs or shares hold none (gpu_holdings passes over them): left out here first.
    pods = {pod.key: pod for pod in bound if pod.gpus or pod.gpu_milli}
    holdings = gpu_holdings(node.gpus, pods.values())
    holds = [_Hold(key, ids, 0) for key, ids in holdings.whole.items()]
    holds += [_Hold(key, (index,), pods[key].gpu_milli) for key, index in holdings.share.items()]
    return holds


def _why_not_pending(pod: Pod) -> str:
    if pod.node_name is not None:
        return f"already bound to {pod.node_name}"
    return _state(pod)


def _state(pod: Pod) -> str:
    if pod.finished:
        return f"phase {pod.phase}"
    if pod.terminating:
        return "terminating"
    if pod.node_name is None:
        return "not bound"
    return f"bound to {pod.node_name}"
