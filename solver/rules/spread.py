"""Pod topology spread (kube-scheduler's PodTopologySpread filter), judged on the cycle's final state.

kube-scheduler places one pod at a time. For a pod with a ``DoNotSchedule`` constraint it counts,
per domain (a value of the topology key), the pods in the pod's namespace that match the
constraint's selector (``labelSelector`` plus the pod's own values of ``matchLabelKeys``), on the
*eligible* nodes only: nodes that carry every topology key of the pod's ``DoNotSchedule``
constraints and that pass the pod's nodeSelector/required node affinity when
``nodeAffinityPolicy`` is Honor (the default) and its tolerations when ``nodeTaintsPolicy`` is
Honor (default Ignore). Terminating pods are not counted. A node without one of the keys refuses
the pod ("missing required label"). On a node of domain ``d`` the pod passes when
``count(d) + self − min ≤ maxSkew``, where ``self`` is 1 when the pod matches its own selector and
``min`` is the least count over the eligible domains, or 0 when there are fewer eligible domains
than ``minDomains``.

vcsat decides a whole cycle at once, so the rule is stated on the final state. For one constraint
*group* (namespace, selector, key, maxSkew, minDomains, eligible nodes) a set of new placements is
accepted when, for every domain ``d`` that receives a pod carrying the constraint,
``final(d) − min_final ≤ maxSkew``. This is exact for the pods that carry and match the
constraint: such placements can be made one at a time in an order kube-scheduler accepts (always
into the least-filled domain still due to receive pods: that domain is at most the minimum, or the
minimum sits on a domain already at its final count, which is at least ``min_final``), and
conversely the last pod placed into ``d`` saw ``final(d) − 1`` matching pods and a minimum no larger
than ``min_final``. A carried constraint that the pod itself does not match, or matching pods that
carry nothing, are judged on the final state too, which is never weaker than kube-scheduler's
order-dependent view. With fewer eligible domains than ``minDomains`` the minimum is 0.

This module is the solver's one implementation (the greedy, the model and the decode guard read
it); :mod:`vcsat.solver.validator.check` holds an independent one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from vcsat.model import Node, Pod, Snapshot
from vcsat.model.selectors import LabelSelector
from vcsat.model.spread import TopologySpreadConstraint
from vcsat.solver.rules import predicates

if TYPE_CHECKING:
    from vcsat.solver.rules.isolation import Interaction

NAME = "PodTopologySpread"
SPREAD_REASON = "node(s) didn't match pod topology spread constraints"
MISSING_LABEL_REASON = "node(s) didn't match pod topology spread constraints (missing required label)"

Requirement = tuple[str, str, tuple[str, ...]]
Selector = tuple[tuple[tuple[str, str], ...], tuple[Requirement, ...]]
"""A resolved selector: sorted (key, value) pairs that must all be equal, and (key, operator,
values) requirements; hashable so that equal selectors are one group."""


def resolve_selector(constraint: TopologySpreadConstraint, labels: Mapping[str, str]) -> Selector | None:
    """The selector kube-scheduler uses: ``labelSelector`` with ``matchLabelKeys`` merged in from the
    pod's labels; None when it matches no pod (nil, or empty with nothing merged)."""
    selector: LabelSelector | None = constraint.selector
    if selector is None:
        return None
    reqs = {(r.key, r.operator, tuple(sorted(r.values))) for r in selector.requirements}
    reqs |= {(key, "In", (labels[key],)) for key in constraint.match_label_keys if key in labels}
    if not reqs:
        return None  # an empty selector counts nothing
    return (), tuple(sorted(reqs))


