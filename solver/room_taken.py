"""A decision's pods taken from the snapshot's free room at once: what a room made from its slots
starts from (:class:`vcsat.solver.greedy.Room`).

The exchange makes a room from its decision's slots once a trade (thousands of (shape, node)
slots at 1,000 nodes); taking them slot by slot in Python, each request resource by resource, was
a measurable part of a trade's instructions (benchmarks/RESULTS.md, session 34). Here every slot is
taken in a few array operations, with the same outcome as the loop it replaces:

- the room left and the free whole GPUs per node are the same whole numbers (int64 sums of whole
  numbers, no rounding), whatever order the slots are taken in;
- the nodes whose free-GPU bucket changed come in the order of their last change, slot by slot in
  the mapping's order: a node's bucket (its free GPUs, at least 0) changes at a slot exactly where
  the slot takes GPUs and the node had some free just before it (requests only take), and what it
  had then is its snapshot's free GPUs less those the mapping's earlier slots on it took.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class Requests:
    """Per shape of a problem: what one pod asks per resource, its whole GPUs, and whether it asks
    a GPU share (placed one by one, never at once); read only."""

    amounts: NDArray[np.int64]
    whole: NDArray[np.int64]
    shares: NDArray[np.bool_]


def take_all(
    free: NDArray[np.int64],
    whole: NDArray[np.int64],
    taken: Mapping[tuple[int, int], int],
    requests: Requests,
    gpu: int | None,
) -> list[int]:
    """Take ``taken`` (pods per (shape, node); counts not above 0 take nothing) from ``free`` (a row
    per node) and ``whole`` (free whole GPUs per node), in place; the nodes whose free-GPU bucket
    changed, in the order of their last change (module docstring). A slot asking a GPU share is
    refused (ValueError), as :meth:`vcsat.solver.greedy.Room.take` places shares device by device."""
    size = len(taken)
    slots = np.fromiter(chain.from_iterable(taken), dtype=np.int64, count=2 * size).reshape(size, 2)
    counts = np.fromiter(taken.values(), dtype=np.int64, count=size)
    if not bool((counts > 0).all()):
        keep = counts > 0
        slots, counts = slots[keep], counts[keep]
    shapes, nodes = slots[:, 0], slots[:, 1]
    if bool(requests.shares[shapes].any()):
        raise ValueError("GPU shares are placed one by one (Room.take)")
    amounts = requests.amounts[shapes] * counts[:, None]
    moved: list[int] = []
    if gpu is not None and nodes.size:
        moved = _moved(free[:, gpu], nodes, amounts[:, gpu])
    np.subtract.at(free, nodes, amounts)
    np.subtract.at(whole, nodes, requests.whole[shapes] * counts)
    return moved


def _moved(gpus: NDArray[np.int64], nodes: NDArray[np.int64], taking: NDArray[np.int64]) -> list[int]:
    """The nodes whose free-GPU bucket changes as each slot (on ``nodes[i]``, taking ``taking[i]``
    GPUs) is taken in turn from ``gpus`` (free GPUs per node, before any), in the order of their
    last change."""
    order = np.argsort(nodes, kind="stable")  # per node, its slots in the mapping's order
    on, took = nodes[order], taking[order]
    taken_before = np.cumsum(took) - took  # over every slot before, of any node
    first = np.flatnonzero(np.concatenate(([True], on[1:] != on[:-1])))
    runs = np.diff(np.append(first, on.size))
    # What the node's own earlier slots took: the running sum less where its run began.
    before = gpus[on] - (taken_before - np.repeat(taken_before[first], runs))
    change = (took > 0) & (before > 0)
    changed_nodes, at = on[change], order[change]
    if not changed_nodes.size:
        return []
    # Per node its last change (the last of its run: positions rise within a run), oldest first.
    last = np.concatenate((changed_nodes[1:] != changed_nodes[:-1], [True]))
    ends, when = changed_nodes[last], at[last]
    result: list[int] = ends[np.argsort(when, kind="stable")].tolist()
    return result
