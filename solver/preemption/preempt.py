"""Preemption and reclaim: evict running pods so that waiting gangs can run, exactly and sparingly.

Volcano runs its preempt and reclaim actions after allocate; so does vcsat, each as a small exact
CP-SAT model over what allocate left: the gangs still waiting (the *preemptors*), the running pods
that may go (the *victims*), and the room left on each node.

- **preempt** acts inside one queue: a victim has strictly lower priority than a preemptor that
  uses its room (on each node, pods of priority at most p only use room freed by victims below p);
- **reclaim** acts across queues: a queue below its deserved share takes room from reclaimable
  queues above theirs, never more than their excess on their dominant resource. Queue priority
  (``Queue.spec.priority``) orders, it grants nothing, as in Volcano: the reclaim action serves the
  waiting queues in QueueOrderFn order (higher priority first), and the victims of other queues in
  the reverse of it (lower-priority queues' pods go first); a queue at or above its share reclaims
  nothing whatever its priority, and the victims' queues still give back only their excess. Here:
  preemptor work is ranked by (queue priority, priority), and victims in higher-priority queues
  are spared before anything else of the victims' order.

Topology spread (``DoNotSchedule``) is modelled as DefaultPreemption reads it, with the victims
removed from the counts (:mod:`vcsat.solver.preemption.spread`): gangs whose pods carry or match a
constraint preempt, pods a constraint counts may be victims, and every pod placed this cycle that
carries a constraint stays within its skew once the victims are gone. (Without that model, as
``preempt_and_reclaim`` runs when given no ``spread``, such gangs are no preemptors and such pods
no victims.)

In both, a victim's gang keeps at least its minMember or goes whole; pods that conformance
protects (kube-system, critical priority classes, ``volcano.sh/preemptable: "false"``,
terminating) are never victims. The objective, in order: the most preemptor work placed (by
priority), then the fewest PodDisruptionBudget violations (victims that leave every budget
intact are taken when they exist, as kube-scheduler's DefaultPreemption orders candidates), then
victims of the highest priority spared first, then the fewest victims, then the youngest victims
first. Preemptors are *nominated*: they are bound in a later cycle, once their
victims are gone.

A gang held within one domain by a hard ``networkTopology`` is placed (bound or nominated) in one
such domain, as allocate places it: room freed in two racks for a rack-bound gang is room it
never runs in.

Rules between pods (required anti-affinity by any topology key, host ports, the preemptor's
required affinity) are modelled as DefaultPreemption reads them
(:mod:`vcsat.solver.preemption.antiaffinity`): a victim's removal may lift a conflict in its
domain, and a preemptor's required affinity must keep a matching pod that stays. A running pod
that another running pod's required affinity relies on (its terms select it in that pod's domain)
is no victim, nor is one that a pod placed this cycle relies on, so no eviction leaves a placed
pod's required affinity unsatisfied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray

from vcsat.model import Pod
from vcsat.model.conformance import protection
from vcsat.model.gpus import GpuHoldings, gpu_holdings
from vcsat.solver.fresh_model import new_cp_model
from vcsat.solver.gang_minimum import reaches_minimum
from vcsat.solver.greedy import gang_order
from vcsat.solver.objectives.fairness import SHARE_SCALE, fair_resources
from vcsat.solver.preemption.antiaffinity import AntiAffinity, victims_by_key
from vcsat.solver.preemption.attach_freed import JointSlot, freed_attach_slots, holds_shared, joint_attach_slots
from vcsat.solver.preemption.spread import SpreadRules
from vcsat.solver.problem import Gang, Problem, Shape
from vcsat.solver.rules import predicates
from vcsat.solver.rules.interpod import affinity_anchors
from vcsat.solver.rules.spread import counted_pods
from vcsat.solver.rules.volumes import ATTACHABLE_PREFIX
from vcsat.solver.search.levels import Level, Stage, make_level, plan_stages
from vcsat.solver.search.staged import SearchClock, StageResult, new_solver, solve_stages, workers_for
from vcsat.solver.units import units_for

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

MAX_PREEMPTORS = 16
"""Gangs considered per model: the highest-ranked waiting ones; the rest try again next cycle."""
NODES_PER_CLASS = 32
"""Candidate nodes per preemptor class: at least this many ..."""
NODES_PER_POD = 4
"""... or this many per pod of the class, the likeliest first (see ``_run``)."""
FIRST_STAGE_SHARE = 0.6
"""Of a run's budget, what its first stage (the preemptors' work) may use."""
MIN_STAGE_SECONDS = 0.02

Reason = Literal["preempt", "reclaim"]


@dataclass(frozen=True)
class Victim:
    index: int
    pod: Pod
    node: int
    queue: str
    request: tuple[int, ...]
    gang: str
    holdings: _NodeHoldings = field(repr=False, compare=False)

    @property
    def gpu_ids(self) -> tuple[int, ...]:
        """The whole GPU indices the pod holds on its node (only whole GPUs are listed)."""
        return self.holdings.whole(self.node, self.pod) if self.pod.gpus > 0 else ()


class _NodeHoldings:
    """Per node, which GPU indices its bound pods hold: read once per node, and only for the nodes
    whose victims' indices are asked (those evicted for a nomination)."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.of_node: dict[int, GpuHoldings] = {}

    def whole(self, node: int, pod: Pod) -> tuple[int, ...]:
        holdings = self.of_node.get(node)
        if holdings is None:
            name = self.problem.nodes[node].name
            holdings = gpu_holdings(self.problem.nodes[node].gpus, self.problem.snapshot.pods_on_node.get(name, ()))
            self.of_node[node] = holdings
        return holdings.whole.get(pod.key, ())


