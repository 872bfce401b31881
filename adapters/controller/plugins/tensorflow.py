"""The ``tensorflow`` plugin: ``TF_CONFIG`` for every pod of a ps/worker (or chief/evaluator) job.

TensorFlow's distributed strategies read the whole cluster and the pod's own role from one JSON
environment variable::

    {"cluster": {"ps": ["job-ps-0.job:2222"], "worker": ["job-worker-0.job:2222", ...]},
     "task": {"type": "worker", "index": 0}}

Roles are tasks named ``ps``, ``worker``, ``chief`` and ``evaluator``, or whatever the flags
``--ps``, ``--worker``, ``--chief``, ``--evaluator`` name; ``--port`` (2222) is the port every
server listens on. A job of one task with one replica is stand-alone and gets no ``TF_CONFIG``.
The names resolve through the ``svc`` plugin, which this plugin implies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from vcsat.adapters.controller.plugins.base import JobPlugin, add_env, domain_name
from vcsat.adapters.controller.plugins.flags import Flag

if TYPE_CHECKING:
    from vcsat.adapters.controller.jobspec import JobSpec, TaskSpec

TF_CONFIG_ENV = "TF_CONFIG"
ROLES = ("ps", "worker", "chief", "evaluator")


class TensorflowPlugin(JobPlugin):
    name = "tensorflow"
    flags: ClassVar[Mapping[str, Flag]] = {
        "ps": Flag("str", "ps", "task of the parameter servers"),
        "worker": Flag("str", "worker", "task of the workers"),
        "chief": Flag("str", "chief", "task of the chief"),
        "evaluator": Flag("str", "evaluator", "task of the evaluator"),
        "port": Flag("int", 2222, "port of every TensorFlow server"),
    }

    def role_of(self, task_name: str) -> str:
        for role in ROLES:
            if self.flag_str(role) == task_name:
                return role
        return task_name

    def cluster_spec(self, job: JobSpec) -> dict[str, list[str]]:
        port = self.flag_int("port")
        cluster: dict[str, list[str]] = {}
        for role in ROLES:  # TensorFlow does not care about the order; a fixed one keeps pods stable
            task = job.task(self.flag_str(role))
            if task is not None and task.replicas:
                cluster[role] = [f"{domain_name(job, task, index)}:{port}" for index in range(task.replicas)]
        return cluster

    def tf_config(self, job: JobSpec, task: TaskSpec, index: int) -> str:
        config = {"cluster": self.cluster_spec(job), "task": {"type": self.role_of(task.name), "index": index}}
        return json.dumps(config, separators=(",", ":"))

    def mutate_pod(self, pod: dict[str, Any], job: JobSpec, task: TaskSpec, index: int) -> None:
        if len(job.tasks) == 1 and job.tasks[0].replicas == 1:
            return
        value = self.tf_config(job, task, index)
        for container in pod["spec"]["containers"]:
            add_env(container, {"name": TF_CONFIG_ENV, "value": value})
