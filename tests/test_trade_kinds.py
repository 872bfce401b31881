"""benchmarks/trade_kinds.py: the exchange's looks and trades of a solve, in order, by kind.

On the contended shape in miniature at fixed trade counts: the trades recorded as run are the
count the replay was given (each one asked and started), kept ones rank the decision higher, every
event names a kind, the wrapped functions are put back after the solve, and the summary adds up
the events.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from scripts import load_script
from shape_files import shape_file

fixed_trades = load_script("benchmarks/fixed_trades.py", "fixed_trades")
trade_kinds = load_script("benchmarks/trade_kinds.py", "trade_kinds")


@pytest.fixture(scope="module")
def contended(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Seed 2: on seed 1 the greedy's largest-first fill, kept aside, ranks above what three trades
    # reach, so a kept trade there leaves the decision as it was at 0 trades.
    return shape_file(tmp_path_factory.mktemp("kinds"), "contended", 80, 2)


# pure_only: trade_kinds records by wrapping the exchange's looks and trades, which the compiled
# exchange calls bound, so it sees them only on a pure tree (docs/compiled-build.md).
@pytest.mark.pure_only
@pytest.mark.parametrize("trades", [0, 1, 3])
def test_the_trades_recorded_are_the_count_replayed(contended: Path, trades: int) -> None:
    (row,) = fixed_trades.solve_at(contended, [trades], ["search"], kinds=True)
    ran = [e for e in row["events"] if e["event"] == "trade" and e["ran"]]
    assert len(ran) == trades
    assert all(
        e["kind"] in set(trade_kinds.PHASES.values()) | {f"{k}-spare" for k in trade_kinds.PHASES.values()}
        or e["kind"].endswith("-again")
        for e in ran
    )
    assert sum(row["kinds"].get(f"trade:{e}", {"n": 0})["n"] for e in {e["kind"] for e in ran}) == trades
    assert [e["at"] for e in row["events"] if "at" in e] == sorted(e["at"] for e in row["events"] if "at" in e)
    names = [e["event"] for e in row["events"]]
    assert names.count("end") == 1
    assert not {"look", "trade"} & set(names[names.index("end") :])


@pytest.mark.pure_only
def test_kept_trades_raise_the_rank_and_the_module_is_put_back(contended: Path) -> None:
    exchange = importlib.import_module("vcsat.solver.search.exchange")
    before = {name: getattr(exchange, name) for name in trade_kinds.PHASES}
    rows = fixed_trades.solve_at(contended, [0, 3], ["search"], kinds=True)
    assert {name: getattr(exchange, name) for name in trade_kinds.PHASES} == before
    kept = sum(e["event"] == "trade" and e["kept"] for e in rows[1]["events"])
    ranks = [[level[1] for level in row["levels"]] for row in rows]
    assert (ranks[1] > ranks[0]) is (kept > 0)
    assert kept > 0, "the miniature is chosen so that a trade is kept within three"


def test_the_summary_adds_up_the_events() -> None:
    events = [
        {"event": "look", "kind": "chain-first", "cpu": 0.002, "found": False},
        {"event": "look", "kind": "chain-first", "cpu": 0.004, "found": True},
        {"event": "trade", "kind": "chain", "cpu": 0.02, "ran": True, "kept": True},
        {"event": "trade", "kind": "slope", "cpu": 0.03, "ran": True, "kept": False},
        {"event": "trade", "kind": "slope", "cpu": 0.0, "ran": False, "kept": False},
        {"event": "refused-trade", "phase": "slope"},
        {"event": "end", "at": 0.1},
    ]
    assert trade_kinds.summary(events) == {
        "look:chain-first": {"n": 2, "cpu": 0.006, "dearest": 0.004, "yield": 1},
        "trade:chain": {"n": 1, "cpu": 0.02, "dearest": 0.02, "yield": 1},
        "trade:slope": {"n": 1, "cpu": 0.03, "dearest": 0.03, "yield": 0},
    }