class EligibleNodes:
    """Per eligibility key, the indices of the nodes a pod with it passes, as an array: read once
    per phase, since every run asks again for its preemptors' classes (the runs' candidate nodes and
    the early test of who could run), and at ten thousand nodes each reading is a scan of all of them."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.of_key: dict[predicates.EligibilityKey, NDArray[np.int64]] = {}

    def __call__(self, key: predicates.EligibilityKey) -> NDArray[np.int64]:
        found = self.of_key.get(key)
        if found is None:
            found = np.array(self.problem.eligible_nodes(key), dtype=np.int64)
            self.of_key[key] = found
        return found


@dataclass
class Evictions:
    """What the preempt and reclaim phases decided."""

    placed: set[int] = field(default_factory=set)
    count: dict[int, int] = field(default_factory=dict)
    on_node: dict[tuple[int, int], int] = field(default_factory=dict)
    """Per (pod class, node): preemptor pods landing there."""
    evicted: dict[str, Reason] = field(default_factory=dict)
    """Per victim pod key: why it goes."""
    evicted_on: dict[int, list[Victim]] = field(default_factory=dict)
    nominated: set[int] = field(default_factory=set)
    """Placed gangs that wait for victims (all their pods are nominations)."""
    budget_used: dict[str, int] = field(default_factory=dict)
    """Per PodDisruptionBudget key: disruptions the evictions decided so far take from it."""
    notes: list[str] = field(default_factory=list)
    spent: float = 0.0
    """Deterministic seconds the models used."""

    def placed_gangs(self, problem: Problem) -> list[Gang]:
        return [problem.gangs[g] for g in sorted(self.placed)]


def spread_bound(problem: Problem, gang: Gang) -> bool:
    """Whether a gang's pods carry or match a topology spread constraint of this cycle."""
    return any(c in group.carriers or c in group.members for group in problem.spread for c in gang.classes)


def victims_of(problem: Problem, spread_counted: bool = False) -> list[Victim]:
    """Every running pod of ours that conformance lets go, with its node and queue (pods a spread
    constraint counts only with ``spread_counted``: when the model keeps the counts)."""
    snapshot = problem.snapshot
    node_of = {node.name: i for i, node in enumerate(problem.nodes)}
    out: list[Victim] = []
    holdings = _NodeHoldings(problem)
    names = problem.resources
    zeros = [0] * len(names)
    # Pods a topology spread constraint of this cycle counts are no victims (see the docstring).
    counted = counted_pods(snapshot, problem.nodes, problem.spread) if problem.spread and not spread_counted else set()
    # Nor are pods another running pod's required affinity relies on (see the docstring).
    counted |= affinity_anchors(snapshot, problem.nodes)
    for pod in snapshot.pods:
        if not pod.bound or pod.node_name not in node_of or protection(pod) or pod.key in counted:
            continue
        queue = snapshot.queue_of(pod)
        if queue is None:
            continue
        out.append(
            Victim(
                index=len(out),
                pod=pod,
                node=node_of[pod.node_name],
                queue=queue,
                request=tuple(map(pod.requests.get, names, zeros)),
                gang=pod.group if pod.group is not None else pod.key,
                holdings=holdings,
            )
        )
    attach = problem.attach
    if attach is not None:
        out = [v for v in out if not holds_shared(snapshot, problem.nodes, v.pod, v.node, attach)]
        out = [replace(v, index=i) if v.index != i else v for i, v in enumerate(out)]
    if any(name.startswith(ATTACHABLE_PREFIX) for name in names):
        # Attach slots the victims' CSI volumes free (NodeVolumeLimits after the eviction).
        shared = frozenset(problem.attach.driver) if problem.attach is not None else frozenset()
        slots = freed_attach_slots(snapshot, problem.nodes, names, [(v.pod, v.node) for v in out], shared)
        if slots:
            out = [
                replace(v, request=tuple(a + slots[v.pod.key].get(r, 0) for r, a in enumerate(v.request)))
                if v.pod.key in slots
                else v
                for v in out
            ]
    return out


def dominant(problem: Problem, queue: str) -> str | None:
    """The resource a queue's share is judged on: the allocate objective's own
    (:func:`fair_resources`), so that reclaim never calls a queue below its share on one resource
    while the fairness levels measure it on another (a tie between resources, or one the queue is
    given all it asks of)."""
    found = fair_resources(problem, queue)
    return found[0] if found else None


def preempt_and_reclaim(
    problem: Problem,
    waiting: list[Gang],
    room: list[list[int]],
    usage: dict[str, dict[str, int]],
    *,
    budget: float,
    clock: SearchClock | None = None,
    anti: AntiAffinity | None = None,
    spread: SpreadRules | None = None,
) -> Evictions:
    """Run preempt (per queue) then reclaim over ``room`` (what allocate left, changed in place),
    within ``budget`` deterministic seconds of CP-SAT (never the wall clock: same input, same
    decision), the ``clock``'s wall deadline as the outer stop."""
    out = Evictions()
    policy = problem.policy
    clock = clock if clock is not None else SearchClock(workers=workers_for(policy))
    if spread is None:
        waiting = [gang for gang in waiting if not spread_bound(problem, gang)]
    victims = victims_of(problem, spread is not None) if (policy.preempt or policy.reclaim) and waiting else []
    if not victims:
        return out
    queues = sorted({gang.queue for gang in waiting}) if policy.preempt else []
    runs = len(queues) + (1 if policy.reclaim else 0)
    eligible = EligibleNodes(problem)

    def share(number: int) -> float:
        """Run ``number``'s budget: what is left of the phase, shared by the runs still to come."""
        return max(0.0, budget - out.spent) / max(1, runs - number)

    for number, queue in enumerate(queues):
        preemptors = [g for g in waiting if g.queue == queue and g.index not in out.placed]
        top = max(g.priority for g in preemptors)
        mine = [v for v in victims if v.queue == queue and v.pod.priority < top and v.pod.key not in out.evicted]
        if mine:
            _run(problem, preemptors, mine, room, usage, "preempt", out, share(number), clock, anti, spread, eligible)
    if policy.reclaim and problem.deserved:
        below = {q for q in problem.deserved if _share(problem, usage, q) < 1}
        reclaimable = {queue.name for queue in problem.snapshot.queues if queue.reclaimable}
        above = {q for q in problem.deserved if _share(problem, usage, q) > 1 and q in reclaimable}
        preemptors = [g for g in waiting if g.queue in below and g.index not in out.placed]
        theirs = [v for v in victims if v.queue in above and v.pod.key not in out.evicted]
        if preemptors and theirs:
            _run(
                problem, preemptors, theirs, room, usage, "reclaim", out, share(runs - 1), clock, anti, spread, eligible
            )
    return out


