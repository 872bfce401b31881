"""InterPodAffinity and NodePorts (kube-scheduler v1.35) as the solver sees them: what bound pods
fix, and how the pending classes relate to each other.

The rules, as kube-scheduler's filters apply them to one incoming pod P and a node N:

- **P's required affinity** (all terms must hold): N has every term's ``topologyKey``, and for each
  term the domain (key, N's value) holds a pod that matches *all* of P's terms. First-pod rule: if no
  pod anywhere matches all of P's terms and P matches them itself, N only needs the keys.
  Refusal: "node(s) didn't match pod affinity rules".
- **P's required anti-affinity**: for each term, no pod it selects in N's domain of the term's key
  (N without the key: no constraint). Refusal: "node(s) didn't match pod anti-affinity rules".
- **Existing pods' required anti-affinity** (symmetry): a pod E whose term selects P forbids P the
  domain of E's node under the term's key. Refusal: "node(s) didn't satisfy existing pods
  anti-affinity rules".
- **Host ports**: P's (protocol, hostIP, port) conflicts with one held on N when protocol and port
  are equal and the IPs overlap (``0.0.0.0`` overlaps every IP). Refusal: "node(s) didn't have free
  ports for the requested pod ports".

A term selects a pod when the pod's namespace is among the term's ``namespaces``, or its
namespace's labels match ``namespaceSelector`` (empty: every namespace), or, with neither given, is
the term owner's namespace; and the pod's labels match ``labelSelector`` (absent: no pod).

Bound pods are static: :class:`InterPod` folds them into a per-node refusal (:meth:`failure`) that
narrows each isolated class's eligible nodes, so they cost nothing in the model. Between pending
pods, :func:`relations` says which classes exclude each other from a domain (anti-affinity, either
side's term), share a node port, or may justify another's affinity. Conservative choices, kept by
the model and the greedy alike (each is a subset of what kube-scheduler accepts):

- in-cycle affinity is justified only by pending classes that have no required affinity of their
  own (kube-scheduler could have placed those first), and by bound pods;
- a decision must hold in every order of binding its new pods (the binder does not order them), so
  it is judged on the final state: the first-pod rule holds for a pod only when no other pod of the
  final state matches its terms outside its domain. A group relying on it puts all its pods, per
  term key, into one domain, and every other group matching its terms (a justifier, a group with
  affinity of its own, or another first-pod group) is then present in that domain only
  (:attr:`AffinityNeed.matching`); first-pod groups that match each other's terms share that one
  domain, and lose the first-pod rule when their term keys differ;
- the score of preferred terms comes from bound pods only (:mod:`vcsat.solver.objectives.interpod`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from vcsat.model import Node, Pod, Snapshot
from vcsat.model.cluster import HostPort, PodAffinityTerm
from vcsat.solver import pod_facts
from vcsat.solver.rules.isolation import Interaction

INTERPOD = "interpod"
ANY_IP = "0.0.0.0"
AFFINITY_REASON = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_REASON = "node(s) didn't satisfy existing pods anti-affinity rules"
PORTS_REASON = "node(s) didn't have free ports for the requested pod ports"
HARD_POD_AFFINITY_WEIGHT = 1
"""kube-scheduler's default weight of a bound pod's *required* affinity toward an incoming pod."""

Domain = tuple[str, str]
"""(topology key, value)."""
LabelKey = tuple[str, tuple[tuple[str, str], ...]]
"""(namespace, sorted labels): what a term looks at in a pod."""


def label_key(pod: Pod) -> LabelKey:
    return (pod.namespace, tuple(sorted(pod.labels.items())))


def selects(
    term: PodAffinityTerm, owner_namespace: str, target: LabelKey, namespaces: Mapping[str, Mapping[str, str]]
) -> bool:
    """Whether a term of a pod in ``owner_namespace`` selects a pod with these namespace and labels."""
    if term.label_selector is None:
        return False
    namespace, labels = target
    if term.namespaces or term.namespace_selector is not None:
        inside = namespace in term.namespaces or (
            term.namespace_selector is not None and term.namespace_selector.matches(namespaces.get(namespace, {}))
        )
    else:
        inside = namespace == owner_namespace
    return inside and term.label_selector.matches(dict(labels))


def normal_port(port: HostPort) -> HostPort:
    """NodePorts' reading: protocol TCP and IP ``0.0.0.0`` (every address) when left empty."""
    protocol, ip, number = port
    return (protocol or "TCP", ip or ANY_IP, number)


