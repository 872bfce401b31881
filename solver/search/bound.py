"""A second proof of optimality: an aggregate LP relaxation of placed work, solved by GLOP.

CP-SAT's own bound needs its linear relaxation and cuts, which on a thousand nodes come only after
presolve and a root search that may not fit in a short cycle. This LP forgets which node holds
which pod and keeps only what must hold in any decision:

- per set of eligible nodes, the pods that can only go there fit in those nodes' free room, on
  every resource;
- per block size ``g``, the ``g``-GPU blocks the pods take are no more than the nodes have
  (fragmentation: four free GPUs spread over four nodes take no 4-GPU pod);
- queue capabilities;
- a gang is left out when its pods could not reach its minimum even with the free room to
  themselves (each eligible node holding as many as fit it alone), or, under a hard
  ``networkTopology``, with the free room of any one domain of its tier to themselves;
- the more important priority levels keep at least what the decision gave them.

Every decision is feasible for it, so its optimum bounds each placed-work level from above. It is
usually tight on GPU clusters, where whole GPUs are the scarce resource, and it costs milliseconds.

How much tighter a bound of this kind could be: the same rows with whole pods, whole gangs and
whole fill points, solved as an integer program (``benchmarks/bound_slack.py``), are the floor
for any cut valid for whole pods (gang covers, integer rounding of the fair-share rows). What it
takes off comes mostly from whole fill points meeting pods of several GPUs in the fair-share rows
(and from gangs with columns of their own placed in part). Where the LP's gap is over the
tolerance, the cycle asks CP-SAT for that integer program's bound (:mod:`whole_bound`, from
:meth:`LpBounds.integer_rows`) once its decision stands.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from ortools.linear_solver import linear_solver_pb2, pywraplp

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.gang_minimum import reaches_minimum, reaches_minimum_somewhere
from vcsat.solver.objectives.fairness import (
    SHARE_SCALE,
    fair_share_values,
    fair_terms,
    share_utility,
    tier_threshold,
    utility_pieces,
)
from vcsat.solver.problem import Gang, Problem
from vcsat.solver.units import share_row

TOLERANCE = 1e-6
"""Relative slack added to the LP optimum, so floating point never makes the bound too small."""


@dataclass(frozen=True)
class _Item:
    """Pods that are alike for the LP: same priority, value, request and nodes (one column).

    Pods of gangs with one class are merged across gangs; a gang with several classes (a launcher
    and its workers, tasks with ``minTaskMember``) keeps a column per class, tied to the gang's
    own fraction, so the LP cannot take the cheap pods of a gang without the rest of its minimum.
    """

    priority: int
    value: int
    pods: int
    request: tuple[int, ...]
    gpus: int
    nodes: NDArray[np.bool_]
    queue: str
    gang: int = -1
    """The gang this column belongs to alone, or -1 for a merged column."""
    task: str = ""


@dataclass(frozen=True)
class IntegerRows:
    """The LP's rows for a bound over whole numbers (:mod:`vcsat.solver.search.whole_bound`):
    every variable of the LP is a whole number in every decision (pods per column, a gang with
    columns of its own placed or not, fill points and utilities)."""

    model: linear_solver_pb2.MPModelProto
    """The LP's variables and rows, its objective and its floors' bounds as they stood."""
    priorities: list[int]
    """Every priority with pods, highest first."""
    objectives: dict[int, tuple[list[int], list[int]]]
    """Per priority: its columns' variable indices and their values (its placed work)."""
    floors: dict[int, int]
    """Per priority: the index of the row keeping its placed work at least a floor."""
    shares: dict[int, int]
    """Per fair-share level: the index of the row keeping its utilities' sum at least a floor."""


