"""Fixtures of the benchmarks.

The benchmarks are not collected by ``python -m pytest`` (``testpaths = ["tests"]``); run them
with ``python -m pytest benchmarks --benchmark-only`` (see benchmarks/README.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from bench_instances import cached_instance

from vcsat.adapters.generate.generator import GeneratorOptions


@pytest.fixture(scope="session")
def instance_file() -> Callable[[GeneratorOptions], Path]:
    """Path of the cached instance file for given generator options (generated on first use)."""
    return cached_instance