def ports_conflict(a: HostPort, b: HostPort) -> bool:
    a, b = normal_port(a), normal_port(b)
    return a[0] == b[0] and a[2] == b[2] and (a[1] == ANY_IP or b[1] == ANY_IP or a[1] == b[1])


def has_rules(pod: Pod) -> bool:
    return bool(pod.host_ports) or not pod.pod_affinity.empty or not pod.pod_anti_affinity.empty


def all_terms(pod: Pod) -> list[PodAffinityTerm]:
    rules = (pod.pod_affinity, pod.pod_anti_affinity)
    return [t for r in rules for t in r.required] + [w.term for r in rules for w in r.preferred]


def _anchor(term: PodAffinityTerm) -> tuple[str, tuple[str, ...]] | None:
    """A requirement ``key In (values)`` every pod the term selects must meet, if it has one."""
    if term.label_selector is None:
        return None
    return next(((r.key, r.values) for r in term.label_selector.requirements if r.operator == "In"), None)


def _anchor_values(terms: Iterable[PodAffinityTerm]) -> dict[str, set[str]] | None:
    """Per label name, the values the terms' anchors ask for; None when a term has no anchor (it may
    select a pod whatever its labels)."""
    out: dict[str, set[str]] = {}
    for term in terms:
        anchor = _anchor(term)
        if anchor is None:
            return None
        out.setdefault(anchor[0], set()).update(anchor[1])
    return out


class LabelIndex:
    """Label keys (namespace and labels) indexed by label, so that a term's candidates are found
    without testing every key: a term with a ``key In (values)`` requirement can only select keys
    that carry one of those labels."""

    def __init__(self, keys: Iterable[LabelKey]) -> None:
        self.keys = list(dict.fromkeys(keys))
        self.by_label: dict[tuple[str, str], list[LabelKey]] = {}
        for key in self.keys:
            for label in key[1]:
                self.by_label.setdefault(label, []).append(key)

    def candidates(self, term: PodAffinityTerm) -> list[LabelKey]:
        anchor = _anchor(term)
        if anchor is None:
            return self.keys
        name, values = anchor
        return [key for value in values for key in self.by_label.get((name, value), ())]


class TermIndex:
    """Terms (with their owners' namespaces and any payload) indexed by their anchor label, so that
    the terms that may select a pod are found from the pod's own labels."""

    def __init__(self) -> None:
        self.anchored: dict[tuple[str, str], list[tuple[PodAffinityTerm, str, int]]] = {}
        self.loose: list[tuple[PodAffinityTerm, str, int]] = []

    def add(self, term: PodAffinityTerm, owner: str, payload: int = 0) -> None:
        anchor = _anchor(term)
        if anchor is None:
            self.loose.append((term, owner, payload))
            return
        name, values = anchor
        for value in values:
            self.anchored.setdefault((name, value), []).append((term, owner, payload))

    def candidates(self, target: LabelKey) -> list[tuple[PodAffinityTerm, str, int]]:
        found = [entry for label in target[1] for entry in self.anchored.get(label, ())]
        return found + self.loose


Profile = tuple[LabelKey, object, object, tuple[HostPort, ...]]
"""A pod as these rules see it: namespace and labels, affinity, anti-affinity, host ports."""


def profile(pod: Pod) -> Profile:
    ports = tuple(sorted({normal_port(p) for p in pod.host_ports})) if pod.host_ports else ()
    return (label_key(pod), pod.pod_affinity, pod.pod_anti_affinity, ports)


@dataclass
class _Static:
    """What bound pods fix for one profile."""

    affinity_counts: dict[Domain, int]
    forbidden: dict[Domain, str]
    """Domains refused, with the reason (own anti-affinity, or a bound pod's)."""
    self_match: bool
    """The pod matches all its own required affinity terms (first-pod rule's second half)."""
    justifiable: bool
    """Some pending profile without required affinity matches all its terms, or the first-pod
    rule applies: the model, not the static filter, decides the nodes its affinity needs."""