def eviction_runs(problem: Problem, waiting: list[Gang], usage: dict[str, dict[str, int]]) -> int:
    """How many runs :func:`preempt_and_reclaim` over ``waiting`` and ``usage`` may start, at most
    (:func:`eviction_run_sizes`'s runs). What the phase's models will cost grows with it.

    Exact at 0, so the phase can skip its set-up (victims, rules between pods, spread counts):
    every victim a run could get is such a pod (the victims are fewer still), and with no preempt
    run ``usage`` is the one reclaim reads."""
    return len(eviction_run_sizes(problem, waiting, usage))


def eviction_run_sizes(
    problem: Problem, waiting: list[Gang], usage: dict[str, dict[str, int]]
) -> dict[tuple[Reason, str], int]:
    """The runs :func:`preempt_and_reclaim` over ``waiting`` and ``usage`` may start, each with the
    preemptor gangs its model may hold at most (:data:`MAX_PREEMPTORS`, or fewer waiting gangs):
    keyed ``("preempt", queue)`` for each waiting gang's queue where a bound pod that conformance
    lets go runs below the queue's highest waiting priority, and ``("reclaim", "")`` when such a
    pod runs in a reclaimable queue above its share while a waiting gang's queue is below its own,
    or whenever a preempt run may start (it changes the usage reclaim reads). A run's cost grows
    with its model, and a model of a few gangs costs a small part of a full one: the wall plan
    prices the phase by these sizes (:meth:`vcsat.solver.deadline.WallPlan.evictions_cost`)."""
    policy = problem.policy
    if not waiting or not (policy.preempt or policy.reclaim):
        return {}
    top: dict[str, int] = {}
    if policy.preempt:
        for gang in waiting:
            top[gang.queue] = max(top.get(gang.queue, gang.priority), gang.priority)
    above: set[str] = set()
    if (
        policy.reclaim
        and problem.deserved
        and any(_share(problem, usage, q) < 1 for q in {g.queue for g in waiting} if q in problem.deserved)
    ):
        reclaimable = {queue.name for queue in problem.snapshot.queues if queue.reclaimable}
        above = {q for q in problem.deserved if q in reclaimable and _share(problem, usage, q) > 1}
    if not top and not above:
        return {}
    preempting: set[str] = set()
    reclaiming = False
    after_preempt = policy.reclaim and bool(problem.deserved)  # reclaim reads the usage preempt left
    snapshot = problem.snapshot
    for pod in snapshot.pods:
        if not pod.bound:
            continue
        queue = snapshot.queue_of(pod)
        if queue is None:
            continue
        here = queue in top and queue not in preempting and pod.priority < top[queue]
        there = not reclaiming and queue in above
        if (here or there) and not protection(pod):
            if here:
                preempting.add(queue)
            reclaiming = reclaiming or there
            if len(preempting) == len(top) and (reclaiming or not above or after_preempt):
                break  # every run may start: no pod can say more
    gangs: dict[str, int] = {}
    for gang in waiting:
        gangs[gang.queue] = gangs.get(gang.queue, 0) + 1
    out: dict[tuple[Reason, str], int] = {
        ("preempt", queue): min(MAX_PREEMPTORS, gangs[queue]) for queue in sorted(preempting)
    }
    if reclaiming or (after_preempt and bool(preempting)):
        # Reclaim's preemptors are the waiting gangs of queues below their share once preempt
        # has run: at most those of queues with a share.
        out[("reclaim", "")] = min(MAX_PREEMPTORS, sum(n for q, n in gangs.items() if q in problem.deserved))
    return out


def _share(problem: Problem, usage: dict[str, dict[str, int]], queue: str) -> float:
    name = dominant(problem, queue)
    if name is None:
        return 1.0
    return usage.get(queue, {}).get(name, 0) / problem.deserved[queue][name]


