"""OR-Tools' CP-SAT Python module, loaded when a cycle first builds a model, off the cycle's clock.

``ortools.sat.python.cp_model`` imports pandas at its own import: a third of a CPU-second, more
than a 1,000-node cycle's whole solve when its greedy decision is within the policy's gap
(benchmarks/RESULTS.md, session 18). The modules that build CP-SAT models therefore import it inside
the functions that build one (for types, under ``TYPE_CHECKING``), so a process whose cycles build
none (``vcsat solve`` on such a cluster) never loads it. A cycle that is about to build one calls
:func:`load` first and moves its deadlines by the wall time that took (:func:`vcsat.solver.solve`):
the import is not the cycle's work, as it was not when every caller imported the module before
starting the cycle's clock, so a short time limit is not eaten by it and the steps run (or are
skipped for time) as before.
"""

from __future__ import annotations

import importlib
import sys
import time

MODULE = "ortools.sat.python.cp_model"


def load() -> tuple[float, float]:
    """Import CP-SAT's module unless this process has; the wall and CPU seconds that took (both 0
    when it was loaded already)."""
    if MODULE in sys.modules:
        return 0.0, 0.0
    wall, cpu = time.monotonic(), time.process_time()
    importlib.import_module(MODULE)
    return time.monotonic() - wall, time.process_time() - cpu