class InterPod:
    """Bound pods' terms, labels and ports indexed once per snapshot, and per pending profile the
    static refusals they imply."""

    def __init__(self, snapshot: Snapshot, pending: Sequence[Pod]) -> None:
        self.snapshot = snapshot
        self.namespaces = snapshot.namespaces
        self.nodes = snapshot.nodes
        index = {node.name: i for i, node in enumerate(snapshot.nodes)}
        self._profile_of: dict[int, tuple[Pod, int]] = {}
        """By pod identity (the pod kept alive with it): the number of its profile."""
        self._profile_ids: dict[tuple[LabelKey, int, int, tuple[HostPort, ...]], int] = {}
        """Profiles by number, with the rules (affinity, anti-affinity) as :meth:`_rules_number`s."""
        self._rules_ids: dict[object, int] = {}
        self._rules_of: dict[int, tuple[object, int]] = {}
        """By rules object identity (kept alive with it): its number among equal-valued rules."""
        self.profiles: list[Profile] = []
        """Each distinct profile of the pods asked about, by number."""
        self.pending_profiles: dict[int, Pod] = {}
        """Profile number -> the first pending pod with it."""
        for pod in pending:
            self.pending_profiles.setdefault(self.profile_of(pod), pod)
        self.pending_terms = {
            (term, pod.namespace) for pod in self.pending_profiles.values() for term in all_terms(pod)
        }
        # Only pending pods' terms look for bound pods by their labels: when each of those terms
        # has an anchor, a bound pod carrying none of the anchors' labels is never a candidate.
        anchors = _anchor_values(term for term, _ in self.pending_terms)
        self.bound_nodes: dict[LabelKey, list[int]] = {}
        self.bound_anti: list[tuple[PodAffinityTerm, str, int]] = []
        self.bound_ports: dict[int, list[HostPort]] = {}
        self.bound_toward: list[tuple[PodAffinityTerm, str, int, int]] = []
        """(term, owner namespace, node, weight) of bound pods' terms that score an incoming pod:
        required affinity at ``HARD_POD_AFFINITY_WEIGHT``, preferred affinity +w, preferred anti -w."""
        for pod in snapshot.pods:
            node = index.get(pod.node_name) if pod.bound and pod.node_name is not None else None
            if node is None:
                continue
            if anchors is None or any(pod.labels.get(name) in values for name, values in anchors.items()):
                self.bound_nodes.setdefault(label_key(pod), []).append(node)
            for term in pod.pod_anti_affinity.required:
                self.bound_anti.append((term, pod.namespace, node))
            if pod.host_ports:
                self.bound_ports.setdefault(node, []).extend(pod.host_ports)
            for term in pod.pod_affinity.required:
                self.bound_toward.append((term, pod.namespace, node, HARD_POD_AFFINITY_WEIGHT))
            for weighted in pod.pod_affinity.preferred:
                self.bound_toward.append((weighted.term, pod.namespace, node, weighted.weight))
            for weighted in pod.pod_anti_affinity.preferred:
                self.bound_toward.append((weighted.term, pod.namespace, node, -weighted.weight))
        self.bound_index = LabelIndex(self.bound_nodes)
        self.pending_index = LabelIndex(self.profiles[n][0] for n in self.pending_profiles)
        self.pending_by_key: dict[LabelKey, list[Pod]] = {}
        for n, pod in self.pending_profiles.items():
            self.pending_by_key.setdefault(self.profiles[n][0], []).append(pod)
        self.selecting = TermIndex()
        """Every term that makes a pod it selects take part: pending pods' terms, bound pods'
        required anti-affinity and their terms that score incoming pods."""
        for term, owner in self.pending_terms:
            self.selecting.add(term, owner)
        for term, owner, _ in self.bound_anti:
            self.selecting.add(term, owner)
        for term, owner, _, _ in self.bound_toward:
            self.selecting.add(term, owner)
        self.bound_anti_index = TermIndex()
        for i, (term, owner, _) in enumerate(self.bound_anti):
            self.bound_anti_index.add(term, owner, i)
        self.bound_toward_index = TermIndex()
        for i, (term, owner, _, _) in enumerate(self.bound_toward):
            self.bound_toward_index.add(term, owner, i)
        self._selected: dict[LabelKey, bool] = {}
        self._signatures: dict[int, int | None] = {}
        self._static: dict[int, _Static] = {}
        self._by_key: dict[str, dict[str, list[int]]] = {}
        self._by_profile: dict[int, dict[int, str]] = {}
        self._refused: dict[int, tuple[Pod, dict[int, str]]] = {}
        """By pod identity (the pod kept alive with it, so the identity stays its own)."""

    @property
    def active(self) -> bool:
        """Whether any pending pod has rules, or any bound pod's terms could refuse or score one."""
        return (
            bool(self.pending_terms)
            or any(self.profiles[p][3] for p in self.pending_profiles)
            or bool(self.bound_anti)
            or bool(self.bound_toward)
        )

    def selected(self, key: LabelKey) -> bool:
        """Whether a pending pod's term, a bound pod's required anti-affinity, or a bound pod's term
        that scores incoming pods selects such pods."""
        found = self._selected.get(key)
        if found is None:
            found = any(selects(term, owner, key, self.namespaces) for term, owner, _ in self.selecting.candidates(key))
            self._selected[key] = found
        return found

    def profile_of(self, pod: Pod) -> int:
        """The number of the pod's profile: pods with equal profiles have the same number."""
        kept = self._profile_of.get(id(pod))
        if kept is not None and kept[0] is pod:
            return kept[1]
        # Keyed by the rules' numbers: pods of one job share their rules objects, so each distinct
        # object is hashed by value once instead of once per pod (equal numbers, equal rules).
        prof = profile(pod)
        labels, affinity, anti_affinity, ports = prof
        key = (labels, self._rules_number(affinity), self._rules_number(anti_affinity), ports)
        number = self._profile_ids.get(key)
        if number is None:
            number = self._profile_ids[key] = len(self.profiles)
            self.profiles.append(prof)
        self._profile_of[id(pod)] = (pod, number)
        return number

    def _rules_number(self, rules: object) -> int:
        """One number per distinct value of affinity rules, found by identity first."""
        kept = self._rules_of.get(id(rules))
        if kept is not None and kept[0] is rules:
            return kept[1]
        number = self._rules_ids.setdefault(rules, len(self._rules_ids))
        self._rules_of[id(rules)] = (rules, number)
        return number

    def signature(self, pod: Pod) -> Hashable | None:
        number = self.profile_of(pod)
        found = self._signatures.get(number, False)
        if found is False:
            # One answer per profile: its rules and whether a term selects its labels.
            found = self._signatures[number] = (
                number if has_rules(pod) or self.selected(self.profiles[number][0]) else None
            )
        return found

    def value(self, node: int, key: str) -> str | None:
        return self.nodes[node].labels.get(key)

    def static(self, pod: Pod) -> _Static:
        prof = self.profile_of(pod)
        found = self._static.get(prof)
        if found is None:
            found = self._static[prof] = self._compute(pod)
        return found

    def _compute(self, pod: Pod) -> _Static:
        own = label_key(pod)
        required = pod.pod_affinity.required
        counts: dict[Domain, int] = {}
        if required:
            for key in self.bound_index.candidates(required[0]):
                if all(selects(t, pod.namespace, key, self.namespaces) for t in required):
                    for node in self.bound_nodes[key]:
                        for term in required:
                            value = self.value(node, term.topology_key)
                            if value is not None:
                                domain = (term.topology_key, value)
                                counts[domain] = counts.get(domain, 0) + 1
        forbidden: dict[Domain, str] = {}
        for term in pod.pod_anti_affinity.required:
            for key in self.bound_index.candidates(term):
                if selects(term, pod.namespace, key, self.namespaces):
                    for node in self.bound_nodes[key]:
                        value = self.value(node, term.topology_key)
                        if value is not None:
                            forbidden.setdefault((term.topology_key, value), ANTI_AFFINITY_REASON)
        for term, owner, i in self.bound_anti_index.candidates(own):
            node = self.bound_anti[i][2]
            if selects(term, owner, own, self.namespaces):
                value = self.value(node, term.topology_key)
                if value is not None:
                    forbidden.setdefault((term.topology_key, value), EXISTING_ANTI_AFFINITY_REASON)
        self_match = bool(required) and all(selects(t, pod.namespace, own, self.namespaces) for t in required)
        justifiable = (not counts and self_match) or any(
            not other.pod_affinity.required and all(selects(t, pod.namespace, key, self.namespaces) for t in required)
            for key in (self.pending_index.candidates(required[0]) if required else ())
            for other in self.pending_by_key[key]
        )
        return _Static(counts, forbidden, self_match, justifiable)

    def preference(self, pod: Pod, nodes: Iterable[int]) -> dict[int, int]:
        """InterPodAffinity's raw score per node (only nonzero ones) from bound pods: the pod's
        preferred terms (+weight per selected bound pod in the node's domain, anti-affinity
        negative) and bound pods' terms toward it (required affinity at weight 1, preferred ones at
        theirs). Empty when nothing scores the pod."""
        own = label_key(pod)
        by_domain: dict[Domain, int] = {}

        def add(key: str, node: int, weight: int) -> None:
            value = self.value(node, key)
            if value is not None:
                by_domain[(key, value)] = by_domain.get((key, value), 0) + weight

        preferred = [(w.term, w.weight) for w in pod.pod_affinity.preferred]
        preferred += [(w.term, -w.weight) for w in pod.pod_anti_affinity.preferred]
        for term, weight in preferred:
            for key in self.bound_index.candidates(term):
                if selects(term, pod.namespace, key, self.namespaces):
                    for node in self.bound_nodes[key]:
                        add(term.topology_key, node, weight)
        for term, owner, i in self.bound_toward_index.candidates(own):
            _, _, node, weight = self.bound_toward[i]
            if selects(term, owner, own, self.namespaces):
                add(term.topology_key, node, weight)
        if not any(by_domain.values()):
            return {}
        keys = {key for key, _ in by_domain}
        out: dict[int, int] = {}
        for node in nodes:
            labels = self.nodes[node].labels
            total = sum(by_domain.get((key, labels[key]), 0) for key in keys if key in labels)
            if total:
                out[node] = total
        return out

    def nodes_with(self, key: str) -> dict[str, list[int]]:
        """Per value of a label key: the nodes having it."""
        found = self._by_key.get(key)
        if found is None:
            found = {}
            for index, node in enumerate(self.nodes):
                value = node.labels.get(key)
                if value is not None:
                    found.setdefault(value, []).append(index)
            self._by_key[key] = found
        return found

    def refused(self, pod: Pod) -> Mapping[int, str]:
        """kube-scheduler's refusals of nodes for the pod from bound pods alone, per node: NodePorts
        first, then InterPodAffinity's affinity, anti-affinity and existing pods' anti-affinity."""
        cached = self._refused.get(id(pod))
        if cached is not None:
            return cached[1]
        prof = self.profile_of(pod)
        out = self._by_profile.get(prof)
        if out is None:
            out = self._by_profile[prof] = self._refusals(pod)
        self._refused[id(pod)] = (pod, out)
        return out

    def _refusals(self, pod: Pod) -> dict[int, str]:
        if not has_rules(pod) and not self.selected(self.profiles[self.profile_of(pod)][0]):
            return {}
        static = self.static(pod)
        out: dict[int, str] = {}
        for wanted in (EXISTING_ANTI_AFFINITY_REASON, ANTI_AFFINITY_REASON):
            for (key, value), why in static.forbidden.items():
                if why == wanted:
                    out.update(dict.fromkeys(self.nodes_with(key).get(value, ()), why))
        required = pod.pod_affinity.required
        if required:
            for index, node in enumerate(self.nodes):
                labels = node.labels
                keyless = any(t.topology_key not in labels for t in required)
                counts = static.affinity_counts
                unmet = not keyless and not all(counts.get((t.topology_key, labels[t.topology_key])) for t in required)
                if keyless or (unmet and not static.justifiable):
                    out[index] = AFFINITY_REASON
        if pod.host_ports:
            for index, held in self.bound_ports.items():
                if any(ports_conflict(a, b) for a in pod.host_ports for b in held):
                    out[index] = PORTS_REASON
        return out


