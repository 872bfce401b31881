"""An eligibility key's affinity terms hash once (:class:`~vcsat.solver.rules.hashed_terms.HashedTerms`)
and are in every other way the plain tuple of the terms: equal to it both ways, hashing as it does,
found under it in a dict and it under them, printed as it is; a copy made by pickling in another
process (another string hash) hashes as the terms do in this one."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from builders import pod, term
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import NodeSelectorTerm
from vcsat.solver.rules.hashed_terms import HashedTerms
from vcsat.solver.rules.predicates import eligibility_key

_TERMS: list[tuple[NodeSelectorTerm, ...]] = [
    (term("zone in (a)"),),
    (term("zone in (a)", "gpu notin (b)"),),
    (term("zone in (a)"), term("pool in (b, c)")),
    (term("disk", "cores > 4", fields=["metadata.name in (n1)"]),),
]


@pytest.mark.parametrize("terms", _TERMS)
def test_hashed_terms_are_the_plain_tuple(terms: tuple[NodeSelectorTerm, ...]) -> None:
    hashed = HashedTerms(terms)
    assert hashed == terms and terms == hashed
    assert (hashed != terms) is False
    assert hash(hashed) == hash(terms)
    assert {terms: 1}[hashed] == 1 and {hashed: 2}[terms] == 2
    assert repr(hashed) == repr(terms)
    assert tuple(hashed) == terms and len(hashed) == len(terms)


def test_hashed_terms_differ_where_the_terms_differ() -> None:
    first, second = HashedTerms(_TERMS[0]), HashedTerms(_TERMS[1])
    assert first != second and first != _TERMS[1]
    assert len({first, second, HashedTerms(_TERMS[0]), _TERMS[0]}) == 2


def test_a_key_holds_hashed_terms_only_when_there_are_terms() -> None:
    with_terms = pod("ns/a", affinity="zone in (a)")
    assert type(eligibility_key(with_terms).affinity) is HashedTerms
    assert eligibility_key(with_terms).affinity == with_terms.affinity
    assert type(eligibility_key(pod("ns/b")).affinity) is tuple


def test_hashed_terms_pickled_in_another_process_hash_as_the_terms_here() -> None:
    # The copy comes from a process with another string hash: a hash carried over with it would
    # differ from the terms' hash here, and the copy would not be found where the terms are.
    script = (
        "import pickle, sys\n"
        "from builders import term\n"
        "from vcsat.solver.rules.hashed_terms import HashedTerms\n"
        "sys.stdout.buffer.write(pickle.dumps(HashedTerms((term('zone in (a)'), term('pool in (b, c)')))))\n"
    )
    tests = Path(__file__).parent
    path = os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": path}
    made = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, check=True).stdout
    copied = pickle.loads(made)
    assert type(copied) is HashedTerms
    assert hash(copied) == hash(_TERMS[2]) and copied == _TERMS[2]


requirements = st.sampled_from(["zone in (a)", "zone notin (b)", "gpu in (x, y)", "disk", "!spot", "cores > 4"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(requirements, min_size=1, max_size=3), min_size=1, max_size=3))
def test_hashed_terms_equal_and_hash_as_their_terms(spelled: list[list[str]]) -> None:
    terms = tuple(term(*requirement) for requirement in spelled)
    hashed = HashedTerms(terms)
    assert hashed == terms and hash(hashed) == hash(terms)
    assert pickle.loads(pickle.dumps(hashed)) == terms
    assert hash(pickle.loads(pickle.dumps(hashed))) == hash(terms)
