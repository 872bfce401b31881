"""PodDisruptionBudgets: how many of a set of pods may be evicted now.

Preemption and reclaim (``vcsat.solver.preemption.preempt``) prefer victims that leave every budget intact,
as kube-scheduler's DefaultPreemption does. The budget's ``status.disruptionsAllowed`` is what the
disruption controller computed; vcsat reads it and never recomputes it.
"""

from __future__ import annotations

from collections.abc import Mapping

from vcsat.model.cluster import Frozen
from vcsat.model.selectors import LabelSelector


class PodDisruptionBudget(Frozen):
    namespace: str
    name: str
    selector: LabelSelector | None = None
    """``spec.selector``. In preemption a missing or empty selector selects no pod (kube-scheduler's
    DefaultPreemption skips such budgets)."""
    disruptions_allowed: int = 0
    """``status.disruptionsAllowed``."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        selector = self.selector
        return (
            selector is not None
            and not selector.everything
            and namespace == self.namespace
            and selector.matches(labels)
        )
