"""The validator's inter-pod rules: pod affinity, pod anti-affinity and host ports.

Written from the Kubernetes documentation (Assigning Pods to Nodes: inter-pod affinity and
anti-affinity; the Pod API's ``hostPort``), apart from the solver's code for the same rules
(:mod:`vcsat.solver.rules.interpod`), so that one mistake cannot hide itself. It reads only the model.

A decision places new pods (bindings and nominations) beside the bound ones. Bindings are judged
"now", beside every bound pod, victims included; with evictions or nominations, every placement is
also judged "after evictions" (bound pods less the victims, bindings and nominations), which is
where nominations stand: kube-scheduler's DefaultPreemption nominates a pod where the filters pass
once its victims are gone (a victim's removal may lift an anti-affinity conflict). kube-scheduler
takes pods one at a time, each seeing the pods bound before it, and the binder does not order the
new pods: the decision must hold whatever order they are bound in, so affinity is judged on the
final state (all pods placed), and the decision must also have some order that passes every filter:

- host ports (NodePorts): no two pods on a node hold the same protocol and port on overlapping
  addresses (an empty or ``0.0.0.0`` hostIP overlaps every address) — order plays no part;
- anti-affinity: no pod's required anti-affinity term selects another pod in the same topology
  domain (same value of the term's key on both nodes, both having it) — symmetric, so order plays no
  part; a bound pod's term against a new pod is ``ExistingPodsAntiAffinityRulesNotMatch``;
- affinity, final state: each new pod's node has every term's key, and each term's domain there
  holds another pod (bound or new) matching *all* of the pod's terms; or, the first-pod rule, the
  pod matches its terms itself and every other pod matching them (on a node with one of the keys)
  is a new pod carrying the same terms and shares the pod's domain of every key. A matching pod
  elsewhere breaks the rule: bound before the pod, it leaves the pod no first-pod rule.
- affinity, some order: each new pod's terms are met by the pods before it (bound, or new and
  earlier), or no pod before it matches its terms anywhere and it matches them itself. The order is
  searched as a fixpoint: pods without required affinity go first in any order, first-pod pods
  ("seeds") are put before everything else where no seed before them matches their terms, and any
  pod whose terms the pods before it satisfy joins.

Selector meaning (``metav1.LabelSelector``): matchLabels and matchExpressions are ANDed; In needs
the label present with a listed value, NotIn is true for a missing label, Exists / DoesNotExist
test presence; an absent labelSelector selects nothing. Namespaces: the term's list, plus those
whose labels its namespaceSelector matches (an empty selector: all); with neither, the namespace of
the pod that owns the term.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from functools import cached_property
from typing import Final, NamedTuple

from vcsat.model import Node, Pod, Snapshot
from vcsat.model.cluster import PodAffinityTerm
from vcsat.model.selectors import LabelSelector

INTERPOD_RULES: Final = (
    "NodePortsConflict",
    "PodAffinityRulesNotMatch",
    "PodAntiAffinityRulesNotMatch",
    "ExistingPodsAntiAffinityRulesNotMatch",
    "AffinityBrokenByEviction",
)


class Found(NamedTuple):
    rule: str
    subject: str
    message: str


class _Placed(NamedTuple):
    pod: Pod
    node: Node
    new: bool


def _requirement_ok(key: str, operator: str, values: Sequence[str], labels: Mapping[str, str]) -> bool:
    present = key in labels
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    return False


def _selector_ok(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return False
    return all(_requirement_ok(r.key, r.operator, r.values, labels) for r in selector.requirements)


def _term_selects(term: PodAffinityTerm, owner: Pod, target: Pod, namespaces: Mapping[str, Mapping[str, str]]) -> bool:
    if term.namespaces or term.namespace_selector is not None:
        in_namespace = target.namespace in term.namespaces or (
            term.namespace_selector is not None
            and _selector_ok(term.namespace_selector, namespaces.get(target.namespace, {}))
        )
    else:
        in_namespace = target.namespace == owner.namespace
    return in_namespace and _selector_ok(term.label_selector, target.labels)


def _same_domain(key: str, a: Node, b: Node) -> bool:
    return key in a.labels and key in b.labels and a.labels[key] == b.labels[key]


def _overlap(a: tuple[str, str, int], b: tuple[str, str, int]) -> bool:
    protocol_a, ip_a, port_a = a
    protocol_b, ip_b, port_b = b
    if (protocol_a or "TCP") != (protocol_b or "TCP") or port_a != port_b:
        return False
    wild = ("", "0.0.0.0")
    return ip_a in wild or ip_b in wild or ip_a == ip_b


class BoundIndex:
    """The bound pods of one snapshot as :func:`check_interpod` reads them, made once per check
    and shared by its calls (now, and after evictions): the bound pods in snapshot order, those
    with required anti-affinity and where their terms' domains are, the bound pods per topology
    domain, and which terms select which pods. Each part is made when first read."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._domains: dict[str, dict[str, list[_Placed]]] = {}
        self._selects: dict[tuple[int, int, int], bool] = {}

    @cached_property
    def _terms_anywhere(self) -> tuple[bool, bool]:
        # Both questions in one pass over the pods: it is most of what a cluster without inter-pod
        # terms spends here.
        anti = affinity = False
        for p in self.snapshot.pods:
            if p.pod_affinity.required:
                affinity = True
            if p.pod_anti_affinity.required and p.node_name is not None:
                anti = True
        return anti, affinity

    @property
    def anti_anywhere(self) -> bool:
        """Whether some pod on a node has a required anti-affinity term."""
        return self._terms_anywhere[0]

    @property
    def affinity_anywhere(self) -> bool:
        """Whether some pod of the snapshot (bound or not) has a required pod affinity term."""
        return self._terms_anywhere[1]

    @cached_property
    def bound(self) -> list[_Placed]:
        """The unfinished pods on nodes of the snapshot, in snapshot order."""
        nodes = self.snapshot.node_by_name
        return [
            _Placed(pod, nodes[pod.node_name], False)
            for pod in self.snapshot.pods
            if pod.node_name is not None and not pod.finished and pod.node_name in nodes
        ]

    @cached_property
    def with_anti(self) -> list[_Placed]:
        return [e for e in self.bound if e.pod.pod_anti_affinity.required]

    @cached_property
    def owners_at(self) -> dict[tuple[str, str], list[int]]:
        """Per (key, value) of a domain of their terms, the bound owners of anti-affinity there (by
        position in :attr:`with_anti`), so that a new pod looks only at the owners sharing one of
        its node's domains."""
        owners: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i, owner in enumerate(self.with_anti):
            for key in {term.topology_key for term in owner.pod.pod_anti_affinity.required}:
                if key in owner.node.labels:
                    owners[(key, owner.node.labels[key])].append(i)
        return owners

    def domains(self, key: str) -> dict[str, list[_Placed]]:
        """The bound pods per value of ``key`` on their node (nodes without the key left out)."""
        groups = self._domains.get(key)
        if groups is None:
            groups = defaultdict(list)
            for e in self.bound:
                if key in e.node.labels:
                    groups[e.node.labels[key]].append(e)
            self._domains[key] = groups
        return groups

    def selects(self, term: PodAffinityTerm, owner: Pod, target: Pod) -> bool:
        """:func:`_term_selects` of the snapshot's namespaces, each (term, owner, target) once."""
        at = (id(term), id(owner), id(target))
        known = self._selects.get(at)
        if known is None:
            known = self._selects[at] = _term_selects(term, owner, target, self.snapshot.namespaces)
        return known


