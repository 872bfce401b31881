"""PodDisruptionBudgets: how many of a set of pods may be evicted now.

Preemption and reclaim (``vcsat.solver.preempt``) prefer victims that leave every budget intact,
as kube-scheduler's DefaultPreemption does. The budget's ``status.disruptionsAllowed`` is what the
disruption controller computed; vcsat reads it and never recomputes it.

:class:`PodSelector` is ``metav1.LabelSelector`` (``matchLabels`` and ``matchExpressions`` with In,
NotIn, Exists, DoesNotExist), as budgets and claims use it; kept here until the project has one
shared label-selector type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from vcsat.model.cluster import Frozen


class LabelRequirement(Frozen):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator == "In":
            return value is not None and value in self.values
        if self.operator == "NotIn":
            return value is None or value not in self.values
        if self.operator == "Exists":
            return value is not None
        return value is None


class PodSelector(Frozen):
    """``matchLabels`` and ``matchExpressions``, all AND'd. An empty selector matches every pod."""

    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: tuple[LabelRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels.items()) and all(
            r.matches(labels) for r in self.match_expressions
        )


class PodDisruptionBudget(Frozen):
    namespace: str
    name: str
    selector: PodSelector | None = None
    """``spec.selector``. In preemption a missing or empty selector selects no pod (kube-scheduler's
    DefaultPreemption skips such budgets)."""
    disruptions_allowed: int = 0
    """``status.disruptionsAllowed``."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        selector = self.selector
        return selector is not None and not selector.empty and namespace == self.namespace and selector.matches(labels)
