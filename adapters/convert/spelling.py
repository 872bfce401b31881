"""The spelling of a JSON-like value as one flat text: what the converter keys parts read alike by.

Pods of one job (and PodGroups of one kind of job) spell their specs the same way; the converter
reads each distinct spelling once and gives every object that repeats it the same values
(:meth:`~.reader.Conversion.shared`). Equal spelling must mean equal value to every reader:
orjson's compact JSON tells a string from a number, an integer from a float and ``true`` from
``1``, and keeps the order of keys, as ``repr`` does, at a fifth of its cost. Anything that is not
plain JSON (a YAML timestamp or date, bytes, a set, a key that is not a string, a subclass) makes
orjson refuse, and then ``repr`` spells it; so does a value with ``null`` in it, since orjson also
writes a NaN or an infinity as ``null``. Values read from JSON or YAML never hold tuples, the one
other thing orjson spells like something else (a list).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS
_NULL = re.compile(b"null").search
"""Whether a spelling holds ``null``: the same answer as ``b"null" in text``, found faster on texts of
a pod spec's length (every pod's spec is spelled)."""


def spelling(value: Any) -> bytes | str:
    """Equal spellings, equal values (see the module docstring); bytes and text never compare equal."""
    try:
        text = orjson.dumps(value, option=_OPTIONS)
    except TypeError:
        return repr(value)
    return repr(value) if _NULL(text) is not None else text


def spelling_seen(value: Any, clean: set[bytes]) -> bytes | str:
    """:func:`spelling`, the search for ``null`` spared when the text is one of ``clean``: texts
    already found without ``null`` (the same text, the same answer). A text found without ``null``
    joins them. The converter spells every pod's spec, and most repeat an earlier one's."""
    try:
        text = orjson.dumps(value, option=_OPTIONS)
    except TypeError:
        return repr(value)
    if text in clean:
        return text
    if _NULL(text) is not None:
        return repr(value)
    clean.add(text)
    return text
