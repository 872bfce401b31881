"""What a lenient (live) conversion tolerated that keeps work from running, as ``Snapshot.notices``.

One notice per object, never silent: a node's invalid GPU topology, a PodGroup naming no Queue, a
pod naming no PodGroup, a PodGroup asking for sub-gangs (Volcano's ``spec.subGroupPolicy``) that
vcsat keeps but does not enforce. Only this scheduler's work and the nodes are reported.

The live scheduler converts every cycle and few objects change between two: what is read of a raw
node or PodGroup is kept on its :class:`~.reader.KubeObject` (the same dict comes back as the same
KubeObject, and an informer replaces a changed object's dict, never edits it), and each walk over
the model objects is preceded by a check at C speed (the queues named, the PodGroups named, the
nodes without a topology) that says whether any object can need a notice at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from itertools import compress
from operator import attrgetter, is_
from typing import Any

from vcsat.adapters.convert.nodes import GPU_TOPOLOGY_ANNOTATION
from vcsat.adapters.convert.pods import GROUP_NAME_ANNOTATIONS
from vcsat.adapters.convert.reader import KubeObject
from vcsat.adapters.convert.reuse import UNSET
from vcsat.model.cluster import (
    Node,
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


_NOTICED = attrgetter("noticed")
_QUEUE = attrgetter("queue")
_GROUP = attrgetter("group")
_NAME = attrgetter("name")
_TOPOLOGY = attrgetter("gpu_topology")
_IS_NONE = partial(is_, None)


def _topology_text(raw: Mapping[str, Any]) -> str | None:
    """A node's GPU topology annotation, when it is a string."""
    text = (raw.get("metadata", {}).get("annotations") or {}).get(GPU_TOPOLOGY_ANNOTATION)
    return text if isinstance(text, str) else None


def _sub_group_policies(raw: Mapping[str, Any]) -> list[object] | None:
    """A PodGroup's ``spec.subGroupPolicy``, when it is a non-empty list."""
    policies = (raw.get("spec") or {}).get("subGroupPolicy")
    return policies if policies and isinstance(policies, list) else None


def _noticed(objects: Sequence[KubeObject], read: Callable[[Mapping[str, Any]], Any]) -> list[Any]:
    """``read(obj.raw)`` of each object, read once per KubeObject (its dict is never edited)."""
    facts = list(map(_NOTICED, objects))
    if UNSET in facts:
        for at, (obj, fact) in enumerate(zip(objects, facts, strict=True)):
            if fact is UNSET:
                facts[at] = obj.noticed = read(obj.raw)
    return facts


def _some(facts: list[Any]) -> bool:
    """Whether a fact is not None (an empty string is one)."""
    return facts.count(None) < len(facts)


def conversion_notices(
    by_kind: Mapping[str, Mapping[str, KubeObject]], snapshot: Snapshot, scheduler_name: str, *, strict: bool = False
) -> tuple[Notice, ...]:
    """What a lenient conversion tolerated that keeps work from running, once per object: only
    about this scheduler's work (its pods, its PodGroups) and the nodes. ``strict``: the conversion
    refused a PodGroup naming no Queue and a pod naming no PodGroup, so neither is looked for."""
    out: list[Notice] = []
    node_objects = by_kind["Node"]
    unread: list[Node] = list(compress(snapshot.nodes, map(_IS_NONE, map(_TOPOLOGY, snapshot.nodes))))
    texts = _noticed(list(map(node_objects.__getitem__, map(_NAME, unread))), _topology_text)
    for node, text in zip(unread, texts, strict=True) if _some(texts) else ():
        if text is not None:
            try:
                gpu_topology(text, node.gpus)
                continue
            except ValueError as error:
                message = (
                    f"annotation {GPU_TOPOLOGY_ANNOTATION} is invalid ({error}): its GPUs count as uniformly connected"
                )
            out.append(Notice.model_construct(kind="Node", key=node.name, reason="InvalidGpuTopology", message=message))
    queues = snapshot.queue_by_name
    named_queues = set() if strict else set(map(_QUEUE, snapshot.podgroups))
    for group in snapshot.podgroups if named_queues.difference(queues) else ():
        if group.queue not in queues and _is_ours(group, snapshot, scheduler_name):
            message = f"spec.queue {group.queue!r} names no Queue: its pods are not scheduled until the queue exists"
            out.append(Notice.model_construct(kind="PodGroup", key=group.key, reason="QueueNotFound", message=message))
    group_objects = list(by_kind["PodGroup"].values())
    policies_read = _noticed(group_objects, _sub_group_policies)
    if _some(policies_read):
        asking = {
            obj.key: policies
            for obj, policies in zip(group_objects, policies_read, strict=True)
            if policies is not None
        }
        for group in snapshot.podgroups:
            policies = asking.get(group.key)
            if policies is not None and _is_ours(group, snapshot, scheduler_name):
                out.append(
                    Notice.model_construct(
                        kind="PodGroup", key=group.key, reason=SUB_GROUP_POLICY_IGNORED, message=_sub_groups(policies)
                    )
                )
    dangling: dict[str, list[str]] = {}
    named_groups = set() if strict else set(map(_GROUP, snapshot.pods))
    named_groups.discard(None)
    groups = snapshot.podgroup_by_key if named_groups else {}
    for pod in snapshot.pods if named_groups.difference(groups) else ():
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
