"""The ``mpi`` plugin: an MPI job whose master launches ranks on the workers over ssh.

The master's containers get ``MPI_HOST``, the workers' DNS names separated by commas (what
``mpirun --host`` takes; the ``svc`` plugin's ``/etc/volcano/<worker>.host`` is the same list as a
host file), and every container declares the ssh port (``--port``, 22) that ``mpirun`` connects
to. The master and worker tasks are named by ``--master`` and ``--worker`` (``master``,
``worker``). It implies ``ssh`` (keys) and ``svc`` (names), as Volcano's admission does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from vcsat.adapters.controller.plugins.base import JobPlugin, add_env, containers, open_port, task_hosts
from vcsat.adapters.controller.plugins.flags import Flag

if TYPE_CHECKING:
    from vcsat.adapters.controller.jobspec import JobSpec, TaskSpec

MPI_HOST_ENV = "MPI_HOST"


class MpiPlugin(JobPlugin):
    name = "mpi"
    flags: ClassVar[Mapping[str, Flag]] = {
        "master": Flag("str", "master", "task of the MPI master (runs mpirun)"),
        "worker": Flag("str", "worker", "task of the MPI workers"),
        "port": Flag("int", 22, "port to open for ssh"),
    }

    def problem(self, tasks: tuple[TaskSpec, ...]) -> str | None:
        master = self.flag_str("master")
        if not any(task.name == master for task in tasks):
            return f"no task named {master!r} to be the MPI master (name it, or set --master=TASK)"
        port = self.flag_int("port")
        if not 0 < port < 65536:
            return f"--port={port} is not a port (1 to 65535)"
        return None

    def worker_hosts(self, job: JobSpec) -> str:
        worker = job.task(self.flag_str("worker"))
        return ",".join(task_hosts(job, worker)) if worker is not None else ""

    def mutate_pod(self, pod: dict[str, Any], job: JobSpec, task: TaskSpec, index: int) -> None:
        is_master = task.name == self.flag_str("master") and job.task(self.flag_str("worker")) is not None
        hosts = self.worker_hosts(job) if is_master else ""
        for container in containers(pod):
            open_port(container, self.flag_int("port"), "mpijob-port")
            if is_master:
                add_env(container, {"name": MPI_HOST_ENV, "value": hosts})
