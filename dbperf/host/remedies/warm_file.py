"""warm-file: the database file (and its WAL) read whole into the page cache before the cell, so that no cell begins
with its first reads served from the disk while another found them cached. The engine does the same work; only
where its bytes come from on first touch changes."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from dbperf.host.remedies import CellPlace, Remedy

CHUNK = 1 << 20


def database_files(database: Path) -> list[Path]:
    return [p for p in (database, Path(f"{database}-wal")) if p.is_file()]


def _prepare(place: CellPlace) -> dict[str, Any]:
    if place.database is None:
        return {}
    started, read = time.monotonic(), 0
    for path in database_files(place.database):
        with path.open("rb", buffering=0) as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_WILLNEED)
            while chunk := f.read(CHUNK):
                read += len(chunk)
    return {"read_bytes": read, "read_s": round(time.monotonic() - started, 4)}


REMEDY = Remedy(name="warm-file", what="the database file read whole into the page cache before every cell",
                prepare=_prepare, excludes=("cold-file",))
