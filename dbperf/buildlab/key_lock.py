"""One build of a cache key at a time, across threads and processes: an flock on LOCKS/KEY.lock, so that of
two dbperf processes building one key the second waits (said once, with the holder's pid), then finds the first's
entry whole and reuses it, instead of building beside it and replacing its files. The kernel lets go if the holder
dies, however it dies; two threads of one process, each with its own open file, exclude each other the same way."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def key_held(locks: Path, key: str, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Holds the lock of `key` in the folder `locks`; `on_wait` is told once when another holds it."""
    locks.mkdir(parents=True, exist_ok=True)
    path = locks / f"{key}.lock"
    with open(path, "a+") as held:  # an open file of its own: flock then serialises this process's threads too
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                held.seek(0)
                holder = held.read().strip() or "?"
                on_wait(f"waiting for another dbperf (pid {holder}) building the same key ({key})")
            fcntl.flock(held, fcntl.LOCK_EX)
        held.seek(0)
        held.truncate()
        held.write(f"{os.getpid()}\n")
        held.flush()
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
