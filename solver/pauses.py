"""No garbage-collector pauses while a cycle runs.

A snapshot of a thousand nodes is hundreds of thousands of Python objects, and a cycle allocates
as many again (model rows, dicts of counts). CPython's cyclic collector then runs its full passes
again and again over all of them, a large share of the cycle's CPU time (benchmarks/RESULTS.md),
for no garbage (the cycle's objects die by reference counting). The collector is paused for the
duration of a solve or a check and put back as it was; whatever cyclic garbage the call left is
collected at the next collection after it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_gc_pauses() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
