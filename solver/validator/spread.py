"""The validator's own reading of pod topology spread (``DoNotSchedule``), from the Kubernetes docs.

Written apart from :mod:`vcsat.solver.rules.spread` (it shares only the model and the node predicates):
for every placed pod and each of its ``DoNotSchedule`` constraints,

- its node must carry the topology key of each of them ("missing required label");
- the constraint's selector is its ``labelSelector`` with ``matchLabelKeys`` added from the pod's
  own labels; a nil or empty selector counts no pod;
- the domains are the values of the key on the *eligible* nodes: nodes carrying all those keys,
  passing the pod's nodeSelector and required node affinity unless ``nodeAffinityPolicy`` is
  Ignore, and tolerated by the pod when ``nodeTaintsPolicy`` is Honor;
- a domain's count is the non-terminating pods of the pod's namespace on its eligible nodes that
  the selector matches, in the final state (the pod itself included when it matches);
- the domain the pod lands in may exceed the least count over the domains by ``maxSkew`` at most;
  with fewer domains than ``minDomains`` the least count is 0.

The final state is judged twice for bindings, before evictions take effect (victims still there)
and after (victims gone, nominated pods there): a decision must hold in both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from vcsat.model import Node, Pod, Snapshot
from vcsat.model.selectors import LabelSelector
from vcsat.model.spread import TopologySpreadConstraint
from vcsat.solver.rules.predicates import affinity_matches, selector_matches, untolerated_taint

RULE = "PodTopologySpread"


def _selects(selector: LabelSelector | None, extra: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """kube-scheduler's selector with matchLabelKeys added; nil or empty selects no pod."""
    if selector is None or (not selector.requirements and not extra):
        return False
    if any(labels.get(key) != value for key, value in extra.items()):
        return False
    for requirement in selector.requirements:
        value = labels.get(requirement.key)
        ok = {
            "In": value is not None and value in requirement.values,
            "NotIn": value is None or value not in requirement.values,
            "Exists": value is not None,
            "DoesNotExist": value is None,
        }[requirement.operator]
        if not ok:
            return False
    return True


class _State:
    """Pods present per node in one final state, and by (namespace, label, value) for lookups."""

    def __init__(self, pods_by_node: Mapping[str, Sequence[Pod]]) -> None:
        self.pods_by_node = pods_by_node
        self.cache: dict[tuple[object, ...], dict[str, int]] = {}
        self.by_label: dict[tuple[str, str, str], list[tuple[Pod, str]]] = {}
        self.by_namespace: dict[str, list[tuple[Pod, str]]] = {}
        for name, pods in pods_by_node.items():
            for pod in pods:
                if pod.terminating:
                    continue
                self.by_namespace.setdefault(pod.namespace, []).append((pod, name))
                for key, value in pod.labels.items():
                    self.by_label.setdefault((pod.namespace, key, value), []).append((pod, name))

    def candidates(
        self, namespace: str, selector: LabelSelector, extra: Mapping[str, str]
    ) -> Sequence[tuple[Pod, str]]:
        """Pods that may match: those with one label the selector requires, else the namespace's."""
        for key, value in extra.items():
            return self.by_label.get((namespace, key, value), [])
        for requirement in selector.requirements:
            if requirement.operator == "In":
                return [e for v in requirement.values for e in self.by_label.get((namespace, requirement.key, v), [])]
        return self.by_namespace.get(namespace, [])


def spread_violations(
    snapshot: Snapshot,
    placed: Sequence[tuple[Pod, Node, str]],
    states: Mapping[str, Mapping[str, Sequence[Pod]]],
) -> list[tuple[str, str]]:
    """(pod key, message) per broken constraint. ``placed``: (pod, node, name of the state it is
    judged in); ``states``: per name, the pods present per node name."""
    out: list[tuple[str, str]] = []
    judged = {name: _State(pods) for name, pods in states.items()}
    eligible_cache: dict[tuple[object, ...], list[Node]] = {}
    domains: dict[tuple[int, str], dict[str, str]] = {}
    for pod, node, state_name in placed:
        hard = [c for c in pod.spread_constraints if c.when_unsatisfiable == "DoNotSchedule"]
        if not hard:
            continue
        keys = sorted({c.topology_key for c in hard})
        missing = [key for key in keys if key not in node.labels]
        if missing:
            out.append(
                (
                    pod.key,
                    f"node {node.name} has no label {missing[0]}: node(s) didn't match pod topology spread "
                    "constraints (missing required label)",
                )
            )
            continue
        state = judged[state_name]
        for constraint in hard:
            eligible = _eligible(snapshot.nodes, pod, constraint, keys, eligible_cache)
            counts = _counts(state, pod, constraint, eligible, domains)
            least = 0 if len(counts) < constraint.min_domains else min(counts.values(), default=0)
            here = counts.get(node.labels[constraint.topology_key], 0)
            if here - least > constraint.max_skew:
                out.append(
                    (
                        pod.key,
                        f"on {node.name}: {constraint.topology_key}={node.labels[constraint.topology_key]} holds "
                        f"{here} matching pods, the least domain {least}, maxSkew {constraint.max_skew} "
                        f"({state_name}): node(s) didn't match pod topology spread constraints",
                    )
                )
    return out


def _eligible(
    nodes: Iterable[Node],
    pod: Pod,
    constraint: TopologySpreadConstraint,
    keys: list[str],
    cache: dict[tuple[object, ...], list[Node]],
) -> list[Node]:
    honor_affinity = constraint.node_affinity_policy != "Ignore"
    honor_taints = constraint.node_taints_policy == "Honor"
    key = (
        tuple(keys),
        (tuple(sorted(pod.node_selector.items())), pod.affinity) if honor_affinity else None,
        pod.tolerations if honor_taints else None,
    )
    found = cache.get(key)
    if found is None:
        # The nodes passing the pod's node affinity and taints, shared by every set of keys.
        passing = cache.get(("passing", *key[1:]))
        if passing is None:
            passing = [
                node
                for node in nodes
                if not (
                    honor_affinity
                    and not (selector_matches(pod.node_selector, node) and affinity_matches(pod.affinity, node))
                )
                and not (honor_taints and untolerated_taint(pod, node) is not None)
            ]
            cache[("passing", *key[1:])] = passing
        found = [node for node in passing if all(k in node.labels for k in keys)]
        cache[key] = found
    return found


def _counts(
    state: _State,
    pod: Pod,
    constraint: TopologySpreadConstraint,
    eligible: list[Node],
    domains: dict[tuple[int, str], dict[str, str]],
) -> dict[str, int]:
    """Matching pods per domain over the eligible nodes. ``eligible`` is one of the lists the
    caller keeps for the whole check, so its identity names it in the caches."""
    extra = {k: pod.labels[k] for k in constraint.match_label_keys if k in pod.labels}
    key = (
        pod.namespace,
        repr(constraint.selector),
        tuple(sorted(extra.items())),
        constraint.topology_key,
        id(eligible),
    )
    found = state.cache.get(key)
    if found is None:
        domain = domains.get((id(eligible), constraint.topology_key))
        if domain is None:
            domain = {node.name: node.labels[constraint.topology_key] for node in eligible}
            domains[(id(eligible), constraint.topology_key)] = domain
        found = dict.fromkeys(domain.values(), 0)
        if constraint.selector is not None:
            for other, where in state.candidates(pod.namespace, constraint.selector, extra):
                if where in domain and _selects(constraint.selector, extra, other.labels):
                    found[domain[where]] += 1
        state.cache[key] = found
    return found