def _run(
    problem: Problem,
    preemptors: list[Gang],
    victims: list[Victim],
    room: list[list[int]],
    usage: dict[str, dict[str, int]],
    reason: Reason,
    out: Evictions,
    budget: float,
    clock: SearchClock,
    anti: AntiAffinity | None = None,
    spread: SpreadRules | None = None,
    eligible: EligibleNodes | None = None,
) -> None:
    from ortools.sat.python import cp_model

    eligible = eligible if eligible is not None else EligibleNodes(problem)
    on_node: dict[int, list[Victim]] = {}
    for victim in victims:
        on_node.setdefault(victim.node, []).append(victim)
    now_room = np.array(room, dtype=np.int64).reshape(len(room), len(problem.resources))
    freed_room = np.zeros_like(now_room)
    if victims:
        requests = np.array([v.request for v in victims], dtype=np.int64)
        np.add.at(freed_room, np.array([v.node for v in victims]), requests)
    joint = _joint_slots(problem, victims)
    for slot in joint:  # a volume only victims share: one slot once they are all gone
        freed_room[slot.node, slot.resource] += 1
    with_victims = np.zeros(len(room), dtype=np.int64)
    for node, vs in on_node.items():
        with_victims[node] = len(vs)
    best_room = now_room + freed_room
    freeable = {node: best_room[node].tolist() for node in on_node}
    ranked = sorted(preemptors, key=lambda g: _preemptor_order(problem, g))
    preemptors = _could_run(problem, ranked, now_room, freeable, eligible)
    if not preemptors:
        out.notes.append(f"{reason}: no waiting gang fits even with every victim evicted")
        return

    cp = new_cp_model()
    upper: dict[int, int] = {}
    placed = {g.index: cp.new_bool_var(f"placed[{g.index}]") for g in preemptors}
    x: dict[tuple[int, int], cp_model.IntVar] = {}
    for gang in preemptors:
        upper[placed[gang.index].index] = 1
        first = len(x)
        for c in gang.classes:
            shape = problem.shapes[problem.classes[c].shape]
            # Nodes with victims, and nodes with room left after allocate (a preemptor's other pods,
            # or an elastic gang's extra ones, may fit there without evicting anyone). Only the
            # likeliest few per class: those with room now, then those with the fewest victims,
            # so the model stays small enough to solve within the cycle on a thousand busy nodes.
            pods = len(problem.classes[c].pods)
            nodes = _within_anchor(problem, shape, eligible(shape.eligibility))
            for node, fit in _likeliest(
                shape.request, nodes, best_room, now_room, with_victims, max(NODES_PER_CLASS, NODES_PER_POD * pods)
            ):
                var = cp.new_int_var(0, min(fit, pods), f"x[{c},{node}]")
                x[(c, node)] = var
                upper[var.index] = min(fit, pods)
        _within_one_domain(cp, problem, gang, list(x.items())[first:], upper)
    # Victims on nodes no preemptor can use are never worth evicting.
    reachable = {node for (_, node) in x}
    victims = [v for v in victims if v.node in reachable]
    on_node = {node: vs for node, vs in on_node.items() if node in reachable}
    if not victims or not x:
        return
    evict = {v.index: cp.new_bool_var(f"evict[{v.index}]") for v in victims}
    joint_gone = _joint_variables(cp, joint, victims, evict, upper)
    # Requests enter CP-SAT divided by their common divisor, rooms floored: exact (solver/units.py).
    units = units_for(problem.resources, [*(s.request for s in problem.shapes), *(v.request for v in victims)])
    small = units.request
    for var in evict.values():
        upper[var.index] = 1
    if anti is not None:  # required anti-affinity per node: a victim's removal may lift a conflict
        victim_of = victims_by_key([(v.index, v.pod) for v in victims])
        anti.constrain(cp, x, upper, evict, victim_of, out.evicted, reason == "preempt")
    if spread is not None:  # topology spread counts with the victims gone and the preemptors in
        spread.constrain(cp, x, upper, evict, [(v.index, v.pod, v.node) for v in victims])

    count: dict[int, cp_model.LinearExprT] = {}
    for gang in preemptors:
        for c in gang.classes:
            count[c] = cp_model.LinearExpr.sum([var for (cc, _), var in x.items() if cc == c])
            cp.add(count[c] <= len(problem.classes[c].pods) * placed[gang.index])
        total = cp_model.LinearExpr.sum([count[c] for c in gang.classes])
        cp.add(total >= max(1, gang.need) * placed[gang.index])
        for task, need in gang.task_need.items():
            cp.add(
                cp_model.LinearExpr.sum([count[c] for c in gang.classes if problem.classes[c].task == task])
                >= need * placed[gang.index]
            )

    # Capacity, and on each node room freed by a victim only for preemptors it may make room for.
    by_node: dict[int, list[tuple[int, cp_model.IntVar]]] = {}
    for (c, node), var in x.items():
        by_node.setdefault(node, []).append((c, var))
    attach_columns = set(problem.attach.resource.values()) if problem.attach is not None else set()
    for node, terms in by_node.items():
        local = on_node.get(node, [])
        thresholds = sorted({problem.gangs[problem.classes[c].gang].priority for c, _ in terms})
        for r in range(len(problem.resources)):
            asked = [(c, var) for c, var in terms if problem.shapes[problem.classes[c].shape].request[r] > 0]
            if not asked or r in attach_columns:  # attach slots: shared_attach_limits below
                continue
            for threshold in thresholds if reason == "preempt" else thresholds[-1:]:
                users = [
                    (var, small(r, problem.shapes[problem.classes[c].shape].request[r]))
                    for c, var in asked
                    if reason == "reclaim" or problem.gangs[problem.classes[c].gang].priority <= threshold
                ]
                freed = [
                    (evict[v.index], small(r, v.request[r]))
                    for v in local
                    if v.request[r] > 0 and (reason == "reclaim" or v.pod.priority < threshold)
                ] + [
                    (gone, small(r, 1))
                    for gone, slot, top in joint_gone.get(node, [])
                    if slot.resource == r and (reason == "reclaim" or top < threshold)
                ]
                cp.add(
                    cp_model.LinearExpr.weighted_sum([u for u, _ in users], [k for _, k in users])
                    <= units.room(r, room[node][r])
                    + cp_model.LinearExpr.weighted_sum([f for f, _ in freed], [k for _, k in freed])
                )

    slots = (
        shared_attach_limits(
            cp, problem, by_node, room, upper, _attach_freed(problem, by_node, on_node, evict, joint_gone, reason)
        )
        if problem.attach is not None
        else {}
    )

    # A victim goes only for a preemptor it justifies. In preempt, by the lowest priority among
    # the gang's waiting pods as well as the gang's own: any of its pods may be the one placed.
    lowest = {g.index: _lowest_priority(problem, g) for g in preemptors} if reason == "preempt" else {}
    for victim in victims:
        justifying = [
            placed[g.index] for g in preemptors if reason == "reclaim" or lowest[g.index] > victim.pod.priority
        ]
        cp.add(evict[victim.index] <= cp_model.LinearExpr.sum(justifying))

    # A victim gang keeps its minMember or goes whole.
    by_gang: dict[str, list[Victim]] = {}
    for victim in victims:
        by_gang.setdefault(victim.gang, []).append(victim)
    for key, members in by_gang.items():
        group = problem.snapshot.podgroup_by_key.get(key)
        running = [p for p in problem.snapshot.pods_of_group.get(key, ()) if p.bound] if group else [members[0].pod]
        minimum = group.min_member if group is not None else 1
        gone = cp_model.LinearExpr.sum([evict[v.index] for v in members])
        spare = max(0, len(running) - minimum)
        if len(members) == len(running):
            whole = cp.new_bool_var(f"whole[{key}]")
            cp.add(gone >= len(running) * whole)
            cp.add(gone <= spare + minimum * whole)
        else:
            cp.add(gone <= spare)

    # Reclaim takes no more than a queue's excess over its deserved share.
    if reason == "reclaim":
        for queue in sorted({v.queue for v in victims}):
            name = dominant(problem, queue)
            if name is None or name not in problem.resources:
                continue
            r = problem.resources.index(name)
            excess = usage.get(queue, {}).get(name, 0) - problem.deserved[queue][name]
            mine = [v for v in victims if v.queue == queue and v.request[r] > 0]
            cp.add(
                cp_model.LinearExpr.weighted_sum([evict[v.index] for v in mine], [small(r, v.request[r]) for v in mine])
                <= units.room(r, max(0, excess))
            )

    # Queue capability (own and ancestors'): what the queue's subtree holds after allocate, plus
    # what preemptors add, less what victims in that subtree free.
    capped = sorted({q for g in preemptors for q in problem.caps_of(g.queue)})
    for queue in capped:
        capability = problem.snapshot.queue_by_name[queue].capability or {}
        subtree = {q for q in usage if queue in problem.lineage(q)}
        for name, cap in capability.items():
            if name not in problem.resources:
                continue
            r = problem.resources.index(name)
            held = sum(usage[q].get(name, 0) for q in subtree)
            adds = [
                (var, small(r, problem.shapes[problem.classes[c].shape].request[r]))
                for (c, _), var in x.items()
                if queue in problem.lineage(problem.gangs[problem.classes[c].gang].queue)
            ]
            frees = [(evict[v.index], small(r, v.request[r])) for v in victims if queue in problem.lineage(v.queue)]
            cp.add(
                cp_model.LinearExpr.weighted_sum([a for a, _ in adds], [k for _, k in adds])
                <= units.room(r, cap - held)
                + cp_model.LinearExpr.weighted_sum([f for f, _ in frees], [k for _, k in frees])
            )

    over_budget = _budget_violations(cp, problem, victims, evict, upper, out.budget_used)
    levels = _levels(problem, preemptors, victims, placed, x, evict, upper, over_budget)
    # Nothing placed, nobody evicted is always feasible: a hint that gives every stage a solution
    # from the start, so a short budget ends with an answer, not UNKNOWN.
    for var in [*placed.values(), *x.values(), *evict.values()]:
        cp.add_hint(var, 0)
    stages = plan_stages(levels)
    spent_before = clock.spent

    def plan(number: int, stage: Stage) -> float:
        # The first stage (the preemptors' work) matters most; later ones share what is left.
        left = budget - (clock.spent - spent_before)
        return max(MIN_STAGE_SECONDS, left * (FIRST_STAGE_SHARE if number == 0 else 1.0 / (len(stages) - number)))

    def done(number: int, stage: Stage, result: StageResult) -> bool:
        out.notes.append(f"{reason}: {stage.names}: {result.name}")
        return True

    solver = new_solver(problem.policy, clock)
    values, _ = solve_stages(cp, solver, stages, clock, plan=plan, done=done)
    out.spent += clock.spent - spent_before
    if values is None:
        return
    _apply(problem, preemptors, victims, placed, x, evict, values, room, usage, reason, out, joint)
    for (node, r), flags in slots.items():  # shared volumes new to a node take one slot each
        room[node][r] -= sum(values[flag.index] for flag in flags)
    landed = [
        (c, node, values[var.index])
        for (c, node), var in x.items()
        if values[var.index] and values[placed[problem.classes[c].gang].index]
    ]
    if anti is not None:
        anti.note((problem.classes[c].pods[0], node) for c, node, _ in landed)
    if spread is not None:
        spread.note(landed, [(v.pod, v.node) for v in victims if values[evict[v.index].index]])