class LpBounds:
    """What one LP proves about a decision, level by level, each level's bound holding the more
    important levels at the decision's values (as a lexicographic optimum is read): placed work
    per priority at once, the queue fair-share levels when asked (:meth:`fair_bounds`), on the
    same LP. A cycle bounds several decisions and reports one: only that one's are solved.

    The LP depends on the problem alone, the decision only on its floors: another decision of the
    same problem is bounded on the same LP (:meth:`again`), which every bound reads with each floor
    it relies on set afresh, so the several bounds sharing it never read each other's floors."""

    def __init__(
        self, placed: dict[int, int], problem: Problem, fair: dict[int, int] | None, relaxation: _Relaxation | None
    ) -> None:
        self.placed = placed
        """Per priority (highest first): an upper bound on placed work at that priority."""
        self._problem = problem
        self._fair = fair
        self._relaxation = relaxation
        self._shares: dict[int, int] | None = None

    def again(self, found: dict[int, int], fair: dict[int, int] | None) -> LpBounds:
        """:func:`lp_bounds` of another decision of the same problem (placed work ``found``, fair
        shares ``fair``), solved on this LP with its floors moved rather than on a new one: building
        the LP costs more than solving it (on the largest clusters several times more), and a cycle
        bounds each decision that replaces the one before."""
        relaxation = self._relaxation
        if relaxation is None or set(fair or {}) != set(relaxation.shares):
            return lp_bounds(self._problem, found, fair)
        relaxation.keep(fair or {})
        relaxation.release()
        return LpBounds(relaxation.placed_bounds(found), self._problem, fair, relaxation)

    def integer_rows(self) -> IntegerRows | None:
        """The LP's rows (:class:`IntegerRows`), while the LP is kept (before :meth:`fair_bounds`);
        None once it is let go, or when nothing can be placed."""
        relaxation = self._relaxation
        if relaxation is None:
            return None
        model = linear_solver_pb2.MPModelProto()
        relaxation.lp.ExportModelToProto(model)
        items, y = relaxation.items, relaxation.y
        objectives: dict[int, tuple[list[int], list[int]]] = {}
        for priority, at in relaxation.of_priority.items():
            objectives[priority] = ([int(y[i].index()) for i in at], [items[i].value for i in at])
        return IntegerRows(
            model,
            list(relaxation.priorities),
            objectives,
            {priority: row.index() for priority, row in relaxation.floors.items()},
            {rank: keep.index() for rank, (keep, _within) in relaxation.shares.items()},
        )

    def fair_bounds(self) -> dict[int, int]:
        """Per queue fair-share level (:func:`vcsat.solver.objectives.fairness.fair_ranks`, the
        most important first): an upper bound on its value given that each more important one
        keeps at least the decision's (the levels below it and placed work free); empty when the
        LP held no fair-share level. Where the decision is short of one, the placed-work bounds
        (held at its lower share) measure what a better decision would not keep."""
        if self._shares is None:
            fair = self._fair or {}
            if self._relaxation is None:
                # Nothing can be placed: every level is what the bound pods make it.
                self._shares = fair_share_values(self._problem, Assignment()) if fair else {}
            else:
                self._relaxation.release()
                self._shares = {
                    rank: max(fair[rank], self._relaxation.maximise_share(rank, fair)) for rank in sorted(fair)
                }
            self._relaxation = None  # read once: the LP is let go
        return self._shares


def lp_level_bounds(problem: Problem, found: dict[int, int], fair: dict[int, int] | None = None) -> dict[int, int]:
    """Per priority (highest first), an upper bound on placed work at that priority, given that
    every higher priority keeps at least ``found[priority]`` and, when given, each queue fair-share
    level (ranked above every priority) at least ``fair[rank]``: :func:`lp_bounds`' placed work."""
    return lp_bounds(problem, found, fair).placed


def lp_bounds(problem: Problem, found: dict[int, int], fair: dict[int, int] | None = None) -> LpBounds:
    """:func:`lp_level_bounds`' placed-work bounds, and the LP kept for the fair-share levels'
    (:meth:`LpBounds.fair_bounds`).

    One LP is built; each priority only changes its objective and the floors of the priorities
    above (GLOP re-solves from the previous basis)."""
    items = _items(problem)
    if not items:
        return LpBounds({}, problem, fair, None)
    priorities = sorted({item.priority for item in items}, reverse=True)
    relaxation = _Relaxation(problem, items, priorities, fair)
    return LpBounds(relaxation.placed_bounds(found), problem, fair, relaxation)


