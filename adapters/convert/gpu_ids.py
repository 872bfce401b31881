"""Which GPU indices each bound pod holds: the ``vcsat.io/gpu-ids`` annotation, or the lowest free ones.

The applier writes the annotation when it binds; a pod bound by someone else has none, and takes
the lowest indices no other pod holds, oldest pod first, so the answer is the same every cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import NoReturn

from vcsat.adapters.convert.reader import Conversion, KubeObject, field_path
from vcsat.adapters.errors import InputError
from vcsat.model import resources as res
from vcsat.model.cluster import (
    Node,
    Pod,
)

GPU_IDS_ANNOTATION = "vcsat.io/gpu-ids"
_GPU_IDS_PATH = f'metadata.annotations["{GPU_IDS_ANNOTATION}"]'


def parse_gpu_ids(obj: KubeObject, text: str, requests: Mapping[str, int]) -> tuple[int, ...]:
    path = _GPU_IDS_PATH
    ids = _indices(text)
    if ids is None:
        parts = [part.strip() for part in text.split(",")]
        if not all(part.isascii() and part.isdigit() for part in parts):
            obj.fail(path, f'must be GPU indices separated by commas (like "0,1"), not {text!r}')
        obj.fail(path, f"lists an index twice: {text!r}")
    wanted = 1 if requests.get(res.GPU_MILLI) else requests.get(res.GPU, 0)
    if len(ids) != wanted:
        obj.fail(path, f"lists {len(ids)} GPU indices but the pod holds {wanted} GPU(s)")
    return ids


@lru_cache(maxsize=4096)
def _indices(text: str) -> tuple[int, ...] | None:
    """The indices an annotation lists, or None when it is no list of distinct indices. Remembered:
    the bound pods of a cluster spell a few dozen lists, tens of thousands of times."""
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isascii() and part.isdigit() for part in parts):
        return None
    ids = tuple(int(part) for part in parts)
    return ids if len(set(ids)) == len(ids) else None


def resolve_gpu_ids(pods: list[Pod], nodes: Mapping[str, Node], converter: Conversion) -> list[Pod]:
    """Give each bound GPU pod without ``vcsat.io/gpu-ids`` the lowest indices no other pod holds.

    Annotated pods keep their indices. The others, oldest first (then by key, so the answer is the
    same every time), take the lowest indices left: whole GPUs for ``nvidia.com/gpu``, and for a GPU
    share the lowest GPU that no whole-GPU pod holds and whose shares leave room for it.
    """
    if converter.strict:
        holders = [pod for pod in pods if pod.bound and (pod.gpus or pod.gpu_milli)]
        missing = [pod for pod in holders if pod.gpu_ids is None]
    else:
        missing = [pod for pod in pods if pod.gpu_ids is None and pod.bound and (pod.gpus or pod.gpu_milli)]
        if not missing:
            return pods  # nothing to resolve, and a lenient reading checks nothing
        holders = [pod for pod in pods if pod.bound and (pod.gpus or pod.gpu_milli)]
    whole: dict[str, set[int]] = {}
    shares: dict[str, dict[int, int]] = {}
    for pod in holders:
        if pod.gpu_ids is None or pod.node_name is None:
            continue
        node = nodes[pod.node_name]
        if not pod.gpu_milli and pod.gpu_ids:
            # Whole GPUs: a pod's indices are distinct (parse_gpu_ids), so when all are below the
            # node's count and none is taken, the loop below would only add them; checked with set
            # operations instead (a pod at a time, not an index). Otherwise the loop names the first.
            taken = whole.setdefault(node.name, set())
            if not converter.strict or (max(pod.gpu_ids) < node.gpus and taken.isdisjoint(pod.gpu_ids)):
                taken.update(pod.gpu_ids)
                continue
        for index in pod.gpu_ids:
            if converter.strict and index >= node.gpus:
                _fail_gpu(converter, pod, f"index {index} is not a GPU of Node {node.name} (it has {node.gpus})")
            if pod.gpu_milli:
                node_shares = shares.setdefault(node.name, {})
                node_shares[index] = node_shares.get(index, 0) + pod.gpu_milli
            elif index in whole.setdefault(node.name, set()) and converter.strict:
                _fail_gpu(converter, pod, f"GPU {index} of Node {node.name} is held by another pod too")
            else:
                whole[node.name].add(index)

    resolved: dict[str, tuple[int, ...]] = {}
    for pod in sorted(missing, key=lambda pod: (pod.created, pod.key)):
        assert pod.node_name is not None
        node = nodes[pod.node_name]
        taken = whole.setdefault(node.name, set())
        node_shares = shares.setdefault(node.name, {})
        if pod.gpu_milli:
            fitting = [
                index
                for index in range(node.gpus)
                if index not in taken and node_shares.get(index, 0) + pod.gpu_milli <= 1000
            ]
            if not fitting:
                if converter.strict:
                    _fail_gpu(converter, pod, f"no GPU of Node {node.name} has room for {pod.gpu_milli}/1000 more")
                fitting = [0]
            ids: tuple[int, ...] = (fitting[0],)
            node_shares[fitting[0]] = node_shares.get(fitting[0], 0) + pod.gpu_milli
        else:
            free = [index for index in range(node.gpus) if index not in taken and index not in node_shares]
            if len(free) < pod.gpus:
                if converter.strict:
                    _fail_gpu(
                        converter,
                        pod,
                        f"Node {node.name} has {len(free)} free GPU(s) left, the pod holds {pod.gpus}",
                    )
                free += [index for index in range(max(node.gpus, pod.gpus)) if index not in free]
            ids = tuple(free[: pod.gpus])
            taken.update(ids)
        resolved[pod.key] = ids
    if not resolved:
        return pods
    return [pod.model_copy(update={"gpu_ids": resolved[pod.key]}) if pod.key in resolved else pod for pod in pods]


def _fail_gpu(converter: Conversion, pod: Pod, message: str) -> NoReturn:
    raise InputError(
        message,
        source=converter.source,
        obj=f"Pod {pod.key}",
        field=field_path("metadata", "annotations", GPU_IDS_ANNOTATION),
    )
