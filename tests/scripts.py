"""Load a repository script (a benchmark or a tool, not an installed module) as a module, so
that its tests call its functions directly instead of through a subprocess."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent


def load_script(relative: str, name: str) -> ModuleType:
    """The script at ``relative`` (from the repository's root) executed as module ``name``,
    registered in ``sys.modules`` first: dataclasses and pickling look their module up by name."""
    spec = importlib.util.spec_from_file_location(name, REPO / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
