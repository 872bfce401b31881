"""What the generator makes up: its options and the machine types it draws racks from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SYSTEM_POD_CPU_MILLI = 100
SYSTEM_POD_MEM_MI = 128
"""What each DaemonSet pod on a node requests: room the job pods cannot take."""

HIGH_PRIORITY = ("high-priority", 1000)
DEFAULT_PRIORITY = ("default-priority", 0)
LOW_PRIORITY = ("low-priority", -100)
"""The PriorityClasses jobs are drawn into: (name, value)."""


@dataclass(frozen=True)
class NodeShape:
    """One machine type; racks are homogeneous, so a shape is drawn per rack."""

    gpu_product: str
    instance_type: str
    cpu: int
    """Allocatable cores."""
    memory_gi: int
    """Allocatable memory in GiB."""
    gpu_memory_mib: int
    gpu_family: str
    share: float
    """Relative share of racks with this shape."""


DEFAULT_SHAPES: tuple[NodeShape, ...] = (
    NodeShape("NVIDIA-A100-SXM4-80GB", "p4de.24xlarge", 128, 1024, 81920, "ampere", 0.5),
    NodeShape("NVIDIA-H100-80GB-HBM3", "p5.48xlarge", 192, 2048, 81559, "hopper", 0.3),
    NodeShape("Tesla-V100-SXM2-32GB", "p3dn.24xlarge", 96, 768, 32768, "volta", 0.2),
)


@dataclass(frozen=True)
class GeneratorOptions:
    """What to make up. Every default is the 1,000-node benchmark cluster."""

    nodes: int = 1000
    gpus_per_node: int = 8
    rack_size: int = 16
    racks_per_spine: int = 8
    busy_gpu_fraction: float = 0.5
    """Share of all GPUs held by running pods (met exactly, up to rounding)."""
    pending_jobs: int = 2000
    target_pending_pods: int | None = None
    """Pending pods over all jobs; None means 1.5 × pending_jobs. Met exactly when the mix allows."""
    queues: tuple[tuple[str, int], ...] = (("production", 4), ("research", 2), ("dev", 1))
    """(name, weight) of the user queues; each also names the namespace of its jobs."""
    seed: int = 0
    high_priority_share: float = 0.1
    low_priority_share: float = 0.3
    multi_node_job_share: float = 0.05
    """Pending gangs of 2–4 pods × a whole node of GPUs."""
    ps_worker_job_share: float = 0.04
    """Pending two-task jobs: one CPU parameter server and 2–4 GPU workers (minTaskMember)."""
    model_pinned_share: float = 0.2
    """GPU jobs that constrain the GPU model (nodeSelector or required node affinity)."""
    anti_affinity_share: float = 0.0
    """Share of the pending pods whose jobs spread one pod per node: required pod anti-affinity on
    ``kubernetes.io/hostname`` against their own job's pods (whole jobs are picked at random until
    the share is reached; drawn from a random stream of its own, so the rest stays the same)."""
    unavailable_node_fraction: float = 0.01
    """Nodes cordoned or NotReady (half each); they keep their running pods."""
    system_pods_per_node: int = 1
    """DaemonSet pods of the default scheduler in kube-system on every node: fixed load, no victims."""
    rack_members: Literal["exact", "regex"] = "exact"
    """How tier-1 HyperNodes name their nodes: one exactMatch member per node, or one regexMatch."""
    shapes: tuple[NodeShape, ...] = DEFAULT_SHAPES
    scheduler_name: str = "vcsat"
    spread_job_share: float = 0.0
    """Pending jobs (not multi-node) whose pods carry a DoNotSchedule topology spread constraint over
    their own job's pods, maxSkew 1: half over the spine label (a zone), half over hostnames."""
    start_epoch: int = 1_748_851_200
    """Creation time of the first running job (2025-06-02T08:00:00Z); everything follows in order."""

    def __post_init__(self) -> None:
        problems = []
        if self.nodes < 1:
            problems.append("nodes must be at least 1")
        if self.gpus_per_node < 1:
            problems.append("gpus_per_node must be at least 1")
        if self.rack_size < 1 or self.racks_per_spine < 1:
            problems.append("rack_size and racks_per_spine must be at least 1")
        if not 0.0 <= self.busy_gpu_fraction <= 1.0:
            problems.append("busy_gpu_fraction must be within [0, 1]")
        if self.pending_jobs < 0:
            problems.append("pending_jobs must not be negative")
        if self.target_pending_pods is not None and self.target_pending_pods < self.pending_jobs:
            problems.append("target_pending_pods must be at least pending_jobs")
        if not self.queues or any(weight < 1 for _, weight in self.queues):
            problems.append("queues must be non-empty with weights of at least 1")
        for name in (
            "high_priority_share",
            "low_priority_share",
            "multi_node_job_share",
            "ps_worker_job_share",
            "model_pinned_share",
            "anti_affinity_share",
            "unavailable_node_fraction",
            "spread_job_share",
        ):
            if not 0.0 <= getattr(self, name) <= 1.0:
                problems.append(f"{name} must be within [0, 1]")
        if self.high_priority_share + self.low_priority_share > 1.0:
            problems.append("high_priority_share + low_priority_share must be at most 1")
        if not self.shapes:
            problems.append("shapes must not be empty")
        if not 0 <= self.system_pods_per_node <= 10:
            problems.append("system_pods_per_node must be within [0, 10]")
        elif any(
            shape.cpu * 1000 - SYSTEM_POD_CPU_MILLI * 10 < 500 * self.gpus_per_node
            or shape.memory_gi - 2 < self.gpus_per_node
            for shape in self.shapes
        ):
            problems.append("every shape needs at least 0.5 cores and 1 GiB per GPU")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def pending_pods(self) -> int:
        if self.target_pending_pods is not None:
            return self.target_pending_pods
        return round(1.5 * self.pending_jobs)
