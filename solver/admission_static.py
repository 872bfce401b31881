"""Which pods could ever land somewhere: rule 3's static check of :mod:`vcsat.solver.enqueue`.

A pod could ever run when some node passes its predicates and its allocatable holds the pod's
requests, ignoring readiness and cordons (they come and go) and ignoring what is in use: taints,
labels and sizes are how the cluster is built.

How it stays cheap at 10,000 nodes and tens of thousands of pods: the answer depends only on the
pod's eligibility key and its request, so it is worked out once per distinct (key, request) pair,
and each pod's pair is made once. Nodes of equal allocatable are one allocatable class (a cluster is
built from a few node types), and a pair's answer reads only the classes of the nodes passing its
key's predicates (found once per key: keys are few, requests many): whether one of those classes
holds the request is a few integer comparisons, where a comparison over every node's column cost a
numpy call per requested resource. A cluster of many classes is answered by those comparisons over
every node instead. Both are tested against the plain scan of every node they replace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from vcsat.model import Node, Pod, PodGroup
from vcsat.model import resources as res
from vcsat.solver import node_side
from vcsat.solver.admission_room import bits
from vcsat.solver.cycle import PodKeys
from vcsat.solver.rules import predicates

_Asked = tuple[tuple[str, int], ...]


def without_shares(vector: Mapping[str, int]) -> dict[str, int]:
    """A request without GPU shares (``vcsat.io/gpu-milli``): they are no room a node's allocatable holds."""
    return {name: amount for name, amount in vector.items() if name != res.GPU_MILLI}


def _as_built(nodes: Sequence[Node]) -> predicates.NodeIndex:
    """A node index where every node counts as Ready and uncordoned: those are state, not build.
    Made from the cycle's shared index (its label tables are the same)."""
    return predicates.node_index(nodes).as_built()


def _allocatable_table(nodes: Sequence[Node]) -> tuple[dict[str, int], NDArray[np.int64]]:
    """Each resource any node has (its row) and every node's allocatable of it (its column)."""
    names = sorted({name for node in nodes for name in node.allocatable})
    column = {name: i for i, name in enumerate(names)}
    rows = [[node.allocatable.get(name, 0) for name in names] for node in nodes]
    table = np.array(rows, dtype=np.int64).reshape(len(nodes), len(names)).T.copy()
    table.flags.writeable = False  # shared with the next cycles while the nodes are the same objects
    return column, table


_MANY_CLASSES = 32
"""Above this many allocatable classes, pairs are answered over every node's column instead."""


def _allocatable_classes(nodes: Sequence[Node], names: Sequence[str]) -> tuple[NDArray[np.intp], list[list[int]]]:
    """Each node's allocatable class (nodes of equal allocatable in every resource of ``names``
    share one) and each class's allocatable of ``names``, as Python ints. Nodes of one spelling
    share their allocatable dict (the converter reads each once): a dict is read once."""
    by_dict: dict[int, int] = {}
    by_row: dict[tuple[int, ...], int] = {}
    classes: list[list[int]] = []
    class_of: list[int] = []
    for node in nodes:
        allocatable = node.allocatable
        # The nodes hold their dicts while this runs, so no id is reused.
        found = by_dict.get(id(allocatable))
        if found is None:
            row = tuple(allocatable.get(name, 0) for name in names)
            found = by_row.get(row)
            if found is None:
                found = by_row[row] = len(classes)
                classes.append(list(row))
            by_dict[id(allocatable)] = found
        class_of.append(found)
    return np.array(class_of, dtype=np.intp), classes


