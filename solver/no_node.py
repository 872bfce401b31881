"""Why no node takes a pod, counted as kube-scheduler counts it ("0/1000 nodes are available: ...").

A waiting gang whose pods fit on no node now is told why before any search, node by node: which
predicate each refusing node fails, which the rules between pods refuse, which are too small for
the request, and which would take it were it not for what is bound there now (the last kind makes
the reason ``InsufficientResources`` rather than ``Unschedulable``). On a full cluster hundreds of
waiting gangs ask in one cycle, and their pods differ mostly in their requests, seldom in which
nodes they may use. So the predicates run over the nodes once per eligibility (a handful a cycle),
and each request is then compared with the eligible nodes' allocatable room as arrays: the cost
grows with the distinct eligibilities and requests, never with gangs times nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from vcsat.model import Node
from vcsat.model import resources as res
from vcsat.solver.rules import predicates


@dataclass(frozen=True)
class _Eligibility:
    """The predicates' verdict over every node for one eligibility."""

    refusals: dict[str, int]
    """Per predicate code, how many nodes fail it (each node counted under its first failure)."""
    examples: dict[str, str]
    """Per predicate code, the message of the first node (in node order) that fails it."""
    passing: list[int]
    """The nodes that pass every predicate, ascending."""


class NoNodeCounts:
    """The counts for one cycle's nodes, remembered per eligibility and per request."""

    def __init__(self, nodes: tuple[Node, ...]) -> None:
        self.nodes = nodes
        self._eligibility: dict[predicates.EligibilityKey, _Eligibility] = {}
        self._allocatable: dict[str, NDArray[np.int64]] = {}
        self._answers: dict[tuple[predicates.EligibilityKey, tuple[tuple[str, int], ...]], tuple[bool, str]] = {}

    def why(
        self, eligibility: predicates.EligibilityKey, request: dict[str, int], refused: dict[int, str] | None = None
    ) -> tuple[bool, str]:
        """Whether some node could ever take a pod of this eligibility and request (it passes the
        predicates and the rules between pods, and its allocatable holds the request: only what is
        bound there now is in the way), and the count of why each node refuses it ("5
        NodeAffinityMismatch (...); 3 too small for ..."). ``refused``: the nodes the rules between
        pods refuse this pod in particular, with their reasons (the answer is then not remembered)."""
        if refused:
            return self._count(self._verdict(eligibility), request, refused)
        key = (eligibility, tuple(sorted(request.items())))
        answer = self._answers.get(key)
        if answer is None:
            answer = self._count(self._verdict(eligibility), request, {})
            self._answers[key] = answer
        return answer

    def _verdict(self, eligibility: predicates.EligibilityKey) -> _Eligibility:
        verdict = self._eligibility.get(eligibility)
        if verdict is None:
            compiled = predicates.compiled(eligibility)
            refusals: dict[str, int] = {}
            examples: dict[str, str] = {}
            passing: list[int] = []
            for i, node in enumerate(self.nodes):
                failure = compiled.failure(node)
                if failure is None:
                    passing.append(i)
                else:
                    refusals[failure.code] = refusals.get(failure.code, 0) + 1
                    examples.setdefault(failure.code, failure.message)
            verdict = _Eligibility(refusals, examples, passing)
            self._eligibility[eligibility] = verdict
        return verdict

    def _column(self, name: str) -> NDArray[np.int64]:
        column = self._allocatable.get(name)
        if column is None:
            column = np.fromiter((node.allocatable.get(name, 0) for node in self.nodes), np.int64, len(self.nodes))
            self._allocatable[name] = column
        return column

    def _count(self, verdict: _Eligibility, request: dict[str, int], refused: dict[int, str]) -> tuple[bool, str]:
        between: dict[str, int] = {}
        candidates = verdict.passing
        if refused:
            candidates = []
            for i in verdict.passing:
                why = refused.get(i)
                if why is None:
                    candidates.append(i)
                else:
                    between[why] = between.get(why, 0) + 1
        rows = np.asarray(candidates, dtype=np.intp)
        large_enough = np.ones(len(candidates), dtype=np.bool_)
        for name, amount in request.items():
            if amount > 0:  # as res.fits: a zero request fits anywhere
                large_enough &= self._column(name)[rows] >= amount
        free_later = int(np.count_nonzero(large_enough))
        too_small = len(candidates) - free_later
        parts = [f"{count} {code} ({verdict.examples[code]})" for code, count in sorted(verdict.refusals.items())]
        parts += [f"{count} {why}" for why, count in sorted(between.items())]
        if too_small:
            parts.append(f"{too_small} too small for {res.format_vector(request)}")
        if free_later:
            parts.append(f"{free_later} without {res.format_vector(request)} free now")
        return free_later > 0, "; ".join(parts)