def check_interpod(
    snapshot: Snapshot,
    new: Sequence[tuple[Pod, Node]],
    gone: AbstractSet[str] = frozenset(),
    index: BoundIndex | None = None,
) -> list[Found]:
    """Violations of the inter-pod rules by the new placements (pod, node) among the bound pods,
    less those in ``gone`` (the decision's victims, when judging the state after evictions).
    ``index``: the snapshot's :class:`BoundIndex`, when several calls share one."""
    if index is None:
        index = BoundIndex(snapshot)
    rules = any(p.host_ports or p.pod_affinity.required or p.pod_anti_affinity.required for p, _ in new)
    if not rules and not index.anti_anywhere:
        return []
    bound = index.bound if not gone else [e for e in index.bound if e.pod.key not in gone]
    added = [_Placed(pod, node, True) for pod, node in new]
    placed = bound + added
    namespaces = snapshot.namespaces
    out: list[Found] = []
    by_node: dict[str, list[_Placed]] = defaultdict(list)
    if any(entry.pod.host_ports for entry in added):
        for entry in placed:
            by_node[entry.node.name].append(entry)

    for entry in added:
        if not entry.pod.host_ports:
            continue
        for other in by_node[entry.node.name]:
            if other.pod.key == entry.pod.key:
                continue
            clash = [(a, b) for a in entry.pod.host_ports for b in other.pod.host_ports if _overlap(a, b)]
            if clash:
                (protocol, ip, port), _ = clash[0]
                out.append(
                    Found(
                        "NodePortsConflict",
                        entry.pod.key,
                        f"host port {protocol}/{ip}:{port} on {entry.node.name} is held by {other.pod.key}",
                    )
                )
                break

    new_in: dict[str, dict[str, list[_Placed]]] = {}
    shared: dict[tuple[str, str], list[_Placed]] = {}

    def sharing(key: str, node: Node) -> list[_Placed]:
        """The pods on nodes with the same value of ``key`` as ``node`` (none without the key):
        the bound ones less ``gone``, then the new ones, each in their order."""
        if key not in node.labels:
            return []
        value = node.labels[key]
        found = shared.get((key, value))
        if found is None:
            if key not in new_in:
                groups: dict[str, list[_Placed]] = defaultdict(list)
                for e in added:
                    if key in e.node.labels:
                        groups[e.node.labels[key]].append(e)
                new_in[key] = groups
            old = index.domains(key).get(value, [])
            if gone:
                old = [e for e in old if e.pod.key not in gone]
            found = shared[(key, value)] = old + new_in[key].get(value, [])
        return found

    with_anti = index.with_anti
    owners_at = index.owners_at
    owner_keys = sorted({key for key, _ in owners_at})

    for entry in added:
        for term in entry.pod.pod_anti_affinity.required:
            for other in sharing(term.topology_key, entry.node):
                if other.pod.key == entry.pod.key:
                    continue
                if index.selects(term, entry.pod, other.pod):
                    out.append(
                        Found(
                            "PodAntiAffinityRulesNotMatch",
                            entry.pod.key,
                            f"on {entry.node.name}, its anti-affinity term ({term.topology_key}) selects "
                            f"{other.pod.key} on {other.node.name}",
                        )
                    )
                    break
        near: set[int] = set()
        for key in owner_keys:
            if key in entry.node.labels:
                near.update(owners_at.get((key, entry.node.labels[key]), ()))
        for owner in (with_anti[i] for i in sorted(near)):
            if owner.pod.key == entry.pod.key or owner.pod.key in gone:
                continue
            for term in owner.pod.pod_anti_affinity.required:
                if _same_domain(term.topology_key, entry.node, owner.node) and index.selects(
                    term, owner.pod, entry.pod
                ):
                    out.append(
                        Found(
                            "ExistingPodsAntiAffinityRulesNotMatch",
                            entry.pod.key,
                            f"on {entry.node.name}, bound pod {owner.pod.key} on {owner.node.name} has an "
                            f"anti-affinity term ({term.topology_key}) selecting it",
                        )
                    )
                    break

    if any(entry.pod.pod_affinity.required for entry in added):
        out += _affinity(placed, namespaces)  # it judges only new pods with required affinity
    return out


