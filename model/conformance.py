"""Which pods may never be victims of preemption or reclaim (Volcano's conformance plugin).

One rule, read by the solver when it picks victims and by the validator when it judges them.
"""

from __future__ import annotations

from typing import Final

from vcsat.model.cluster import Pod

PROTECTED_NAMESPACES: Final = frozenset({"kube-system"})
CRITICAL_PRIORITY_CLASSES: Final = frozenset({"system-cluster-critical", "system-node-critical"})


def protection(pod: Pod) -> str:
    """Why the pod may never be a victim, or empty when it may be one."""
    if pod.namespace in PROTECTED_NAMESPACES:
        return f"is in namespace {pod.namespace}"
    if pod.priority_class in CRITICAL_PRIORITY_CLASSES:
        return f"has priority class {pod.priority_class}"
    if not pod.preemptable:
        return 'is annotated volcano.sh/preemptable: "false"'
    if pod.terminating:
        return "is already terminating"
    if not pod.managed:
        return "belongs to another scheduler"
    return ""
