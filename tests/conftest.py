"""Fixtures for every test.

The unit tests assert what a decision is; on a machine busy with other work a cycle's wall
deadline could cut a search short and make the decision depend on the load. So the searches here
stop on their deterministic budgets only (``vcsat.solver.search.staged.WALL_STOP``); tests/test_staged.py
checks the wall deadline on its own. For the same reason Hypothesis gets no per-example deadline:
a property either holds or not, however slowly a loaded machine runs one example.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

settings.register_profile("vcsat", deadline=None)
settings.load_profile("vcsat")


@pytest.fixture(autouse=True)
def _deterministic_budgets_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("vcsat.solver.search.staged.WALL_STOP", False)
