"""Kubernetes label selectors (``metav1.LabelSelector``) as frozen values, and their meaning.

One selector type for every rule that picks pods by their labels: inter-pod affinity, topology
spread and PodDisruptionBudgets all use ``matchLabels`` plus ``matchExpressions`` with the operators
In, NotIn, Exists and DoesNotExist. The requirements are ANDed; a selector with none selects every
pod. The "selects nothing" selector (a nil ``namespaceSelector``) is not a value of this type: the
fields that allow it are ``LabelSelector | None``.

``matchLabels`` is folded into the expressions (``key In [value]``) by :func:`label_selector`, so
two selectors that mean the same compare equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

LabelOperator = Literal["In", "NotIn", "Exists", "DoesNotExist"]


class LabelRequirement(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    operator: LabelOperator
    values: tuple[str, ...] = ()
    """Sorted and without repeats (In and NotIn); empty for Exists and DoesNotExist."""

    def holds(self, labels: Mapping[str, str]) -> bool:
        """Whether a label set satisfies this requirement (apimachinery's labels.Requirement)."""
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values


class LabelSelector(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    requirements: tuple[LabelRequirement, ...] = ()
    """ANDed; none selects everything."""

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(requirement.holds(labels) for requirement in self.requirements)

    @property
    def everything(self) -> bool:
        return not self.requirements


def label_selector(
    match_labels: Mapping[str, str] | None = None,
    expressions: tuple[LabelRequirement, ...] | list[LabelRequirement] = (),
) -> LabelSelector:
    """A selector from ``matchLabels`` and ``matchExpressions``, in one canonical order."""
    requirements = [LabelRequirement(key=k, operator="In", values=(v,)) for k, v in (match_labels or {}).items()]
    for requirement in expressions:
        values = tuple(sorted(set(requirement.values)))
        requirements.append(LabelRequirement(key=requirement.key, operator=requirement.operator, values=values))
    unique = sorted(set(requirements), key=lambda r: (r.key, r.operator, r.values))
    return LabelSelector(requirements=tuple(unique))
