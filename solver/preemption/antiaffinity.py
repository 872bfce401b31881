"""Preemption for pods with rules between pods, as kube-scheduler's DefaultPreemption reads them.

DefaultPreemption runs the filters again with the candidate victims removed: a victim's removal
can lift an anti-affinity or host-port conflict, not only free room, and it can also take away the
pod a required affinity relied on. Here, for the preemptors with isolated classes
(:mod:`vcsat.solver.rules.isolation`), that reads, per preemptor class and node:

- **anti-affinity, any topology key** (InterPodAffinity): a pod bound in the node's domain of a
  term's key (its own hostname, zone, rack, ...) that the class's required terms select, or whose
  own required anti-affinity term selects the class's pods (the node being in that term's domain
  of the bound pod), must be a victim of the run that may make room for the class (lower priority
  in preempt; any of the run's victims in reclaim), evicted whenever a pod of the class lands
  there. As DefaultPreemption takes victims on the chosen node only, such a pod must be on the
  node itself: the victims there must clear the whole zone or rack, and a refusing pod elsewhere
  in the domain (unless an earlier run evicts it) closes the node, as does one that is no victim;
- **host ports** (NodePorts): a pod bound on the node holding a port the class asks for (same
  protocol and number, overlapping address) is likewise a victim to take, or the node is closed;
- **required affinity** (InterPodAffinity): for each term, a pod matching all the class's terms
  stays in the node's domain of the term's key: a pod placed this cycle, a bound pod that is no
  victim of the run, or a victim the run keeps that is not a lower-priority pod on the node itself
  (DefaultPreemption judges the node with all of those gone); a node without the key, or with
  none of those, is closed (the first-pod rule is not used here: such a gang waits for free room);
- a pod placed this cycle (allocate's bindings, earlier runs' preemptors) in conflict closes it;
- the run's own preemptor classes keep apart: at most one pod per domain of a class whose terms
  select itself (per node for its own ports), and two classes in conflict never share one.

And for every pod placed this cycle with required affinity (bindings and nominations): the bound
pods it relies on are no victims, so no eviction leaves a placed pod's required affinity
unsatisfied (running pods' own reliance is kept by
:func:`vcsat.solver.rules.interpod.affinity_anchors`).

Gangs bound by topology spread are modelled in :mod:`vcsat.solver.preemption.spread`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Final

from vcsat.model import Pod
from vcsat.model.cluster import PodAffinityTerm
from vcsat.solver.problem import Gang, Problem
from vcsat.solver.rules.interpod import label_key, ports_conflict, selects

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

HOSTNAME: Final = "kubernetes.io/hostname"
WAITING_ROOM: Final = frozenset({"InsufficientResources", "Fragmented"})
"""Prefilter reasons that evictions may cure by freeing room."""

Domain = tuple[str, str]


def _anti_selects(owner: Pod, target: Pod, key: str, namespaces: Mapping[str, Mapping[str, str]]) -> bool:
    """Whether a required anti-affinity term of ``owner`` with this topology key selects ``target``."""
    return any(
        term.topology_key == key and selects(term, owner.namespace, label_key(target), namespaces)
        for term in owner.pod_anti_affinity.required
    )


def _ports_clash(a: Pod, b: Pod) -> bool:
    return any(ports_conflict(p, q) for p in a.host_ports for q in b.host_ports)


def _matches_all(terms: Sequence[PodAffinityTerm], owner: Pod, other: Pod, ns: Mapping[str, Mapping[str, str]]) -> bool:
    key = label_key(other)
    return all(selects(term, owner.namespace, key, ns) for term in terms)


def modelled_gangs(problem: Problem, gangs: Iterable[Gang]) -> set[int]:
    """Of ``gangs``, those with isolated classes: every rule between pods is modelled here."""
    return {g.index for g in gangs if any(c in problem.isolated for c in g.classes)}


def evictions_may_cure(problem: Problem, gang: Gang, modelled: AbstractSet[int]) -> bool:
    """Whether the preempt phase may place a gang the prefilter left out: room (``WAITING_ROOM``),
    room in the one HyperNode its running pods hold it to, or rules between pods that this module
    lifts by eviction (the phase checks every predicate itself)."""
    blocked = problem.blocked.get(gang.index)
    if blocked is None or blocked.reason in WAITING_ROOM:
        return True
    if blocked.reason == "NetworkTopologyUnsatisfied":
        return gang.anchor is not None
    return blocked.reason == "Unschedulable" and gang.index in modelled


class AntiAffinity:
    """The rules between pods of preemptors, over the runs of one preempt and reclaim phase."""

    def __init__(self, problem: Problem, placed: Iterable[tuple[Pod, int]]) -> None:
        self.problem = problem
        self.namespaces = problem.snapshot.namespaces
        by_name = {node.name: i for i, node in enumerate(problem.nodes)}
        self.bound_on: dict[int, list[Pod]] = {}
        """Per node index: the pods bound there (finished ones excluded)."""
        for pod in problem.snapshot.pods:
            if pod.node_name is not None and not pod.finished and pod.node_name in by_name:
                self.bound_on.setdefault(by_name[pod.node_name], []).append(pod)
        self._nodes_of: dict[str, dict[str, list[int]]] = {}
        self._bound_in: dict[Domain, list[Pod]] = {}
        self._bound_anti: dict[str, dict[str, list[Pod]]] = {}
        self.bound_keys = {
            t.topology_key for pods in self.bound_on.values() for p in pods for t in p.pod_anti_affinity.required
        }
        """Topology keys of bound pods' required anti-affinity terms."""
        self.placed_on: dict[int, list[Pod]] = {}
        """Per node index: pods placed this cycle (bindings and nominations so far)."""
        self.placed_keys: set[str] = set()
        """Topology keys of placed pods' required anti-affinity terms."""
        self._blockers: dict[tuple[str, int], tuple[bool, list[Pod]]] = {}
        self.note(placed)

    # --- indexes --------------------------------------------------------------------------------

    def nodes_of(self, key: str) -> dict[str, list[int]]:
        """Per value of the node label ``key``: the nodes carrying it."""
        found = self._nodes_of.get(key)
        if found is None:
            found = {}
            for i, node in enumerate(self.problem.nodes):
                value = node.labels.get(key)
                if value is not None:
                    found.setdefault(value, []).append(i)
            self._nodes_of[key] = found
        return found

    def value(self, node: int, key: str) -> str | None:
        return self.problem.nodes[node].labels.get(key)

    def bound_in(self, key: str, value: str) -> list[Pod]:
        found = self._bound_in.get((key, value))
        if found is None:
            found = [pod for n in self.nodes_of(key).get(value, ()) for pod in self.bound_on.get(n, ())]
            self._bound_in[(key, value)] = found
        return found

    def bound_anti(self, key: str) -> dict[str, list[Pod]]:
        """Per value of ``key``: bound pods there with a required anti-affinity term on ``key``."""
        found = self._bound_anti.get(key)
        if found is None:
            found = {}
            for value, nodes in self.nodes_of(key).items():
                pods = [
                    p
                    for n in nodes
                    for p in self.bound_on.get(n, ())
                    if any(t.topology_key == key for t in p.pod_anti_affinity.required)
                ]
                if pods:
                    found[value] = pods
            self._bound_anti[key] = found
        return found

    def placed_in(self, key: str, value: str) -> Iterable[Pod]:
        for n in self.nodes_of(key).get(value, ()):
            yield from self.placed_on.get(n, ())

    def note(self, placed: Iterable[tuple[Pod, int]]) -> None:
        for pod, node in placed:
            self.placed_on.setdefault(node, []).append(pod)
            self.placed_keys.update(t.topology_key for t in pod.pod_anti_affinity.required)
            self._blockers.clear()

    # --- the rules ------------------------------------------------------------------------------

    def _clash_keys(self, pod: Pod) -> list[str]:
        """Topology keys on which ``pod`` may clash: its own anti terms' and those of bound and placed
        pods' terms (a pod placed this cycle whose term selects ``pod`` closes the node as surely as
        one of ``pod``'s own terms does)."""
        own = {t.topology_key for t in pod.pod_anti_affinity.required}
        return sorted(own | self.bound_keys | self.placed_keys)

    def blockers(self, pod: Pod, node: int) -> tuple[bool, list[Pod]]:
        """(closed by a pod placed this cycle, bound pods that must go) for ``pod`` on ``node``."""
        cached = self._blockers.get((pod.key, node))
        if cached is None:
            cached = self._find_blockers(pod, node)
            self._blockers[(pod.key, node)] = cached
        return cached

    def _find_blockers(self, pod: Pod, node: int) -> tuple[bool, list[Pod]]:
        ns = self.namespaces
        out: dict[str, Pod] = {}
        for key in self._clash_keys(pod):
            value = self.value(node, key)
            if value is None:
                continue
            if any(
                _anti_selects(pod, other, key, ns) or _anti_selects(other, pod, key, ns)
                for other in self.placed_in(key, value)
            ):
                return True, []
            if any(t.topology_key == key for t in pod.pod_anti_affinity.required):
                nearby: Iterable[Pod] = self.bound_in(key, value)
            else:
                nearby = self.bound_anti(key).get(value, ())
            for other in nearby:
                if other.key not in out and (_anti_selects(pod, other, key, ns) or _anti_selects(other, pod, key, ns)):
                    out[other.key] = other
        if pod.host_ports:
            if any(_ports_clash(pod, other) for other in self.placed_on.get(node, ())):
                return True, []
            for other in self.bound_on.get(node, ()):
                if other.key not in out and _ports_clash(pod, other):
                    out[other.key] = other
        return False, list(out.values())

    def anchors_of_placed(self) -> set[str]:
        """Bound pods that a pod placed this cycle relies on for its required affinity."""
        out: set[str] = set()
        ns = self.namespaces
        for node, pods in self.placed_on.items():
            for pod in pods:
                terms = pod.pod_affinity.required
                for term in terms:
                    value = self.value(node, term.topology_key)
                    if value is None:
                        continue
                    for other in self.bound_in(term.topology_key, value):
                        if _matches_all(terms, pod, other, ns):
                            out.add(other.key)
        return out

    def constrain(
        self,
        cp: cp_model.CpModel,
        x: Mapping[tuple[int, int], cp_model.IntVar],
        upper: Mapping[int, int],
        evict: Mapping[int, cp_model.IntVar],
        victim_of: Mapping[str, tuple[int, int]],
        gone: Iterable[str],
        preempt: bool,
    ) -> None:
        """Add the rules of the module docstring for the run's variables ``x`` (class, node).

        ``victim_of``: per victim pod key, (victim index, its priority); ``gone``: pods earlier
        runs evict; ``preempt``: a victim must have a lower priority than the preemptor."""
        problem = self.problem
        evicted = set(gone)
        # No eviction takes a pod that a pod placed this cycle relies on.
        for key in sorted(self.anchors_of_placed()):
            found = victim_of.get(key)
            if found is not None:
                cp.add(evict[found[0]] == 0)
        isolated = sorted({c for c, _ in x if c in problem.isolated})
        if not isolated:
            return
        rep = {c: problem.classes[c].pods[0] for c in isolated}
        ns = self.namespaces
        for (c, node), var in x.items():
            if c not in rep:
                continue
            pod = rep[c]
            priority = problem.gangs[problem.classes[c].gang].priority
            name = problem.nodes[node].name
            closed, blocking = self.blockers(pod, node)
            lowest = priority if preempt else None
            if closed or not self._affinity(cp, pod, node, var, upper, evict, victim_of, evicted, lowest):
                cp.add(var == 0)
                continue
            for other in blocking:
                if other.key in evicted:
                    continue
                found = victim_of.get(other.key) if other.node_name == name else None
                if found is None or (preempt and found[1] >= priority):
                    cp.add(var == 0)
                    break
                cp.add(var <= upper[var.index] * evict[found[0]])
        # Among the run's classes: one pod per domain of a self-selecting class, conflicting classes apart.
        keys = sorted({k for c in isolated for k in self._run_keys(rep[c])})
        for key in keys:

            def repel(a: Pod, b: Pod, key: str = key) -> bool:
                return _anti_selects(a, b, key, ns) or _anti_selects(b, a, key, ns)

            by_domain: dict[str, dict[int, list[cp_model.IntVar]]] = {}
            for (c, node), var in x.items():
                value = self.value(node, key) if c in rep else None
                if value is not None:
                    by_domain.setdefault(value, {}).setdefault(c, []).append(var)
            for value, of_class in sorted(by_domain.items()):
                self._apart(cp, of_class, repel, rep, f"{key}={value}")
        if any(rep[c].host_ports for c in isolated):
            by_node: dict[int, dict[int, list[cp_model.IntVar]]] = {}
            for (c, node), var in x.items():
                if c in rep and rep[c].host_ports:
                    by_node.setdefault(node, {}).setdefault(c, []).append(var)
            for node, of_class in sorted(by_node.items()):
                self._apart(cp, of_class, _ports_clash, rep, f"node {node} ports")

    @staticmethod
    def _run_keys(pod: Pod) -> set[str]:
        return {t.topology_key for t in pod.pod_anti_affinity.required}

    @staticmethod
    def _apart(
        cp: cp_model.CpModel,
        of_class: Mapping[int, list[cp_model.IntVar]],
        clash: Callable[[Pod, Pod], bool],
        rep: Mapping[int, Pod],
        where: str,
    ) -> None:
        from ortools.sat.python import cp_model

        classes = sorted(of_class)
        for i, a in enumerate(classes):
            if clash(rep[a], rep[a]):
                cp.add(cp_model.LinearExpr.sum(of_class[a]) <= 1)
            for b in classes[i + 1 :]:
                if clash(rep[a], rep[b]) or clash(rep[b], rep[a]):
                    here = cp.new_bool_var(f"apart[{a},{b},{where}]")
                    cp.add(cp_model.LinearExpr.sum(of_class[a]) == 0).only_enforce_if(here)
                    cp.add(cp_model.LinearExpr.sum(of_class[b]) == 0).only_enforce_if(~here)

    def _affinity(
        self,
        cp: cp_model.CpModel,
        pod: Pod,
        node: int,
        var: cp_model.IntVar,
        upper: Mapping[int, int],
        evict: Mapping[int, cp_model.IntVar],
        victim_of: Mapping[str, tuple[int, int]],
        evicted: AbstractSet[str],
        lowest: int | None,
    ) -> bool:
        """Constrain ``var`` so that each required affinity term keeps a matching pod in the node's
        domain; False when no such pod can stay (the node is closed).

        ``lowest``: in preempt, the preemptor's priority. DefaultPreemption judges a node with every
        lower-priority pod on it gone, so such a pod on the node itself never justifies the
        preemptor's affinity there, even if the run would keep it."""
        from ortools.sat.python import cp_model

        terms = pod.pod_affinity.required
        ns = self.namespaces
        name = self.problem.nodes[node].name
        for term in terms:
            value = self.value(node, term.topology_key)
            if value is None:
                return False
            if any(_matches_all(terms, pod, other, ns) for other in self.placed_in(term.topology_key, value)):
                continue
            movable: list[int] = []
            fixed = False
            for other in self.bound_in(term.topology_key, value):
                if other.key in evicted or not _matches_all(terms, pod, other, ns):
                    continue
                found = victim_of.get(other.key)
                if found is None:
                    fixed = True
                    break
                if lowest is not None and other.node_name == name and found[1] < lowest:
                    continue
                movable.append(found[0])
            if fixed:
                continue
            if not movable:
                return False
            if upper[var.index] > 0:
                here = cp.new_bool_var(f"affinity[{var.index},{term.topology_key}]")
                cp.add(var <= upper[var.index] * here)
                kept = cp_model.LinearExpr.sum([evict[i] for i in movable])
                cp.add(kept <= len(movable) - 1).only_enforce_if(here)
        return True


def pods_placed(problem: Problem, on_node: Mapping[tuple[int, int], int]) -> list[tuple[Pod, int]]:
    """One representative pod per (class, node) with pods there: what :meth:`AntiAffinity.note` reads."""
    return [(problem.classes[c].pods[0], node) for (c, node), k in sorted(on_node.items()) if k > 0]


def victims_by_key(victims: Sequence[tuple[int, Pod]]) -> dict[str, tuple[int, int]]:
    return {pod.key: (index, pod.priority) for index, pod in victims}
