"""Which plugins exist, which imply which, and how a Job's ``spec.plugins`` becomes plugin objects.

The order of plugins is the Job's own (then the implied ones), so the environment of a pod is the
same on every controller and every restart (Volcano walks a Go map, whose order is random).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from vcsat.adapters.controller.plugins.base import JobPlugin
from vcsat.adapters.controller.plugins.env import EnvPlugin
from vcsat.adapters.controller.plugins.flags import FlagError
from vcsat.adapters.controller.plugins.mpi import MpiPlugin
from vcsat.adapters.controller.plugins.pytorch import PytorchPlugin
from vcsat.adapters.controller.plugins.ssh import SshPlugin
from vcsat.adapters.controller.plugins.svc import SvcPlugin
from vcsat.adapters.controller.plugins.tensorflow import TensorflowPlugin

if TYPE_CHECKING:
    from vcsat.adapters.controller.jobspec import JobSpec, PluginSpec, TaskSpec

PLUGINS: dict[str, type[JobPlugin]] = {
    plugin.name: plugin for plugin in (SshPlugin, SvcPlugin, EnvPlugin, TensorflowPlugin, PytorchPlugin, MpiPlugin)
}

IMPLIES: dict[str, tuple[str, ...]] = {
    # The framework plugins hand out DNS names (svc); mpirun also needs ssh keys.
    "tensorflow": ("svc",),
    "pytorch": ("svc",),
    "mpi": ("svc", "ssh"),
}


def implied_plugins(names: Sequence[str]) -> list[str]:
    """Plugins that ``names`` need but do not list, in a fixed order."""
    missing: list[str] = []
    for name in names:
        for needed in IMPLIES.get(name, ()):
            if needed not in names and needed not in missing:
                missing.append(needed)
    return missing


def check_plugin(spec: PluginSpec, tasks: Sequence[TaskSpec]) -> str | None:
    """Why the plugin cannot be used as written, or None."""
    plugin_class = PLUGINS.get(spec.name)
    if plugin_class is None:
        return f"unknown plugin {spec.name!r} (known: {', '.join(sorted(PLUGINS))})"
    try:
        plugin = plugin_class(spec.args)
    except FlagError as error:
        return str(error)
    return plugin.problem(tuple(tasks))


def build_plugins(job: JobSpec) -> list[JobPlugin]:
    """The job's plugins, ready to use (the job was checked, so their arguments parse)."""
    return [PLUGINS[spec.name](spec.args) for spec in job.plugins]


def plugin_names(job: JobSpec) -> Iterable[str]:
    return (spec.name for spec in job.plugins)
