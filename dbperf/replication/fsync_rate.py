"""The fdatasync rate of the device under the servers' data directories: it bounds what a durable replica can
commit per second ([Nielsen 2017-05-12] measured 120/s on its SATA SSD the same way: 16 KB blocks written at random,
round robin among five 1 MB files, fdatasync after each write)."""

from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path

FILES = 5
FILE_BYTES = 1 << 20
BLOCK = 16 << 10


def fdatasync_rate(directory: Path, seconds: float = 2.0) -> float:
    """fdatasync calls per second in `directory` (a scratch folder in it is removed afterwards)."""
    work = directory / "fdatasync-probe"
    work.mkdir(parents=True, exist_ok=True)
    fds = []
    try:
        for i in range(FILES):
            fd = os.open(work / f"f{i}", os.O_RDWR | os.O_CREAT, 0o600)
            fds.append(fd)
            os.write(fd, b"\0" * FILE_BYTES)
            os.fsync(fd)
        rng = random.Random(1)
        block = os.urandom(BLOCK)
        calls = 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            fd = fds[calls % FILES]
            os.pwrite(fd, block, rng.randrange(FILE_BYTES // BLOCK) * BLOCK)
            os.fdatasync(fd)
            calls += 1
        return calls / (time.perf_counter() - started)
    finally:
        for fd in fds:
            os.close(fd)
        shutil.rmtree(work, ignore_errors=True)
