"""vcsat: a Volcano-compatible batch scheduler whose every cycle is one exact CP-SAT problem.

The distribution maps three top-level folders into this namespace: ``vcsat.model`` (pure typed
data), ``vcsat.solver`` (the pure scheduling function) and ``vcsat.adapters`` (every side effect).
"""

__version__ = "0.1.0"
