"""A Volcano CronJob end to end: ``vcsat controller`` as a process makes the Job of the next minute,
``vcsat scheduler`` places its gang on kwok nodes, the Job completes, and the CronJob's status says
so. The real wall clock: the first scheduled minute comes within 60 s of the CronJob's creation.
"""

from __future__ import annotations

from pathlib import Path

from e2e_support import gpu_job, gpu_nodes, job_phase, vcsat_daemon, wait_until
from kubernetes import client
from kwokcluster import KwokCluster

CRONJOBS = ("batch.volcano.sh", "v1alpha1", "cronjobs")


def test_a_cronjob_runs_its_job_through_the_daemons(kwok_cluster: KwokCluster, namespace: str, tmp_path: Path) -> None:
    plane = kwok_cluster.plane
    logs = (tmp_path / "scheduler.log", tmp_path / "controller.log", kwok_cluster.kwok_log)
    template = gpu_job("unused", 2, gpus=1, run_seconds=1)
    body = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": "minutely"},
        "spec": {
            "schedule": "* * * * *",
            "concurrencyPolicy": "Forbid",
            "jobTemplate": {"spec": template["spec"]},
        },
    }
    with (
        gpu_nodes(kwok_cluster, [2]),
        plane.api_client() as api,
        vcsat_daemon("scheduler", plane.kubeconfig, logs[0], "--time-limit=2"),
        vcsat_daemon("controller", plane.kubeconfig, logs[1], f"--namespace={namespace}", "--resync=5"),
    ):
        custom = client.CustomObjectsApi(api)
        custom.create_namespaced_custom_object(*CRONJOBS[:2], namespace, CRONJOBS[2], body)

        def first_job() -> str | None:
            items = custom.list_namespaced_custom_object("batch.volcano.sh", "v1alpha1", namespace, "jobs")["items"]
            return items[0]["metadata"]["name"] if items else None

        name = wait_until(first_job, "the CronJob made a Job", timeout_s=150, logs=logs)
        assert name.startswith("minutely-")
        wait_until(lambda: job_phase(api, namespace, name) == "Completed", f"Job {name} Completed", logs=logs)

        def seen_success() -> bool:
            status = custom.get_namespaced_custom_object(*CRONJOBS[:2], namespace, CRONJOBS[2], "minutely")["status"]
            return bool(status.get("lastSuccessfulTime")) and not status.get("active")

        wait_until(seen_success, "the CronJob recorded the success", logs=logs)
