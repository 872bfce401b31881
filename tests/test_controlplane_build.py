"""tools/controlplane/build.sh decides what to build from what its cache holds.

A cache with every binary (and kwok's stages, from the kwok version go.mod pins, and helm of the
version helm/go.mod pins) builds nothing; one from before kube-controller-manager, kwok and helm
were added, or with another kwok or helm, builds just what is missing. A fake ``go`` first on PATH
stands for the compiler, so no test here compiles: it fails at once, and the line build.sh prints
before building names what it would build.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

BUILD = Path(__file__).resolve().parents[1] / "tools" / "controlplane" / "build.sh"
ALL = ("kube-apiserver", "kube-scheduler", "kube-controller-manager", "etcd", "kwok", "helm")


def _pin(go_mod: Path, module: str) -> str:
    for line in go_mod.read_text(encoding="utf-8").splitlines():
        parts = line.split("//")[0].split()
        if module in parts and "=>" not in parts:
            return parts[parts.index(module) + 1]
    raise AssertionError(f"{go_mod} pins no {module}")


def _kwok_version() -> str:
    return _pin(BUILD.parent / "kwok" / "go.mod", "sigs.k8s.io/kwok")


def _helm_version() -> str:
    return _pin(BUILD.parent / "helm" / "go.mod", "helm.sh/helm/v3")


def _cache_name() -> str:
    go_mod = BUILD.parent / "go.mod"
    return f"{_pin(go_mod, 'k8s.io/kubernetes')}-{_pin(go_mod, 'go.etcd.io/etcd/server/v3')}"


def _run(
    tmp_path: Path, present: tuple[str, ...], kwok_version: str | None, stages: bool, helm_version: str | None
) -> subprocess.CompletedProcess[str]:
    cache = tmp_path / "cache"
    out = cache / "controlplane" / _cache_name()
    out.mkdir(parents=True)
    for name in present:
        binary = out / name
        binary.write_text("#!/bin/sh\n", encoding="utf-8")
        binary.chmod(0o755)
    if kwok_version is not None:
        (out / "kwok.version").write_text(kwok_version + "\n", encoding="utf-8")
    if helm_version is not None:
        (out / "helm.version").write_text(helm_version + "\n", encoding="utf-8")
    if stages:
        (out / "kwok-stages").mkdir()
        (out / "kwok-stages" / "node-not-ready.yaml").write_text("{}\n", encoding="utf-8")
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    go = fake_bin / "go"
    go.write_text('#!/bin/sh\necho "fake go: $*" >&2\nexit 7\n', encoding="utf-8")
    go.chmod(0o755)
    env = {**os.environ, "VCSAT_CACHE_DIR": str(cache), "PATH": f"{fake_bin}:{os.environ['PATH']}"}
    return subprocess.run(["bash", str(BUILD)], capture_output=True, text=True, env=env, timeout=60, check=False)


@pytest.mark.parametrize(
    ("present", "kwok_version", "stages", "helm_version", "todo"),
    [
        pytest.param(ALL, "pinned", True, "pinned", None, id="complete-cache-builds-nothing"),
        pytest.param(
            ("kube-apiserver", "kube-scheduler", "etcd"),
            None,
            False,
            None,
            "kube-controller-manager kwok helm",
            id="old-cache-gains-the-new-binaries",
        ),
        pytest.param(ALL, "v0.0.1", True, "pinned", "kwok", id="another-kwok-version-rebuilds-kwok"),
        pytest.param(ALL, "pinned", False, "pinned", "kwok", id="kwok-without-its-stages-is-rebuilt"),
        pytest.param(ALL, "pinned", True, "v3.0.0", "helm", id="another-helm-version-rebuilds-helm"),
        pytest.param(ALL[:-1], "pinned", True, None, "helm", id="a-cache-without-helm-gains-it"),
        pytest.param(
            ("kube-apiserver", "kube-controller-manager", "etcd", "kwok", "helm"),
            "pinned",
            True,
            "pinned",
            "kube-scheduler",
            id="one-missing-binary-alone",
        ),
    ],
)
def test_build_sh_builds_only_what_the_cache_lacks(
    tmp_path: Path,
    present: tuple[str, ...],
    kwok_version: str | None,
    stages: bool,
    helm_version: str | None,
    todo: str | None,
) -> None:
    version = _kwok_version() if kwok_version == "pinned" else kwok_version
    helm = _helm_version() if helm_version == "pinned" else helm_version
    done = _run(tmp_path, present, version, stages, helm)
    if todo is None:
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == str(tmp_path / "cache" / "controlplane" / _cache_name())
        assert "fake go" not in done.stderr
    else:
        assert done.returncode != 0
        assert f"build.sh: building {todo} (" in done.stderr, done.stderr
        assert "fake go: build" in done.stderr
