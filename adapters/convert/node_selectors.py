"""Node selector terms: a pod's node affinity (required and preferred) and a volume's node affinity.

One reader for ``matchExpressions`` and ``matchFields`` so pods and PersistentVolumes refuse the
same mistakes in the same words (an operator that takes values given none, ``Gt`` without one
integer, a field other than ``metadata.name``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from vcsat.adapters.convert.fields import MAPPING_TYPES, type_name
from vcsat.adapters.convert.reader import KubeObject
from vcsat.model.cluster import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    SelectorOperator,
)

_SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
_OPERATOR_NAMES = "In, NotIn, Exists, DoesNotExist, Gt, Lt"


def read_requirements(
    obj: KubeObject, term: Mapping[str, Any], key: str, base: str
) -> tuple[NodeSelectorRequirement, ...]:
    out = []
    for index, raw in enumerate(obj.sequence(term, key, f"{base}.{key}")):
        path = f"{base}.{key}[{index}]"
        if not isinstance(raw, MAPPING_TYPES):
            obj.fail(path, "must be a mapping")
        label = obj.string(raw, "key", f"{path}.key")
        if not label:
            obj.fail(f"{path}.key", "missing")
        operator = obj.string(raw, "operator", f"{path}.operator")
        if operator not in _SELECTOR_OPERATORS:
            obj.fail(f"{path}.operator", f"must be one of {_OPERATOR_NAMES}, not {operator!r}")
        values = obj.sequence(raw, "values", f"{path}.values")
        for position, value in enumerate(values):
            if not isinstance(value, str):
                obj.fail(f"{path}.values[{position}]", f"must be a string, not {type_name(value)}")
        if operator in ("In", "NotIn") and not values:
            obj.fail(f"{path}.values", f"{operator} needs at least one value")
        if operator in ("Exists", "DoesNotExist") and values:
            obj.fail(f"{path}.values", f"{operator} takes no values")
        if operator in ("Gt", "Lt") and (len(values) != 1 or not _is_integer_text(values[0])):
            obj.fail(f"{path}.values", f"{operator} needs exactly one integer value")
        out.append(
            NodeSelectorRequirement.model_construct(
                key=label, operator=cast("SelectorOperator", operator), values=tuple(values)
            )
        )
    return tuple(out)


def read_required_affinity(obj: KubeObject, spec: Mapping[str, Any]) -> tuple[NodeSelectorTerm, ...]:
    base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    affinity = obj.mapping(spec, "affinity", "spec.affinity")
    node_affinity = obj.mapping(affinity, "nodeAffinity", "spec.affinity.nodeAffinity")
    required = obj.mapping(node_affinity, "requiredDuringSchedulingIgnoredDuringExecution", base)
    if not required:
        return ()
    terms = []
    for index, raw in enumerate(obj.sequence(required, "nodeSelectorTerms", f"{base}.nodeSelectorTerms")):
        path = f"{base}.nodeSelectorTerms[{index}]"
        if not isinstance(raw, MAPPING_TYPES):
            obj.fail(path, "must be a mapping")
        expressions = read_requirements(obj, raw, "matchExpressions", path)
        fields = read_requirements(obj, raw, "matchFields", path)
        for position, requirement in enumerate(fields):
            if requirement.key != "metadata.name":
                obj.fail(f"{path}.matchFields[{position}].key", f"must be metadata.name, not {requirement.key!r}")
        if expressions or fields:
            terms.append(NodeSelectorTerm.model_construct(match_expressions=expressions, match_fields=fields))
    if not terms:
        # Kubernetes: an empty term matches no node, and so does a list of only empty terms.
        nothing = NodeSelectorRequirement.model_construct(key="metadata.name", operator="In", values=())
        terms.append(NodeSelectorTerm.model_construct(match_expressions=(), match_fields=(nothing,)))
    return tuple(terms)


def read_preferred_affinity(obj: KubeObject, spec: Mapping[str, Any]) -> tuple[PreferredSchedulingTerm, ...]:
    base = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    affinity = obj.mapping(spec, "affinity", "spec.affinity")
    node_affinity = obj.mapping(affinity, "nodeAffinity", "spec.affinity.nodeAffinity")
    out = []
    for index, raw in enumerate(obj.sequence(node_affinity, "preferredDuringSchedulingIgnoredDuringExecution", base)):
        path = f"{base}[{index}]"
        if not isinstance(raw, MAPPING_TYPES):
            obj.fail(path, "must be a mapping")
        weight = obj.integer(raw, "weight", f"{path}.weight", None, minimum=1)
        if weight is None:
            obj.fail(f"{path}.weight", "missing")
        if weight > 100:
            obj.fail(f"{path}.weight", f"must be 1 to 100, not {weight}")
        preference = obj.mapping(raw, "preference", f"{path}.preference")
        expressions = read_requirements(obj, preference, "matchExpressions", f"{path}.preference")
        fields = read_requirements(obj, preference, "matchFields", f"{path}.preference")
        for position, requirement in enumerate(fields):
            if requirement.key != "metadata.name":
                obj.fail(
                    f"{path}.preference.matchFields[{position}].key", f"must be metadata.name, not {requirement.key!r}"
                )
        term = NodeSelectorTerm.model_construct(match_expressions=expressions, match_fields=fields)
        out.append(PreferredSchedulingTerm.model_construct(weight=weight, preference=term))
    return tuple(out)


def _is_integer_text(text: str) -> bool:
    return text.lstrip("+-").isdigit() and text.isascii()
