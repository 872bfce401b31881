"""Which of the exchange's looks and trades a cycle ran, in order: each one's kind, CPU and yield.

The exchange (``vcsat.solver.search.exchange``) runs its trades in a fixed order of phases (chain,
step, clearing, slope, move, queue, rank, tier, relocation, repack) with looks between them; on a short limit the
clock fits only the first few, so what counts is which kinds come first, what each costs and which
are kept. :func:`recording` wraps the exchange module's phase, look and trade functions for the
time of one solve (no change to the solver, nothing in its hot path when not recording) and
collects one event per look and per trade: its kind, the phase it ran in, its CPU seconds, the CPU
seconds from the exchange's start at its end, whether it found a trade (looks) or was kept
(trades), and per refused trade or look what the wall plan predicted and had left.

    with recording() as events:
        decision = solve(snapshot, policy, ...)
    summary(events)   # per kind: how many, CPU, dearest, found, kept

``fixed_trades.py --kinds`` and ``phases.py --kinds`` add the events and the summary to their
JSON lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

PHASES = {
    "_chain_trades": "chain",
    "_step_trades": "step",
    "_clearing_trades": "clearing",
    "_slope_trades": "slope",
    "_move_trades": "move",
    "_swap_trades": "swap",
    "_queue_trades": "queue",
    "_rank_trades": "rank",
    "_tier_trades": "tier",
    "_relocation_trades": "relocation",
    "_repack_trades": "repack",
}
"""The exchange module's phase functions and the kind of trade each tries."""


