"""Opt-in compiled build: with VCSAT_COMPILE=1 the modules listed in tools/build/compiled_modules.txt
are turned into C extensions by mypyc (the same sources, checked and typed as they are; the rest stays
Python). Without it, and always for editable installs (tools/build/vcsat_build.py), the package is
pure Python, so an edited source is never shadowed by a stale extension.
"""

import os
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def compiled_modules() -> list[str]:
    listing = ROOT / "tools" / "build" / "compiled_modules.txt"
    lines = (line.strip() for line in listing.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def ext_modules() -> list[object]:
    if os.environ.get("VCSAT_COMPILE", "") != "1":
        return []
    from mypyc.build import mypycify

    return mypycify(
        ["--config-file", str(ROOT / "tools" / "build" / "mypyc.ini"), *compiled_modules()],
        opt_level="3",
        # One extension per module: gcc compiles them in parallel (build_ext's jobs below) and a
        # rebuild after an edit recompiles only the modules whose C changed.
        separate=True,
    )


class build_ext_in_parallel(build_ext):
    """build_ext with one job per CPU unless told otherwise (``-j``)."""

    def finalize_options(self) -> None:
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1
        super().finalize_options()


setup(ext_modules=ext_modules(), cmdclass={"build_ext": build_ext_in_parallel})