def interpod_interaction(snapshot: Snapshot, pending: Sequence[Pod]) -> Interaction | None:
    """The isolation hook (:mod:`vcsat.solver.rules.isolation`) for inter-pod affinity and host ports."""
    if not any(map(has_rules, pending)) and not pod_facts.count(snapshot, pod_facts.bound_with_pod_terms):
        return None  # the common case: no pending pod with rules, no bound pod with terms (carried)
    state = InterPod(snapshot, pending)
    if not state.active:
        return None
    return Interaction(name=INTERPOD, signature=state.signature, refused=state.refused, state=state)


# --- relations between isolated classes ---------------------------------------------------------


@dataclass
class AffinityNeed:
    """A group's required affinity, as the model and the greedy enforce it."""

    terms: tuple[PodAffinityTerm, ...]
    static: dict[Domain, int]
    """Bound pods matching all terms, per domain."""
    justifiers: frozenset[int]
    """Groups without required affinity whose pods match all the terms."""
    first_pod: bool
    """No bound pod matches and the group matches itself: one domain per key of its own choosing."""
    matching: frozenset[int] = frozenset()
    """Every other group whose pods match all the terms (the justifiers, and groups with required
    affinity of their own): while the group relies on the first-pod rule for a key, these may be
    present only in its first domain of that key."""
    unit: int = -1
    """Groups under the first-pod rule that match each other's terms share one first domain per
    key (the first pod of any of them goes first, the rest join it): this is the unit's id."""


