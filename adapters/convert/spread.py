"""Pod topology spread constraints (``spec.topologySpreadConstraints``), checked as the API server does.

Only what decides a placement is read: skew, topology key, hard or soft, ``minDomains``, the two
inclusion policies, the selector and ``matchLabelKeys``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from vcsat.adapters.convert import storage_objects as storage
from vcsat.adapters.convert.fields import MAPPING_TYPES
from vcsat.adapters.convert.reader import KubeObject
from vcsat.model.spread import InclusionPolicy, TopologySpreadConstraint

_SPREAD_PATH = "spec.topologySpreadConstraints"


def read_spread_constraints(obj: KubeObject, spec: Mapping[str, Any]) -> tuple[TopologySpreadConstraint, ...]:
    """``spec.topologySpreadConstraints``, validated as the API server does for what they decide."""
    out = []
    for index, raw in enumerate(obj.sequence(spec, "topologySpreadConstraints", _SPREAD_PATH)):
        path = f"{_SPREAD_PATH}[{index}]"
        if not isinstance(raw, MAPPING_TYPES):
            obj.fail(path, "must be a mapping")
        max_skew = obj.integer(raw, "maxSkew", f"{path}.maxSkew", minimum=1)
        if max_skew is None:
            obj.fail(f"{path}.maxSkew", "missing")
        topology_key = obj.string(raw, "topologyKey", f"{path}.topologyKey")
        if not topology_key:
            obj.fail(f"{path}.topologyKey", "missing")
        when = obj.string(raw, "whenUnsatisfiable", f"{path}.whenUnsatisfiable")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            obj.fail(f"{path}.whenUnsatisfiable", f"must be DoNotSchedule or ScheduleAnyway, not {when!r}")
        min_domains = obj.integer(raw, "minDomains", f"{path}.minDomains", minimum=1)
        if min_domains is not None and when != "DoNotSchedule":
            obj.fail(f"{path}.minDomains", "may only be set with whenUnsatisfiable DoNotSchedule")
        policies: list[InclusionPolicy] = []
        for name, default in (("nodeAffinityPolicy", "Honor"), ("nodeTaintsPolicy", "Ignore")):
            policy = obj.string(raw, name, f"{path}.{name}", default)
            if policy not in ("Honor", "Ignore"):
                obj.fail(f"{path}.{name}", f"must be Honor or Ignore, not {policy!r}")
            policies.append(cast("InclusionPolicy", policy))
        keys = obj.sequence(raw, "matchLabelKeys", f"{path}.matchLabelKeys")
        for position, key in enumerate(keys):
            if not isinstance(key, str) or not key:
                obj.fail(f"{path}.matchLabelKeys[{position}]", "must be a label key")
        selector = storage.read_label_selector(obj, raw, "labelSelector", f"{path}.labelSelector")
        out.append(
            TopologySpreadConstraint(
                max_skew=max_skew,
                topology_key=topology_key,
                when_unsatisfiable=cast('Literal["DoNotSchedule", "ScheduleAnyway"]', when),
                selector=selector,
                min_domains=min_domains or 1,
                node_affinity_policy=policies[0],
                node_taints_policy=policies[1],
                match_label_keys=tuple(keys),
            )
        )
    return tuple(out)
