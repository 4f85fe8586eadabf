"""SQLite: the embedded default, a library the driver loads (built by the build lab or the system's)."""

from __future__ import annotations

from dbperf.engines.descriptor import Engine, ProfileProof

SQLITE = Engine(name="sqlite", title="SQLite", server=False, row_bytes=211, load_rows_per_s=300_000,
                post_write_statements=("PRAGMA wal_checkpoint(TRUNCATE)",),
                # Measured on 3.54.1's 2,244 functions: train-mix 39.9% with a count, point-query alone 34.6% (the
                # load is most of it), a profile of nothing but opening the library 0.1%. 10% sits far from both.
                profile_proof=ProfileProof(sentinels=("sqlite3VdbeExec",), objects=("",), floor=0.10))
