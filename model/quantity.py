"""Kubernetes resource quantities, parsed exactly as the API server parses them.

Every amount in an instance (``500m``, ``2Gi``, ``1.5e3``) must mean here what it means to
Kubernetes, or a decision that fits in the model would not fit in the cluster. This module
mirrors ``k8s.io/apimachinery/pkg/api/resource.ParseQuantity``: the same grammar, the same
suffixes, the magnitude rounded *up* to a whole nano (so a tiny request never becomes nothing) and
binary-suffixed amounts capped at the int64 maximum.

Internally every quantity is an integer number of nanos (10⁻⁹ of the unit): Kubernetes never keeps
finer amounts, so sums of requests stay exact integers and the one rounding to the model's integer
(:func:`nanos_to_amount`: millicores for cpu, whole units for the rest, as kube-scheduler rounds)
happens once, on the total.

Deliberate differences from Kubernetes, all on input no Kubernetes client ever writes:

- a quantity without any digit (``-``, ``.``, ``Ki``) is refused; Kubernetes' parser lets some of
  them through as zero by accident of its fast path;
- a decimal exponent above ``MAX_EXPONENT`` is refused (such a number is no resource amount, and
  building it would only cost time and memory).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

from vcsat.model import resources as res

NANO = 10**9
"""Nanos per unit: the finest amount a Kubernetes quantity keeps."""

INT64_MAX = 2**63 - 1
MAX_EXPONENT = 100
"""Largest decimal exponent accepted (``1e100``); Kubernetes allows up to 2³¹-1."""

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_INT32_MAX = 2**31 - 1

# Kubernetes' scanner: sign, digits, optional "." and digits, then a run of suffix letters, an
# optional sign and digits (the exponent). ASCII digits only, as in Go: "[0-9]" not "\d".
_QUANTITY = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_EXPONENT = re.compile(r"[+-]?[0-9]+")


def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a Kubernetes quantity; ValueError with a short reason when it is none."""
    return Fraction(parse_nanos(value), NANO)


def parse_nanos(value: str | int | float) -> int:
    """The quantity as an integer count of nanos (exact: Kubernetes keeps nothing finer)."""
    if type(value) is str:  # the common case first: this runs for every amount of every pod
        return _parse_nanos_text(value)
    if isinstance(value, bool):
        raise ValueError(f"expected a quantity, got a boolean ({str(value).lower()})")
    if isinstance(value, int):
        return value * NANO
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"not a finite number: {value}")
        # A JSON/YAML number reaches Kubernetes as its literal text; repr() is Python's shortest
        # text for the float, so 0.1 means exactly 1/10 as it does there.
        return _parse_nanos_text(repr(value))
    if isinstance(value, str):
        return _parse_nanos_text(value)
    raise ValueError(f"expected a quantity, got {type(value).__name__}")


@lru_cache(maxsize=8192)
def _parse_nanos_text(text: str) -> int:
    # Cached: real clusters repeat a handful of spellings ("1", "500m", "4Gi") thousands of times.
    if not text:
        raise ValueError("empty quantity")
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError(f"not a quantity: {_shown(text)}")
    sign, whole, fraction, suffix = match.groups()
    fraction = fraction or ""
    if not whole and not fraction:
        raise ValueError(f"no digits in quantity {_shown(text)}")
    digits = int(whole + fraction)
    negative = sign == "-"

    if suffix in _DECIMAL_SUFFIXES:
        nanos = _decimal_nanos(digits, _DECIMAL_SUFFIXES[suffix] - len(fraction))
    elif suffix in _BINARY_SUFFIXES:
        # Exact value digits / 10^len(fraction) * 2^power, its magnitude rounded up to a nano.
        numerator = digits * (2 ** _BINARY_SUFFIXES[suffix]) * NANO
        nanos = -(-numerator // 10 ** len(fraction))
        nanos = min(nanos, INT64_MAX * NANO)
    elif len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT.fullmatch(suffix[1:]):
        exponent = int(suffix[1:])
        if abs(exponent) > _INT32_MAX:
            raise ValueError(f"exponent out of range in {_shown(text)}")
        if exponent > MAX_EXPONENT:
            raise ValueError(f"exponent above {MAX_EXPONENT} in {_shown(text)}")
        nanos = _decimal_nanos(digits, exponent - len(fraction))
    else:
        raise ValueError(f"unknown suffix {suffix!r} in {_shown(text)}")
    return -nanos if negative else nanos


def _decimal_nanos(digits: int, exponent: int) -> int:
    """``digits * 10^exponent`` in nanos, its magnitude rounded up to a whole nano."""
    shift = exponent + 9
    if shift >= 0:
        return digits * _pow10(shift)
    if digits == 0:
        return 0
    if -shift > len(str(digits)):
        return 1  # smaller than one nano but not zero: Kubernetes rounds it up to 1n
    return -(-digits // _pow10(-shift))


def _pow10(exponent: int) -> int:
    power: int = 10**exponent  # exponent >= 0 here, so an int (mypy cannot tell)
    return power


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


def nanos_to_amount(resource: str, nanos: int) -> int:
    """A pod's request or a node's allocatable as the exact integer the model holds.

    Kubernetes' own arithmetic (kube-scheduler's ``framework.Resource``): cpu is ``MilliValue()``,
    every other resource ``Value()``, both the ceiling of the exact amount. The pod's amount is
    rounded once, after its containers are summed (as ``PodRequests`` sums quantities exactly), and
    a node's allocatable rounds the same way; fit is then integer arithmetic on these.
    """
    if resource in res.MILLI_UNIT_RESOURCES:
        return -(-nanos // _NANOS_PER_MILLI)
    return -(-nanos // NANO)


def nanos_to_quota(resource: str, nanos: int) -> int:
    """A queue's ``capability`` (also ``deserved``, ``guarantee``) as the integer the model holds.

    Volcano compares a queue's room with its pods' requests in its own ``Resource``: cpu by
    ``MilliValue()`` and memory by ``Value()`` (as above), every other resource by ``MilliValue()``.
    Pods ask whole units of those (Kubernetes refuses fractional extended resources), and a whole
    number ``n`` has ``1000·n ≤ ceil(1000·cap)`` exactly when ``n ≤ ⌊ceil(1000·cap)/1000⌋``: so a
    capability of 1.5 GPUs holds one GPU pod, not two, here as in Volcano.
    """
    if resource in res.MILLI_UNIT_RESOURCES or resource == res.MEMORY:
        return nanos_to_amount(resource, nanos)
    return -(-nanos // _NANOS_PER_MILLI) // 1000


_NANOS_PER_MILLI = NANO // 1000