def shared_attach_limits(
    cp: cp_model.CpModel,
    problem: Problem,
    by_node: Mapping[int, list[tuple[int, cp_model.IntVar]]],
    room: list[list[int]],
    upper: Mapping[int, int],
    freed: Mapping[tuple[int, int], list[tuple[cp_model.IntVar, int]]] | None = None,
) -> dict[tuple[int, int], list[cp_model.IntVar]]:
    """NodeVolumeLimits for the preemptors, as in allocate (:mod:`vcsat.solver.constraints.attach`):
    per limited (node, driver), the preemptors' own volumes plus each shared volume new to the node
    once stay within the slots allocate left plus those the evicted victims free (``freed``, per
    (node, resource index): (evict, slots), see :mod:`vcsat.solver.preemption.attach_freed`)."""
    from ortools.sat.python import cp_model

    attach = problem.attach
    assert attach is not None
    out: dict[tuple[int, int], list[cp_model.IntVar]] = {}
    for node, terms in sorted(by_node.items()):
        held = attach.attached.get(node, frozenset())
        flags: dict[str, list[cp_model.IntVar]] = {}
        own: dict[str, list[tuple[cp_model.IntVar, int]]] = {}
        made: dict[str, cp_model.IntVar] = {}
        for c, var in terms:
            shape = problem.shapes[problem.classes[c].shape]
            for driver, r in attach.resource.items():
                if (node, driver) in attach.limited and shape.request[r] > 0:
                    own.setdefault(driver, []).append((var, shape.request[r]))
            for volume in sorted(shape.volumes):
                driver = attach.driver[volume]
                if (node, driver) not in attach.limited or volume in held:
                    continue
                flag = made.get(volume)
                if flag is None:
                    flag = made[volume] = cp.new_bool_var(f"attach[{volume},{node}]")
                    flags.setdefault(driver, []).append(flag)
                cp.add(var <= upper[var.index] * flag)
        for driver in sorted(set(flags) | set(own)):
            mine = own.get(driver, [])
            r = attach.resource[driver]
            gone = (freed or {}).get((node, r), [])
            cp.add(
                cp_model.LinearExpr.weighted_sum(
                    [v for v, _ in mine] + flags.get(driver, []),
                    [k for _, k in mine] + [1] * len(flags.get(driver, [])),
                )
                <= max(0, room[node][r]) + cp_model.LinearExpr.weighted_sum([e for e, _ in gone], [k for _, k in gone])
            )
            out[(node, r)] = flags.get(driver, [])
    return out


