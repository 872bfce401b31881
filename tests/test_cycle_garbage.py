"""What a cycle leaves behind dies by reference counting, not only by the cyclic collector.

The live scheduler freezes what survives each cycle (:mod:`vcsat.adapters.live.gc_tenure`), and
``vcsat solve`` runs with the collector off: a reference cycle there keeps its objects until a
full collection (or the exit). Two such cycles were a cycle's largest leftovers: every CP-SAT
model (OR-Tools' pre-PEP 8 aliases are closures over the model's own methods; the model's proto is
the whole problem) and the scheduler's cycle result held by its apply's done callback. With the
collector off, each is freed once its last reference goes, and still works as before.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from concurrent.futures import Future

import pytest
from ortools.sat.python import cp_model

from vcsat.adapters.kube.applier import PendingApply
from vcsat.adapters.kube.apply_state import ApplyReport
from vcsat.solver.fresh_model import new_cp_model


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# (variables, their upper bound, at most this many set, the optimum of maximising their sum)
MODELS = [(1, 1, 1, 1), (3, 1, 2, 2), (4, 5, 4, 20), (10, 2, 3, 6)]


@pytest.mark.parametrize(("count", "upper", "chosen", "optimum"), MODELS)
def test_a_fresh_model_solves_as_a_plain_one_and_dies_with_its_last_reference(
    collector_off: None, count: int, upper: int, chosen: int, optimum: int
) -> None:
    results = []
    for make in (cp_model.CpModel, new_cp_model):
        cp = make()
        xs = [cp.new_int_var(0, upper, f"x{i}") for i in range(count)]
        used = [cp.new_bool_var(f"u{i}") for i in range(count)]
        for x, u in zip(xs, used, strict=True):
            cp.add(x == 0).only_enforce_if(~u)
        cp.add(sum(used) <= chosen)
        cp.maximize(sum(xs))
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        status = solver.solve(cp)
        results.append((status, solver.objective_value))
        if make is new_cp_model:
            model = weakref.ref(cp)
            del cp, xs, used, x, u
            assert model() is None, "freed by reference counting, the collector off"
    assert results[0] == results[1] == (cp_model.OPTIMAL, optimum)


def test_a_fresh_model_has_every_pep8_method_but_no_alias() -> None:
    cp = new_cp_model()
    assert not [name for name in vars(cp) if name[:1].isupper()]
    for name in ("new_bool_var", "new_int_var", "add", "add_linear_constraint", "maximize", "add_hint", "clear_hints"):
        assert callable(getattr(cp, name))


class _Result:
    """What a scheduler's cycle result is to its apply: it holds the apply, the callback holds it."""

    def __init__(self) -> None:
        self.pending: PendingApply | None = None
        self.report: ApplyReport | None = None

    def applied(self, report: ApplyReport) -> None:
        self.report = report


@pytest.mark.parametrize("done_first", [False, True])
def test_a_done_callback_runs_once_and_is_let_go_of(collector_off: None, done_first: bool) -> None:
    finished: Future[ApplyReport] = Future()
    result = _Result()
    result.pending = PendingApply(finished, [])
    report = ApplyReport(bound=["ns/p"])
    if done_first:
        finished.set_result(report)
    result.pending.add_done_callback(result.applied)
    if not done_first:
        finished.set_result(report)
    assert result.report is report
    held = weakref.ref(result)
    del result
    assert held() is None, "no cycle through the finished future's callbacks"
