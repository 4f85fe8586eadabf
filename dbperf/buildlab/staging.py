"""Staging directories of server builds, and what an interrupted build leaves behind.

A build runs in a hidden staging directory beside the cache entries and is renamed into its entry only when
complete, so a lookup never sees half a build. What remains to be cleaned is the staging directory itself:

- On Ctrl-C, SIGTERM or an error, every process of the build's session is killed before the directory is removed.
  Killing the build tool's process group is not enough: ninja starts each compiler in a process group of its own,
  and compilers left running would write objects into the tree while it is being removed (the previous behaviour
  left a half-removed staging directory after a SIGTERM).
- A build killed outright (SIGKILL, a crash, a power cut) runs no clean-up at all. Each staging directory holds a
  lock (flock) for as long as its build process lives; the next build sweeps every staging directory whose lock
  nobody holds. The kernel drops the lock when the process dies, however it dies, and a build of another user or
  another checkout running at the same time keeps its lock, so it is never swept.

A resumable build (a recipe whose build tool resumes safely: resume.py) stages in `.KEY.partial` instead, one per
key: interrupted or killed, it is kept for the next build of that key to resume, and swept only once nobody has
touched it for PARTIAL_KEPT_S. A second build of the same key while the first runs is refused in one line.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import IO

from dbperf.errors import UserError
from dbperf.host.procfs import session_members

LOCK = "owner.lock"
OLD_WITHOUT_LOCK_S = 24 * 3600  # staging directories made before locks existed: swept once this old
PARTIAL = ".partial"
PARTIAL_KEPT_S = 14 * 24 * 3600  # a resumable build nobody resumed for two weeks: its gigabytes are given back


def kill_session(sid: int, timeout_s: float = 30.0) -> list[int]:
    """SIGKILLs every process of session `sid` (a build tool started with start_new_session, and whatever it
    started in other process groups) until none is left running; the pids that were killed."""
    killed: list[int] = []
    deadline = time.monotonic() + timeout_s
    while members := session_members(sid):
        for pid in members:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            if pid not in killed:
                killed.append(pid)
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return killed


class Staging:
    """A staging directory under `parent` named .KEY-xxxx (or .KEY.partial when `resumable`: the same one for every
    build of that key), locked for the life of this process."""

    def __init__(self, parent: Path, key: str, resumable: bool = False) -> None:
        self._lock: IO[str] | None
        if resumable:
            self.path = parent / f".{key}{PARTIAL}"
            self.path.mkdir(exist_ok=True)
            self._lock = _take(self.path / LOCK)
            return
        self.path = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=parent))
        # Locked under a temporary name, then renamed: a sweep only tries `owner.lock`, which is locked from the
        # moment it exists.
        pending = self.path / f".{LOCK}.pending"
        self._lock = open(pending, "w")  # noqa: SIM115 - held until release()
        fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._lock.write(f"{os.getpid()}\n")
        self._lock.flush()
        os.replace(pending, self.path / LOCK)

    def remove(self) -> None:
        """Removes the directory (retrying: a process killed a moment ago may still have been writing into it),
        then drops the lock."""
        for _ in range(5):
            shutil.rmtree(self.path, ignore_errors=True)
            if not self.path.exists():
                break
            time.sleep(0.2)
        self.release()

    def release(self) -> None:
        """Drops the lock and leaves the directory: a resumable build kept for its next run."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def _take(lock: Path) -> IO[str]:
    """The lock of a resumable build's directory, taken; a UserError when another build holds it. Retried for a
    moment: a sweep holds it briefly while it looks."""
    f = open(lock, "a+")  # noqa: SIM115 - held until release()
    for attempt in range(20):
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if attempt == 19:
                f.seek(0)
                holder = f.read().strip() or "?"
                f.close()
                raise UserError(f"another dbperf (pid {holder}) is building this server into {lock.parent}: wait "
                                "for it to finish, or stop it") from None
            time.sleep(0.1)
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    return f


def sweep_abandoned(parent: Path) -> list[Path]:
    """Removes the staging directories under `parent` whose build process is gone; the ones removed."""
    swept = []
    for path in parent.glob(f".*{PARTIAL}"):
        if path.is_dir() and _untouched_for(path) > PARTIAL_KEPT_S and _remove_if_unlocked(path):
            swept.append(path)
    for path in parent.glob(".*-*"):
        if not path.is_dir() or path.name.endswith(PARTIAL):
            continue
        if (path / LOCK).exists():
            if not _remove_if_unlocked(path):
                continue
        elif time.time() - path.stat().st_mtime > OLD_WITHOUT_LOCK_S:
            shutil.rmtree(path, ignore_errors=True)
        else:
            continue  # being created right now, or left by an older version of the lab not long ago
        swept.append(path)
    return swept


def _untouched_for(path: Path) -> float:
    """Seconds since the directory or anything directly in it (a resumable build's state file) last changed."""
    newest = max((p.stat().st_mtime for p in [path, *path.iterdir()]), default=path.stat().st_mtime)
    return time.time() - newest


def _remove_if_unlocked(path: Path) -> bool:
    """Removes `path` unless its build holds its lock (or it has none: being made, or removed meanwhile by its own
    build); whether it did."""
    try:
        with open(path / LOCK) as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(path, ignore_errors=True)  # still holding the lock: nobody takes it meanwhile
            return True
    except (BlockingIOError, FileNotFoundError):
        return False