@dataclass
class Relations:
    """How the isolated classes of one cycle constrain each other."""

    group_of: dict[int, int]
    """Isolated class -> its group (classes with the same profile)."""
    members: dict[int, list[int]]
    """Group -> its classes."""
    keys: tuple[str, ...]
    """Every topology key a required term names."""
    self_anti: dict[int, set[str]] = field(default_factory=dict)
    """Group -> keys of its required anti-affinity terms that select its own pods: one pod per domain."""
    anti_pairs: dict[str, set[tuple[int, int]]] = field(default_factory=dict)
    """Key -> pairs of distinct groups (low, high) that may not share a domain of that key."""
    port_cliques: list[frozenset[int]] = field(default_factory=list)
    """Sets of classes whose ports pairwise conflict: at most one of their pods per node."""
    affinity: dict[int, AffinityNeed] = field(default_factory=dict)

    def conflicts(self, group: int, key: str) -> set[int]:
        """Groups that may not share a domain of ``key`` with ``group`` (itself excluded)."""
        out = set()
        for a, b in self.anti_pairs.get(key, ()):
            if a == group:
                out.add(b)
            elif b == group:
                out.add(a)
        return out


def relations(state: InterPod, classes: Mapping[int, Pod]) -> Relations:
    """Relations among isolated classes, each given by one of its pods (all agree on the profile)."""
    group_by_profile: dict[int, int] = {}
    group_of: dict[int, int] = {}
    members: dict[int, list[int]] = {}
    rep: dict[int, Pod] = {}
    for c, pod in sorted(classes.items()):
        g = group_by_profile.setdefault(state.profile_of(pod), len(group_by_profile))
        group_of[c] = g
        members.setdefault(g, []).append(c)
        rep.setdefault(g, pod)
    keys = sorted(
        {t.topology_key for pod in rep.values() for t in (*pod.pod_affinity.required, *pod.pod_anti_affinity.required)}
    )
    out = Relations(group_of=group_of, members=members, keys=tuple(keys))
    ns = state.namespaces
    groups_by_key: dict[LabelKey, list[int]] = {}
    for g, pod in rep.items():
        groups_by_key.setdefault(label_key(pod), []).append(g)
    index = LabelIndex(groups_by_key)

    def candidates(term: PodAffinityTerm) -> list[tuple[int, Pod]]:
        return [(h, rep[h]) for key in index.candidates(term) for h in groups_by_key[key]]

    for g, pod in rep.items():
        for term in pod.pod_anti_affinity.required:
            for h, other in candidates(term):
                if not selects(term, pod.namespace, label_key(other), ns):
                    continue
                if h == g:
                    out.self_anti.setdefault(g, set()).add(term.topology_key)
                else:
                    out.anti_pairs.setdefault(term.topology_key, set()).add((min(g, h), max(g, h)))
        required = pod.pod_affinity.required
        if required:
            static = state.static(pod)
            matching = frozenset(
                h
                for h, other in candidates(required[0])
                if h != g and all(selects(t, pod.namespace, label_key(other), ns) for t in required)
            )
            justifiers = frozenset(h for h in matching if not rep[h].pod_affinity.required)
            out.affinity[g] = AffinityNeed(
                terms=required,
                static=static.affinity_counts,
                justifiers=justifiers,
                matching=matching,
                first_pod=not static.affinity_counts and static.self_match,
            )
    _first_pod_units(out, rep, ns)
    out.port_cliques = _port_cliques({c: pod.host_ports for c, pod in classes.items() if pod.host_ports})
    return out