def _items(problem: Problem) -> list[_Item]:
    count = len(problem.nodes)
    pods: dict[tuple[int, int, int, str, int, str], int] = {}
    room = _ShapeRoom(problem)
    for gang in problem.candidates:
        classes = [c for c in gang.classes if problem.shapes[problem.classes[c].shape].nodes]
        if not room.may_fit(gang):
            continue  # no decision places it: its pods would only let the LP place part of a gang
        own = len(classes) > 1 or bool(gang.task_need)
        for c in classes:
            pod_class = problem.classes[c]
            key = (
                gang.rank,
                pod_class.value,
                pod_class.shape,
                gang.queue,
                gang.index if own else -1,
                pod_class.task if own else "",
            )
            pods[key] = pods.get(key, 0) + len(pod_class.pods)
    masks: dict[int, NDArray[np.bool_]] = {}
    items: list[_Item] = []
    for (priority, value, s, queue, owner, task), n in sorted(pods.items()):
        shape = problem.shapes[s]
        mask = masks.get(s)
        if mask is None:
            # The shape's nodes are its fit counts' rows (the build makes them so): their mask is
            # made once per shape and shared (read-only), not rebuilt from the node tuple.
            mask = masks[s] = shape.fits.mask(count)
        items.append(_Item(priority, value, n, shape.request, shape.gpus, mask, queue, owner, task))
    return items


class _ShapeRoom:
    """How many pods of each shape the free room could hold at most: per eligible node, the pods
    that fit it alone (:attr:`vcsat.solver.problem.Shape.fits`), summed; what
    :func:`vcsat.solver.gang_minimum.reaches_minimum` reads. Without it the LP, whose columns merge
    gangs' pods, would place the part of a gang that fits (two pods of a gang of three that only
    two nodes can take)."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.held: dict[int, int] = {}
        self.by_domain: dict[tuple[int, int], NDArray[np.int64]] = {}
        """Per (shape, tier): the pods of the shape each domain of the tier holds at most."""
        self.domain_ids: dict[int, NDArray[np.intp]] = {}
        """Per tier: each node's domain as a number (nodes outside every domain share one)."""

    def pods(self, shape_index: int) -> int:
        held = self.held.get(shape_index)
        if held is None:
            shape = self.problem.shapes[shape_index]
            if not shape.nodes:
                held = 0
            elif any(amount > 0 for amount in shape.request):
                held = int(shape.fits.counts.sum())
            else:
                held = _UNLIMITED  # asks nothing: its counts are a placeholder, no room limits it
            self.held[shape_index] = held
        return held

    def may_fit(self, gang: Gang) -> bool:
        """False when ``gang``'s pods could not reach its minimum, or one task's, even alone in the
        free room; or, held by a hard ``networkTopology`` within one domain of a tier, alone in
        the free room of any one such domain."""
        if gang.need <= 1 and not gang.task_need:
            return True  # one pod: each class kept has a node it fits (its shape's nodes)
        if not reaches_minimum(self.problem, gang, self.pods):
            return False
        tier = self.problem.highest_tier(gang)
        if tier is None:
            return True
        shapes = {self.problem.classes[c].shape for c in gang.classes}
        rooms = {s: self._in_domains(s, tier) for s in shapes}
        # Nodes outside every domain of the tier count as one domain more: looser, never wrong.
        return reaches_minimum_somewhere(self.problem, gang, rooms)

    def _in_domains(self, shape_index: int, tier: int) -> NDArray[np.int64]:
        key = (shape_index, tier)
        made = self.by_domain.get(key)
        if made is None:
            ids = self._domain_ids(tier)
            shape = self.problem.shapes[shape_index]
            if not shape.nodes:
                made = np.zeros(0, dtype=np.int64)
            elif any(amount > 0 for amount in shape.request):
                made = np.bincount(ids[shape.fits.rows], weights=shape.fits.counts, minlength=0).astype(np.int64)
            else:
                made = np.full(int(ids.max()) + 1, _UNLIMITED, dtype=np.int64)
            self.by_domain[key] = made
        return made

    def _domain_ids(self, tier: int) -> NDArray[np.intp]:
        ids = self.domain_ids.get(tier)
        if ids is None:
            domains = self.problem.domains
            assert domains is not None  # a hard tier is only named where domains exist
            number: dict[str, int] = {}
            ids = self.domain_ids[tier] = np.array(
                [number.setdefault(by_tier[tier], len(number)) for by_tier in domains.of_node], dtype=np.intp
            )
        return ids


_UNLIMITED = 1 << 30


