"""The ``svc`` plugin: every pod of a job can find every other by a stable name.

Distributed training needs peer addresses before any pod runs. Kubernetes gives a pod with
``hostname`` and ``subdomain`` a DNS name ``<hostname>.<subdomain>`` when a headless Service of
that subdomain's name exists; so the plugin creates that Service (selecting the job's pods), sets
hostname and subdomain on every pod, and writes the names into a ConfigMap mounted at
``/etc/volcano``: one host file per task (``<task>.host``, one name a line, what ``mpirun
--hostfile`` reads) plus ``VC_<TASK>_HOSTS`` (comma-separated) and ``VC_<TASK>_NUM``, also injected
as environment variables. A NetworkPolicy admits traffic to the pods only from the job's own pods.

Flags (Volcano's): ``--publish-not-ready-addresses`` (DNS names resolve before pods are ready),
``--disable-network-policy``, ``--inject-hosts-env=false`` (huge jobs: keep the environment small).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from vcsat.adapters.controller import naming
from vcsat.adapters.controller.plugins.base import (
    JobPlugin,
    ObjectRecipe,
    add_env,
    add_mount,
    add_volume,
    containers,
    object_metadata,
    task_hosts,
)
from vcsat.adapters.controller.plugins.flags import Flag

if TYPE_CHECKING:
    from vcsat.adapters.controller.jobspec import JobSpec, TaskSpec

CONFIG_MOUNT_PATH = "/etc/volcano"


def hosts_env_name(task_name: str) -> str:
    return f"VC_{naming.env_task_key(task_name)}_HOSTS"


def host_count_env_name(task_name: str) -> str:
    return f"VC_{naming.env_task_key(task_name)}_NUM"


def host_file_name(task_name: str) -> str:
    """``<task>.host``, with ``-`` as ``_`` as Volcano writes it (``data_loader.host``)."""
    return f"{task_name.replace('-', '_')}.host"


def host_files(job: JobSpec) -> dict[str, str]:
    """The ConfigMap's data: per task its host file, its host list and its host count."""
    data: dict[str, str] = {}
    for task in job.tasks:
        hosts = task_hosts(job, task)
        data[host_file_name(task.name)] = "\n".join(hosts)
        data[hosts_env_name(task.name)] = ",".join(hosts)
        data[host_count_env_name(task.name)] = str(len(hosts))
    return data


class SvcPlugin(JobPlugin):
    name = "svc"
    flags: ClassVar[Mapping[str, Flag]] = {
        "publish-not-ready-addresses": Flag("bool", False, "resolve pods' names before they are ready"),
        "disable-network-policy": Flag("bool", False, "create no NetworkPolicy"),
        "inject-hosts-env": Flag("bool", True, "put VC_<TASK>_HOSTS and VC_<TASK>_NUM into the environment"),
    }

    def config_map_name(self, job: JobSpec) -> str:
        return naming.plugin_object_name(job.name, self.name)

    def objects(self, job: JobSpec) -> list[ObjectRecipe]:
        recipes = [
            ObjectRecipe("v1", "ConfigMap", self.config_map_name(job), lambda: self.config_map(job), True),
            ObjectRecipe("v1", "Service", job.name, lambda: self.service(job)),
        ]
        if not self.flag_bool("disable-network-policy"):
            recipes.append(
                ObjectRecipe("networking.k8s.io/v1", "NetworkPolicy", job.name, lambda: self.network_policy(job))
            )
        return recipes

    def config_map(self, job: JobSpec) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": object_metadata(job, self.config_map_name(job)),
            "data": host_files(job),
        }

    def service(self, job: JobSpec) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": object_metadata(job, job.name),
            "spec": {
                "clusterIP": "None",
                "selector": naming.job_labels(job.name, job.namespace),
                "publishNotReadyAddresses": self.flag_bool("publish-not-ready-addresses"),
            },
        }

    def network_policy(self, job: JobSpec) -> dict[str, Any]:
        own_pods = {"matchLabels": naming.job_labels(job.name, job.namespace)}
        return {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": object_metadata(job, job.name),
            "spec": {
                "podSelector": own_pods,
                "ingress": [{"from": [{"podSelector": own_pods}]}],
                "policyTypes": ["Ingress"],
            },
        }

    def mutate_pod(self, pod: dict[str, Any], job: JobSpec, task: TaskSpec, index: int) -> None:
        spec = pod.setdefault("spec", {})
        if not spec.get("hostname"):
            spec["hostname"] = pod["metadata"]["name"]
        if not spec.get("subdomain"):
            spec["subdomain"] = job.name
        config_map = self.config_map_name(job)
        if self.flag_bool("inject-hosts-env"):
            variables = []
            for each in job.tasks:
                for key in (hosts_env_name(each.name), host_count_env_name(each.name)):
                    variables.append({"name": key, "valueFrom": {"configMapKeyRef": {"name": config_map, "key": key}}})
            for container in containers(pod):
                add_env(container, *variables)
        add_volume(pod, {"name": config_map, "configMap": {"name": config_map}})
        for container in containers(pod):
            add_mount(container, {"name": config_map, "mountPath": CONFIG_MOUNT_PATH})
