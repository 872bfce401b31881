"""Kubernetes quantities: the spellings Kubernetes accepts, those it refuses, and solver units."""

from __future__ import annotations

from decimal import Context, Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vcsat.model.quantity import (
    INT64_MAX,
    nanos_to_amount,
    nanos_to_quota,
    parse_nanos,
    parse_quantity,
)

F = Fraction

GOOD = [
    # plain numbers and decimal SI suffixes
    ("0", F(0)),
    ("1", F(1)),
    ("+1", F(1)),
    ("-1", F(-1)),
    ("007", F(7)),
    ("5n", F(5, 10**9)),
    ("4u", F(4, 10**6)),
    ("500m", F(1, 2)),
    ("8k", F(8000)),
    ("7M", F(7 * 10**6)),
    ("6G", F(6 * 10**9)),
    ("5T", F(5 * 10**12)),
    ("2P", F(2 * 10**15)),
    ("1E", F(10**18)),
    ("12E", F(12 * 10**18)),  # decimal SI is not capped at int64 (only binary SI is)
    # binary SI
    ("1Ki", F(1024)),
    ("7Mi", F(7 * 2**20)),
    ("6Gi", F(6 * 2**30)),
    ("5Ti", F(5 * 2**40)),
    ("4Pi", F(4 * 2**50)),
    ("3Ei", F(3 * 2**60)),
    ("0.5Mi", F(2**19)),
    ("100.035Ki", F(10243584, 100)),
    ("9Ei", F(INT64_MAX)),  # more than int64: Kubernetes caps binary SI there
    ("9223372036854775807Ki", F(INT64_MAX)),
    # decimal exponents
    ("1e3", F(1000)),
    ("1E-3", F(1, 1000)),
    ("1.3E+6", F(1300000)),
    ("1.2e3", F(1200)),
    ("0.5e-1", F(1, 20)),
    # decimal fractions, and what Kubernetes lets through
    ("0.001", F(1, 1000)),
    ("100.035k", F(100035)),
    (".001", F(1, 1000)),
    ("1.", F(1)),
    ("1.G", F(10**9)),
    ("-9.01", F(-901, 100)),
    # magnitudes round up to a whole nano, away from zero
    ("3.001n", F(4, 10**9)),
    ("1.1E-9", F(2, 10**9)),
    ("0.0000000001", F(1, 10**9)),
    ("0.9n", F(1, 10**9)),
    ("0.00000012345", F(124, 10**9)),
    ("0.000000000001Ki", F(2, 10**9)),
    ("-0.9n", F(-1, 10**9)),
    ("1e-300", F(1, 10**9)),
    # numbers as YAML or JSON give them
    (2, F(2)),
    (0, F(0)),
    (0.5, F(1, 2)),
    (0.1, F(1, 10)),  # the literal 0.1, not the binary float nearest to it
    (1e-05, F(1, 100000)),
]