def _first_pod_units(out: Relations, rep: Mapping[int, Pod], ns: Mapping[str, Mapping[str, str]]) -> None:
    """First-pod groups that match each other's terms cannot each go first (the second would see
    the first's pods): they form a unit with one first domain per key when their keys agree, and
    lose the first-pod rule when they do not (conservative)."""
    first = sorted(g for g, need in out.affinity.items() if need.first_pod)
    parent = {g: g for g in first}

    def root(g: int) -> int:
        while parent[g] != g:
            g = parent[g]
        return g

    def matches(owner: int, target: int) -> bool:
        pod = rep[owner]
        return all(selects(t, pod.namespace, label_key(rep[target]), ns) for t in pod.pod_affinity.required)

    for i, g in enumerate(first):
        for h in first[i + 1 :]:
            if matches(g, h) and matches(h, g):
                parent[root(h)] = root(g)
    units: dict[int, list[int]] = {}
    for g in first:
        units.setdefault(root(g), []).append(g)
    for unit, groups in units.items():
        keys = {tuple(sorted({t.topology_key for t in out.affinity[g].terms})) for g in groups}
        for g in groups:
            need = out.affinity[g]
            if len(keys) > 1:
                need.first_pod = False
            else:
                need.unit = unit


def _port_cliques(ports: Mapping[int, Iterable[HostPort]]) -> list[frozenset[int]]:
    """Per (protocol, port): the classes binding every IP together with those binding one IP, for
    each such IP (the maximal sets of pairwise conflicting users)."""
    users: dict[tuple[str, int], dict[str, set[int]]] = {}
    for c, held in ports.items():
        for protocol, ip, port in map(normal_port, held):
            users.setdefault((protocol, port), {}).setdefault(ip, set()).add(c)
    cliques: set[frozenset[int]] = set()
    for by_ip in users.values():
        wildcard = by_ip.get(ANY_IP, set())
        specific = [ip for ip in by_ip if ip != ANY_IP]
        if not specific:
            cliques.add(frozenset(wildcard))
        for ip in specific:
            cliques.add(frozenset(wildcard | by_ip[ip]))
    return sorted(cliques, key=lambda s: sorted(s))


