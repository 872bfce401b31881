"""Run repository code the way its tests need it: a script (a benchmark or a tool, not an installed
module) loaded as a module, so that its tests call its functions directly instead of through a
subprocess; and ``vcsat`` run in a fresh process that says at its exit which modules it loaded."""

from __future__ import annotations

import importlib.util
import subprocess
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


_LEAVE_SAYING = """\
import sys
from vcsat.adapters.cli import one_shot
from vcsat.adapters.cli.app import main
real = one_shot.leave
def leave(code=0):
    sys.stdout.flush()
    sys.stderr.write(f"{name} loaded: {{'{name}' in sys.modules}}\\n")
    sys.stderr.flush()
    real(code)
one_shot.leave = leave
main()
"""


def run_saying_loaded(module: str, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    """``vcsat ARGS`` in a fresh process, as the console script runs it (its one-shot exit), which
    writes ``MODULE loaded: True`` (or False) to its standard error as it leaves: whether anything
    on the command's path imported ``module`` (an import a command should not pay for)."""
    return subprocess.run(
        [sys.executable, "-c", _LEAVE_SAYING.format(name=module), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=check,
    )
