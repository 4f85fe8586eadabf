"""The server engines the lab can start, by name: a new engine is a new module with a LabServer subclass, added
here."""

from __future__ import annotations

from pathlib import Path

from dbperf.experiment.model import Experiment, Target
from dbperf.servers.lifecycle import ExternalServer, LabServer, ServerTarget
from dbperf.servers.mariadb import MariaDBServer
from dbperf.servers.mysql import MySQLServer
from dbperf.servers.postgres import PostgresServer

LAB_SERVERS: dict[str, type[LabServer]] = {cls.engine: cls for cls in (PostgresServer, MariaDBServer, MySQLServer)}


def server_target(directory: Path, logs: Path, target: Target, e: Experiment) -> ServerTarget:
    """An external server when the target names a `dsn`, else the engine's lab server in `directory`."""
    if target.dsn is not None:
        return ExternalServer(target, e, logs)
    return LAB_SERVERS[target.engine](directory, logs, target, e)
