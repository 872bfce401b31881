"""The ``pytorch`` plugin: the environment ``torch.distributed`` reads (DDP's ``env://``).

Every pod gets ``MASTER_ADDR`` (the first master pod's DNS name), ``MASTER_PORT``, ``WORLD_SIZE``
(master plus worker replicas) and its ``RANK``: 0 for the master, ``index + 1`` for worker
``index``. The task names come from ``--master`` and ``--worker`` (``master``, ``worker``), the port
from ``--port`` (23456). With ``--wait-master-enabled`` each worker first runs an init container
(``--wait-master-image``) that waits up to ``--wait-master-timeout`` seconds for the master's
port, so that workers do not crash-loop while the master starts. Implies ``svc``.

Volcano silently does nothing when the master task is missing; vcsat refuses such a job, since it
would start and never rendezvous.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from vcsat.adapters.controller.plugins.base import JobPlugin, add_env, domain_name, open_port
from vcsat.adapters.controller.plugins.flags import Flag

if TYPE_CHECKING:
    from vcsat.adapters.controller.jobspec import JobSpec, TaskSpec

WAIT_CONTAINER = "wait-for-master"


class PytorchPlugin(JobPlugin):
    name = "pytorch"
    flags: ClassVar[Mapping[str, Flag]] = {
        "master": Flag("str", "master", "task of the master (rank 0)"),
        "worker": Flag("str", "worker", "task of the workers"),
        "port": Flag("int", 23456, "the master's rendezvous port"),
        "wait-master-enabled": Flag("bool", False, "workers wait for the master's port before starting"),
        "wait-master-timeout": Flag("int", 300, "seconds a worker waits for the master"),
        "wait-master-image": Flag("str", "busybox:1.36.1", "image of the waiting init container"),
    }

    def problem(self, tasks: tuple[TaskSpec, ...]) -> str | None:
        master = self.flag_str("master")
        if not any(task.name == master and task.replicas for task in tasks):
            return f"no task named {master!r} with replicas to be the master (name it, or set --master=TASK)"
        port = self.flag_int("port")
        if not 0 < port < 65536:
            return f"--port={port} is not a port (1 to 65535)"
        return None

    def world_size(self, job: JobSpec) -> int:
        roles = (self.flag_str("master"), self.flag_str("worker"))
        return sum(task.replicas for task in job.tasks if task.name in roles)

    def master_addr(self, job: JobSpec) -> str:
        master = job.task(self.flag_str("master"))
        assert master is not None  # problem() refused the job otherwise
        return domain_name(job, master, 0)

    def environment(self, job: JobSpec, task: TaskSpec, index: int) -> list[dict[str, str]]:
        variables = [
            {"name": "MASTER_ADDR", "value": self.master_addr(job)},
            {"name": "MASTER_PORT", "value": str(self.flag_int("port"))},
            {"name": "WORLD_SIZE", "value": str(self.world_size(job))},
        ]
        if task.name == self.flag_str("worker"):
            variables.append({"name": "RANK", "value": str(index + 1)})
        elif task.name == self.flag_str("master"):
            variables.append({"name": "RANK", "value": "0"})
        return variables

    def mutate_pod(self, pod: dict[str, Any], job: JobSpec, task: TaskSpec, index: int) -> None:
        variables = self.environment(job, task, index)
        for container in pod["spec"]["containers"]:
            open_port(container, self.flag_int("port"), "pytorchjob-port")
            add_env(container, *variables)
        if task.name == self.flag_str("worker") and self.flag_bool("wait-master-enabled"):
            self.add_wait_container(pod, self.master_addr(job))

    def add_wait_container(self, pod: dict[str, Any], master_addr: str) -> None:
        init = pod["spec"].setdefault("initContainers", [])
        if any(container.get("name") == WAIT_CONTAINER for container in init):
            return
        port = self.flag_int("port")
        timeout = self.flag_int("wait-master-timeout")
        script = (
            f"deadline=$(( $(date +%s) + {timeout} )); "
            f"until nc -z {master_addr} {port} 2>/dev/null; do "
            f'if [ "$(date +%s)" -ge "$deadline" ]; then echo "master {master_addr}:{port} not ready '
            f'after {timeout}s"; exit 1; fi; sleep 2; done'
        )
        init.append(
            {"name": WAIT_CONTAINER, "image": self.flag_str("wait-master-image"), "command": ["sh", "-c", script]}
        )
