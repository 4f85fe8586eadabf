"""Whether a results folder (--out) can be written where it is asked for, looked at before anything is built,
fetched or measured: a read-only file system is said as such, not as a folder that is not writable, nor found by
an estimate as "more data than the free disk" (a read-only mount has none free)."""

from __future__ import annotations

import os
from pathlib import Path

from dbperf.errors import UserError


def check_writable(directory: Path) -> None:
    """A UserError naming the nearest existing folder when `directory` cannot be written (a read-only file system,
    no permission, a file where a parent directory should be)."""
    existing = next(p for p in (directory, *directory.parents) if p.exists())
    if not existing.is_dir():
        raise UserError(f"--out {directory}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        try:
            read_only = bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
        except OSError:
            read_only = False
        raise UserError(f"--out {directory}: cannot write there: {existing} "
                        + ("is on a read-only file system" if read_only else "is not writable"))
