"""For tests that run a daemon command (``vcsat scheduler``, ``vcsat controller``) in-process with
its leader election stood in for, and put the logging set-up it makes back afterwards."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest


class RecordingElector:
    """Stands for LeaderElector: keeps its keyword arguments, never campaigns."""

    made: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, _api: Any, **kwargs: Any) -> None:
        self.made.append(kwargs)

    def run(self, stop: threading.Event, _lead: Callable[..., None], _lost: Callable[[], None]) -> None:
        return None


@pytest.fixture(autouse=True)
def logging_restored() -> Iterator[None]:
    """The commands set up logging on the runner's stderr, closed after them: put the old setup back."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)
