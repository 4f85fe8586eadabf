"""cold-file: the opposite page-cache state, for the search (benchmarks/verdicts/states.py): the database file's
pages dropped from the page cache before the cell (fsync, then POSIX_FADV_DONTNEED; the kernel may keep pages
another process maps). Not a remedy one would want by default: every cell then starts from the disk."""

from __future__ import annotations

import os
from typing import Any

from dbperf.host.remedies import CellPlace, Remedy
from dbperf.host.remedies.warm_file import database_files


def _prepare(place: CellPlace) -> dict[str, Any]:
    if place.database is None:
        return {}
    dropped = 0
    for path in database_files(place.database):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            dropped += os.fstat(fd).st_size
        finally:
            os.close(fd)
    return {"dropped_bytes": dropped}


REMEDY = Remedy(name="cold-file", what="the database file's pages dropped from the page cache before every cell",
                prepare=_prepare, excludes=("warm-file",))