def matches(selector: Selector | None, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return False
    pairs, requirements = selector
    if any(labels.get(key) != value for key, value in pairs):
        return False
    for key, operator, values in requirements:
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def hard_constraints(pod: Pod, hard: bool = True) -> tuple[TopologySpreadConstraint, ...]:
    """The pod's DoNotSchedule constraints (its ScheduleAnyway ones with ``hard`` False)."""
    return tuple(c for c in pod.spread_constraints if c.hard == hard)


def has_keys(pod: Pod, node: Node, hard: bool = True) -> bool:
    """The node carries every topology key of the pod's DoNotSchedule (or ScheduleAnyway) constraints."""
    return all(c.topology_key in node.labels for c in hard_constraints(pod, hard))


def counts_domain(pod: Pod, constraint: TopologySpreadConstraint, node: Node) -> bool:
    """Whether the node's pods count for this constraint of this pod (an eligible node)."""
    return has_keys(pod, node, constraint.hard) and passes_policies(pod, constraint, node)


def passes_policies(pod: Pod, constraint: TopologySpreadConstraint, node: Node) -> bool:
    """The node-affinity and taint half of :func:`counts_domain` (without the topology keys)."""
    if constraint.node_affinity_policy == "Honor" and not (
        predicates.selector_matches(pod.node_selector, node) and predicates.affinity_matches(pod.affinity, node)
    ):
        return False
    return not (constraint.node_taints_policy == "Honor" and predicates.untolerated_taint(pod, node) is not None)


def pod_token(pod: Pod, selectors: Sequence[tuple[int, Selector]]) -> tuple[object, ...] | None:
    """What makes two pending pods alike for spread: their resolved DoNotSchedule constraints and
    which of the cycle's selectors of the pod's namespace (numbered) its labels match. None: spread
    ignores it."""
    own = tuple(
        (
            c.topology_key,
            c.max_skew,
            c.min_domains,
            c.node_affinity_policy,
            c.node_taints_policy,
            resolve_selector(c, pod.labels),
            c.hard,
        )
        for c in pod.spread_constraints
    )
    hits = tuple(sorted(i for i, sel in selectors if matches(sel, pod.labels)))
    if not own and not hits:
        return None
    return own, hits


def spread_interaction(snapshot: Snapshot, pending: Sequence[Pod]) -> Interaction | None:
    """Topology spread for :mod:`vcsat.solver.rules.isolation`: pods that carry a DoNotSchedule constraint
    or match one's selector get classes of their own; a node without a constraint's key refuses a
    carrier ("missing required label")."""
    from vcsat.solver.rules.isolation import Interaction  # isolation lists this factory

    selectors = cycle_selectors(pending)
    if not selectors:
        return None
    nodes = snapshot.nodes
    tokens: dict[str, tuple[object, ...] | None] = {}
    # Selectors by (namespace, key, value) of their first In requirement: a pod is tried only
    # against those its labels could meet (and the few without an In requirement).
    by_pair: dict[tuple[str, str, str], list[tuple[int, Selector]]] = {}
    scan: dict[str, list[tuple[int, Selector]]] = {}
    for i, (namespace, selector) in enumerate(selectors):
        first = next((r for r in selector[1] if r[1] == "In"), None)
        if first is None:
            scan.setdefault(namespace, []).append((i, selector))
        else:
            for value in first[2]:
                by_pair.setdefault((namespace, first[0], value), []).append((i, selector))

    def signature(pod: Pod) -> tuple[object, ...] | None:
        # Asked once per (pod, node) by the isolation: computed once per pod.
        if pod.key not in tokens:
            candidates = list(scan.get(pod.namespace, ()))
            for key, value in pod.labels.items():
                candidates += by_pair.get((pod.namespace, key, value), ())
            tokens[pod.key] = pod_token(pod, candidates)
        return tokens[pod.key]

    lacking: dict[tuple[str, ...], dict[int, str]] = {}
    """Per set of topology keys: the nodes without one of them, with the reason."""

    def refused(pod: Pod) -> Mapping[int, str]:
        keys = tuple(sorted({c.topology_key for c in hard_constraints(pod)}))
        if not keys:
            return {}
        found = lacking.get(keys)
        if found is None:
            found = lacking[keys] = {
                n: MISSING_LABEL_REASON for n, each in enumerate(nodes) if not all(key in each.labels for key in keys)
            }
        return found

    return Interaction(NAME, signature, refused, state=selectors)


def cycle_selectors(pending: Iterable[Pod]) -> list[tuple[str, Selector]]:
    """(namespace, selector) of every topology spread constraint of a pending pod, once each."""
    seen: dict[tuple[str, Selector], None] = {}
    for pod in pending:
        for constraint in pod.spread_constraints:
            selector = resolve_selector(constraint, pod.labels)
            if selector is not None:
                seen.setdefault((pod.namespace, selector), None)
    return list(seen)


@dataclass(frozen=True)
class Layout:
    """The domains of one topology key over one set of eligible nodes, shared by every group that
    reads the same key on the same nodes (a cycle's groups mostly do)."""

    domain_of: dict[int, str]
    """Per eligible node index: its domain (value of the key)."""
    sizes: dict[str, int]
    """Per domain: its eligible nodes."""
    index: dict[str, int]
    """Per domain: its number, in sorted order."""
    codes: NDArray[np.int64]
    """Per node of the cycle: its domain's number, or -1 where the node is not eligible."""

    @staticmethod
    def of(nodes: Sequence[Node], eligible: Sequence[int], key: str) -> Layout:
        domain_of = {n: nodes[n].labels[key] for n in eligible}
        sizes: dict[str, int] = {}
        for domain in domain_of.values():
            sizes[domain] = sizes.get(domain, 0) + 1
        index = {domain: i for i, domain in enumerate(sorted(sizes))}
        codes = np.full(len(nodes), -1, dtype=np.int64)
        if domain_of:
            codes[np.fromiter(domain_of, dtype=np.int64, count=len(domain_of))] = np.fromiter(
                (index[d] for d in domain_of.values()), dtype=np.int64, count=len(domain_of)
            )
        return Layout(domain_of, sizes, index, codes)


@dataclass
class Group:
    """One constraint as the cycle sees it: its eligible nodes' domains and who counts."""

    index: int
    namespace: str
    selector: Selector | None
    key: str
    max_skew: int
    min_domains: int
    layout: Layout
    static: dict[str, int]
    """Per eligible domain: matching pods already bound there (terminating ones excluded)."""
    carriers: list[int] = field(default_factory=list)
    """Pod classes that carry the constraint."""
    members: list[int] = field(default_factory=list)
    """Pending pod classes whose pods match the selector (they raise the counts)."""

    @property
    def domain_of(self) -> dict[int, str]:
        """Per eligible node index: its domain (value of the key). Shared: never modify it."""
        return self.layout.domain_of

    @property
    def few_domains(self) -> bool:
        """Fewer eligible domains than minDomains: the minimum is taken as 0."""
        return len(self.static) < self.min_domains

    @property
    def sizes(self) -> dict[str, int]:
        """Per domain: its eligible nodes."""
        return self.layout.sizes

    @cached_property
    def crowded(self) -> dict[str, int]:
        """The domains that already hold matching pods, with their counts."""
        return {domain: k for domain, k in self.static.items() if k}

    @cached_property
    def symmetry_codes(self) -> NDArray[np.int64]:
        """Per node, what tells it apart for this group (:meth:`symmetry_part` as a number): -1 where
        it is not eligible, its domain's number (0 up) in a domain of several nodes, and for a domain
        of one node (a hostname key) ``-2 - count``, since such domains with equal counts are
        interchangeable."""
        layout = self.layout
        ordered = sorted(layout.sizes)
        value = np.array([-2 if layout.sizes[d] == 1 else i for i, d in enumerate(ordered)], dtype=np.int64)
        for domain, k in self.crowded.items():
            if layout.sizes[domain] == 1:
                value[layout.index[domain]] = -2 - k
        codes = np.full(len(layout.codes), -1, dtype=np.int64)
        eligible = layout.codes >= 0
        codes[eligible] = value[layout.codes[eligible]]
        return codes

    def symmetry_part(self, node: int) -> object:
        """What tells the node apart for this group: its domain, or for a domain of one node (a
        hostname key) only its count, since such domains with equal counts are interchangeable."""
        domain = self.domain_of.get(node)
        if domain is None:
            return None
        return (1, self.static[domain]) if self.sizes[domain] == 1 else domain

    def nodes_in(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for node, domain in sorted(self.domain_of.items()):
            out.setdefault(domain, []).append(node)
        return out


def build_groups(
    snapshot: Snapshot, nodes: Sequence[Node], classes: Sequence[tuple[int, Pod]], hard: bool = True
) -> list[Group]:
    """The cycle's constraint groups, from each pod class (index, first pod) that carries or matches;
    of the DoNotSchedule constraints, or of the ScheduleAnyway ones with ``hard`` False."""
    by_key: dict[tuple[object, ...], Group] = {}
    eligible_cache: dict[tuple[object, ...], tuple[int, ...]] = {}
    passing_cache: dict[tuple[object, ...], tuple[int, ...]] = {}
    layouts: dict[tuple[tuple[int, ...], str], Layout] = {}
    zeros: dict[tuple[tuple[int, ...], str], dict[str, int]] = {}
    bound = _BoundIndex(snapshot, nodes)
    for c, pod in classes:
        for constraint in hard_constraints(pod, hard):
            selector = resolve_selector(constraint, pod.labels)
            elig_key = (
                tuple(sorted({x.topology_key for x in hard_constraints(pod, hard)})),
                predicates.eligibility_key(pod) if constraint.node_affinity_policy == "Honor" else None,
                predicates.eligibility_key(pod).tolerations if constraint.node_taints_policy == "Honor" else None,
                constraint.node_affinity_policy,
                constraint.node_taints_policy,
            )
            eligible = eligible_cache.get(elig_key)
            if eligible is None:
                # The nodes passing the policies, shared by every set of keys; then those with the keys.
                passing = passing_cache.get(elig_key[1:])
                if passing is None:
                    passing = passing_cache[elig_key[1:]] = tuple(
                        n for n, node in enumerate(nodes) if passes_policies(pod, constraint, node)
                    )
                keys = elig_key[0]
                eligible = tuple(n for n in passing if all(k in nodes[n].labels for k in keys))
                eligible_cache[elig_key] = eligible
            key = (
                pod.namespace,
                selector,
                constraint.topology_key,
                constraint.max_skew,
                constraint.min_domains,
                eligible,
            )
            group = by_key.get(key)
            if group is None:
                where = (eligible, constraint.topology_key)
                layout = layouts.get(where)
                if layout is None:
                    layout = layouts[where] = Layout.of(nodes, eligible, constraint.topology_key)
                    zeros[where] = dict.fromkeys(sorted(layout.sizes), 0)
                static = dict(zeros[where])
                for n, k in bound.matching(pod.namespace, selector).items():
                    domain = layout.domain_of.get(n)
                    if domain is not None:
                        static[domain] += k
                group = Group(
                    index=len(by_key),
                    namespace=pod.namespace,
                    selector=selector,
                    key=constraint.topology_key,
                    max_skew=constraint.max_skew,
                    min_domains=constraint.min_domains,
                    layout=layout,
                    static=static,
                )
                by_key[key] = group
            if c not in group.carriers:
                group.carriers.append(c)
    groups = list(by_key.values())
    by_pair: dict[tuple[str, str, str], list[tuple[int, Pod]]] = {}
    for c, pod in classes:
        for label, value in pod.labels.items():
            by_pair.setdefault((pod.namespace, label, value), []).append((c, pod))
    for group in groups:
        if group.selector is None:
            continue
        first = next((r for r in group.selector[1] if r[1] == "In"), None)
        candidates = (
            [entry for value in first[2] for entry in by_pair.get((group.namespace, first[0], value), [])]
            if first is not None
            else [(c, pod) for c, pod in classes if pod.namespace == group.namespace]
        )
        group.members = sorted(c for c, pod in candidates if matches(group.selector, pod.labels))
    return groups


class _BoundIndex:
    """Bound, non-terminating pods per namespace and label pair, to count a selector's matches per
    node without scanning every pod for every selector."""

    def __init__(self, snapshot: Snapshot, nodes: Sequence[Node]) -> None:
        position = {node.name: n for n, node in enumerate(nodes)}
        self.by_pair: dict[tuple[str, str, str], list[tuple[Pod, int]]] = {}
        self.by_namespace: dict[str, list[tuple[Pod, int]]] = {}
        for pod in snapshot.pods:
            if not pod.bound or pod.terminating or pod.node_name not in position:
                continue
            entry = (pod, position[pod.node_name])
            self.by_namespace.setdefault(pod.namespace, []).append(entry)
            for key, value in pod.labels.items():
                self.by_pair.setdefault((pod.namespace, key, value), []).append(entry)

    def matching(self, namespace: str, selector: Selector | None) -> dict[int, int]:
        """Per node index: bound pods of the namespace that the selector matches."""
        out: dict[int, int] = {}
        for _pod, node in self.pods(namespace, selector):
            out[node] = out.get(node, 0) + 1
        return out

    def pods(self, namespace: str, selector: Selector | None) -> list[tuple[Pod, int]]:
        """Bound pods of the namespace that the selector matches, with their node index."""
        if selector is None:
            return []
        pairs, requirements = selector
        if pairs:
            candidates = self.by_pair.get((namespace, *pairs[0]), [])
        else:
            first_in = next((r for r in requirements if r[1] == "In"), None)
            if first_in is not None:
                candidates = [e for value in first_in[2] for e in self.by_pair.get((namespace, first_in[0], value), [])]
            else:
                candidates = self.by_namespace.get(namespace, [])
        return [(pod, node) for pod, node in candidates if matches(selector, pod.labels)]


def counted_pods(snapshot: Snapshot, nodes: Sequence[Node], groups: Sequence[Group]) -> set[str]:
    """Keys of the bound pods that some group counts (their namespace and selector)."""
    bound = _BoundIndex(snapshot, nodes)
    seen = {(group.namespace, group.selector) for group in groups}
    return {pod.key for namespace, selector in seen for pod, _node in bound.pods(namespace, selector)}


class SpreadState:
    """Matching-pod counts per group and domain as placements come and go, for the greedy and the
    decode guard: :meth:`allows` keeps every receiving domain within maxSkew of the minimum."""

    def __init__(self, groups: Sequence[Group]) -> None:
        self.groups = list(groups)
        self.count = [dict(g.static) for g in self.groups]
        self.received = [dict.fromkeys(g.static, 0) for g in self.groups]
        self.hist: list[dict[int, int]] = []
        """Per group: how many domains hold each count (the minimum is the least key)."""
        for counts in self.count:
            hist: dict[int, int] = {}
            for value in counts.values():
                hist[value] = hist.get(value, 0) + 1
            self.hist.append(hist)
        self.low = [min(h, default=0) for h in self.hist]
        self.of_class: dict[int, list[tuple[int, bool, bool]]] = {}
        """Per class: (group, carries, matches) for each group it takes part in."""
        for gi, group in enumerate(self.groups):
            for c in sorted({*group.carriers, *group.members}):
                self.of_class.setdefault(c, []).append((gi, c in group.carriers, c in group.members))

    def minimum(self, gi: int) -> int:
        return 0 if self.groups[gi].few_domains else self.low[gi]

    def allows(self, c: int, node: int) -> bool:
        """Whether one more pod of class ``c`` on ``node`` keeps every group it touches valid."""
        for gi, carries, member in self.of_class.get(c, ()):
            group = self.groups[gi]
            domain = group.domain_of.get(node)
            if domain is None:
                if carries:
                    return False
                continue
            if not carries and self.received[gi][domain] == 0:
                continue  # a domain no carrier has received yet may hold any count
            now = self.count[gi][domain]
            low = self.low[gi]
            if member and now == low and self.hist[gi][low] == 1:
                low += 1  # it was the only domain at the minimum
            if group.few_domains:
                low = 0
            if now + (1 if member else 0) - low > group.max_skew:
                return False
        return True

    def add(self, c: int, node: int, delta: int) -> None:
        """One pod of class ``c`` placed on (``delta`` 1) or taken off (-1) ``node``."""
        for gi, carries, member in self.of_class.get(c, ()):
            domain = self.groups[gi].domain_of.get(node)
            if domain is None:
                continue
            if member:
                hist = self.hist[gi]
                before = self.count[gi][domain]
                after = before + delta
                self.count[gi][domain] = after
                hist[before] -= 1
                if not hist[before]:
                    del hist[before]
                hist[after] = hist.get(after, 0) + 1
                self.low[gi] = (
                    min(self.low[gi], after)
                    if delta < 0
                    else (self.low[gi] if before != self.low[gi] or self.low[gi] in hist else min(hist))
                )
            if carries:
                self.received[gi][domain] += delta

    def broken(self) -> list[tuple[Group, str, int, int]]:
        """(group, domain, count, minimum) of every receiving domain beyond maxSkew."""
        out = []
        for gi, group in enumerate(self.groups):
            low = self.minimum(gi)
            for domain, got in self.received[gi].items():
                if got > 0 and self.count[gi][domain] - low > group.max_skew:
                    out.append((group, domain, self.count[gi][domain], low))
        return out
