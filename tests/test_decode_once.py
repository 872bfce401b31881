"""A cycle decodes one decision: the one it ends with.

The decode (pods on nodes, GPU indices) reads the problem and the assignment alone, so a decision
the exchange replaces is never decoded: on the contended shape in miniature, with no trade and
with three (a trade kept), the cycle decodes once and outputs what that decode gave.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
from shape_files import shape_file

from vcsat.adapters.convert import instance_file
from vcsat.model import Policy
from vcsat.solver import solve

solve_module = importlib.import_module("vcsat.solver.solve")


def test_the_cycle_decodes_the_decision_it_ends_with_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = instance_file.read_snapshot(shape_file(tmp_path, "contended", 80, 2))
    decoded: list[list[Any]] = []
    real = solve_module.bindings

    def counted(*args: Any, **kwargs: Any) -> list[Any]:
        out = real(*args, **kwargs)
        decoded.append(out)
        return out

    monkeypatch.setattr(solve_module, "bindings", counted)
    ranks = []
    for trades in (0, 3):
        decoded.clear()
        skip = frozenset({"search", f"exchange_trades={trades}"})
        decision = solve(snapshot, Policy(time_limit_s=1.0), wall=False, skip=skip)
        assert len(decoded) == 1, f"{trades} trades: decoded {len(decoded)} times"
        assert decision.bindings == decoded[0]
        ranks.append([level.value for level in decision.solver.levels])
    assert ranks[1] > ranks[0], "the miniature keeps a trade within three: its decision replaced the first"
