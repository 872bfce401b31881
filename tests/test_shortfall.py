"""The margin a pool keeps for its confined work to come (vcsat.solver.pricing.shortfall)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vcsat.solver.pricing.shortfall import with_margin

# (expected thousandths, unit thousandths, kept thousandths)
CASES = {
    "nothing expected keeps nothing": (0.0, 1000.0, 0.0),
    "one whole-GPU pod expected keeps two": (1000.0, 1000.0, 2000.0),
    "four pods expected keep six": (4000.0, 1000.0, 6000.0),
    "a hundred pods expected keep a tenth more": (100_000.0, 1000.0, 110_000.0),
    "pods of 8 GPUs vary more": (8000.0, 8000.0, 16000.0),
    "shares vary less": (1000.0, 250.0, 1500.0),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_with_margin(case: str) -> None:
    expected, unit, kept = CASES[case]
    assert with_margin(expected, unit) == pytest.approx(kept)


expected = st.floats(min_value=1.0, max_value=1e7, allow_nan=False)
units = st.floats(min_value=1.0, max_value=8000.0, allow_nan=False)


@given(expected, units)
def test_the_margin_is_one_standard_deviation_of_the_pods_to_come(need: float, unit: float) -> None:
    kept = with_margin(need, unit)
    pods = need / unit  # Poisson: variance = mean, in pods
    assert kept == pytest.approx(need + unit * math.sqrt(pods))


@given(expected, st.floats(min_value=1.5, max_value=100.0), units)
def test_the_margin_weighs_less_the_more_is_expected(need: float, times: float, unit: float) -> None:
    # At equal need over room, a small pool keeps more room per thousandth of need than a big one.
    small = with_margin(need, unit) / need
    big = with_margin(need * times, unit) / (need * times)
    assert 1.0 < big < small
