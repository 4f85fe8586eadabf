"""What the matrix needs of a target's data and engine, whatever the engine: SQLite files (sqlite_data.py), servers
the lab starts or the user runs (servers/). A new kind of target implements this and nothing in the matrix
changes."""

from __future__ import annotations

from typing import Any, Protocol

from dbperf.records import DriverJob, LoadResult


class TargetLifecycle(Protocol):
    settings: list[tuple[str, str]]  # as applied (recorded in meta.json)

    def start(self) -> None:
        """Ready to load: a server started and taking logins; nothing for an in-process engine."""

    def load(self) -> LoadResult:
        """Load the tables once; the driver's load result."""

    def restore(self) -> None:
        """Before a write cell: the data as loaded."""

    def execute(self, statements: list[str], what: str) -> None:
        """Runs `statements` in the working database (the post-write step, a tool's sessions ended); a UserError
        naming the target and `what` when they fail."""

    def working_job(self) -> DriverJob:
        """A driver job that says where to connect (its mode and workload are the caller's to set)."""

    def env(self) -> dict[str, str]:
        """What the driver's environment needs (a password)."""

    def ensure_running(self) -> bool:
        """Start again what died; True when it had to."""

    def new_process(self) -> bool:
        """Stops the engine and starts it again as a new process on the same data (the next block of rounds of a
        run with `processes` above 1); False, doing nothing, where there is no process of the lab's to start again
        (in-process SQLite: every round is a new driver process; an external server)."""

    def restart(self) -> bool:
        """Stops the engine and starts it again on the same data, as new_process does, without counting a planned
        process: the load's own process replaced (runner/process_blocks.py); False, doing nothing, where there is
        no process of the lab's to start again."""

    def died(self) -> bool:
        """Whether the engine died (during the last cell)."""

    def log_tail(self) -> str:
        """The engine's last log lines, for a failed cell."""

    def describe(self) -> dict[str, Any]:
        """Facts for meta.json: DSN without password, port, pid, log, data directory, restarts."""

    def stop(self) -> None:
        """Stop what the lab started; on every exit path."""
