"""What one cycle decides (contract §2), as typed data.

The JSON the CLI prints is exactly ``Decision.model_dump(mode="json")``; field names here are the
contract's, so renaming one is a breaking change.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Binding(_Out):
    pod: str
    """``namespace/name``."""
    node: str
    gpus: list[int] = []
    """Device indices on the node, as many as the pod asks ``nvidia.com/gpu`` (one for a GPU share)."""


class Nomination(_Out):
    pod: str
    node: str
    gpus: list[int] = []


class Eviction(_Out):
    pod: str
    reason: Literal["preempt", "reclaim"]


PodGroupPhase = Literal["Running", "Inqueue", "Pending"]


class PodGroupOutcome(_Out):
    podgroup: str
    """``namespace/name``; a pod with no PodGroup appears as its own ``namespace/name``."""
    phase: PodGroupPhase
    reason: str = ""
    """Machine-readable code for what blocks it: Unschedulable, QueueOverused, GangUnsatisfied,
    Fragmented, WaitingForEviction, ...; empty when placed."""
    message: str = ""


SolverStatus = Literal["OPTIMAL", "FEASIBLE", "FALLBACK"]


class SolverStats(_Out):
    status: SolverStatus
    objective: float = 0.0
    bound: float = 0.0
    seconds: float = 0.0


class Decision(_Out):
    bindings: list[Binding] = []
    nominations: list[Nomination] = []
    evictions: list[Eviction] = []
    podgroups: list[PodGroupOutcome] = []
    solver: SolverStats
