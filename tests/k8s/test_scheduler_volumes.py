"""The live scheduler reads PersistentVolumes and their claims: issue 10's pod whose claim is bound
to a local volume on node B lands on B, although A has more room.

The scheduler runs in-process against the real API server (see scheduler_support.py); the claim is
created already bound (``volumeName`` and ``pv.kubernetes.io/bind-completed``), as the volume
controller leaves it, since no controller manager runs here.
"""

from __future__ import annotations

import contextlib
from typing import Any

from scheduler_support import (
    BUBBLE_LABEL,
    Bubble,
    own_control_plane,  # noqa: F401 (the fixture control_plane: this module's own)
    running_scheduler,
    wait_until,
)

from vcsat.adapters.kube.client import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, PODS, ApiError
from vcsat.adapters.live.scheduler import Scheduler


def _local_volume(bubble: Bubble, node: str) -> str:
    name = f"local-{bubble.tag}"
    bubble.kube.post(
        PERSISTENT_VOLUMES.path(),
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": "10Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local",
                "local": {"path": "/mnt/disk"},
                "claimRef": {"namespace": bubble.namespace, "name": "data"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
                                ]
                            }
                        ]
                    }
                },
            },
        },
    )
    return name


def _bound_claim(bubble: Bubble, volume: str) -> None:
    bubble.kube.post(
        PERSISTENT_VOLUME_CLAIMS.path(bubble.namespace),
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": "data",
                "namespace": bubble.namespace,
                "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
            },
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local",
                "volumeName": volume,
                "resources": {"requests": {"storage": "10Gi"}},
            },
        },
    )


def _pod_with_claim(bubble: Bubble) -> None:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "db", "namespace": bubble.namespace},
        "spec": {
            "schedulerName": bubble.scheduler_name,
            "nodeSelector": {BUBBLE_LABEL: bubble.tag},
            "containers": [{"name": "main", "image": "registry.invalid/db:1", "resources": {"requests": {"cpu": "1"}}}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
        },
    }
    bubble.kube.post(PODS.path(bubble.namespace), body)


def test_a_pod_goes_where_its_bound_local_volume_is(bubble: Bubble) -> None:
    a, b = bubble.node("a", cpu="16"), bubble.node("b", cpu="2")
    volume = _local_volume(bubble, b)
    try:
        _bound_claim(bubble, volume)
        _pod_with_claim(bubble)
        scheduler = Scheduler(bubble.kube, policy=bubble.policy())
        with running_scheduler(scheduler):
            wait_until(lambda: bubble.placement()["db"], "the pod bound")
        assert bubble.placement()["db"] == b != a
    finally:
        with contextlib.suppress(ApiError):
            bubble.kube.delete(PERSISTENT_VOLUMES.path(name=volume))
