"""The rare node types kept for the very same nodes (``solver/pricing/rarity.py``'s ``rare_groups``):
for any sequence of node lists (nodes kept, replaced by equal copies, changed, added, removed,
reordered) and pool labels, the answer is a fresh walk's; the walk is skipped only for the very same
nodes in the same order with equal labels; and the lists handed out are the caller's."""

from __future__ import annotations

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Node
from vcsat.solver.pricing import rarity


def _node(name: str, gpus: int, model: str = "a100", cpu: str = "64") -> Node:
    return b.node(name, cpu=cpu, gpus=gpus, labels={"gpu": model})


# 60 GPU nodes of one type and one of another: the second is rare (at most 2% of GPU nodes).
COMMON = tuple(_node(f"n{i:02d}", 8) for i in range(60))
RARE = _node("r0", 4, "t4")
BASE = (*COMMON, RARE)

STEPS: list[tuple[str, tuple[Node, ...], tuple[str, ...], bool]] = [
    # (what, the nodes after BASE's, the labels, whether the walk runs again)
    ("the very same nodes", BASE, ("gpu",), False),
    ("the same nodes in a new tuple", tuple(list(BASE)), ("gpu",), False),
    ("other labels", BASE, (), True),
    ("an equal copy of a node", (*COMMON[:-1], COMMON[-1].model_copy(), RARE), ("gpu",), True),
    ("the rare node changed", (*COMMON, _node("r0", 8)), ("gpu",), True),
    ("a node added", (*BASE, _node("r1", 4, "t4")), ("gpu",), True),
    ("a node removed", COMMON, ("gpu",), True),
    ("two nodes swapped", (COMMON[1], COMMON[0], *COMMON[2:], RARE), ("gpu",), True),
]


@pytest.mark.parametrize(("what", "nodes", "labels", "walks"), STEPS, ids=[s[0] for s in STEPS])
def test_the_answer_is_a_fresh_walks(
    what: str, nodes: tuple[Node, ...], labels: tuple[str, ...], walks: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert rarity.rare_groups(BASE, ["gpu"]) == [[60]]
    walked: list[int] = []
    real = rarity._rare_groups
    monkeypatch.setattr(rarity, "_rare_groups", lambda n, ls: walked.append(1) or real(n, ls))
    assert rarity.rare_groups(nodes, list(labels)) == real(nodes, labels)
    assert bool(walked) == walks


def test_the_lists_handed_out_are_the_callers() -> None:
    for _ in range(2):  # the walk's answer, then the kept one: each changed by its caller
        handed = rarity.rare_groups(BASE, ["gpu"])
        assert handed == [[60]]
        handed[0].append(99)
        handed.append([7])
    assert rarity.rare_groups(BASE, ["gpu"]) == [[60]]


_specs = st.lists(
    st.tuples(st.integers(0, 9), st.sampled_from([0, 4, 8]), st.sampled_from(["a100", "t4"])),
    max_size=12,
    unique_by=lambda t: t[0],
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_specs, st.booleans(), st.sampled_from([(), ("gpu",)])), min_size=1, max_size=6))
def test_any_sequence_of_node_lists_answers_as_a_fresh_walk(
    steps: list[tuple[list[tuple[int, int, str]], bool, tuple[str, ...]]],
) -> None:
    made: dict[tuple[int, int, str], Node] = {}
    for specs, keep, labels in steps:
        # kept: the very Node object of an earlier step for the same spec, as the converter gives it
        nodes = [made[spec] if keep and spec in made else _node(f"n{spec[0]}", spec[1], spec[2]) for spec in specs]
        made.update(zip(specs, nodes, strict=True))
        assert rarity.rare_groups(nodes, list(labels)) == rarity._rare_groups(nodes, labels)
