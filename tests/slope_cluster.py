"""The six-node cluster the slope trade's second- and third-form table tests share.

8-GPU nodes n0-n5: n2 has one GPU taken by a running pod of ``qf`` (no 8-GPU pod fits it), n3-n5
are held by ``qf``'s running 8-GPU pods. ``qa`` waits with an 8-GPU priority-1000 gang, ``qq``
with two 8-GPU gangs selecting the ``pool=q`` nodes, ``qf`` with seven 1-GPU gangs; each test adds
``qa``'s small gangs and whatever else its cases need, and says which nodes are in the pool.
"""

from __future__ import annotations

from typing import Any

from builders import gangs, node, queue, snapshot
from test_gap_bound import ALLOCATE
from trade_checks import placed_on

from vcsat.solver.assignment import Assignment
from vcsat.solver.objectives.fairness import fair_ranks
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search.exchange import _raisable
from vcsat.solver.search.slope_trade import SlopeTrade, slope_trades

POOL = {"pool": "q"}


def slope_cluster(
    pool_nodes: set[int],
    qf_weight: int,
    qa_small: dict[str, Any] | None,
    extra_jobs: list[tuple[str, dict[str, Any]]] | None = None,
    named: bool = False,
) -> Problem:
    """The cluster (module docstring) with ``pool_nodes`` labelled ``pool=q``, ``qf`` weighted
    ``qf_weight`` (``qa`` 1, ``qq`` 4), ``qa``'s seven 1-GPU priority-1000 gangs given ``qa_small``
    (more keyword arguments; None: no such gangs), ``extra_jobs`` after them, and each node labelled
    ``at=<name>`` when ``named``."""
    nodes = [
        node(
            f"n{i}",
            cpu="64",
            memory="512Gi",
            gpus=8,
            labels={**(POOL if i in pool_nodes else {}), **({"at": f"n{i}"} if named else {})},
        )
        for i in range(6)
    ]
    jobs: list[tuple[str, dict[str, Any]]] = [
        ("frun", dict(queue="qf", node="n2", gpus=1, created=-100)),
        *[(f"fheld{i}", dict(queue="qf", node=f"n{i}", gpus=8, created=-99)) for i in range(3, 6)],
        ("abig", dict(queue="qa", priority=1000, gpus=8, created=1)),
        ("qbig", dict(count=2, queue="qq", gpus=8, selector=POOL, created=2)),
        ("fsmall", dict(count=7, queue="qf", gpus=1, created=10)),
        *(extra_jobs or []),
    ]
    if qa_small is not None:
        jobs.append(("asmall", dict(count=7, queue="qa", priority=1000, gpus=1, created=20, **qa_small)))
    pods: list[Any] = []
    groups: list[Any] = []
    for prefix, kwargs in jobs:
        p, g = gangs(prefix, cpu="1", **kwargs)
        pods += p
        groups += g
    queues = [queue("qa", weight=1), queue("qq", weight=4), queue("qf", weight=qf_weight)]
    return build_problem(snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues), ALLOCATE)


def gang_index(problem: Problem, key: str) -> int:
    """The index of the gang named ``key``."""
    return next(gang.index for gang in problem.gangs if gang.key == key)


def qq_slope_trades(problem: Problem) -> tuple[Assignment, int, int, list[SlopeTrade]]:
    """``best`` (``qa``'s 8-GPU gang on n0, ``qq``'s first on n1, ``qf``'s seven 1-GPU gangs on n2),
    ``qa``'s 8-GPU gang, ``qq``'s waiting one, and the slope trades made for ``qq`` at the first
    fair-share tier that can raise it (for that waiting gang alone)."""
    best = placed_on(problem, {"ns/abig-0": "n0", "ns/qbig-0": "n1", **{f"ns/fsmall-{j}": "n2" for j in range(7)}})
    abig, waiting = gang_index(problem, "ns/abig-0"), gang_index(problem, "ns/qbig-1")
    raisable = [
        (tier, top, first)
        for tier in fair_ranks(problem)
        for queue_name, top, first, _largest in _raisable(problem, best, tier)
        if queue_name == "qq"
    ]
    assert raisable
    tier, top, first = raisable[0]
    assert first == {waiting}
    return best, abig, waiting, slope_trades(problem, best, tier, "qq", top, first)
