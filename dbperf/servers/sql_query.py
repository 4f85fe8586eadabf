"""Reading rows from a server target (engine counters, a flush's progress). The driver's `exec` mode runs the lab's
set-up statements but returns no rows, so queries go through the engine's own command-line client (Debian's `psql`
and `mariadb`, installed with the servers): an argument list, never a shell, the password in the client's
environment (PGPASSWORD, MYSQL_PWD), never on its command line. Output is tab-separated text, one row a line."""

from __future__ import annotations

import shutil

from dbperf import engines
from dbperf.errors import UserError
from dbperf.servers.lifecycle import ServerTarget
from dbperf.servers.process import server_environ
from dbperf.tools import run_tool

QUERY_TIMEOUT_S = 120.0


def client_available(engine: str) -> bool:
    client = engines.engine(engine).client
    return client is not None and shutil.which(client) is not None


def client_argv(server: ServerTarget, database: str | None, sql: str) -> tuple[list[str], dict[str, str]]:
    """The client's command line and the environment additions (the password) for `sql` against `server`."""
    argv = engines.engine(server.engine).client_argv
    if argv is None:
        raise UserError(f"target {server.target.name!r}: {server.engine} has no command-line client")
    return argv(server.dsn(database), server.password or "", sql)


def query(server: ServerTarget, sql: str, database: str | None = None) -> list[list[str]]:
    """The rows of `sql` as lists of strings; a UserError naming the target when the client fails."""
    argv, extra = client_argv(server, database, sql)
    proc = run_tool(argv, f"target {server.target.name!r}: {argv[0]}", timeout=QUERY_TIMEOUT_S,
                    env=server_environ(extra))
    return [line.split("\t") for line in proc.stdout.splitlines() if line]