def affinity_anchors(snapshot: Snapshot, nodes: Sequence[Node]) -> set[str]:
    """Keys of bound pods that another bound pod's required pod affinity relies on: the pods each of
    its terms selects in its own domain of the term's key. Evicting one could leave that pod's
    affinity unsatisfied, so preemption and reclaim spare them (a subset of kube-scheduler's
    victims: it does not look, the rule being IgnoredDuringExecution)."""
    if not any(pod.pod_affinity.required for pod in snapshot.pods):
        return set()  # no pod relies on any
    position = {node.name: i for i, node in enumerate(nodes)}
    present = [
        (pod, position[pod.node_name])
        for pod in snapshot.pods
        if pod.bound and not pod.terminating and pod.node_name in position
    ]
    relying = [(pod, n) for pod, n in present if pod.pod_affinity.required]
    if not relying:
        return set()
    by_domain: dict[tuple[str, str], list[Pod]] = {}
    for key in sorted({t.topology_key for pod, _ in relying for t in pod.pod_affinity.required}):
        for pod, n in present:
            value = nodes[n].labels.get(key)
            if value is not None:
                by_domain.setdefault((key, value), []).append(pod)
    out: set[str] = set()
    for pod, n in relying:
        for term in pod.pod_affinity.required:
            value = nodes[n].labels.get(term.topology_key)
            if value is None:
                continue
            for other in by_domain.get((term.topology_key, value), ()):
                if other is not pod and selects(term, pod.namespace, label_key(other), snapshot.namespaces):
                    out.add(other.key)
    return out
