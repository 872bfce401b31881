"""What a lenient (live) conversion tolerated that keeps work from running, as ``Snapshot.notices``.

One notice per object, never silent: a node's invalid GPU topology, a PodGroup naming no Queue, a
pod naming no PodGroup, a PodGroup asking for sub-gangs (Volcano's ``spec.subGroupPolicy``) that
vcsat keeps but does not enforce. Only this scheduler's work and the nodes are reported.
"""

from __future__ import annotations

from collections.abc import Mapping

from vcsat.adapters.convert.nodes import GPU_TOPOLOGY_ANNOTATION
from vcsat.adapters.convert.pods import GROUP_NAME_ANNOTATIONS
from vcsat.adapters.convert.reader import KubeObject
from vcsat.model.cluster import (
    Notice,
    PodGroup,
    Snapshot,
)
from vcsat.model.gpu_topology import gpu_topology

SUB_GROUP_POLICY_IGNORED = "SubGroupPolicyIgnored"


def _sub_groups(policies: list[object]) -> str:
    names = [str(p.get("name")) for p in policies if isinstance(p, Mapping) and p.get("name")]
    which = f" ({', '.join(names)})" if names else ""
    return (
        f"spec.subGroupPolicy{which} is not enforced: vcsat places the PodGroup as one gang "
        "(minMember, minTaskMember, networkTopology); the sub-groups' subGroupSize, minSubGroups "
        "and networkTopology are kept but not applied"
    )


def _is_ours(group: PodGroup, snapshot: Snapshot, scheduler_name: str) -> bool:
    """:func:`vcsat.solver.enqueue.is_ours`, imported when a notice needs it: the solver package
    loads OR-Tools, which reading an instance file does not need."""
    from vcsat.solver.enqueue import is_ours

    return is_ours(group, snapshot, scheduler_name)


def conversion_notices(
    by_kind: Mapping[str, Mapping[str, KubeObject]], snapshot: Snapshot, scheduler_name: str, *, strict: bool = False
) -> tuple[Notice, ...]:
    """What a lenient conversion tolerated that keeps work from running, once per object: only
    about this scheduler's work (its pods, its PodGroups) and the nodes. ``strict``: the conversion
    refused a PodGroup naming no Queue and a pod naming no PodGroup, so neither is looked for."""
    out: list[Notice] = []
    node_objects = by_kind["Node"]
    for node in snapshot.nodes:
        if node.gpu_topology is not None:
            continue  # read as valid
        text = (node_objects[node.name].raw.get("metadata", {}).get("annotations") or {}).get(GPU_TOPOLOGY_ANNOTATION)
        if isinstance(text, str):
            try:
                gpu_topology(text, node.gpus)
                continue
            except ValueError as error:
                message = (
                    f"annotation {GPU_TOPOLOGY_ANNOTATION} is invalid ({error}): "
                    "its GPUs count as uniformly connected"
                )
            out.append(Notice.model_construct(kind="Node", key=node.name, reason="InvalidGpuTopology", message=message))
    queues = snapshot.queue_by_name
    for group in () if strict else snapshot.podgroups:
        if group.queue not in queues and _is_ours(group, snapshot, scheduler_name):
            message = f"spec.queue {group.queue!r} names no Queue: its pods are not scheduled until the queue exists"
            out.append(Notice.model_construct(kind="PodGroup", key=group.key, reason="QueueNotFound", message=message))
    asking = {
        key: policies
        for key, obj in by_kind["PodGroup"].items()
        if (policies := (obj.raw.get("spec") or {}).get("subGroupPolicy")) and isinstance(policies, list)
    }
    if asking:
        for group in snapshot.podgroups:
            policies = asking.get(group.key)
            if policies is not None and _is_ours(group, snapshot, scheduler_name):
                out.append(
                    Notice.model_construct(
                        kind="PodGroup", key=group.key, reason=SUB_GROUP_POLICY_IGNORED, message=_sub_groups(policies)
                    )
                )
    dangling: dict[str, list[str]] = {}
    groups = {} if strict else snapshot.podgroup_by_key
    for pod in () if strict else snapshot.pods:
        if pod.group is not None and pod.group not in groups and pod.managed and not pod.finished:
            dangling.setdefault(pod.group, []).append(pod.key)
    for group_key, keys in sorted(dangling.items()):
        message = (
            f"names PodGroup {group_key!r} (annotation {GROUP_NAME_ANNOTATIONS[0]}), which does not exist: "
            "not scheduled until it does"
        )
        out.extend(
            Notice.model_construct(kind="Pod", key=key, reason="PodGroupNotFound", message=message) for key in keys
        )
    return tuple(out)
