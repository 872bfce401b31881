"""Kubernetes' node predicates as pure functions over the model.

The solver prunes candidate nodes with these and the validator (:mod:`vcsat.solver.validator.check`) judges
decisions with them; both must agree with kube-scheduler to the letter, so the semantics live once,
here. The rules follow upstream code, not folklore:

- taints and tolerations: ``v1.Toleration.ToleratesTaint`` (an empty key matches every key, an
  empty effect every effect; ``Exists`` ignores the value); only NoSchedule and NoExecute taints
  filter, PreferNoSchedule is a score;
- ``spec.unschedulable``: the NodeUnschedulable plugin, which lets in a pod tolerating
  ``node.kubernetes.io/unschedulable:NoSchedule``;
- NotReady: nothing new lands, whatever the tolerations (contract §1);
- ``nodeSelector``: every label equal;
- required node affinity: ``component-helpers/.../nodeaffinity``: terms are OR'd, requirements
  within a term AND'd; an empty term and a term that fails validation (``In`` without values,
  ``Gt`` without exactly one int64 value, ``matchFields`` on anything but ``metadata.name`` with
  one value) match nothing; ``NotIn`` and ``DoesNotExist`` match a node lacking the label; ``Gt`` and
  ``Lt`` parse the label as Go's ``strconv.ParseInt(v, 10, 64)`` and fail when it is no integer.
  An empty term list is no requirement: the model uses it for "no affinity given".

Facts of the whole snapshot rather than of the pod (its volumes' node affinity, zones, claims
held by others: :mod:`vcsat.solver.rules.volumes`) come in as a :class:`NodeRestriction` in the key: a
set of allowed node names with kube-scheduler's reason for each refused node, tested last.

Speed: pods with the same :func:`eligibility_key` pass exactly the same nodes, so everything about
a key is compiled once (:func:`compiled`), and :class:`NodeIndex` answers a key for all nodes at
once with a few big-integer bit operations (bit ``i`` is ``nodes[i]``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress
from typing import Final, Literal, NamedTuple

from vcsat.model import Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration
from vcsat.solver.rules.hashed_terms import HashedTerms

PredicateCode = Literal[
    "NodeNotReady",
    "NodeUnschedulable",
    "NodeSelectorMismatch",
    "NodeAffinityMismatch",
    "TaintNotTolerated",
    "VolumeRestrictions",
    "VolumeBinding",
    "VolumeZone",
]
PREDICATE_CODES: Final[tuple[PredicateCode, ...]] = (
    "NodeNotReady",
    "NodeUnschedulable",
    "NodeSelectorMismatch",
    "NodeAffinityMismatch",
    "TaintNotTolerated",
)
"""In the order :func:`predicate_failure` tests them; the first that fails is reported."""
VOLUME_CODES: Final[tuple[PredicateCode, ...]] = ("VolumeRestrictions", "VolumeBinding", "VolumeZone")
"""Codes of a :class:`NodeRestriction` (kube-scheduler's volume plugins), tested after the others."""

UNSCHEDULABLE_TAINT: Final = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
"""What a pod must tolerate to land on a cordoned node (kube-scheduler's NodeUnschedulable)."""

FILTERING_EFFECTS: Final = frozenset({"NoSchedule", "NoExecute"})
NODE_NAME_FIELD: Final = "metadata.name"

_INT64 = re.compile(r"[+-]?[0-9]+")
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class PredicateFailure:
    """Why one node refuses one pod: a stable code and a message naming the label or taint."""

    code: PredicateCode
    message: str


# --- taints and tolerations -------------------------------------------------------------------


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """``v1.Toleration.ToleratesTaint``."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return toleration.value == taint.value


def tolerated(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(tolerates(toleration, taint) for toleration in tolerations)


def format_taint(taint: Taint) -> str:
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def untolerated_taint(pod: Pod, node: Node) -> Taint | None:
    """The first NoSchedule/NoExecute taint of the node the pod does not tolerate, if any."""
    for taint in node.taints:
        if taint.effect in FILTERING_EFFECTS and not tolerated(pod.tolerations, taint):
            return taint
    return None


# --- label selection ------------------------------------------------------------------------


def parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: None where Go returns an error."""
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def selector_matches(node_selector: Mapping[str, str], node: Node) -> bool:
    labels = node.labels
    return all(labels.get(key) == value for key, value in node_selector.items())


def requirement_invalid(requirement: NodeSelectorRequirement, *, field: bool = False) -> str | None:
    """Why Kubernetes would refuse to build this requirement (its term then matches nothing)."""
    op, values = requirement.operator, requirement.values
    if field:
        if requirement.key != NODE_NAME_FIELD:
            return f"matchFields supports only {NODE_NAME_FIELD}, not {requirement.key}"
        if op not in ("In", "NotIn"):
            return f"matchFields supports only In and NotIn, not {op}"
        if len(values) != 1:
            return f"matchFields {op} needs exactly one value"
        return None
    if op in ("In", "NotIn") and not values:
        return f"{requirement.key} {op} needs values"
    if op in ("Exists", "DoesNotExist") and values:
        return f"{requirement.key} {op} takes no values"
    if op in ("Gt", "Lt") and (len(values) != 1 or parse_int64(values[0]) is None):
        return f"{requirement.key} {op} needs exactly one integer value"
    return None


def _label_holds(requirement: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    """``labels.Requirement.Matches`` for an already valid requirement."""
    op, actual = requirement.operator, labels.get(requirement.key)
    if op == "In":
        return actual is not None and actual in requirement.values
    if op == "NotIn":
        return actual is None or actual not in requirement.values
    if op == "Exists":
        return actual is not None
    if op == "DoesNotExist":
        return actual is None
    if actual is None:
        return False
    number, bound = parse_int64(actual), parse_int64(requirement.values[0])
    if number is None or bound is None:
        return False
    return number > bound if op == "Gt" else number < bound


def _field_holds(requirement: NodeSelectorRequirement, node: Node) -> bool:
    equal = node.name == requirement.values[0]
    return equal if requirement.operator == "In" else not equal


def term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    return _term_failure(term, node) is None


def affinity_matches(terms: Sequence[NodeSelectorTerm], node: Node) -> bool:
    """Required node affinity: any term matches; no terms at all is no requirement."""
    return not terms or any(term_matches(term, node) for term in terms)


def format_requirement(requirement: NodeSelectorRequirement) -> str:
    if requirement.operator in ("In", "NotIn"):
        return f"{requirement.key} {requirement.operator} ({', '.join(requirement.values)})"
    if requirement.operator in ("Gt", "Lt"):
        sign = ">" if requirement.operator == "Gt" else "<"
        return f"{requirement.key} {sign} {', '.join(requirement.values)}"
    return f"{requirement.key} {requirement.operator}"


def _term_failure(term: NodeSelectorTerm, node: Node) -> str | None:
    """None when the term matches the node, else the first reason it does not."""
    if not term.match_expressions and not term.match_fields:
        return "an empty term matches no node"
    for requirement in term.match_expressions:
        invalid = requirement_invalid(requirement)
        if invalid is not None:
            return f"invalid: {invalid}"
    for requirement in term.match_fields:
        invalid = requirement_invalid(requirement, field=True)
        if invalid is not None:
            return f"invalid: {invalid}"
    for requirement in term.match_expressions:
        if not _label_holds(requirement, node.labels):
            actual = node.labels.get(requirement.key)
            seen = "label absent" if actual is None else f"{requirement.key}={actual}"
            return f"{format_requirement(requirement)} fails ({seen})"
    for requirement in term.match_fields:
        if not _field_holds(requirement, node):
            return f"{format_requirement(requirement)} fails (name {node.name})"
    return None


# --- eligibility keys, compiled once ----------------------------------------------------------


class NodeRestriction:
    """Nodes a pod may use by facts of the whole snapshot rather than of the pod alone (its volumes:
    :mod:`vcsat.solver.rules.volumes` computes them), with why the other nodes refuse it.

    Immutable and hashable (frozensets cache their hashes): pods with equal restrictions share an
    eligibility key, so the messages are kept free of per-pod detail where they can be.
    """

    __slots__ = ("_hash", "allowed", "default", "groups")

    def __init__(
        self,
        allowed: frozenset[str],
        groups: tuple[tuple[PredicateCode, str, frozenset[str]], ...] = (),
        default: tuple[PredicateCode, str] = ("VolumeBinding", "refused by its volumes"),
    ) -> None:
        self.allowed = allowed
        self.groups = groups
        """(code, message, refused node names): a refused node's first group says why."""
        self.default = default
        """The refusal of a refused node no group lists (every node when the pod can run nowhere)."""
        self._hash = hash((allowed, groups, default))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodeRestriction):
            return NotImplemented
        return (
            self._hash == other._hash
            and self.allowed == other.allowed
            and self.groups == other.groups
            and self.default == other.default
        )

    def __repr__(self) -> str:
        return f"NodeRestriction({len(self.allowed)} nodes allowed, {self.default[0]})"

    def refusal(self, node: Node) -> PredicateFailure | None:
        if node.name in self.allowed:
            return None
        for code, message, names in self.groups:
            if node.name in names:
                return PredicateFailure(code, f"node {node.name}: {message}")
        return PredicateFailure(*self.default)


class EligibilityKey(NamedTuple):
    """Everything about a pod that decides which nodes pass; equal keys pass equal nodes."""

    node_selector: frozenset[tuple[str, str]]
    affinity: tuple[NodeSelectorTerm, ...]
    tolerations: frozenset[Toleration]
    restriction: NodeRestriction | None = None
    """Nodes its volumes allow (None: no such limit)."""


_KEYS: dict[tuple[Hashable, ...], tuple[object, object, EligibilityKey]] = {}
_KEYS_KEPT = 1 << 16
"""Keys made, by the pod fields they are made of (see :func:`eligibility_key`); cleared when full."""


def eligibility_key(pod: Pod, restriction: NodeRestriction | None = None) -> EligibilityKey:
    # Pods of one spec share their affinity and tolerations objects (the converter reads each
    # distinct spec once): a key is made once per selector and those objects, then looked up. The
    # entry holds the objects, so the ids it is found by cannot be reused while it lives.
    affinity, tolerations = pod.affinity, pod.tolerations
    memo = (tuple(pod.node_selector.items()), id(affinity), id(tolerations), restriction)
    found = _KEYS.get(memo)
    if found is not None and found[0] is affinity and found[1] is tolerations:
        return found[2]
    # PreferNoSchedule-only tolerations never change a filter result; dropping them merges keys.
    key = EligibilityKey(
        frozenset(pod.node_selector.items()),
        HashedTerms(affinity) if affinity else affinity,
        frozenset(t for t in tolerations if t.effect != "PreferNoSchedule"),
        restriction,
    )
    if len(_KEYS) >= _KEYS_KEPT:
        _KEYS.clear()
    _KEYS[memo] = (affinity, tolerations, key)
    return key


_MaskFn = Callable[["NodeIndex"], int]
_NodeTest = Callable[[Node], bool]


def _requirement_tests(requirement: NodeSelectorRequirement, *, field: bool) -> tuple[_NodeTest, _MaskFn]:
    """A per-node test and a whole-index mask for one valid requirement."""
    key, op = requirement.key, requirement.operator
    if field:
        name = requirement.values[0]
        if op == "In":
            return (lambda node: node.name == name), (lambda index: index.name_mask(name))
        return (lambda node: node.name != name), (lambda index: index.all_mask & ~index.name_mask(name))
    values = frozenset(requirement.values)
    if op == "In":
        return (lambda node: node.labels.get(key) in values), (lambda index: index.label_mask(key, values))
    if op == "NotIn":
        return (
            lambda node: node.labels.get(key) not in values,
            lambda index: index.all_mask & ~index.label_mask(key, values),
        )
    if op == "Exists":
        return (lambda node: key in node.labels), (lambda index: index.key_mask(key))
    if op == "DoesNotExist":
        return (lambda node: key not in node.labels), (lambda index: index.all_mask & ~index.key_mask(key))

    def compare(text: str | None) -> bool:
        return text is not None and _label_holds(requirement, {key: text})

    def mask(index: NodeIndex) -> int:
        return index.label_mask(key, frozenset(v for v in index.label_values(key) if compare(v)))

    return (lambda node: compare(node.labels.get(key))), mask


class _CompiledTerm(NamedTuple):
    tests: tuple[_NodeTest, ...]
    masks: tuple[_MaskFn, ...]


def _compile_term(term: NodeSelectorTerm) -> _CompiledTerm | None:
    """None for a term that matches nothing (empty, or refused by Kubernetes' validation)."""
    if not term.match_expressions and not term.match_fields:
        return None
    parts: list[tuple[_NodeTest, _MaskFn]] = []
    for requirements, field in ((term.match_expressions, False), (term.match_fields, True)):
        for requirement in requirements:
            if requirement_invalid(requirement, field=field) is not None:
                return None
            parts.append(_requirement_tests(requirement, field=field))
    return _CompiledTerm(tuple(test for test, _ in parts), tuple(mask for _, mask in parts))


class CompiledKey:
    """One eligibility key made ready to test nodes fast, singly or a whole index at once."""

    __slots__ = ("_taint_ok", "affinity", "key", "node_selector", "terms", "tolerates_cordon")

    def __init__(self, key: EligibilityKey) -> None:
        self.key = key
        self.node_selector = tuple(sorted(key.node_selector))
        self.affinity = key.affinity
        self.terms = tuple(t for t in (_compile_term(term) for term in key.affinity) if t is not None)
        self.tolerates_cordon = tolerated(key.tolerations, UNSCHEDULABLE_TAINT)
        self._taint_ok: dict[Taint, bool] = {}

    def taint_ok(self, taint: Taint) -> bool:
        """Whether this taint lets the pod in (PreferNoSchedule always does)."""
        ok = self._taint_ok.get(taint)
        if ok is None:
            ok = taint.effect not in FILTERING_EFFECTS or tolerated(self.key.tolerations, taint)
            self._taint_ok[taint] = ok
        return ok

    def affinity_ok(self, node: Node) -> bool:
        if not self.affinity:
            return True
        return any(all(test(node) for test in term.tests) for term in self.terms)

    def passes(self, node: Node) -> bool:
        return self.failure(node) is None

    def failure(self, node: Node) -> PredicateFailure | None:
        if not node.ready:
            return PredicateFailure("NodeNotReady", f"node {node.name} is not Ready")
        if node.unschedulable and not self.tolerates_cordon:
            return PredicateFailure(
                "NodeUnschedulable",
                f"node {node.name} is cordoned (spec.unschedulable) and the pod does not tolerate "
                f"{format_taint(UNSCHEDULABLE_TAINT)}",
            )
        labels = node.labels
        for key, wanted in self.node_selector:
            actual = labels.get(key)
            if actual != wanted:
                has = f"has {key}={actual}" if actual is not None else f"lacks label {key}"
                return PredicateFailure(
                    "NodeSelectorMismatch", f"node {node.name} {has}; nodeSelector wants {key}={wanted}"
                )
        if not self.affinity_ok(node):
            reasons = [f"term {i}: {_term_failure(term, node)}" for i, term in enumerate(self.affinity[:3])]
            more = f"; and {len(self.affinity) - 3} more terms" if len(self.affinity) > 3 else ""
            return PredicateFailure(
                "NodeAffinityMismatch",
                f"node {node.name} matches no required node affinity term ({'; '.join(reasons)}{more})",
            )
        for taint in node.taints:
            if not self.taint_ok(taint):
                return PredicateFailure(
                    "TaintNotTolerated",
                    f"node {node.name} has taint {format_taint(taint)} that the pod does not tolerate",
                )
        if self.key.restriction is not None:
            return self.key.restriction.refusal(node)
        return None

    def mask(self, index: NodeIndex) -> int:
        """Bit ``i`` set when ``index.nodes[i]`` passes."""
        mask = index.ready_mask
        if not self.tolerates_cordon:
            mask &= ~index.cordoned_mask
        for key, value in self.node_selector:
            mask &= index.label_mask(key, (value,))
        if self.affinity:
            matching = 0
            for term in self.terms:
                term_mask = index.all_mask
                for term_part in term.masks:
                    term_mask &= term_part(index)
                matching |= term_mask
            mask &= matching
        for taints, taint_mask in index.taint_groups:
            if mask & taint_mask and not all(self.taint_ok(taint) for taint in taints):
                mask &= ~taint_mask
        if self.key.restriction is not None:
            allowed = 0
            for name in self.key.restriction.allowed:
                allowed |= index.name_mask(name)
            mask &= allowed
        return mask


@lru_cache(maxsize=8192)
def compiled(key: EligibilityKey) -> CompiledKey:
    return CompiledKey(key)


def predicate_failure(pod: Pod, node: Node, restriction: NodeRestriction | None = None) -> PredicateFailure | None:
    """The first predicate (in :data:`PREDICATE_CODES` order, then the restriction's) the node fails
    for the pod, or None."""
    return compiled(eligibility_key(pod, restriction)).failure(node)


# --- all nodes at once ------------------------------------------------------------------------

_BIT_BYTES = bytes.maketrans(b"01", b"\x00\x01")


class NodeIndex:
    """Nodes indexed once, so that one key's eligible set costs a few big-int operations.

    Build one per snapshot (``NodeIndex(snapshot.nodes)``); masks and lists are cached per key.
    """

    def __init__(self, nodes: Iterable[Node]) -> None:
        self.nodes: tuple[Node, ...] = tuple(nodes)
        self.all_mask = (1 << len(self.nodes)) - 1
        self.ready_mask = 0
        self.cordoned_mask = 0
        self._labels: dict[str, dict[str, int]] = {}
        self._names: dict[str, int] = {}
        groups: dict[tuple[Taint, ...], int] = {}
        for i, node in enumerate(self.nodes):
            bit = 1 << i
            if node.ready:
                self.ready_mask |= bit
            if node.unschedulable:
                self.cordoned_mask |= bit
            self._names[node.name] = self._names.get(node.name, 0) | bit
            for key, value in node.labels.items():
                by_value = self._labels.setdefault(key, {})
                by_value[value] = by_value.get(value, 0) | bit
            taints = tuple(t for t in node.taints if t.effect in FILTERING_EFFECTS)
            if taints:
                groups[taints] = groups.get(taints, 0) | bit
        self.taint_groups: tuple[tuple[tuple[Taint, ...], int], ...] = tuple(groups.items())
        """Nodes grouped by their filtering taints: a key tolerates a group or loses all of it."""
        self._key_masks: dict[str, int] = {}
        self._masks: dict[EligibilityKey, int] = {}
        self._lists: dict[EligibilityKey, list[Node]] = {}

    def as_built(self) -> NodeIndex:
        """The same nodes with every node counted Ready and uncordoned (those are state, not how
        the cluster is built): shares this index's label and taint tables, none of its key masks."""
        # Field by field, not ``copy.copy``: compiled (docs/compiled-build.md) this is a native
        # class, which ``copy`` cannot make without calling ``__init__``. An index of no nodes costs
        # nothing to make; every table but the key masks is this one's, shared as a copy shares it.
        index = NodeIndex(())
        index.nodes = self.nodes
        index.all_mask = self.all_mask
        index.ready_mask = self.all_mask
        index.cordoned_mask = 0
        index._labels = self._labels
        index._names = self._names
        index.taint_groups = self.taint_groups
        index._key_masks = self._key_masks
        return index

    def name_mask(self, name: str) -> int:
        return self._names.get(name, 0)

    def key_mask(self, key: str) -> int:
        mask = self._key_masks.get(key)
        if mask is None:
            mask = 0
            for value_mask in self._labels.get(key, {}).values():
                mask |= value_mask
            self._key_masks[key] = mask
        return mask

    def label_values(self, key: str) -> Iterable[str]:
        return self._labels.get(key, {}).keys()

    def label_mask(self, key: str, values: Iterable[str]) -> int:
        by_value = self._labels.get(key, {})
        mask = 0
        for value in values:
            mask |= by_value.get(value, 0)
        return mask

    def mask(self, key: EligibilityKey) -> int:
        mask = self._masks.get(key)
        if mask is None:
            mask = compiled(key).mask(self)
            self._masks[key] = mask
        return mask

    def nodes_of(self, mask: int) -> list[Node]:
        if not mask:
            return []
        bits = format(mask, f"0{len(self.nodes)}b")[::-1].encode().translate(_BIT_BYTES)
        return list(compress(self.nodes, bits))

    def eligible(self, pod: Pod) -> list[Node]:
        """The nodes the pod may land on, in index order. Do not mutate the returned list."""
        key = eligibility_key(pod)
        nodes = self._lists.get(key)
        if nodes is None:
            nodes = self.nodes_of(self.mask(key))
            self._lists[key] = nodes
        return nodes


_INDEXES: dict[tuple[int, ...], NodeIndex] = {}
_INDEXES_KEPT = 4


def node_index(nodes: Sequence[Node]) -> NodeIndex:
    """A cached :class:`NodeIndex` for these very node objects (nodes are immutable).

    The cache holds the nodes themselves, so the identities it is keyed by cannot be reused while
    an entry lives.
    """
    ids = tuple(map(id, nodes))
    index = _INDEXES.get(ids)
    if index is None:
        if len(_INDEXES) >= _INDEXES_KEPT:
            del _INDEXES[next(iter(_INDEXES))]
        index = _INDEXES[ids] = NodeIndex(nodes)
    return index


def eligible_nodes(pod: Pod, nodes: Sequence[Node]) -> list[Node]:
    """The nodes (in the given order) where every predicate holds for the pod."""
    return list(node_index(nodes).eligible(pod))
