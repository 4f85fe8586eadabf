"""SQLite: the embedded default, a library the driver loads (built by the build lab or the system's)."""

from __future__ import annotations

from dbperf.engines.descriptor import Engine

SQLITE = Engine(name="sqlite", title="SQLite", server=False, row_bytes=211, load_rows_per_s=300_000,
                post_write_statements=("PRAGMA wal_checkpoint(TRUNCATE)",))
