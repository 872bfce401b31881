"""The build backend (tools/build/vcsat_build.py): the compiled build asks for mypyc and the runtime
dependencies only when ``VCSAT_COMPILE=1``, and an editable install is pure whatever the variable."""

from __future__ import annotations

import importlib.util
import os
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _backend() -> ModuleType:
    spec = importlib.util.spec_from_file_location("vcsat_build", ROOT / "tools" / "build" / "vcsat_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("variable", "compiled"), [(None, False), ("0", False), ("", False), ("1", True)])
def test_the_wheel_asks_for_mypyc_only_when_compiling(
    monkeypatch: pytest.MonkeyPatch, variable: str | None, compiled: bool
) -> None:
    monkeypatch.chdir(ROOT)
    if variable is None:
        monkeypatch.delenv("VCSAT_COMPILE", raising=False)
    else:
        monkeypatch.setenv("VCSAT_COMPILE", variable)
    requires = _backend().get_requires_for_build_wheel()
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(r.startswith("mypy==") for r in requires) is compiled
    assert all(d in requires for d in dependencies) is compiled


def test_an_editable_build_is_pure_whatever_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = _backend()
    seen: list[str | None] = []

    def build_editable(*args: Any, **kwargs: Any) -> str:
        seen.append(os.environ.get("VCSAT_COMPILE"))
        return "vcsat.whl"

    monkeypatch.setenv("VCSAT_COMPILE", "1")
    monkeypatch.setattr(backend._setuptools, "build_editable", build_editable)
    assert backend.build_editable("dist") == "vcsat.whl"
    assert seen == [None]
    assert os.environ.get("VCSAT_COMPILE") == "1"  # and the variable is back for what follows


def test_every_listed_module_exists_and_is_code_of_ours() -> None:
    listed = [line.strip() for line in (ROOT / "tools" / "build" / "compiled_modules.txt").read_text().splitlines()]
    paths = [line for line in listed if line and not line.startswith("#")]
    assert paths and len(set(paths)) == len(paths)
    for path in paths:
        assert path.startswith(("vcsat/solver/", "vcsat/adapters/", "vcsat/model/")), path
        assert (ROOT / path).is_file(), path
