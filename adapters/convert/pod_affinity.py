"""Inter-pod affinity and anti-affinity terms (``spec.affinity.podAffinity`` / ``podAntiAffinity``).

``matchLabelKeys`` and ``mismatchLabelKeys`` are merged into each term's label selector with the
pod's own labels, as kube-apiserver does when it admits the pod, so the model sees plain selectors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vcsat.adapters.convert import storage_objects as storage
from vcsat.adapters.convert.fields import MAPPING_TYPES
from vcsat.adapters.convert.reader import KubeObject
from vcsat.model.cluster import (
    PodAffinityRules,
    PodAffinityTerm,
    WeightedPodAffinityTerm,
)
from vcsat.model.selectors import LabelRequirement, label_selector

NO_POD_RULES = PodAffinityRules()


def read_pod_affinity_rules(
    obj: KubeObject, spec: Mapping[str, Any], kind: str, labels: Mapping[str, str]
) -> PodAffinityRules:
    """``spec.affinity.podAffinity`` or ``podAntiAffinity``, with matchLabelKeys/mismatchLabelKeys
    merged into each term's selector as kube-apiserver does when it admits the pod."""
    base = f"spec.affinity.{kind}"
    affinity = obj.mapping(spec, "affinity", "spec.affinity")
    rules = obj.mapping(affinity, kind, base)
    if not rules:
        return NO_POD_RULES
    required_path = f"{base}.requiredDuringSchedulingIgnoredDuringExecution"
    required = tuple(
        _pod_affinity_term(obj, raw, f"{required_path}[{index}]", labels)
        for index, raw in enumerate(
            obj.sequence(rules, "requiredDuringSchedulingIgnoredDuringExecution", required_path)
        )
    )
    preferred_path = f"{base}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    for index, raw in enumerate(obj.sequence(rules, "preferredDuringSchedulingIgnoredDuringExecution", preferred_path)):
        path = f"{preferred_path}[{index}]"
        if not isinstance(raw, MAPPING_TYPES):
            obj.fail(path, "must be a mapping")
        if raw.get("weight") is None:
            obj.fail(f"{path}.weight", "missing")
        weight = obj.integer(raw, "weight", f"{path}.weight", 0, minimum=1)
        if weight > 100:
            obj.fail(f"{path}.weight", f"must be 1 to 100, not {weight}")
        term_raw = raw.get("podAffinityTerm")
        if term_raw is None:
            obj.fail(f"{path}.podAffinityTerm", "missing")
        term = _pod_affinity_term(obj, term_raw, f"{path}.podAffinityTerm", labels)
        preferred.append(WeightedPodAffinityTerm.model_construct(weight=weight, term=term))
    return PodAffinityRules.model_construct(required=required, preferred=tuple(preferred))


def _pod_affinity_term(obj: KubeObject, raw: Any, path: str, labels: Mapping[str, str]) -> PodAffinityTerm:
    if not isinstance(raw, MAPPING_TYPES):
        obj.fail(path, "must be a mapping")
    topology_key = obj.string(raw, "topologyKey", f"{path}.topologyKey")
    if not topology_key:
        obj.fail(f"{path}.topologyKey", "missing (must be a label key)")
    namespaces = obj.sequence(raw, "namespaces", f"{path}.namespaces")
    for index, name in enumerate(namespaces):
        if not isinstance(name, str) or not name:
            obj.fail(f"{path}.namespaces[{index}]", "must be a namespace name")
    keys: dict[str, tuple[str, ...]] = {}
    for field in ("matchLabelKeys", "mismatchLabelKeys"):
        values = obj.sequence(raw, field, f"{path}.{field}")
        for index, value in enumerate(values):
            if not isinstance(value, str) or not value:
                obj.fail(f"{path}.{field}[{index}]", "must be a label key")
        keys[field] = tuple(values)
    selector = storage.read_label_selector(obj, raw, "labelSelector", f"{path}.labelSelector")
    if selector is not None and (keys["matchLabelKeys"] or keys["mismatchLabelKeys"]):
        merged = [
            *selector.requirements,
            *(
                LabelRequirement(key=k, operator="In", values=(labels[k],))
                for k in keys["matchLabelKeys"]
                if k in labels
            ),
            *(
                LabelRequirement(key=k, operator="NotIn", values=(labels[k],))
                for k in keys["mismatchLabelKeys"]
                if k in labels
            ),
        ]
        selector = label_selector(None, merged)
    return PodAffinityTerm.model_construct(
        label_selector=selector,
        namespaces=tuple(sorted(set(namespaces))),
        namespace_selector=storage.read_label_selector(obj, raw, "namespaceSelector", f"{path}.namespaceSelector"),
        topology_key=topology_key,
        match_label_keys=keys["matchLabelKeys"],
        mismatch_label_keys=keys["mismatchLabelKeys"],
    )