def _within_anchor(problem: Problem, shape: Shape, nodes: NDArray[np.int64]) -> NDArray[np.int64]:
    """Of ``nodes``, those in the domain the shape's gang's running pods hold it to (all of them
    for a shape without one): room freed elsewhere is room a hard-topology gang never takes."""
    if shape.anchor is None or problem.domains is None:
        return nodes
    tier, domain = shape.anchor
    of_node = problem.domains.of_node
    return nodes[np.array([of_node[int(n)][tier] == domain for n in nodes], dtype=np.bool_)] if len(nodes) else nodes


def _within_one_domain(
    cp: cp_model.CpModel,
    problem: Problem,
    gang: Gang,
    cells: list[tuple[tuple[int, int], cp_model.IntVar]],
    upper: dict[int, int],
) -> None:
    """A gang whose hard ``networkTopology`` keeps it within one domain of a tier gets its pods
    (bound now or nominated) in one such domain, as allocate places it (:mod:`vcsat.solver.
    constraints.topology`): nodes of other domains freed for it would hold pods that never run
    together. Nodes outside every domain of the tier are one domain, as there."""
    tier = problem.highest_tier(gang)
    domains = problem.domains
    if tier is None or domains is None:
        return
    by_domain: dict[str, list[cp_model.IntVar]] = {}
    for (_, node), var in cells:
        by_domain.setdefault(domains.of_node[node][tier], []).append(var)
    chosen = []
    for name, cell_vars in sorted(by_domain.items()):
        within = cp.new_bool_var(f"within[{gang.index},{tier},{name}]")
        upper[within.index] = 1
        chosen.append(within)
        for var in cell_vars:
            cp.add(var <= upper[var.index] * within)
    cp.add(sum(chosen) <= 1)


def _joint_slots(problem: Problem, victims: list[Victim]) -> list[JointSlot]:
    """The run's joint attach slots (:func:`vcsat.solver.preemption.attach_freed.joint_attach_slots`):
    none unless the problem counts some ``attachable-volumes-csi-*`` resource."""
    if not any(name.startswith(ATTACHABLE_PREFIX) for name in problem.resources):
        return []
    shared = frozenset(problem.attach.driver) if problem.attach is not None else frozenset()
    located = [(v.pod, v.node) for v in victims]
    return joint_attach_slots(problem.snapshot, problem.nodes, problem.resources, located, shared)


def _joint_variables(
    cp: cp_model.CpModel,
    joint: list[JointSlot],
    victims: list[Victim],
    evict: Mapping[int, cp_model.IntVar],
    upper: dict[int, int],
) -> dict[int, list[tuple[cp_model.IntVar, JointSlot, int]]]:
    """Per node: for each joint slot whose users are all victims of the model, a 0/1 that may be
    1 only when every user is evicted, with the highest priority among them (in preempt the slot
    serves only preemptors above it)."""
    of_key = {v.pod.key: v for v in victims}
    out: dict[int, list[tuple[cp_model.IntVar, JointSlot, int]]] = {}
    for slot in joint:
        users = [of_key.get(key) for key in slot.users]
        if any(user is None for user in users):
            continue
        flag = cp.new_bool_var(f"joint[{slot.node},{slot.resource},{slot.users[0]}]")
        upper[flag.index] = 1
        for user in users:
            assert user is not None
            cp.add(flag <= evict[user.index])
        top = max(user.pod.priority for user in users if user is not None)
        out.setdefault(slot.node, []).append((flag, slot, top))
    return out


def _lowest_priority(problem: Problem, gang: Gang) -> int:
    """The gang's priority, or lower when one of its waiting pods has a lower priority of its own
    (the validator judges a victim by the priorities of the pods placed)."""
    pods = [pod for c in gang.classes for pod in problem.classes[c].pods]
    return min([gang.priority, *(pod.priority for pod in pods)])


