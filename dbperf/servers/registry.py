"""The server engines the lab can start, by name: each engine's module here holds its LabServer subclass as `SERVER`,
found by import (as the build lab's recipes and the study step kinds are), so that a new engine's lifecycle is a new
file and no table here names them."""

from __future__ import annotations

from pathlib import Path

from dbperf import servers
from dbperf.experiment.model import Experiment, Target
from dbperf.plugins import found
from dbperf.servers.lifecycle import ExternalServer, LabServer, ServerTarget

LAB_SERVERS: dict[str, type[LabServer]] = {
    cls.engine: cls for cls in found(servers.__path__, servers.__name__, "SERVER", type) if issubclass(cls, LabServer)}


def server_target(directory: Path, logs: Path, target: Target, e: Experiment) -> ServerTarget:
    """An external server when the target names a `dsn`, else the engine's lab server in `directory`."""
    if target.dsn is not None:
        return ExternalServer(target, e, logs)
    return LAB_SERVERS[target.engine](directory, logs, target, e)
