"""A watchdog that stops the lab's servers and removes their runtime directory when the lab dies without doing so
(SIGKILL, OOM killer, a crash in the interpreter).

The lab starts it once, in a session of its own, with a pipe as its standard input, and tells it line by line what
to clean up: `+group PGID` / `-group PGID` for a server's process group, `+dir PATH` / `-dir PATH` for a directory.
The write end is held by the lab only, so end of file means the lab is gone, however it went. What is still
registered then is stopped (TERM, KILL after a grace period) and removed. A lab that ends normally has already
unregistered everything, and the watchdog exits with nothing to do.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

GRACE_S = 10.0


class Watchdog:
    """The lab's side: started on first use, one per lab process."""

    _instance: Watchdog | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        package_root = str(Path(__file__).resolve().parents[2])
        env = {k: v for k, v in os.environ.items() if "PASSWORD" not in k}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen([sys.executable, "-m", "dbperf.servers.watchdog"], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                     cwd="/", env=env, text=True, close_fds=True)

    @classmethod
    def get(cls) -> Watchdog:
        with cls._lock:
            if cls._instance is None or cls._instance.proc.poll() is not None:
                cls._instance = Watchdog()
            return cls._instance

    def _say(self, line: str) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ValueError):
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()

    def watch_group(self, pgid: int) -> None:
        self._say(f"+group {pgid}")

    def forget_group(self, pgid: int) -> None:
        self._say(f"-group {pgid}")

    def watch_dir(self, path: Path) -> None:
        self._say(f"+dir {path}")

    def forget_dir(self, path: Path) -> None:
        self._say(f"-dir {path}")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_up(groups: set[int], dirs: set[str]) -> None:
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while any(_group_alive(g) for g in groups) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    for path in dirs:
        shutil.rmtree(path, ignore_errors=True)


def main() -> None:
    # The lab's terminal going away or a Ctrl-C is the lab's business; the watchdog acts on end of file only.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    groups: set[int] = set()
    dirs: set[str] = set()
    for line in sys.stdin:
        verb, _, arg = line.rstrip("\n").partition(" ")
        if verb == "+group":
            groups.add(int(arg))
        elif verb == "-group":
            groups.discard(int(arg))
        elif verb == "+dir":
            dirs.add(arg)
        elif verb == "-dir":
            dirs.discard(arg)
    clean_up(groups, dirs)


if __name__ == "__main__":
    main()
