"""The ``vcsat`` command line: the entry point, the subcommand wiring and what is printed.

:mod:`.app` holds the ``vcsat`` group (contract §4's exit statuses for every subcommand, the
lazily imported subcommands of the other packages) and ``vcsat solve``; :mod:`.render` prints a
decision as a table. Kept apart so that what a user types and sees is in one place, and so that
starting the command imports only what the chosen subcommand needs (``vcsat solve`` never loads the
Kubernetes client). :func:`main` is the console script's entry point (``vcsat.adapters.cli:main``
in pyproject.toml).
"""

from vcsat.adapters.cli.app import main

__all__ = ["main"]
