"""Isolation: pod classes that take part in rules between pods get a shape and a bucket of their own.

The aggregated model decides counts per (bucket, node); a bucket normally merges pods of many gangs
and classes, which is what keeps it small. Rules between pods (inter-pod affinity and anti-affinity,
host ports, topology spread, ...) need to know *which* pods land in a topology domain, so a class
taking part in one is *isolated*: its shape key carries the class's identity, its bucket holds that
one shape, and ``slot[bucket, node]`` is exactly that class's count on the node. Counts per
(class, domain) are then sums of slots, and a rule module adds constraints on them. Classes that
take part in no such rule stay on the shared fast path, untouched.

Each rule family contributes an :class:`Interaction`, built once per snapshot from the pending
pods by an :data:`InteractionFactory`:

- ``signature(pod)``: None when the pod takes part in none of the family's rules; otherwise a value
  that two pods share only if the family treats them alike (pods of one class must agree on it, so
  it joins the class key);
- ``refused(pod)``: the nodes the family's rules refuse the pod whatever else this cycle places
  (bound pods only: the static part, folded into the class's eligible nodes), each with the
  reason; computed once per kind of pod, so it must be cheap to ask again.

:func:`isolation` runs the factories and answers per pod. New families add their factory to
:func:`interactions` (or pass their own list).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

from vcsat.model import Pod, Snapshot


@dataclass(frozen=True)
class Interaction:
    name: str
    signature: Callable[[Pod], Hashable | None]
    refused: Callable[[Pod], Mapping[int, str]]
    """pod -> {node index: a kube-scheduler style reason} for the nodes refused."""
    state: object = None
    """The family's own index of the snapshot, for its constraint, greedy and explanation code."""

    def __hash__(self) -> int:
        return hash(self.name)


InteractionFactory = Callable[[Snapshot, Sequence[Pod]], Interaction | None]
"""Builds a family's interaction from the snapshot and the pending pods; None when no pending pod
takes part in the family's rules (the common case: nothing is isolated)."""


@dataclass(frozen=True)
class Isolation:
    """The interactions of one snapshot, and each pending pod's combined signature."""

    interactions: tuple[Interaction, ...]

    def signature(self, pod: Pod) -> Hashable | None:
        """None when the pod takes part in no rule between pods; else its per-family signatures."""
        if not self.interactions:
            return None
        if len(self.interactions) == 1:
            part = self.interactions[0].signature(pod)
            return None if part is None else (part,)
        parts = tuple(interaction.signature(pod) for interaction in self.interactions)
        return None if all(part is None for part in parts) else parts

    def state(self, name: str) -> object:
        """The index of the family ``name``; None when that family is not active this cycle."""
        return next((i.state for i in self.interactions if i.name == name), None)

    def refused(self, pod: Pod) -> dict[int, str]:
        """Nodes refused to the pod by bound pods under any family's rules, with the first
        family's reason."""
        out: dict[int, str] = {}
        for interaction in reversed(self.interactions):
            out.update(interaction.refused(pod))
        return out


def interactions() -> list[InteractionFactory]:
    """The rule families between pods, in the order their failures are reported (imported here,
    not at module level: each family's module builds on this one)."""
    from vcsat.solver.rules.interpod import interpod_interaction
    from vcsat.solver.rules.spread import spread_interaction

    return [interpod_interaction, spread_interaction]


def isolation(
    snapshot: Snapshot, pending: Sequence[Pod], factories: Sequence[InteractionFactory] | None = None
) -> Isolation:
    built = [factory(snapshot, pending) for factory in (interactions() if factories is None else factories)]
    return Isolation(tuple(interaction for interaction in built if interaction is not None))


def isolated_classes(class_shapes: Sequence[int], isolated_shapes: dict[int, int]) -> set[int]:
    """Indices of the isolated classes, given each class's shape and the isolated shapes (shape ->
    its one class)."""
    return {c for c, shape in enumerate(class_shapes) if isolated_shapes.get(shape) == c}
