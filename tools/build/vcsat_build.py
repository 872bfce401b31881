"""The package's build backend: setuptools', plus what the opt-in compiled build needs.

With ``VCSAT_COMPILE=1`` a wheel's build needs mypy (whose mypyc compiles the listed modules, see
setup.py) and the runtime dependencies (mypyc reads their types: a model field typed through pydantic
or numpy compiles to a checked native read only when the type is known). An editable install is
always pure Python, whatever the variable says: a compiled extension beside its source would shadow
every later edit of that source. Only the wheel's build compiles: setuptools runs setup.py for every
hook, so the others run it with the variable unset.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (the hooks this module does not change)

MYPY_FOR_MYPYC = "mypy==2.4.1"
"""The mypyc the compiled build was tested with (its generated C differs between releases)."""


def _compiling() -> bool:
    return os.environ.get("VCSAT_COMPILE", "") == "1"


@contextmanager
def _pure() -> Iterator[None]:
    """setup.py run with the variable unset: setuptools runs it for every hook, and only the
    wheel's build should compile (asked for its requirements, mypyc is not installed yet; asked for
    metadata, compiling would only cost time)."""
    saved = os.environ.pop("VCSAT_COMPILE", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["VCSAT_COMPILE"] = saved


def _runtime_dependencies() -> list[str]:
    project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    return list(project["dependencies"])


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    extra = [MYPY_FOR_MYPYC, *_runtime_dependencies()] if _compiling() else []
    with _pure():
        return [*_setuptools.get_requires_for_build_wheel(config_settings), *extra]


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    with _pure():
        return _setuptools.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    with _pure():
        return _setuptools.get_requires_for_build_editable(config_settings)


def prepare_metadata_for_build_editable(metadata_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    with _pure():
        return _setuptools.prepare_metadata_for_build_editable(metadata_directory, config_settings)


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    with _pure():
        return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    with _pure():
        return _setuptools.get_requires_for_build_sdist(config_settings)


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    with _pure():
        return _setuptools.build_sdist(sdist_directory, config_settings)
