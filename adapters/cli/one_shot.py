"""A one-shot command that is the whole process: no collector, and no teardown of its heap.

``vcsat solve`` on a large cluster holds millions of Python objects (the parsed file, the snapshot,
the problem, what the solver's memos keep) that live until the command ends, and dies right after
printing. Two costs buy nothing then: CPython's cyclic collector walking them between the phases
that do not pause it (a pass over everything made while it was paused), and the interpreter's
teardown freeing them one by one and walking them once more at exit. When the command runs as the
console script (the process is the command's, see :func:`mark_process`), it turns the collector
off for good and ends the process with :func:`leave` once its output is flushed. Called in another
program (click's test runner, a caller of ``main([...])``) it changes nothing: the caller's process
goes on.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys

_whole_process = False


def mark_process() -> None:
    """The console script runs the command: this process ends when the command does."""
    global _whole_process
    _whole_process = True


def collector_off() -> bool:
    """Turn the cyclic collector off for the rest of the process, when the process is the
    command's (the command's objects die by reference counting or with the process); whether it did."""
    if _whole_process:
        gc.disable()
    return _whole_process


def leave(code: int = 0) -> None:
    """End the process now with ``code`` (output flushed), when it is the command's; else return."""
    if not _whole_process:
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing more to say there
            stream.flush()
    os._exit(code)
