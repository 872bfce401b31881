"""The ``env`` plugin: each pod learns its index within its task.

Scripts shard data by it (``VC_TASK_INDEX``); ``VK_TASK_INDEX`` is the older name, kept because
jobs written for Volcano's predecessor still read it. Both go into init containers too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vcsat.adapters.controller.plugins.base import JobPlugin, add_env, containers

if TYPE_CHECKING:
    from vcsat.adapters.controller.jobspec import JobSpec, TaskSpec

TASK_INDEX_ENV = "VC_TASK_INDEX"
LEGACY_TASK_INDEX_ENV = "VK_TASK_INDEX"


class EnvPlugin(JobPlugin):
    name = "env"

    def mutate_pod(self, pod: dict[str, Any], job: JobSpec, task: TaskSpec, index: int) -> None:
        for container in containers(pod):
            add_env(
                container,
                {"name": LEGACY_TASK_INDEX_ENV, "value": str(index)},
                {"name": TASK_INDEX_ENV, "value": str(index)},
            )
