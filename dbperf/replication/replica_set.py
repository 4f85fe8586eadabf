"""What the MariaDB cluster (cluster.py) and the PostgreSQL one (pg_cluster.py) share: the error a study stops on, a
lab server that plays a role (its settings after the target's own, its control connections closed when it stops,
a failed control statement reported without the statement) and the cluster's frame (its servers, starting one with
the step named, reviving the replicas that died, describing and stopping them all). Each engine's module adds its
connections and the replication itself."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.servers.lifecycle import LabServer

REPL_USER = "repl"  # the replication user (MariaDB) or role (PostgreSQL), with a random password of its own


class StudyFailed(Exception):
    """A study cannot go on (a replica died, replication stopped with an error): the message says which server and
    step; `log_tail` is that server's log."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail


class RoleServer(LabServer):
    """A lab server named TARGET-ROLE with the role's settings after the target's own. It comes before the engine's
    server class: `class ClusterServer(RoleServer, MariaDBServer)`."""

    def __init__(self, directory: Path, logs: Path, target: Target, e: Experiment, role: str,
                 role_settings: dict[str, str]) -> None:
        super().__init__(directory, logs, replace(target, name=f"{target.name}-{role}"), e)
        self.role = role
        self.base_settings = list(target.config.items())
        self.set_role_settings(role_settings)

    def set_role_settings(self, settings: dict[str, str]) -> None:
        self.role_settings = dict(settings)
        self.settings = self.base_settings + list(self.role_settings.items())

    def close(self) -> None:
        """Closes the lab's control connections (the engine's class holds them)."""

    def stop(self) -> None:
        self.close()
        super().stop()

    def failed(self, what: str, reason: str) -> StudyFailed:
        """A control statement that failed: its connections closed, a StudyFailed naming the server and the step,
        never the statement (it may hold a password)."""
        self.close()
        dead = " (the server died)" if self.died() else ""
        return StudyFailed(f"{self.target.name}: {what or 'query'}: {reason}{dead}", self.log_tail())


def start_server(server: LabServer, what: str) -> None:
    """Starts `server`; a UserError naming it as `what` (the primary, replica, standby) otherwise."""
    try:
        server.start()
    except UserError as err:
        raise UserError(f"starting {what} {server.target.name!r}: {err}") from None


S = TypeVar("S", bound=RoleServer)


class ReplicaSet(Generic[S]):
    """The primary and its replicas, in the runtime's target directories t1 (primary), t2... (replicas)."""

    primary: S
    replicas: list[S]

    @property
    def servers(self) -> list[S]:
        return [self.primary, *self.replicas]

    def start(self) -> None:
        """The primary, then each replica replicating from it; a UserError or StudyFailed naming the server and step."""
        raise NotImplementedError

    def all_caught_up(self) -> None:
        """Until every replica has applied what the primary wrote so far; a StudyFailed otherwise."""
        raise NotImplementedError

    def revive_replica(self, r: S) -> None:
        raise NotImplementedError

    def revive(self) -> list[str]:
        """Replicas that died are started again (and their replication); the names of those that were."""
        revived = []
        for r in self.replicas:
            if r.died():
                r.restarts += 1
                self.revive_replica(r)
                revived.append(r.target.name)
        return revived

    def describe(self) -> list[dict[str, Any]]:
        # The settings are safe to record: no password is among them (PostgreSQL's primary_conninfo names a passfile).
        return [{"role": s.role, **s.describe(), "settings": s.settings} for s in self.servers]

    def stop(self) -> None:
        for s in reversed(self.servers):
            s.stop()
