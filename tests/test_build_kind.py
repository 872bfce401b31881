"""``vcsat --version`` names the build (adapters/cli/build_kind.py): pure Python, or how many modules
are compiled — counted from the files, and the same modules Python actually loads from extensions."""

from __future__ import annotations

import importlib.util
from importlib import machinery
from pathlib import Path

import pytest
from click.testing import CliRunner

from vcsat.adapters.cli.app import main
from vcsat.adapters.cli.build_kind import compiled_modules, describe

ROOT = Path(__file__).resolve().parents[1]
SUFFIX = machinery.EXTENSION_SUFFIXES[0]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ([], []),
        (["solver/greedy.py"], []),
        # mypyc's module and its support library: one module.
        ([f"solver/greedy{SUFFIX}", f"solver/greedy__mypyc{SUFFIX}", "solver/greedy.py"], ["vcsat.solver.greedy"]),
        (
            [f"adapters/convert/pods{SUFFIX}", f"solver/pricing/pool_keys{SUFFIX}"],
            ["vcsat.adapters.convert.pods", "vcsat.solver.pricing.pool_keys"],
        ),
        # Files that are not extensions, and folders that are not code, are not counted.
        (["solver/greedy.so.txt", f"docs/greedy{SUFFIX}"], []),
    ],
)
def test_compiled_modules_are_read_off_the_files(tmp_path: Path, files: list[str], expected: list[str]) -> None:
    for folder in ("model", "solver", "adapters"):
        (tmp_path / folder).mkdir()
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    assert compiled_modules(tmp_path) == expected


def test_the_count_is_what_python_loads() -> None:
    listed = [line.strip() for line in (ROOT / "tools" / "build" / "compiled_modules.txt").read_text().splitlines()]
    names = [line.removesuffix(".py").replace("/", ".") for line in listed if line and not line.startswith("#")]
    loaded = []
    for name in names:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None
        if spec.origin.endswith(tuple(machinery.EXTENSION_SUFFIXES)):
            loaded.append(name)
    assert compiled_modules() == sorted(loaded)
    # All or none: a build compiles the whole list (tools/ci/compiled-suite.sh checks that it did).
    assert loaded in ([], names)


def test_the_version_says_which_build() -> None:
    done = CliRunner().invoke(main, ["--version"])
    assert done.exit_code == 0
    assert done.output.strip().endswith(f"({describe()})")
    assert describe() == ("pure Python" if not compiled_modules() else f"compiled: {len(compiled_modules())} modules")
