"""Where the scheduler's and the controller's Lease lives when no --lease-namespace is given."""

from __future__ import annotations

from pathlib import Path

import pytest

from vcsat.adapters.live import daemon


@pytest.mark.parametrize(
    ("pod_namespace", "file_text", "expected"),
    [
        ("vcsat-system", "other", "vcsat-system"),  # the Deployment's downward API wins
        (None, "from-token\n", "from-token"),  # in a pod without it: the service account's namespace
        (None, None, "kube-system"),  # outside a cluster
        (None, "\n", "kube-system"),
    ],
)
def test_default_lease_namespace(
    pod_namespace: str | None,
    file_text: str | None,
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = tmp_path / "namespace"
    if file_text is not None:
        token.write_text(file_text)
    monkeypatch.setattr(daemon, "IN_CLUSTER_NAMESPACE_FILE", token)
    if pod_namespace is None:
        monkeypatch.delenv("POD_NAMESPACE", raising=False)
    else:
        monkeypatch.setenv("POD_NAMESPACE", pod_namespace)
    assert daemon.default_lease_namespace() == expected
