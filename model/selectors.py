"""Kubernetes label selectors (``metav1.LabelSelector``) as frozen data.

``matchLabels`` and ``matchExpressions`` must all hold (AND). What a nil selector means depends on
where it is used; the field that holds one says.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

LabelOperator = Literal["In", "NotIn", "Exists", "DoesNotExist"]


class LabelSelectorRequirement(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    operator: LabelOperator
    values: tuple[str, ...] = ()


class LabelSelector(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()