def nested(sets: list[NDArray[np.bool_]], count: int) -> NDArray[np.bool_]:
    """``out[a, b]``: node set ``b`` lies inside node set ``a`` (no node of ``b`` outside ``a``),
    for node masks of ``count`` nodes: one array test per set ``a`` rather than one per pair."""
    stacked = np.array(sets, dtype=np.bool_).reshape(len(sets), count)
    out = np.zeros((len(sets), len(sets)), dtype=np.bool_)
    for a in range(len(sets)):
        out[a] = ~np.any(stacked[:, ~stacked[a]], axis=1)
    return out


def binds(coefs: NDArray[np.float64], most: NDArray[np.float64], upper: float) -> bool:
    """Whether a row ``coefs @ y <= upper`` of nonnegative coefficients, over columns each between
    0 and ``most``, can bind: whether the columns all at their most exceed ``upper``. One that
    cannot is left out of the LP: the same polytope, and GLOP's presolve would only read it in and
    drop it again on every solve (most room rows on a large cluster with room to spare). Exact:
    the coefficients and bounds are whole numbers, summed exactly in floating point."""
    return float((coefs * most).sum()) > upper


class _Row:
    """One constraint of a :class:`_Builder`: its coefficients by variable index, in order set;
    those of a row handed over at once (:meth:`_Builder.row`) are kept as the two lists given."""

    def __init__(self, index: int, lower: float, upper: float) -> None:
        self.index = index
        self.lower = lower
        self.upper = upper
        self.terms: dict[int, float] = {}
        self.variables: list[int] = []
        self.coefficients: list[float] = []

    def SetCoefficient(self, variable: int, coefficient: float) -> None:
        self.terms[variable] = coefficient

    def items(self) -> list[tuple[int, float]]:
        """Its terms in order: those set one by one (a variable set twice keeps its last
        coefficient), then those handed over at once."""
        return [*self.terms.items(), *zip(self.variables, self.coefficients, strict=True)]


class _Builder:
    """The LP written as an ``MPModelProto`` then loaded into GLOP at once: pywraplp's calls
    (``NumVar``, ``Constraint``, ``SetCoefficient``) cost a Python-to-C++ crossing each, and
    the room rows hold tens of thousands of coefficients. Variables are indices here."""

    def __init__(self) -> None:
        self.model = linear_solver_pb2.MPModelProto()
        self.rows: list[_Row] = []

    def NumVar(self, lower: float, upper: float, name: str) -> int:
        variable = self.model.variable.add()
        variable.lower_bound = lower
        variable.upper_bound = upper
        variable.name = name
        return len(self.model.variable) - 1

    def Constraint(self, lower: float, upper: float) -> _Row:
        row = _Row(len(self.rows), lower, upper)
        self.rows.append(row)
        return row

    def row(self, lower: float, upper: float, variables: list[int], coefficients: list[float]) -> None:
        """A row of distinct ``variables``: kept as the lists given, not copied into a dict (the
        room rows hold tens of thousands of terms)."""
        if len(variables) != len(coefficients):
            raise ValueError("a row's variables and coefficients differ in number")
        row = self.Constraint(lower, upper)
        row.variables = variables
        row.coefficients = coefficients

    def solver(self, *, one_by_one: bool = False) -> pywraplp.Solver:
        """GLOP with this LP loaded; ``one_by_one``: through the wrapper's calls instead (the
        reference the tests compare the load with)."""
        if any(row.lower == -math.inf and row.upper == math.inf for row in self.rows):
            raise ValueError("a row without bounds: the loader would drop it and shift the rows after it")
        lp = pywraplp.Solver.CreateSolver("GLOP")
        if one_by_one:
            variables = [lp.NumVar(v.lower_bound, v.upper_bound, v.name) for v in self.model.variable]
            for row in self.rows:
                constraint = lp.Constraint(row.lower, row.upper)
                for v, c in row.items():
                    constraint.SetCoefficient(variables[v], c)
            return lp
        for row in self.rows:
            constraint = self.model.constraint.add()
            constraint.lower_bound = row.lower
            constraint.upper_bound = row.upper
            # pywraplp keeps no term for a zero coefficient set on a new variable. Most rows have
            # none: their terms are handed over as the lists (or the dict) hold them, with no
            # Python loop.
            if row.terms:
                keys: list[int] = list(row.terms.keys())
                values: list[float] = list(row.terms.values())
                if row.variables:
                    keys.extend(row.variables)
                    values.extend(row.coefficients)
            else:
                keys = row.variables
                values = row.coefficients
            if 0.0 in values:
                terms = [(v, c) for v, c in zip(keys, values, strict=True) if c != 0.0]
                constraint.var_index.extend([v for v, _ in terms])
                constraint.coefficient.extend([c for _, c in terms])
            else:
                constraint.var_index.extend(keys)
                constraint.coefficient.extend(values)
        error = lp.LoadModelFromProtoKeepNames(self.model)
        if error:
            raise AssertionError(f"LP relaxation rejected: {error}")
        return lp