@contextmanager
def recording() -> Iterator[list[dict[str, Any]]]:
    """The exchange's events of the solves run inside, appended to the list yielded (module
    docstring); the module's functions are put back on exit."""
    from vcsat.solver import deadline
    from vcsat.solver.search import exchange as module

    events: list[dict[str, Any]] = []
    stack: list[str] = []
    origin: list[float] = []
    saved: dict[tuple[Any, str], Any] = {}

    def patch(owner: Any, name: str, wrapper: Callable[[Any], Any]) -> None:
        saved[(owner, name)] = getattr(owner, name)
        setattr(owner, name, wrapper(getattr(owner, name)))

    def since() -> float:
        return round(time.process_time() - origin[0], 4) if origin else 0.0

    calls: dict[str, int] = {}

    def phase(kind: str) -> Callable[[Any], Any]:
        def wrap(function: Any) -> Any:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                name = f"{kind}-spare" if kwargs.get("spare_only") else kind
                calls[name] = calls.get(name, 0) + 1
                stack.append(name if calls[name] == 1 else f"{name}-again")
                try:
                    return function(*args, **kwargs)
                finally:
                    stack.pop()

            return wrapper

        return wrap

    def look(kind: Callable[..., str]) -> Callable[[Any], Any]:
        def wrap(function: Any) -> Any:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                started = time.process_time()
                out = function(*args, **kwargs)
                found: Any = None
                if kind(kwargs) in {"chain-first", "chain-flatter", "chain-swap", "chain-patient"}:
                    first = next(out, None)
                    found = first is not None
                    out = iter([first] if first is not None else [])
                elif kind(kwargs) in {"clearing-look", "repack-look"}:
                    found = out is not None
                elif kind(kwargs) == "swap-look":
                    # A generator: read it whole here, so that its time is the look's.
                    listed = list(out)
                    found, out = len(listed), iter(listed)
                elif isinstance(out, list):
                    found = len(out)
                spent = time.process_time() - started
                events.append(
                    {
                        "event": "look",
                        "kind": kind(kwargs),
                        "phase": stack[-1] if stack else "",
                        "cpu": round(spent, 5),
                        "at": since(),
                        "found": found,
                    }
                )
                return out

            return wrapper

        return wrap

    def kept(function: Any) -> Any:
        def wrapper(
            problem: Any, rank: Any, best: Any, best_rank: Any, drop: Any, first: Any, run: Any, **kw: Any
        ) -> Any:
            started = time.process_time()
            out = function(problem, rank, best, best_rank, drop, first, run, **kw)
            spent = time.process_time() - started
            events.append(
                {
                    "event": "trade",
                    "kind": stack[-1] if stack else "",
                    "phase": stack[-1] if stack else "",
                    "cpu": round(spent, 5),
                    "at": since(),
                    "ran": not run.stopped,
                    "kept": out[0] is not best,
                    "drop": len(drop),
                }
            )
            return out

        return wrapper

    def exchange(function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            origin[:] = [time.process_time()]
            calls.clear()
            try:
                return function(*args, **kwargs)
            finally:
                events.append({"event": "end", "at": since()})

        return wrapper

    def refusal(name: str) -> Callable[[Any], Any]:
        def wrap(function: Any) -> Any:
            def wrapper(plan: Any) -> Any:
                left = plan.left()
                allowed = function(plan)
                if not allowed:
                    cost = (
                        (plan.trade_cpu or plan.exchange_cost(1))
                        if name == "trade"
                        else (plan.look_cpu or plan.look_cost())
                    )
                    events.append(
                        {
                            "event": f"refused-{name}",
                            "phase": stack[-1] if stack else "",
                            "at": since(),
                            "left": None if left is None else round(left, 4),
                            "cost": round(cost * plan.slowdown(), 4),
                            "trades": plan.trades,
                        }
                    )
                return allowed

            return wrapper

        return wrap

    def second_fill(function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            out = function(*args, **kwargs)
            events.append({"event": "second-fill", "cpu": round(time.process_time() - started, 5)})
            return out

        return wrapper

    def asked(function: Any) -> Any:
        def wrapper(plan: Any, step: str, cpu_cost: float, *, last: bool = False, decides: bool = True) -> Any:
            left = plan.left(last)
            allowed = function(plan, step, cpu_cost, last=last, decides=decides)
            events.append(
                {
                    "event": "asked",
                    "step": step,
                    "left": None if left is None else round(left, 4),
                    "cost": round(cpu_cost * plan.slowdown(), 4),
                    "allowed": allowed,
                }
            )
            return allowed

        return wrapper

    for function, kind in PHASES.items():
        patch(module, function, phase(kind))
    patch(module, "_kept", kept)
    patch(module, "exchange", exchange)
    patch(
        module,
        "chains",
        look(
            lambda kw: (
                "chain-swap"
                if kw.get("swap")
                else "chain-patient"
                if kw.get("patient")
                else "chain-flatter"
                if kw.get("flatter")
                else "chain-first"
            )
        ),
    )
    patch(module, "step_trades", look(lambda kw: "step-look"))
    patch(module, "clearing_trade", look(lambda kw: "clearing-look"))
    patch(module, "repack_trade", look(lambda kw: "repack-look"))
    patch(module, "slope_trades", look(lambda kw: "slope-look"))
    patch(module, "_move_looks", look(lambda kw: "move-look"))
    patch(module, "swaps", look(lambda kw: "swap-look"))
    patch(module, "_raisable", look(lambda kw: "read-raisable"))
    patch(module, "_not_needed", look(lambda kw: "read-not-needed"))
    patch(deadline.WallPlan, "allows_trade", refusal("trade"))
    patch(deadline.WallPlan, "allows_look", refusal("look"))
    solve_module = __import__("vcsat.solver.solve", fromlist=["exchange"])
    patch(solve_module, "exchange", exchange)
    patch(solve_module, "greedy_by_gain", second_fill)
    patch(deadline.WallPlan, "allows", asked)
    try:
        yield events
    finally:
        for (owner, name), function in saved.items():
            setattr(owner, name, function)


def summary(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per event kind (``look:KIND`` and ``trade:PHASE``): how many, their CPU seconds, the dearest,
    how many found a trade (looks) or were kept (trades that ran)."""
    out: dict[str, dict[str, Any]] = {}
    for event in events:
        if event["event"] not in {"look", "trade"}:
            continue
        if event["event"] == "trade" and not event["ran"]:
            continue
        key = f"{event['event']}:{event['kind']}"
        row = out.setdefault(key, {"n": 0, "cpu": 0.0, "dearest": 0.0, "yield": 0})
        row["n"] += 1
        row["cpu"] = round(row["cpu"] + event["cpu"], 5)
        row["dearest"] = max(row["dearest"], event["cpu"])
        if event["event"] == "trade":
            row["yield"] += bool(event["kept"])
        elif event.get("found"):
            row["yield"] += 1
    return out
