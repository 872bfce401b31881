"""The benchmark instances: generated once, cached as JSON files, shared by pytest and memory.py.

Generating the 5,000-node instance takes seconds and its file is tens of megabytes, so each
instance is written once under the system temp dir (or ``$VCSAT_BENCH_CACHE``), keyed by its
options and by the generator's own source (a changed generator makes new files); later runs only
read it back.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import resource
import tempfile
from pathlib import Path

from vcsat.adapters.generate import generator as generate
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance, write_instance

CACHE_DIR = Path(os.environ.get("VCSAT_BENCH_CACHE", Path(tempfile.gettempdir()) / "vcsat-bench"))

ONE_K = GeneratorOptions(nodes=1000, busy_gpu_fraction=0.5, pending_jobs=2000)
"""1,000 nodes, 8,000 GPUs, half busy; about 2,000 pending gang jobs (3,000 pods)."""
FIVE_K = GeneratorOptions(nodes=5000, busy_gpu_fraction=0.5, pending_jobs=10000)
"""The same cluster five times over: 40,000 GPUs, about 15,000 pending pods."""
ONE_K_CONTENDED = GeneratorOptions(
    nodes=1000, busy_gpu_fraction=0.8, pending_jobs=2000, high_priority_share=0.2, low_priority_share=0.5
)
"""1,000 nodes 80% busy, half the running and pending work low priority, a fifth high: fairness,
preemption and reclaim all have work to do."""
ONE_K_ANTI = GeneratorOptions(nodes=1000, busy_gpu_fraction=0.5, pending_jobs=2000, anti_affinity_share=0.2)
"""The 1,000-node instance with a fifth of the pending pods spreading one per node (required pod
anti-affinity on the hostname against their own job's pods)."""


ONE_K_SPREAD = GeneratorOptions(nodes=1000, busy_gpu_fraction=0.5, pending_jobs=2000, spread_job_share=0.2)
"""The 1,000-node instance with a fifth of the pending jobs (about as many pods) spreading their
pods with a DoNotSchedule topology spread constraint, maxSkew 1, over spines or hostnames."""


def instance_key(options: GeneratorOptions) -> str:
    source = inspect.getsource(generate)
    digest = hashlib.sha256(f"{options!r}\n{source}".encode()).hexdigest()[:16]
    return f"{options.nodes}n-{options.pending_jobs}j-s{options.seed}-{digest}"


def cached_instance(options: GeneratorOptions) -> Path:
    """The instance file for these options, generated on first use."""
    key = instance_key(options)
    path = CACHE_DIR / f"{key}.json"
    if not path.exists():
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        partial = CACHE_DIR / f"{key}.{os.getpid()}.partial.json"
        write_instance(generate_instance(options), partial)
        partial.replace(path)  # atomic: a concurrent run never reads half a file
    return path


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
