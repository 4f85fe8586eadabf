"""Where the lab's servers keep their data directories and sockets: a private, lab-owned runtime directory, not
the user's `--out`.

`--out` can be relative, long, hold spaces or quotes, or sit under a 0700 directory that the service users
(postgres, mysql) cannot traverse; none of that may reach a server. So each run gets `BASE/run-XXXXXXXX` (mode
0711: the service users can traverse it, nobody can list it), and each server target a short `t<N>` below it
(0700, owned by the service user). BASE is `$DBPERF_RUNTIME_DIR`, else `/var/lib/dbperf` for root (on disk, not
tmpfs: the data directories must sit on the same kind of storage a real server would use), else
`$XDG_STATE_HOME/dbperf` (`~/.local/state/dbperf`). Short paths also keep PostgreSQL's Unix socket path under
its 107-byte limit. Logs and results stay in `--out`.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from dbperf.errors import UserError

ENV = "DBPERF_RUNTIME_DIR"
# The paths the lab writes into postgresql.conf and my.cnf are built from this alphabet only.
SAFE_PATH = re.compile(r"^/[A-Za-z0-9/_.+-]+$")
# The socket of a server goes in BASE/run-XXXXXXXX/tN/...: keep BASE short enough for sun_path (108 bytes).
MAX_BASE_LEN = 60


def runtime_base() -> Path:
    env = os.environ.get(ENV)
    if env:
        base = Path(env)
    elif os.geteuid() == 0:
        base = Path("/var/lib/dbperf")
    else:
        base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "dbperf"
    if not base.is_absolute():
        raise UserError(f"{ENV}={env}: must be an absolute path")
    if not SAFE_PATH.match(str(base)) or len(str(base)) > MAX_BASE_LEN:
        raise UserError(f"runtime directory {base}: use a path of at most {MAX_BASE_LEN} characters made of "
                        f"letters, digits and / _ . + - (set {ENV})")
    return base


def _traversable_by_all(path: Path) -> Path | None:
    """The first directory above or at `path` that others cannot search, if any."""
    for parent in [*reversed(path.parents), path]:
        if parent.exists() and not parent.stat().st_mode & stat.S_IXOTH:
            return parent
    return None


class RuntimeDir:
    """One run's private directory for its servers' data and sockets, removed at the end unless kept."""

    def __init__(self) -> None:
        base = runtime_base()
        try:
            base.mkdir(parents=True, exist_ok=True)
            if base.stat().st_uid == os.geteuid():
                base.chmod(0o711)  # traversable by the service users, not listable
            self.path = Path(tempfile.mkdtemp(prefix="run-", dir=base))
            self.path.chmod(0o711)
        except OSError as e:
            raise UserError(f"cannot create the lab's runtime directory in {base}: {e.strerror} (set {ENV})") from None
        blocked = _traversable_by_all(self.path)
        if blocked is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            raise UserError(f"the lab's runtime directory {self.path} is under {blocked}, which the servers' users "
                            f"cannot traverse (set {ENV} to another directory)")

    def target_dir(self, index: int) -> Path:
        return self.path / f"t{index}"

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
