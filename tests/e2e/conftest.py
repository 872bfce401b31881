"""Fixtures for the end-to-end scenarios: a whole cluster with fake nodes per test module.

The cluster (tests/k8s/kwokcluster.py) is the real etcd, kube-apiserver and
kube-controller-manager plus kwok, the kubelet of fake nodes; the scenarios start ``vcsat
scheduler`` and ``vcsat controller`` against it as separate processes, as a user would. Every
test here that starts the cluster is marked ``e2e`` (and ``k8s``: it needs the control-plane
binaries too).
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
_K8S = _HERE.parent / "k8s"
# The cluster modules live beside controlplane.py; importable under any pytest import mode.
for folder in (_HERE, _K8S):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from kubernetes import client  # noqa: E402
from kwokcluster import KwokCluster, start_kwok_cluster  # noqa: E402


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # This hook sees the whole session's items, not only this folder's. The scenarios (test_e2e_*,
    # whether they share the module's cluster or start their own) are marked; tests here that start
    # no cluster (the readings of recorded runs) stay unmarked, so they run without the binaries.
    for item in items:
        path = Path(str(item.path)).resolve()
        scenario = path.name.startswith("test_e2e_") or "kwok_cluster" in getattr(item, "fixturenames", ())
        if _HERE in path.parents and scenario:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.k8s)


@pytest.fixture(scope="module")
def kwok_cluster() -> Iterator[KwokCluster]:
    """etcd + kube-apiserver + kube-controller-manager + kwok for one test module."""
    with start_kwok_cluster() as cluster:
        yield cluster


@pytest.fixture
def namespace(kwok_cluster: KwokCluster) -> Iterator[str]:
    """A fresh namespace for one scenario, deleted after (the namespace controller empties it)."""
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    with kwok_cluster.plane.api_client() as api:
        core = client.CoreV1Api(api)
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        yield name
        core.delete_namespace(name)
