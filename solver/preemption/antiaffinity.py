"""Preemption for pods with required anti-affinity per node, as kube-scheduler's DefaultPreemption.

DefaultPreemption runs the filters again with the candidate victims removed: a victim's removal
can lift an anti-affinity conflict, not only free room. Here, for the preemptors whose only rules
between pods are required anti-affinity terms with topology key ``kubernetes.io/hostname``
(:func:`modelled_gangs`), that reads, per preemptor class and node:

- a pod bound in the node's hostname domain that the class's terms select, or whose own required
  anti-affinity (hostname) selects the class's pods, must be a victim of the run that may make
  room for the class (lower priority in preempt; any of the run's victims in reclaim), evicted
  whenever a pod of the class lands there; if it is no such victim, the node is closed;
- a pod placed this cycle (allocate's bindings, earlier runs' preemptors) in conflict closes it;
- the run's own preemptor classes keep apart: at most one pod per domain of a class whose terms
  select itself, and two classes in conflict never share a domain.

Gangs with other rules between pods (affinity, host ports, anti-affinity by zone or any other key,
or bound pods' anti-affinity by another key that selects them) still wait for free room, as do
gangs bound by topology spread (see :mod:`vcsat.solver.preemption.preempt`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Final

from ortools.sat.python import cp_model

from vcsat.model import Pod
from vcsat.solver.problem import Gang, Problem
from vcsat.solver.rules.interpod import label_key, selects

HOSTNAME: Final = "kubernetes.io/hostname"
WAITING_ROOM: Final = frozenset({"InsufficientResources", "Fragmented"})
"""Prefilter reasons that evictions may cure by freeing room."""


def _clash(a: Pod, b: Pod, namespaces: Mapping[str, Mapping[str, str]]) -> bool:
    """Whether ``a`` and ``b`` may not share a hostname domain (either's required term selects the other)."""
    return _selects_on_host(a, b, namespaces) or _selects_on_host(b, a, namespaces)


def _selects_on_host(owner: Pod, target: Pod, namespaces: Mapping[str, Mapping[str, str]]) -> bool:
    return any(
        term.topology_key == HOSTNAME and selects(term, owner.namespace, label_key(target), namespaces)
        for term in owner.pod_anti_affinity.required
    )


def _has_host_terms(pod: Pod) -> bool:
    return any(term.topology_key == HOSTNAME for term in pod.pod_anti_affinity.required)


def _modelled(pod: Pod) -> bool:
    return (
        not pod.host_ports
        and not pod.pod_affinity.required
        and all(t.topology_key == HOSTNAME for t in pod.pod_anti_affinity.required)
    )


def modelled_gangs(problem: Problem, gangs: Iterable[Gang]) -> set[int]:
    """Of ``gangs``, those with isolated classes whose rules between pods are all of the kind this
    module models (their own, and the running pods' anti-affinity that selects them)."""
    with_rules = [g for g in gangs if any(c in problem.isolated for c in g.classes)]
    if not with_rules:
        return set()
    ns = problem.snapshot.namespaces
    # Running pods' required anti-affinity by another key: not modelled, it keeps what it selects out.
    foreign = [
        (term, other.namespace)
        for other in problem.snapshot.pods
        if other.node_name is not None and not other.finished
        for term in other.pod_anti_affinity.required
        if term.topology_key != HOSTNAME
    ]
    out: set[int] = set()
    for gang in with_rules:
        pods = [problem.classes[c].pods[0] for c in gang.classes if c in problem.isolated]
        if all(_modelled(pod) for pod in pods) and not any(
            selects(term, owner, label_key(pod), ns) for term, owner in foreign for pod in pods
        ):
            out.add(gang.index)
    return out


def evictions_may_cure(problem: Problem, gang: Gang, modelled: AbstractSet[int]) -> bool:
    """Whether the preempt phase may place a gang the prefilter left out: room (``WAITING_ROOM``),
    or anti-affinity that this module lifts by eviction (the phase checks every predicate itself)."""
    blocked = problem.blocked.get(gang.index)
    if blocked is None or blocked.reason in WAITING_ROOM:
        return True
    return blocked.reason == "Unschedulable" and gang.index in modelled


class AntiAffinity:
    """The per-node anti-affinity of preemptors, over the runs of one preempt and reclaim phase."""

    def __init__(self, problem: Problem, placed: Iterable[tuple[Pod, int]]) -> None:
        self.problem = problem
        self.namespaces = problem.snapshot.namespaces
        self.domain_of: list[str | None] = [node.labels.get(HOSTNAME) for node in problem.nodes]
        self.bound: dict[str, list[Pod]] = {}
        """Per hostname domain: the pods bound there (finished ones excluded)."""
        self.bound_with_terms: dict[str, list[Pod]] = {}
        """Per hostname domain: those of its bound pods with required anti-affinity by hostname."""
        by_name = {node.name: i for i, node in enumerate(problem.nodes)}
        for pod in problem.snapshot.pods:
            if pod.node_name is None or pod.finished or pod.node_name not in by_name:
                continue
            domain = self.domain_of[by_name[pod.node_name]]
            if domain is not None:
                self.bound.setdefault(domain, []).append(pod)
                if _has_host_terms(pod):
                    self.bound_with_terms.setdefault(domain, []).append(pod)
        self.placed: dict[str, list[Pod]] = {}
        """Per hostname domain: pods placed this cycle (bindings and nominations so far)."""
        self.note(placed)

    def note(self, placed: Iterable[tuple[Pod, int]]) -> None:
        for pod, node in placed:
            domain = self.domain_of[node]
            if domain is not None:
                self.placed.setdefault(domain, []).append(pod)

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
        isolated = sorted({c for c, _ in x if c in problem.isolated})
        if not isolated:
            return
        rep = {c: problem.classes[c].pods[0] for c in isolated}
        for (c, node), var in x.items():
            if c not in rep:
                continue
            domain = self.domain_of[node]
            if domain is None:
                continue
            pod = rep[c]
            if any(_clash(pod, other, self.namespaces) for other in self.placed.get(domain, ())):
                cp.add(var == 0)
                continue
            priority = problem.gangs[problem.classes[c].gang].priority
            # A pod without terms of its own clashes only with the bound pods that have some.
            nearby = self.bound if _has_host_terms(pod) else self.bound_with_terms
            for other in nearby.get(domain, ()):
                if other.key in evicted or not _clash(pod, other, self.namespaces):
                    continue
                found = victim_of.get(other.key)
                if found is None or (preempt and found[1] >= priority):
                    cp.add(var == 0)
                    break
                cp.add(var <= upper[var.index] * evict[found[0]])
        # Among the run's classes: one pod per domain of a self-selecting class, conflicting classes apart.
        by_domain: dict[str, dict[int, list[cp_model.IntVar]]] = {}
        for (c, node), var in x.items():
            domain = self.domain_of[node]
            if c in rep and domain is not None:
                by_domain.setdefault(domain, {}).setdefault(c, []).append(var)
        for domain, of_class in sorted(by_domain.items()):
            classes = sorted(of_class)
            for i, a in enumerate(classes):
                if _clash(rep[a], rep[a], self.namespaces):
                    cp.add(cp_model.LinearExpr.sum(of_class[a]) <= 1)
                for b in classes[i + 1 :]:
                    if _clash(rep[a], rep[b], self.namespaces):
                        here = cp.new_bool_var(f"apart[{a},{b},{domain}]")
                        cp.add(cp_model.LinearExpr.sum(of_class[a]) == 0).only_enforce_if(here)
                        cp.add(cp_model.LinearExpr.sum(of_class[b]) == 0).only_enforce_if(~here)


def pods_placed(problem: Problem, on_node: Mapping[tuple[int, int], int]) -> list[tuple[Pod, int]]:
    """One representative pod per (class, node) with pods there: what :meth:`AntiAffinity.note` reads."""
    return [(problem.classes[c].pods[0], node) for (c, node), k in sorted(on_node.items()) if k > 0]


def victims_by_key(victims: Sequence[tuple[int, Pod]]) -> dict[str, tuple[int, int]]:
    return {pod.key: (index, pod.priority) for index, pod in victims}
