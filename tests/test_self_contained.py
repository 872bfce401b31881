"""The repository stands on its own: nothing in it points to files outside it, and the contract it
cites by section is in it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("model", "solver", "adapters", "tests", "benchmarks", "docs", "deploy", "tools", ".ci")
OUTSIDE = re.compile(r"\.\./" + "shared" + r"|/" + "work/")
"""A path above the repository (the old shared folder) or on the machine it was written on."""


def _text_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "Dockerfile", ROOT / "pyproject.toml"]
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in {".py", ".md", ".yaml", ".yml", ".sh", ".toml", ""}:
                files.append(path)
    return [path for path in files if "__pycache__" not in path.parts and path.suffix != ".csv"]


def test_no_reference_outside_the_repository() -> None:
    files = _text_files()
    assert len(files) > 100  # the walk found the sources
    offenders = [str(p.relative_to(ROOT)) for p in files if OUTSIDE.search(p.read_text(errors="replace"))]
    assert offenders == []


def test_the_contract_has_the_sections_the_code_cites() -> None:
    contract = (ROOT / "docs" / "contract.md").read_text()
    headings = re.findall(r"^## (\d)\. ", contract, flags=re.MULTILINE)
    assert headings == ["1", "2", "3", "4"]
    assert (ROOT / "docs" / "design.md").is_file()
