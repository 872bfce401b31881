"""Fixtures for tests that run against a real etcd + kube-apiserver (see controlplane.py).

Every test under tests/k8s is marked `k8s`, so a quick run can leave them out with
`-m "not k8s"`; the control plane is only started when a selected test asks for it.
"""

from __future__ import annotations

import contextlib
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_HERE = Path(__file__).resolve().parent
# Lets `import controlplane` work under any pytest import mode, not only the default one.
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

from controlplane import ControlPlane, KubeScheduler, start_control_plane, start_kube_scheduler  # noqa: E402
from scheduler_support import Bubble  # noqa: E402

from vcsat.adapters.kube.client import Kube  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "k8s: runs against a real etcd + kube-apiserver started by the test session")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # This hook sees the whole session's items, not only this folder's.
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.k8s)


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """One control plane for the whole session: deploy/crds Established, queue `default` created."""
    with start_control_plane() as cp:
        yield cp


@pytest.fixture(scope="module")
def kube_scheduler(control_plane: ControlPlane) -> Iterator[KubeScheduler]:
    """The genuine kube-scheduler (default profile, no leader election) on the session's API server.

    It places every pod whose schedulerName is ``default-scheduler`` (the API server's default), so
    it runs only for the module that asks for it (other tests' pods of that name stay Pending).
    """
    with start_kube_scheduler(control_plane) as scheduler:
        yield scheduler


@pytest.fixture
def k8s_client(control_plane: ControlPlane) -> Iterator[Any]:
    """A kubernetes.client.ApiClient for the session's control plane, closed after the test."""
    with control_plane.api_client() as api:
        yield api


@pytest.fixture
def k8s_namespace(k8s_client: Any) -> Iterator[str]:
    """A fresh namespace for one test, so tests sharing the control plane never collide.

    Deleted afterwards; with no namespace controller running it stays Terminating, which is
    harmless since the name is never reused.
    """
    from kubernetes import client

    core = client.CoreV1Api(k8s_client)
    name = f"t-{uuid.uuid4().hex[:10]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    with contextlib.suppress(client.ApiException):
        core.delete_namespace(name)


@pytest.fixture
def kube(k8s_client: Any) -> Iterator[Kube]:
    """Our own client (adapters/kube/client.py) on the test's API server."""
    with Kube.from_api_client(k8s_client) as client:
        yield client


@pytest.fixture
def bubble(kube: Kube, k8s_namespace: str) -> Iterator[Bubble]:
    """One test's namespace, nodes and scheduler name (scheduler_support.Bubble), cleaned after."""
    space = Bubble(kube, k8s_namespace)
    yield space
    space.clean()
