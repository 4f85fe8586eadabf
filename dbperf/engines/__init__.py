"""The engines the lab knows, by name (see engines/descriptor.py). A new engine is a new file here, listed below."""

from __future__ import annotations

from dbperf.engines.descriptor import Engine
from dbperf.engines.mariadb import MARIADB
from dbperf.engines.mysql import MYSQL
from dbperf.engines.postgres import POSTGRES
from dbperf.engines.sqlite import SQLITE
from dbperf.errors import UserError

ENGINES: dict[str, Engine] = {e.name: e for e in (SQLITE, POSTGRES, MARIADB, MYSQL)}
NAMES: tuple[str, ...] = tuple(ENGINES)
DEFAULT = SQLITE
SERVER_NAMES: tuple[str, ...] = tuple(e.name for e in ENGINES.values() if e.server)
_TITLES = [e.title for e in ENGINES.values() if e.server]
SERVER_TITLES = ", ".join(_TITLES[:-1]) + " and " + _TITLES[-1]  # for messages: "PostgreSQL, MariaDB and MySQL"


def engine(name: str) -> Engine:
    """The descriptor of a known engine (names are checked where they are read: an unknown one is a UserError)."""
    try:
        return ENGINES[name]
    except KeyError:
        raise UserError(f"unknown engine {name!r} (known: {', '.join(NAMES)})") from None


def replication_of(name: str | None) -> str | None:
    """The name of the kind of replication the lab runs on this engine's servers (dbperf/replication/kind.py), None
    for an engine it does not replicate. Results written before replication runs named their engine were MariaDB's."""
    return engine(name or MARIADB.name).replication


def of(name: str | None) -> Engine:
    """The descriptor of a name read from results (None: written before targets named their engine: SQLite)."""
    return engine(name) if name else DEFAULT
