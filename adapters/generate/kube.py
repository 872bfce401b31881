"""Kubernetes names and text forms the generated objects use.

The labels and annotations the instances carry (GPU model, rack and spine, the Volcano group and
task, the GPU device ids of a bound pod), and the way the API server prints what the generator
draws as numbers: quantities, RFC 3339 timestamps, UIDs, the tolerations every pod gets.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

GPU = "nvidia.com/gpu"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
RACK_LABEL = "topology.vcsat.io/rack"
SPINE_LABEL = "topology.vcsat.io/spine"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_ANNOTATION = "volcano.sh/task-spec"
GPU_IDS_ANNOTATION = "vcsat.io/gpu-ids"
HOSTNAME = "kubernetes.io/hostname"

Object = dict[str, Any]


def timestamp(epoch: int) -> str:
    # Hand-rolled rather than datetime for speed: tens of thousands of calls per instance.
    days, seconds = divmod(epoch, 86_400)
    hour, rest = divmod(seconds, 3600)
    minute, second = divmod(rest, 60)
    # Civil-from-days (Howard Hinnant), valid for every date after 1970.
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}Z"


def new_uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def memory_quantity(gib: int) -> str:
    return f"{gib // 1024}Ti" if gib % 1024 == 0 else f"{gib}Gi"


def cpu_quantity(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


DEFAULT_TOLERATIONS = (
    {
        "effect": "NoExecute",
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "tolerationSeconds": 300,
    },
    {
        "effect": "NoExecute",
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "tolerationSeconds": 300,
    },
)
"""What the DefaultTolerationSeconds admission plugin adds to every pod."""
