"""A pod's eligibility key is looked up by its selector and its affinity and toleration objects; the
key it returns is the one made afresh from the pod, whatever pods came before (shared or copied
spec objects, equal contents in other objects, a volume restriction or none)."""

from __future__ import annotations

import pytest
from builders import pod
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Pod
from vcsat.solver.rules import predicates
from vcsat.solver.rules.predicates import EligibilityKey, eligibility_key


def made_afresh(p: Pod, restriction: predicates.NodeRestriction | None = None) -> EligibilityKey:
    """The key as it was made before keys were looked up (the reference)."""
    return EligibilityKey(
        frozenset(p.node_selector.items()),
        p.affinity,
        frozenset(t for t in p.tolerations if t.effect != "PreferNoSchedule"),
        restriction,
    )


selectors = st.dictionaries(st.sampled_from(["zone", "gpu", "pool"]), st.sampled_from(["a", "b"]), max_size=2)
affinities = st.sampled_from([(), "zone in (a)", "gpu notin (b)", ["zone in (a)", "pool in (b)"]])
tolerations = st.lists(
    st.sampled_from(["gpu", "gpu=a:NoSchedule", "spot:PreferNoSchedule", "x:NoExecute"]), max_size=3, unique=True
)


@st.composite
def pods(draw: st.DrawFn) -> list[Pod]:
    """Pods some of which share another's affinity/tolerations objects (as one converted spec does)."""
    out: list[Pod] = []
    for i in range(draw(st.integers(1, 12))):
        made = pod(
            f"ns/p{i}",
            selector=draw(selectors),
            affinity=draw(affinities),
            tolerations=draw(tolerations),
        )
        if out and draw(st.booleans()):
            other = draw(st.sampled_from(out))
            shared = {"affinity": other.affinity} if draw(st.booleans()) else {"tolerations": other.tolerations}
            made = made.model_copy(update=shared)
        out.append(made)
    return out


@settings(max_examples=150, deadline=None)
@given(batch=pods(), twice=st.booleans())
def test_looked_up_keys_equal_keys_made_afresh(batch: list[Pod], twice: bool) -> None:
    for p in batch + (batch if twice else []):
        key = eligibility_key(p)
        assert key == made_afresh(p)
        assert hash(key) == hash(made_afresh(p))


def test_restriction_is_part_of_the_lookup() -> None:
    p = pod("ns/p", selector={"zone": "a"})
    restriction = predicates.NodeRestriction(
        frozenset({"n1"}), (), ("VolumeBinding", "node(s) had volume node affinity conflict")
    )
    assert eligibility_key(p, restriction) == made_afresh(p, restriction)
    assert eligibility_key(p) == made_afresh(p)
    assert eligibility_key(p, restriction) != eligibility_key(p)


def test_a_full_table_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(predicates, "_KEYS_KEPT", 2)
    batch = [pod(f"ns/p{i}", selector={"zone": str(i)}) for i in range(5)]
    for p in batch * 2:
        assert eligibility_key(p) == made_afresh(p)
    assert len(predicates._KEYS) <= 2
