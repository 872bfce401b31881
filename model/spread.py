"""Pod topology spread constraints (``spec.topologySpreadConstraints``) as frozen data.

Defaults are Kubernetes': ``minDomains`` unset is 1, ``nodeAffinityPolicy`` unset is Honor and
``nodeTaintsPolicy`` unset is Ignore. A nil ``labelSelector`` matches no pod.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from vcsat.model.selectors import LabelSelector

InclusionPolicy = Literal["Honor", "Ignore"]


class TopologySpreadConstraint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    max_skew: int
    topology_key: str
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"] = "DoNotSchedule"
    selector: LabelSelector | None = None
    """None (nil) matches no pod; an empty selector matches none either (kube-scheduler counts
    nothing for an empty selector), unless ``match_label_keys`` add requirements."""
    min_domains: int = 1
    node_affinity_policy: InclusionPolicy = "Honor"
    node_taints_policy: InclusionPolicy = "Ignore"
    match_label_keys: tuple[str, ...] = ()
    """Keys whose values in the pod's own labels are added to ``selector`` (keys the pod lacks are
    ignored)."""

    @property
    def hard(self) -> bool:
        return self.when_unsatisfiable == "DoNotSchedule"