class Placeable:
    """Per pod: whether it passes the predicates and fits the allocatable of some node, as the
    cluster is built (see the module docstring)."""

    def __init__(self, nodes: Sequence[Node], keys: PodKeys | None = None) -> None:
        self.nodes = tuple(nodes)
        # Both indexes are kept while the nodes are the same objects (the live scheduler's next cycles).
        if all(node.ready and not node.unschedulable for node in self.nodes):
            self.index = predicates.node_index(self.nodes)  # the cycle's own, shared with the build
        else:
            self.index = node_side.reused("admission-static-index", self.nodes, lambda: _as_built(self.nodes))
        self.keys = keys or PodKeys()
        self._column, self._allocatable = node_side.reused(
            "admission-static-allocatable", self.nodes, lambda: _allocatable_table(self.nodes)
        )
        self._class_of, self._classes = node_side.reused(
            "admission-static-classes", self.nodes, lambda: _allocatable_classes(self.nodes, list(self._column))
        )
        self._answers: dict[tuple[predicates.EligibilityKey, _Asked], bool] = {}
        self._rows: dict[predicates.EligibilityKey, NDArray[np.bool_]] = {}
        """Per eligibility key, the nodes passing its predicates."""
        self._key_classes: dict[predicates.EligibilityKey, list[list[int]] | None] = {}
        """Per eligibility key, the allocatable classes of the nodes passing its predicates (None: too
        many, then its pairs read every node's column)."""
        self._pods: dict[int, tuple[Pod, bool]] = {}

    def could_ever(self, pod: Pod) -> bool:
        """Whether the pod could land on some node (a bound pod has)."""
        if pod.bound:
            return True
        found = self._pods.get(id(pod))
        if found is not None and found[0] is pod:
            return found[1]
        requests = pod.requests
        # Unsorted: the answer does not depend on the order, and pods of one spec list their
        # requests in one order, so equal requests still meet in one entry.
        asked = tuple((without_shares(requests) if res.GPU_MILLI in requests else requests).items())
        pair = (self.keys.of(pod), asked)
        answer = self._answers.get(pair)
        if answer is None:
            answer = self._fits_somewhere(*pair)
            self._answers[pair] = answer
        self._pods[id(pod)] = (pod, answer)
        return answer

    def _fits_somewhere(self, key: predicates.EligibilityKey, asked: _Asked) -> bool:
        wanted = self._wanted(asked)
        if wanted is None:
            return False
        if key in self._key_classes:
            classes = self._key_classes[key]
        else:
            classes = self._key_classes[key] = self._classes_passing(key)
        if classes is None:
            return self._fits_on_columns(key, asked)
        return any(all(allocatable[column] >= amount for column, amount in wanted) for allocatable in classes)

    def _wanted(self, asked: _Asked) -> list[tuple[int, int]] | None:
        """The requested amounts above zero by allocatable column, or None where no node has one of
        the requested resources at all."""
        wanted: list[tuple[int, int]] = []
        for name, amount in asked:
            if amount <= 0:
                continue
            column = self._column.get(name)
            if column is None:
                return None
            wanted.append((column, amount))
        return wanted

    def _passing(self, key: predicates.EligibilityKey) -> NDArray[np.bool_]:
        """The nodes passing the key's predicates, as a boolean per node."""
        rows = self._rows.get(key)
        if rows is None:
            rows = self._rows[key] = bits(self.index.mask(key), len(self.nodes))
        return rows

    def _classes_passing(self, key: predicates.EligibilityKey) -> list[list[int]] | None:
        """The allocatable classes of the nodes passing the key's predicates, or None when the
        cluster has more than :data:`_MANY_CLASSES`."""
        if len(self._classes) > _MANY_CLASSES:
            return None
        # A count of passing nodes per class (one pass in C; no Python loop over the nodes).
        counts = np.bincount(self._class_of, weights=self._passing(key), minlength=len(self._classes))
        return [self._classes[i] for i in np.flatnonzero(counts).tolist()]

    def _fits_on_columns(self, key: predicates.EligibilityKey, asked: _Asked) -> bool:
        """:meth:`_fits_somewhere` by one comparison over every node's column per requested resource."""
        wanted = self._wanted(asked)
        if wanted is None:
            return False
        rows = self._passing(key)
        for column, amount in wanted:
            rows = rows & (self._allocatable[column] >= amount)
        return bool(rows.any())

    def gang_never_fits(self, group: PodGroup, pods: Sequence[Pod]) -> tuple[str, str] | None:
        """Why fewer than ``minMember`` (or a task's ``minTaskMember``) of the group's pods could
        ever be placed, or None; None too while its pods are not all created."""
        could = self.could_ever
        if len(pods) == 1 and not group.min_task_member:
            # Most groups have one pod and no task minimums: the walk below, without its lists.
            (pod,) = pods
            if pod.finished or group.min_member != 1 or could(pod):
                return None  # too few pods to judge, or the minimum is met (or asks for none)
            return _too_few(group, 0, pod)
        alive = [p for p in pods if not p.finished]
        if len(alive) < group.min_member:
            return None  # its pods are not all created yet: nothing to judge
        fits = sum(1 for p in alive if could(p))
        if fits < group.min_member:
            return _too_few(group, fits, next(p for p in alive if not could(p)))
        for task, minimum in sorted(group.min_task_member.items()):
            of_task = [p for p in alive if p.task == task]
            if len(of_task) < minimum:
                continue
            placeable = sum(1 for p in of_task if could(p))
            if placeable < minimum:
                return (
                    "Unschedulable",
                    f"task {task}: only {placeable} of its pods could ever be placed, minTaskMember is {minimum}",
                )
        return None


def _too_few(group: PodGroup, fits: int, example: Pod) -> tuple[str, str]:
    """Why a group with ``fits`` placeable pods, fewer than its ``minMember``, never runs."""
    return (
        "Unschedulable",
        f"only {fits} of its pods could ever be placed, minMember is {group.min_member}: "
        f"pod {example.key} ({res.format_vector(without_shares(example.requests))}) passes the "
        f"predicates and fits the allocatable of no node",
    )
