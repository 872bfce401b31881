"""Options of one cycle: what the solver may do and how hard it tries.

A policy file (``vcsat solve --policy FILE``) is this model in YAML; unknown keys are refused so a
typo never silently changes a decision.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Policy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    scheduler_name: str = "vcsat"
    """Only pods with this ``spec.schedulerName`` are placed; all others are fixed load."""
    time_limit_s: float = Field(default=10.0, gt=0)
    """Wall-clock budget of the CP-SAT search; the greedy decision stands if it finds nothing better."""
    num_workers: int = Field(default=1, ge=1)
    """CP-SAT search workers. One worker is reproducible byte for byte; more search faster but
    may return a different decision of equal value from run to run."""
    random_seed: int = 0
    relative_gap: float = Field(default=0.0, ge=0)
    """Stop as soon as the proven gap is at most this (0: prove optimality or hit the limit)."""
    packing_weight: int = Field(default=1, ge=0)
    """Packing levels (whole GPU nodes kept free, partly used ones completed) rank below every
    placement level; 0 leaves them out."""
    gang: bool = True
    """All-or-nothing gangs (Volcano's gang plugin). Off: each pod is placed on its own."""