def _attach_freed(
    problem: Problem,
    by_node: Mapping[int, list[tuple[int, cp_model.IntVar]]],
    on_node: Mapping[int, list[Victim]],
    evict: Mapping[int, cp_model.IntVar],
    joint_gone: Mapping[int, list[tuple[cp_model.IntVar, JointSlot, int]]],
    reason: Reason,
) -> dict[tuple[int, int], list[tuple[cp_model.IntVar, int]]]:
    """Per (node, attach resource of a shared volume's driver): the victims' freed slots, each as
    (evict, slots), and the joint slots (their variable, one slot). In preempt, only victims below
    every preemptor that may land on the node (one threshold for the node's shared-volume row:
    never room freed by a pod of a preemptor's own priority or above)."""
    attach = problem.attach
    assert attach is not None
    out: dict[tuple[int, int], list[tuple[cp_model.IntVar, int]]] = {}
    for node, terms in by_node.items():
        local = on_node.get(node, [])
        if not local:
            continue
        lowest = min(problem.gangs[problem.classes[c].gang].priority for c, _ in terms)
        for r in set(attach.resource.values()):
            gone = [
                (evict[v.index], v.request[r])
                for v in local
                if v.request[r] > 0 and (reason == "reclaim" or v.pod.priority < lowest)
            ] + [
                (flag, 1)
                for flag, slot, top in joint_gone.get(node, [])
                if slot.resource == r and (reason == "reclaim" or top < lowest)
            ]
            if gone:
                out[(node, r)] = gone
    return out


def _budget_violations(
    cp: cp_model.CpModel,
    problem: Problem,
    victims: list[Victim],
    evict: dict[int, cp_model.IntVar],
    upper: dict[int, int],
    used: dict[str, int],
) -> list[cp_model.IntVar]:
    """Per PodDisruptionBudget that selects some victim: how many evictions exceed what it allows.

    kube-scheduler's DefaultPreemption prefers the candidate with the fewest victims that violate
    a budget (a budget allows ``status.disruptionsAllowed``, less what earlier evictions of this
    cycle took). Here a victim selected by two exhausted budgets counts once per budget: the same
    wherever each pod has at most one budget, which is what Kubernetes' eviction API expects.
    """
    from ortools.sat.python import cp_model

    out: list[cp_model.IntVar] = []
    for budget in problem.snapshot.disruption_budgets:
        covered = [v for v in victims if budget.selects(v.pod.namespace, v.pod.labels)]
        if not covered:
            continue
        allowed = max(0, budget.disruptions_allowed - used.get(budget.key, 0))
        if allowed >= len(covered):
            continue
        over = cp.new_int_var(0, len(covered) - allowed, f"over_budget[{budget.key}]")
        cp.add(over >= cp_model.LinearExpr.sum([evict[v.index] for v in covered]) - allowed)
        upper[over.index] = len(covered) - allowed
        out.append(over)
    return out


def _preemptor_order(problem: Problem, gang: Gang) -> tuple[int, int, float, str]:
    """Volcano's order of reclaimers: queues of higher priority first, then the job order."""
    return (-problem.queue_priority(gang.queue), *gang_order(gang))