class _Relaxation:
    """The LP of the module docstring, built once per set of fair-share floors."""

    def __init__(
        self,
        problem: Problem,
        items: list[_Item],
        priorities: list[int],
        fair: dict[int, int] | None,
    ):
        self.items = items
        self.priorities = priorities
        """Every priority with pods, highest first."""
        built = _Builder()
        infinity = math.inf
        columns = [built.NumVar(0, item.pods, f"y{i}") for i, item in enumerate(items)]
        free = np.maximum(np.array(problem.free, dtype=np.int64).reshape(len(problem.nodes), -1), 0)
        units = problem.units  # rows in the solver's small exact units, as the CP-SAT model's
        gpu = problem.resource_index(res.GPU) if res.GPU in problem.resources else None

        def add(indices: list[int], coefs: list[float], upper: float, lower: float = -1.0) -> None:
            if not indices:
                return
            built.row(-infinity if lower < 0 else lower, upper, [columns[i] for i in indices], coefs)

        # Gangs with columns of their own: each class at most all its pods, the whole at least the
        # gang's minimum (and each task its own), all in proportion to the gang's fraction placed.
        own: dict[int, list[int]] = {}
        for i, item in enumerate(items):
            if item.gang >= 0:
                own.setdefault(item.gang, []).append(i)
        for g, members in sorted(own.items()):
            gang = problem.gangs[g]
            z = built.NumVar(0, 1, f"z{g}")
            for i in members:
                row = built.Constraint(-infinity, 0)
                row.SetCoefficient(columns[i], 1.0)
                row.SetCoefficient(z, -float(items[i].pods))
            row = built.Constraint(0, infinity)
            row.SetCoefficient(z, -float(max(1, gang.need)))
            for i in members:
                row.SetCoefficient(columns[i], 1.0)
            for task, need in gang.task_need.items():
                row = built.Constraint(0, infinity)
                row.SetCoefficient(z, -float(need))
                for i in members:
                    if items[i].task == task:
                        row.SetCoefficient(columns[i], 1.0)

        # Room: per distinct node set, the items confined to it fit in its free room.
        by_set: dict[bytes, list[int]] = {}
        masks: dict[bytes, NDArray[np.bool_]] = {}
        for i, item in enumerate(items):
            key = item.nodes.tobytes()
            by_set.setdefault(key, []).append(i)
            masks[key] = item.nodes
        sets = list(masks.values())
        members_of = list(by_set.values())
        contains = nested(sets, len(problem.nodes))
        requests = np.array([item.request for item in items], dtype=np.int64).reshape(len(items), -1)
        small_of = [
            [float(units.request(r, amount)) if amount > 0 else 0.0 for r, amount in enumerate(item.request)]
            for item in items
        ]
        gpus_of = np.array([item.gpus for item in items], dtype=np.int64)
        # The room rows read tens of thousands of items per node set at 10,000 nodes: their items,
        # variables and coefficients are picked as arrays and handed over as lists in one step each
        # (the same rows, terms in the same order, as picking them one by one).
        small_at = np.array(small_of, dtype=np.float64).reshape(len(items), -1)
        variable_of = np.array(columns, dtype=np.int64)
        members_at = [np.array(members, dtype=np.int64) for members in members_of]

        pods_at = np.array([item.pods for item in items], dtype=np.float64)

        def add_all(indices: NDArray[np.int64], coefs: NDArray[np.float64], upper: float) -> None:
            if indices.size and binds(coefs, pods_at[indices], upper):
                built.row(-infinity, upper, variable_of[indices].tolist(), coefs.tolist())

        for a, mask in enumerate(sets):
            nested_sets = [members_at[b] for b in np.flatnonzero(contains[a])]
            inside = np.concatenate(nested_sets) if nested_sets else np.zeros(0, dtype=np.int64)
            room = free[mask].sum(axis=0)
            for r in range(len(problem.resources)):
                asked = inside[requests[inside, r] > 0]
                add_all(asked, small_at[asked, r], float(units.room(r, int(room[r]))))
            # Blocks: a pod of s GPUs takes at least floor(s / g) of its node's floor(f / g) blocks
            # of g GPUs (floor is superadditive, so pods sharing a node never take more blocks than
            # it has). This says that four free GPUs spread over four nodes take no 4-GPU pod, and
            # that a node with 6 free takes one 4-GPU pod and one pair, not two 4-GPU pods.
            if gpu is not None:
                largest = int(gpus_of[inside].max()) if len(inside) else 0
                free_gpus = free[mask][:, gpu]
                for g in range(2, largest + 1):
                    big = inside[gpus_of[inside] >= g]
                    add_all(big, (gpus_of[big] // g).astype(np.float64), float((free_gpus // g).sum()))

        for queue, caps in problem.queue_room.items():
            members = [i for i, item in enumerate(items) if queue in problem.lineage(item.queue)]
            for name, left in caps.items():
                if name in problem.resources:
                    r = problem.resource_index(name)
                    asked = [i for i in members if items[i].request[r] > 0]
                    small = [float(units.request(r, items[i].request[r])) for i in asked]
                    add(asked, small, float(units.room(r, max(0, left))))

        # Floors of the more important priorities: loose until ``hold`` sets them. The loader drops
        # a row without bounds, so each is loaded with a lower bound of 0 and loosened after.
        self.of_priority: dict[int, list[int]] = {priority: [] for priority in priorities}
        """Per priority, its items ascending (what its floor and its objective read)."""
        for i, item in enumerate(items):
            self.of_priority[item.priority].append(i)
        floor_rows = []
        for priority in priorities:
            at = self.of_priority[priority]
            floor_rows.append(len(built.rows))
            built.row(0.0, infinity, [columns[i] for i in at], [float(items[i].value) for i in at])

        # The queue fair-share levels (see objectives.fairness, ranked above every priority) keep at
        # least what they found: per level (a queue priority, then a tier of the queues' own job
        # priorities), the shares of its queues' work of at least that tier's priority. The rows
        # come from fair_terms, as the model's, so the relaxation stays a relaxation.
        of_queue: dict[str, list[int]] = {}  # the items of each queue, ascending: each row reads its queue's only
        if fair:
            for i, item in enumerate(items):
                of_queue.setdefault(item.queue, []).append(i)
        share_rows: dict[int, tuple[int, list[int]]] = {}
        """Per fair-share level: its keep row's index and its utilities' variables (as loaded)."""
        for rank, floor in sorted((fair or {}).items()):
            # Every level gets its rows, those with no floor to keep too: :meth:`maximise_share`
            # reads their utilities.
            within: list[int] = []
            for queue, name, deserved, held, _asked in fair_terms(problem, rank):
                r = problem.resource_index(name)
                threshold = tier_threshold(problem, queue, rank)
                fill = built.NumVar(0, SHARE_SCALE, f"fill{rank}_{len(within)}")
                coef, factor, constant = share_row(deserved, SHARE_SCALE, units.divisor[r], held)
                fill_terms = [fill]
                fill_coefs = [float(coef)]
                for i in of_queue.get(queue, ()):
                    item = items[i]
                    if item.priority >= threshold and item.request[r] > 0:
                        fill_terms.append(columns[i])
                        fill_coefs.append(-float(factor * units.request(r, item.request[r])))
                built.row(-infinity, float(constant), fill_terms, fill_coefs)
                utility = built.NumVar(0, infinity, f"fair{rank}_{len(within)}")
                for slope, offset in utility_pieces():
                    built.row(-infinity, float(offset), [utility, fill], [1.0, -float(slope)])
                within.append(utility)
            share_rows[rank] = (len(built.rows), within)
            built.row(float(floor) * (1 - TOLERANCE), infinity, list(within), [1.0] * len(within))

        # The rows above, loaded in one call: the same variables, rows and coefficients, in the
        # same order, as creating each through the solver's wrapper, without a Python-to-C++ call
        # per coefficient.
        lp = built.solver()
        self.lp = lp
        variables = lp.variables()
        y = [variables[v] for v in columns]
        self.y = y
        self.floors: dict[int, Any] = {}
        for priority, index in zip(priorities, floor_rows, strict=True):
            # Names of their own, not ``row``: that one holds a ``_Row`` above, and compiled code
            # (docs/compiled-build.md) checks what a typed variable is given.
            held_row = lp.constraint(index)
            held_row.SetLb(-infinity)
            self.floors[priority] = held_row
        self.objective_at: int | None = None
        """The priority whose items the objective last held (None: none yet). A cleared objective
        (:meth:`maximise_share`) holds none: setting those items to 0 again is then a no-op."""
        self.shares: dict[int, tuple[Any, list[Any]]] = {
            rank: (lp.constraint(index), [variables[v] for v in within_at])
            for rank, (index, within_at) in share_rows.items()
        }
        """Per fair-share level with rows: the row keeping its floor and its queues' utilities."""
        lp.Objective().SetMaximization()

    def maximise_share(self, rank: int, fair: dict[int, int]) -> int:
        """An upper bound on fair-share level ``rank``: the levels more important than it keep
        at least ``fair``'s values, it and those below it nothing (the priorities' floors
        released first: :meth:`release`)."""
        for level, (keep, _within) in self.shares.items():
            keep.SetLb(float(fair[level]) * (1 - TOLERANCE) if level < rank and fair[level] > 0 else 0.0)
        objective = self.lp.Objective()
        objective.Clear()
        _keep, within = self.shares[rank]
        for share in within:
            objective.SetCoefficient(share, 1.0)
        objective.SetMaximization()
        solved = self.lp.Solve() == pywraplp.Solver.OPTIMAL
        value = float(objective.Value()) if solved else math.inf
        for share in within:
            objective.SetCoefficient(share, 0.0)
        most = len(within) * share_utility(SHARE_SCALE)  # every queue at its full share: no decision exceeds it
        return min(most, math.floor(value + TOLERANCE * (1.0 + abs(value)))) if solved else most

    def placed_bounds(self, found: dict[int, int]) -> dict[int, int]:
        """Per priority (highest first), the most placed work at it while each higher priority
        keeps at least ``found``'s (the priorities' floors loose on entry)."""
        out: dict[int, int] = {}
        for number, priority in enumerate(self.priorities):
            for higher in self.priorities[:number]:
                self.hold(higher, found.get(higher, 0))
            out[priority] = self.maximise(priority)
        return out

    def keep(self, fair: dict[int, int]) -> None:
        """Each fair-share level keeps at least ``fair``'s value (a little less: floating point),
        as the rows were built for the first decision's."""
        for level, (row, _within) in self.shares.items():
            row.SetLb(float(fair[level]) * (1 - TOLERANCE))

    def release(self) -> None:
        """No priority keeps a floor any more (what :meth:`hold` set)."""
        for row in self.floors.values():
            row.SetLb(-math.inf)

    def hold(self, priority: int, floor: int) -> None:
        """Placed work at ``priority`` keeps at least ``floor`` (a little less: floating point)."""
        if floor > 0:
            self.floors[priority].SetLb(float(floor) * (1 - TOLERANCE))

    def maximise(self, priority: int) -> int:
        objective = self.lp.Objective()
        # Only the coefficients that change are set: the last priority's items back to 0, this
        # one's to their values. Setting 0 where the objective holds none, which every other item
        # was asked before, is a no-op of the solver's (MPObjective::SetCoefficient): the objective
        # is the one every item set gave.
        if self.objective_at is not None and self.objective_at != priority:
            for i in self.of_priority[self.objective_at]:
                objective.SetCoefficient(self.y[i], 0.0)
        for i in self.of_priority[priority]:
            objective.SetCoefficient(self.y[i], float(self.items[i].value))
        self.objective_at = priority
        objective.SetMaximization()
        everything = sum(item.value * item.pods for item in self.items if item.priority == priority)
        if self.lp.Solve() != pywraplp.Solver.OPTIMAL:
            return everything
        value = float(objective.Value())
        return min(everything, math.floor(value + TOLERANCE * (1.0 + abs(value))))
