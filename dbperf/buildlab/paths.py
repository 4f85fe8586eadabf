"""Where the lab keeps what it fetches and builds: $DBPERF_CACHE, else ~/.cache/dbperf."""

from __future__ import annotations

import os
from pathlib import Path

from dbperf.errors import UserError


def cache_root() -> Path:
    root = Path(os.environ.get("DBPERF_CACHE") or Path.home() / ".cache" / "dbperf")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"{root}: cannot create the build cache: {e.strerror} (set DBPERF_CACHE)") from None
    return root


def server_cache() -> Path:
    """Server installs (releases, builds): $DBPERF_SERVER_CACHE, else /var/cache/dbperf/servers. Not under the
    user's home: the servers run as the postgres and mysql users, who must reach the install through every parent
    directory."""
    root = Path(os.environ.get("DBPERF_SERVER_CACHE") or "/var/cache/dbperf/servers").absolute()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"{root}: cannot create the server cache: {e.strerror} (set DBPERF_SERVER_CACHE)") from None
    closed = next((p for p in (root, *root.parents) if not p.stat().st_mode & 0o001), None)
    if closed is not None:
        raise UserError(f"{root}: the server cache must be reachable by the servers' users, but {closed} is not "
                        "searchable by others (chmod o+x it, or set DBPERF_SERVER_CACHE elsewhere)")
    return root


def open_to_service_users(root: Path) -> None:
    """A server install is run by the postgres or mysql user: readable and traversable by all (never writable)."""
    for dirpath, _, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            path = Path(dirpath) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o444)