def _could_run(
    problem: Problem,
    ranked: list[Gang],
    room: list[list[int]] | NDArray[np.int64],
    freeable: dict[int, list[int]],
    eligible: EligibleNodes | None = None,
) -> list[Gang]:
    """The first :data:`MAX_PREEMPTORS` of ``ranked`` whose minimum could fit if every victim
    went: each class counted alone on every eligible node (a relaxation, so a gang it drops can
    never be placed by this phase). Gangs that cannot run are no use to the model, and without
    this filter they would crowd out those that can."""
    if not ranked:
        return []
    eligible = eligible if eligible is not None else EligibleNodes(problem)
    best = np.maximum(np.array(room, dtype=np.int64).reshape(len(room), -1), 0)
    for node, row in freeable.items():
        best[node] = np.maximum(np.array(row, dtype=np.int64), 0)
    fits_of_shape: dict[int, int] = {}

    def fits(shape_index: int) -> int:
        if shape_index not in fits_of_shape:
            shape = problem.shapes[shape_index]
            nodes = _within_anchor(problem, shape, eligible(shape.eligibility))
            asked = [r for r, amount in enumerate(shape.request) if amount > 0]
            if not len(nodes) or not asked:
                fits_of_shape[shape_index] = (1 << 30) if len(nodes) else 0
            else:
                amounts = np.array([shape.request[r] for r in asked], dtype=np.int64)
                columns = np.array(asked, dtype=np.int64)
                fits_of_shape[shape_index] = int(np.min(best[np.ix_(nodes, columns)] // amounts, axis=1).sum())
        return fits_of_shape[shape_index]

    out: list[Gang] = []
    for gang in ranked:
        if not reaches_minimum(problem, gang, fits):
            continue
        out.append(gang)
        if len(out) == MAX_PREEMPTORS:
            break
    return out


def _levels(
    problem: Problem,
    preemptors: list[Gang],
    victims: list[Victim],
    placed: dict[int, cp_model.IntVar],
    x: dict[tuple[int, int], cp_model.IntVar],
    evict: dict[int, cp_model.IntVar],
    upper: dict[int, int],
    over_budget: list[cp_model.IntVar],
) -> list[Level]:
    def unmeasured(_problem: Problem, _assignment: object) -> int:
        raise NotImplementedError("preemption levels are read from the solver, not measured")

    levels: list[Level] = []
    queue_priorities = sorted({problem.queue_priority(g.queue) for g in preemptors}, reverse=True)
    for queue_priority in queue_priorities:
        mine = [g for g in preemptors if problem.queue_priority(g.queue) == queue_priority]
        for rank in sorted({g.rank for g in mine}, reverse=True):
            terms = [
                (var, problem.classes[c].value)
                for (c, _), var in sorted(x.items())
                if problem.gangs[problem.classes[c].gang].rank == rank
                and problem.queue_priority(problem.gangs[problem.classes[c].gang].queue) == queue_priority
            ]
            name = f"preemptor work at priority {rank}"
            if len(queue_priorities) > 1:
                name += f" in queues of priority {queue_priority}"
            levels.append(make_level(name, terms, upper_of=upper, measure=unmeasured))
    # Then, as kube-scheduler orders preemption candidates, the fewest PodDisruptionBudget violations.
    if over_budget:
        levels.append(
            make_level(
                "fewest PodDisruptionBudget violations",
                [(var, -1) for var in over_budget],
                upper_of=upper,
                measure=unmeasured,
            )
        )
    # Reclaim takes from lower-priority queues first (Volcano's victim queue order).
    victim_queue_priorities = sorted({problem.queue_priority(v.queue) for v in victims}, reverse=True)
    if len(victim_queue_priorities) > 1:
        for queue_priority in victim_queue_priorities:
            terms = [(evict[v.index], -1) for v in victims if problem.queue_priority(v.queue) == queue_priority]
            levels.append(
                make_level(
                    f"victims in queues of priority {queue_priority} spared",
                    terms,
                    upper_of=upper,
                    measure=unmeasured,
                )
            )
    for priority in sorted({v.pod.priority for v in victims}, reverse=True):
        terms = [(evict[v.index], -1) for v in victims if v.pod.priority == priority]
        levels.append(make_level(f"victims of priority {priority} spared", terms, upper_of=upper, measure=unmeasured))
    levels.append(
        make_level("fewest victims", [(evict[v.index], -1) for v in victims], upper_of=upper, measure=unmeasured)
    )
    oldest = sorted(preemptors, key=lambda g: (g.created, g.key))
    levels.append(
        make_level(
            "older preemptors first",
            [(placed[g.index], len(oldest) - rank) for rank, g in enumerate(oldest)],
            upper_of=upper,
            measure=unmeasured,
        )
    )
    by_age = sorted(victims, key=lambda v: (v.pod.created, v.pod.key))
    levels.append(
        make_level(
            "younger victims first",
            [(evict[v.index], -(len(by_age) - rank)) for rank, v in enumerate(by_age)],
            upper_of=upper,
            measure=unmeasured,
        )
    )
    return levels


def _apply(
    problem: Problem,
    preemptors: list[Gang],
    victims: list[Victim],
    placed: dict[int, cp_model.IntVar],
    x: dict[tuple[int, int], cp_model.IntVar],
    evict: dict[int, cp_model.IntVar],
    values: dict[int, int],
    room: list[list[int]],
    usage: dict[str, dict[str, int]],
    reason: Reason,
    out: Evictions,
    joint: list[JointSlot],
) -> None:
    gone = [v for v in victims if values[evict[v.index].index]]
    freed_nodes = {v.node for v in gone}
    gone_keys = {v.pod.key for v in gone}
    joint_freed = [slot for slot in joint if gone_keys.issuperset(slot.users)]
    used: dict[int, list[int]] = {}
    for gang in preemptors:
        if not values[placed[gang.index].index]:
            continue
        out.placed.add(gang.index)
        nodes = set()
        for c in gang.classes:
            for (cc, node), var in x.items():
                k = values[var.index] if cc == c else 0
                if k:
                    out.count[c] = out.count.get(c, 0) + k
                    out.on_node[(c, node)] = out.on_node.get((c, node), 0) + k
                    nodes.add(node)
                    row = used.setdefault(node, [0] * len(problem.resources))
                    request = problem.shapes[problem.classes[c].shape].request
                    for r, amount in enumerate(request):
                        row[r] += k * amount
                    queue_usage = usage.setdefault(gang.queue, {})
                    for r, name in enumerate(problem.resources):
                        queue_usage[name] = queue_usage.get(name, 0) + k * request[r]
        if gone:
            # It relies on the evictions, for room or for its queue's capability: it waits for them.
            out.nominated.add(gang.index)
    for victim in gone:
        for budget in problem.snapshot.disruption_budgets:
            if budget.selects(victim.pod.namespace, victim.pod.labels):
                out.budget_used[budget.key] = out.budget_used.get(budget.key, 0) + 1
        out.evicted[victim.pod.key] = reason
        out.evicted_on.setdefault(victim.node, []).append(victim)
        queue_usage = usage.setdefault(victim.queue, {})
        for r, name in enumerate(problem.resources):
            queue_usage[name] = queue_usage.get(name, 0) - victim.request[r]
    # Room freed for these preemptors is theirs alone: what they leave of it is not lent on.
    for node in set(used) | freed_nodes:
        freed = [sum(v.request[r] for v in gone if v.node == node) for r in range(len(problem.resources))]
        for slot in joint_freed:
            if slot.node == node:
                freed[slot.resource] += 1
        took = used.get(node, [0] * len(problem.resources))
        for r in range(len(problem.resources)):
            room[node][r] = min(room[node][r], room[node][r] + freed[r] - took[r])


def _likeliest(
    request: tuple[int, ...],
    nodes: NDArray[np.int64],
    best: NDArray[np.int64],
    now: NDArray[np.int64],
    victims: NDArray[np.int64],
    limit: int | None = None,
) -> list[tuple[int, int]]:
    """(node, pods that fit) for the ``nodes`` where ``request`` fits once every victim there is
    gone (``best``), those that fit in the room left now first, then those with the fewest
    victims, then in node order; how many fit is the least, over the resources it asks, of room
    over request. Only the first ``limit`` of them when given (the rest are never turned into
    Python pairs: at ten thousand nodes most of them fit)."""
    asked = [r for r, amount in enumerate(request) if amount > 0]
    if not asked or not len(nodes):
        return []
    amounts = np.array([request[r] for r in asked], dtype=np.int64)
    columns = np.array(asked, dtype=np.int64)
    best_here = best[np.ix_(nodes, columns)]
    fitting = np.all(best_here >= amounts, axis=1)
    nodes = nodes[fitting]
    fit = np.min(best_here[fitting] // amounts, axis=1)
    later = np.any(now[np.ix_(nodes, columns)] < amounts, axis=1).astype(np.int64)
    order = np.lexsort((nodes, victims[nodes], later))[:limit]
    return list(zip(nodes[order].tolist(), fit[order].tolist(), strict=True))


__all__ = ["SHARE_SCALE", "Evictions", "Victim", "dominant", "preempt_and_reclaim", "victims_of"]
