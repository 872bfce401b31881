"""Objective levels of the CP-SAT model, one module each, ranked by :mod:`vcsat.solver.search.levels`."""