def _matches_all(owner: Pod, target: Pod, namespaces: Mapping[str, Mapping[str, str]]) -> bool:
    return all(_term_selects(t, owner, target, namespaces) for t in owner.pod_affinity.required)


def _final_state(
    placed: list[_Placed], waiting: list[_Placed], namespaces: Mapping[str, Mapping[str, str]]
) -> list[_Placed]:
    """The new pods whose required affinity the final state (every pod placed) does not meet."""
    failing: list[_Placed] = []
    for entry in waiting:
        pod = entry.pod
        terms = pod.pod_affinity.required
        keys = {t.topology_key for t in terms}
        others = [s for s in placed if s.pod.key != pod.key and _matches_all(pod, s.pod, namespaces)]
        if all(any(_same_domain(t.topology_key, s.node, entry.node) for s in others) for t in terms):
            continue
        if not _matches_all(pod, pod, namespaces):
            failing.append(entry)
            continue
        counted = [s for s in others if keys & s.node.labels.keys()]
        fellows_only = all(
            s.new
            and s.pod.namespace == pod.namespace
            and s.pod.pod_affinity.required == terms
            and all(_same_domain(k, s.node, entry.node) for k in keys)
            for s in counted
        )
        if not fellows_only:
            failing.append(entry)
    return failing


