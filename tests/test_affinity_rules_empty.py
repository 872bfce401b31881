"""Whether a pod's inter-pod rules are empty is kept once asked (session 29).

``PodAffinityRules.empty`` is asked of every bound pod's two rules by each inter-pod scan (the
build's isolation hook, the validator), about 143,000 times in a 10,000-node cycle, and the pods
without rules share one rules object: it is a derived value now, computed once per object. A table
of rules: the answer is the fields' (no required and no preferred term), the same before and after
it is kept, and equality, hashing, serialisation and copies with changed fields read the fields only.
"""

from __future__ import annotations

import pytest

from vcsat.model.cluster import PodAffinityRules, PodAffinityTerm, WeightedPodAffinityTerm
from vcsat.model.selectors import LabelSelector

TERM = PodAffinityTerm(label_selector=LabelSelector(), topology_key="kubernetes.io/hostname")


@pytest.mark.parametrize(
    ("rules", "empty"),
    [
        (PodAffinityRules(), True),
        (PodAffinityRules(required=(TERM,)), False),
        (PodAffinityRules(preferred=(WeightedPodAffinityTerm(weight=10, term=TERM),)), False),
        (PodAffinityRules(required=(TERM,), preferred=(WeightedPodAffinityTerm(weight=1, term=TERM),)), False),
    ],
    ids=["none", "required", "preferred", "both"],
)
def test_empty_is_the_fields_and_is_kept(rules: PodAffinityRules, empty: bool) -> None:
    fresh = rules.model_copy()
    assert rules.empty is empty
    assert rules.__dict__["empty"] is empty, "kept in the object once asked"
    assert rules.empty is empty
    assert rules == fresh and hash(rules) == hash(fresh)
    assert rules.model_dump() == fresh.model_dump() and "empty" not in rules.model_dump()
    # A copy with other terms asks again.
    assert rules.model_copy(update={"required": (TERM,)}).empty is False
    assert rules.model_copy(update={"required": (), "preferred": ()}).empty is True
