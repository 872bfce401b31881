"""Counts a cycle decides, before they become concrete pods, nodes and GPU indices.

Both the greedy baseline and the CP-SAT model produce an :class:`Assignment`; the decode turns
either into a Decision, so the fallback path and the exact path share everything after the search.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Assignment:
    placed: set[int] = field(default_factory=set)
    """Gangs that get their placements."""
    count: dict[int, int] = field(default_factory=dict)
    """Per pod class: how many of its pods are placed (the oldest first)."""
    shape_slots: dict[tuple[int, int], int] = field(default_factory=dict)
    """Per (shape, node): how many pods of that exact shape land on that node."""
    bucket_slots: dict[tuple[int, int], int] = field(default_factory=dict)
    """Per (bucket, node): pods of some shape of the bucket, still to be resolved into shapes."""
    gang_slots: dict[tuple[int, int, int], int] = field(default_factory=dict)
    """Per (gang, shape, node): pods whose node is decided gang by gang (the greedy's, and
    topology-priced gangs'); the decode hands these out first, the rest by ``shape_slots``."""
    domain_counts: dict[tuple[int, int, str], int] = field(default_factory=dict)
    """Per (gang, bucket, finest-tier domain): pods the model put there (topology gangs)."""

    def gpus_used(self, shape_gpus: dict[int, int]) -> dict[int, int]:
        """GPUs taken per node by resolved placements (``shape_gpus``: GPUs per shape)."""
        out: dict[int, int] = {}
        for (shape, node), k in self.shape_slots.items():
            out[node] = out.get(node, 0) + k * shape_gpus[shape]
        return out