def _affinity(placed: list[_Placed], namespaces: Mapping[str, Mapping[str, str]]) -> list[Found]:
    out: list[Found] = []
    waiting: list[_Placed] = []
    for entry in placed:
        if not entry.new or not entry.pod.pod_affinity.required:
            continue
        missing = [t.topology_key for t in entry.pod.pod_affinity.required if t.topology_key not in entry.node.labels]
        if missing:
            out.append(
                Found(
                    "PodAffinityRulesNotMatch",
                    entry.pod.key,
                    f"node {entry.node.name} lacks the topology key {missing[0]} of its affinity",
                )
            )
            continue
        waiting.append(entry)
    final = _final_state(placed, waiting, namespaces)
    for entry in final:
        out.append(
            Found(
                "PodAffinityRulesNotMatch",
                entry.pod.key,
                f"on {entry.node.name}, no other pod matching all its affinity terms is in its domains, and a "
                "matching pod elsewhere (or its own labels) leaves it no first-pod rule",
            )
        )
    accepted = [e for e in placed if not e.new or not e.pod.pod_affinity.required]
    seeds: list[_Placed] = []

    def justified(entry: _Placed) -> bool:
        sources = [*seeds, *accepted]
        for term in entry.pod.pod_affinity.required:
            key = term.topology_key
            if not any(
                s.pod.key != entry.pod.key
                and _same_domain(key, s.node, entry.node)
                and _matches_all(entry.pod, s.pod, namespaces)
                for s in sources
            ):
                return False
        return True

    def can_seed(entry: _Placed) -> bool:
        pod = entry.pod
        if not _matches_all(pod, pod, namespaces):
            return False
        keys = [t.topology_key for t in pod.pod_affinity.required]
        if any(
            not s.new and any(k in s.node.labels for k in keys) and _matches_all(pod, s.pod, namespaces)
            for s in accepted
        ):
            return False  # a bound pod already matches (on a node with a term's key): no first-pod rule
        if not any(_matches_all(pod, s.pod, namespaces) for s in seeds):
            return True  # after the seeds so far
        # before them all: none of them may then see it as a match
        return not any(_matches_all(s.pod, pod, namespaces) for s in seeds)

    while waiting:
        progress = True
        while progress:
            progress = False
            for entry in list(waiting):
                if justified(entry):
                    accepted.append(entry)
                    waiting.remove(entry)
                    progress = True
        if not waiting:
            break
        seed = next((e for e in sorted(waiting, key=lambda e: e.pod.key) if can_seed(e)), None)
        if seed is None:
            break
        seeds.append(seed)
        waiting.remove(seed)
    for entry in waiting:
        if entry in final:
            continue
        out.append(
            Found(
                "PodAffinityRulesNotMatch",
                entry.pod.key,
                f"on {entry.node.name}, no pod matching all its affinity terms is in its domains, "
                "and the first-pod rule does not apply",
            )
        )
    return out


def affinity_after_evictions(
    snapshot: Snapshot,
    victims: Mapping[str, Pod],
    new: Sequence[tuple[Pod, Node]],
    index: BoundIndex | None = None,
) -> list[Found]:
    """Running pods whose required pod affinity the evictions break: a term that selected another
    pod in the owner's domain before the evictions selects none after them (pods that stay, and the
    new placements). A pod its own term selects keeps the term by itself. ``index``: the
    snapshot's :class:`BoundIndex`, when the check has one."""
    if not victims:
        return []
    anywhere = index.affinity_anywhere if index is not None else any(pod.pod_affinity.required for pod in snapshot.pods)
    if not anywhere:
        return []  # no term for an eviction to break
    nodes = snapshot.node_by_name
    running = [
        (pod, nodes[pod.node_name])
        for pod in snapshot.pods
        if pod.bound and not pod.terminating and pod.node_name in nodes
    ]
    after = [(pod, node) for pod, node in running if pod.key not in victims] + list(new)
    out: list[Found] = []
    for owner, where in running:
        if owner.key in victims:
            continue
        for term in owner.pod_affinity.required:
            if _term_selects(term, owner, owner, snapshot.namespaces):
                continue

            if _held(term, owner, where, running, snapshot) and not _held(term, owner, where, after, snapshot):
                gone = sorted(
                    key
                    for key, pod in victims.items()
                    if pod.node_name in nodes
                    and _same_domain(term.topology_key, where, nodes[pod.node_name])
                    and _term_selects(term, owner, pod, snapshot.namespaces)
                )
                out.append(
                    Found(
                        "AffinityBrokenByEviction",
                        owner.key,
                        f"evicting {', '.join(gone)} leaves no pod for its required pod affinity "
                        f"({term.topology_key}={where.labels.get(term.topology_key)})",
                    )
                )
    return out


def _held(
    term: PodAffinityTerm, owner: Pod, where: Node, state: Sequence[tuple[Pod, Node]], snapshot: Snapshot
) -> bool:
    """Whether the term selects a pod other than its owner in the owner's domain, in this state."""
    return any(
        other.key != owner.key
        and _same_domain(term.topology_key, where, node)
        and _term_selects(term, owner, other, snapshot.namespaces)
        for other, node in state
    )
