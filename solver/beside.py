"""Work run beside the cycle on a second core: in a forked child that hands back a small result.

A cycle is a chain of steps, each reading what the one before made, and its Python steps hold the
interpreter's lock, so a thread runs none of them beside another. Where a step's inputs are final
before the steps that follow need its result (the validator's rules over the final placements, while
the explanations of waiting groups are made), a forked child runs it: the child sees the parent's
heap as it was at the fork (copy-on-write), works on the other core, and sends its result back
pickled through a pipe. Only work with a small result pays: pickling a large one back costs what
the work does.

When it runs in a child: more than one core is available to this process
(``os.sched_getaffinity``), :data:`SERIAL_ENV` is not set, and no other thread runs (a fork copies
only the forking thread; a lock another thread held at the fork would stay held in the child for
good, so a process with threads, such as the live scheduler with its watches, stays serial).
Otherwise, and with ``fork=False``, the work runs in this process when its result is asked for,
where it ran before it was moved beside the cycle.

Whatever goes wrong in the child (the work raises, the child dies, its result cannot be pickled),
the result is asked of the work again here, serially: a deterministic work then raises the very
error, with its traceback, that the serial path raises, at the same point.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

SERIAL_ENV = "VCSAT_SERIAL"
"""Set (to anything but empty or ``0``) to run every step of a cycle in this process, one after the
other: for replays and debugging (a profiler or a debugger sees every step), or to keep the second
core for something else."""

T = TypeVar("T")


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux: every core the machine has
        return os.cpu_count() or 1


def serial_forced() -> bool:
    """Whether :data:`SERIAL_ENV` asks for one step at a time."""
    return os.environ.get(SERIAL_ENV, "") not in ("", "0")


def may_fork() -> bool:
    """Whether work may run in a forked child now (see the module docstring)."""
    return hasattr(os, "fork") and cores() > 1 and not serial_forced() and threading.active_count() == 1


@dataclass(frozen=True)
class ChildCost:
    """What the child took: wall seconds from the fork to its result read, its CPU seconds (user
    and system, from the kernel's account of the reaped child), and its peak resident set in MiB
    (pages it shares with this process included)."""

    wall: float
    cpu: float
    peak_mib: float


class Beside(Generic[T]):
    """``work()``, run in a forked child from now on when ``fork`` (default: :func:`may_fork`),
    else here when :meth:`result` is first asked."""

    def __init__(self, work: Callable[[], T], *, fork: bool | None = None) -> None:
        self._work = work
        self._pid = 0
        self._read = -1
        self._done = False
        self._value: T | None = None
        self.cost: ChildCost | None = None
        """The child's cost once its result is read; None when the work ran here."""
        self._started = time.perf_counter()
        if fork if fork is not None else may_fork():
            self._fork()

    @property
    def forked(self) -> bool:
        """Whether the work runs (or ran) in a child."""
        return self._pid != 0 or self.cost is not None

    def _fork(self) -> None:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: the work, its result down the pipe, and gone without any clean-up
            code = 1
            try:
                os.close(read)
                payload = pickle.dumps(self._work(), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write, "wb") as out:
                    out.write(payload)
                code = 0
            except BaseException:  # the parent runs the work again and raises it there
                pass
            finally:
                os._exit(code)
        os.close(write)
        self._pid, self._read = pid, read

    def result(self) -> T:
        """The work's result: the child's, else the work's run here (see the module docstring)."""
        if self._done:
            return self._value  # type: ignore[return-value]
        value: T
        if self._pid:
            payload = self._drain()
            code, usage = self._reap()
            self.cost = ChildCost(
                wall=round(time.perf_counter() - self._started, 4),
                cpu=round(usage.ru_utime + usage.ru_stime, 4),
                peak_mib=round(usage.ru_maxrss / 1024, 1),
            )
            loaded = _loaded(payload) if code == 0 else None
            value = cast("T", loaded[0]) if loaded is not None else self._work()
        else:
            value = self._work()
        self._value, self._done = value, True
        return value

    def close(self) -> None:
        """Stop a child whose result is no longer wanted (an error upstream), and reap it."""
        if self._pid and not self._done:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, 9)
            self._drain()
            self._reap()
            self._done = True

    def _drain(self) -> bytes:
        chunks = []
        with os.fdopen(self._read, "rb") as pipe:
            while chunk := pipe.read(1 << 20):
                chunks.append(chunk)
        return b"".join(chunks)

    def _reap(self) -> tuple[int, resource.struct_rusage]:
        pid, self._pid = self._pid, 0
        _, status, usage = os.wait4(pid, 0)
        return os.waitstatus_to_exitcode(status), usage


def _loaded(payload: bytes) -> tuple[object] | None:
    try:
        return (pickle.loads(payload),)  # our own child's bytes, through our own pipe
    except Exception:  # a truncated result: the parent runs the work itself
        return None