@pytest.mark.parametrize(("text", "expected"), GOOD, ids=[repr(case[0]) for case in GOOD])
def test_parses_as_kubernetes_does(text: str | int | float, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


BAD = [
    ("", "empty"),
    ("1.2.3", "not a quantity"),
    ("1.1.M", "not a quantity"),
    ("1+1.0M", "not a quantity"),
    ("10XB", "not a quantity"),
    ("0.1mi", "unknown suffix"),
    ("0.1am", "not a quantity"),
    ("aoeu", "not a quantity"),
    (".5i", "unknown suffix"),
    ("1i", "unknown suffix"),
    ("1K", "unknown suffix"),  # kilo is a lower-case k
    ("1ki", "unknown suffix"),
    ("-3.01e-", "unknown suffix"),
    ("1e", "unknown suffix"),
    ("1e3.5", "not a quantity"),
    ("1e4294967297", "out of range"),
    ("1e101", "exponent above"),
    (" 1", "not a quantity"),
    ("1 ", "not a quantity"),
    ("1\n", "not a quantity"),
    ("١", "not a quantity"),  # an Arabic-Indic digit: Go accepts ASCII digits only
    ("\x00\xff", "not a quantity"),
    ("-", "no digits"),
    (".", "no digits"),
    ("Ki", "no digits"),
    (True, "boolean"),
    (False, "boolean"),
    (float("nan"), "finite"),
    (float("inf"), "finite"),
    (None, "expected a quantity"),
    ([1], "expected a quantity"),
    ({"cpu": 1}, "expected a quantity"),
]


@pytest.mark.parametrize(("value", "reason"), BAD, ids=[repr(case[0]) for case in BAD])
def test_refuses_what_kubernetes_refuses(value: object, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_quantity(value)  # type: ignore[arg-type]


UNITS = [
    # resource, quantity, the model's amount (kube-scheduler's MilliValue for cpu, Value otherwise)
    ("cpu", "1", 1000),
    ("cpu", "250m", 250),
    ("cpu", "1.5", 1500),
    ("cpu", "1n", 1),  # a nano-core is a millicore to kube-scheduler (MilliValue rounds up)
    ("cpu", "999999n", 1),
    ("cpu", "1000001n", 2),
    ("memory", "1Gi", 2**30),
    ("memory", "1G", 10**9),  # exact: no MiB rounding
    ("memory", "1", 1),
    ("memory", "1.5", 2),  # Value() rounds a fraction of a byte up
    ("memory", "999m", 1),
    ("memory", "257426816Ki", 257426816 * 1024),
    ("ephemeral-storage", "1Mi", 2**20),
    ("ephemeral-storage", "10G", 10**10),
    ("hugepages-2Mi", "4Mi", 4 * 2**20),
    ("hugepages-1Gi", "2Gi", 2 * 2**30),
    ("pods", "110", 110),
    ("nvidia.com/gpu", "8", 8),
    ("nvidia.com/gpu", "1.5", 2),
    ("vcsat.io/gpu-milli", "250", 250),
    ("example.com/foo", "1k", 1000),
    ("example.com/foo", "1n", 1),
]


@pytest.mark.parametrize(("resource", "text", "expected"), UNITS)
def test_amounts_are_what_kube_scheduler_compares(resource: str, text: str, expected: int) -> None:
    assert nanos_to_amount(resource, parse_nanos(text)) == expected


QUOTAS = [
    # resource, capability, the model's amount (Volcano: cpu MilliValue, memory Value, else milli)
    ("cpu", "1.5", 1500),
    ("cpu", "1n", 1),
    ("memory", "1G", 10**9),
    ("memory", "0.5", 1),
    ("nvidia.com/gpu", "1.5", 1),  # 1500 milli holds one whole GPU pod (1000), not two
    ("nvidia.com/gpu", "1999m", 1),
    ("nvidia.com/gpu", "2", 2),
    ("nvidia.com/gpu", "1999999999n", 2),  # 2000 milli after Volcano's MilliValue rounds up
    ("ephemeral-storage", "1G", 10**9),
    ("pods", "10", 10),
]


@pytest.mark.parametrize(("resource", "text", "expected"), QUOTAS)
def test_quotas_are_what_volcano_compares(resource: str, text: str, expected: int) -> None:
    assert nanos_to_quota(resource, parse_nanos(text)) == expected


_EXACT = Context(prec=100)
_DECIMAL_SUFFIX = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


@given(
    nanos=st.integers(min_value=-(10**30), max_value=10**30),
    suffix=st.sampled_from(sorted(_DECIMAL_SUFFIX)),
    exponent_form=st.booleans(),
)
def test_decimal_strings_round_trip(nanos: int, suffix: str, exponent_form: bool) -> None:
    """Any amount Kubernetes can hold (a whole number of nanos), written with any decimal suffix or
    as an exponent, parses back to exactly that amount."""
    exponent = _DECIMAL_SUFFIX[suffix]
    mantissa = format(Decimal(nanos).scaleb(-9 - exponent, _EXACT), "f")
    text = f"{mantissa}e{exponent}" if exponent_form else f"{mantissa}{suffix}"
    assert parse_quantity(text) == Fraction(nanos, 10**9)


@given(
    units=st.integers(min_value=0, max_value=2**40),
    suffix=st.sampled_from(["Ki", "Mi", "Gi", "Ti"]),
)
def test_binary_strings_round_trip(units: int, suffix: str) -> None:
    power = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40}[suffix]
    assert parse_quantity(f"{units}{suffix}") == min(units * 2**power, INT64_MAX)  # Kubernetes' cap


@given(text=st.text(alphabet="0123456789.+-eEinumkKMGTP", max_size=12))
def test_any_text_either_parses_or_says_why(text: str) -> None:
    """Never an exception other than ValueError, and rounding never changes the sign."""
    try:
        value = parse_quantity(text)
    except ValueError as error:
        assert str(error)
    else:
        assert (value < 0) == text.startswith("-") or value == 0
