"""Which build of vcsat is installed: pure Python, or with modules compiled by mypyc.

``vcsat --version`` says it, so that a user comparing timings (or reporting one) knows which build
ran (docs/compiled-build.md). Counted from the files beside the sources, without importing the
modules: the version flag must stay instant.
"""

from __future__ import annotations

import os
from importlib import machinery
from pathlib import Path

import vcsat

_CODE_FOLDERS = ("model", "solver", "adapters")


def compiled_modules(root: Path | None = None) -> list[str]:
    """The package's modules that load from a compiled extension, as dotted names, sorted (``root``:
    the ``vcsat`` package's folder, the installed one by default)."""
    root = root if root is not None else Path(vcsat.__file__).parent
    suffixes = tuple(machinery.EXTENSION_SUFFIXES)
    found = []
    for folder in _CODE_FOLDERS:
        for directory, _subdirectories, files in os.walk(root / folder, followlinks=True):
            for name in files:
                suffix = next((s for s in suffixes if name.endswith(s)), None)
                # mypyc also writes a support library per module (``<module>__mypyc``): not a module of ours.
                if suffix is None or name.removesuffix(suffix).endswith("__mypyc"):
                    continue
                relative = (Path(directory) / name.removesuffix(suffix)).relative_to(root)
                found.append(".".join(("vcsat", *relative.parts)))
    return sorted(found)


def describe() -> str:
    """``pure Python``, or ``compiled: N modules``."""
    count = len(compiled_modules())
    return f"compiled: {count} modules" if count else "pure Python"
