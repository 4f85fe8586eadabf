"""The results store: every run's figures, one row per (run, target, benchmark, threads), in a SQLite file (Python's
sqlite3; one file, no server). Where: `$DBPERF_HISTORY`, else `$XDG_DATA_HOME/dbperf/history.sqlite`
(`~/.local/share/dbperf/history.sqlite`); `DBPERF_HISTORY=off` records nothing.

A row is keyed by what makes two figures comparable: engine, engine version, build (flags, PGO, release), config
(settings and process variant), host, benchmark and threads; it keeps the summary of the repeats (center, min, max,
CI, every repeat's QPS, so that later comparisons can test significance), rQPS against its run's base, the verdict
fields where the run had them, CPU and latency. A run is identified by its start time, host, experiment and
targets, so adding the same directory twice records it once."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dbperf import engines
from dbperf.errors import UserError
from dbperf.records import SimulatedRecord
from dbperf.run_meta import MetaError, RunMeta, TargetMeta, encode_file, run_meta
from dbperf.stats.cell_verdict import cell_verdict
from dbperf.stats.rqps_matrix import Matrix, build_matrix
from dbperf.storage.results import read_results

SCHEMA_VERSION = 2  # 2: results.simulated (the simulated tier); a version-1 store is upgraded in place when opened
# The store's marker: SQLite's application_id (the bytes "dbpH") and a one-row table of the schema version. A file
# without them is another program's database and is never written.
APPLICATION_ID = 0x64627048
MARKER_TABLE = "dbperf_history_schema"
SQLITE_HEADER = b"SQLite format 3\x00"
SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    run_key TEXT NOT NULL UNIQUE,
    directory TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    status TEXT,
    host TEXT NOT NULL,
    experiment TEXT,
    base TEXT,
    aggregate TEXT,
    added_at TEXT NOT NULL,
    meta TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    target TEXT NOT NULL,
    engine TEXT NOT NULL,
    version TEXT NOT NULL,
    build TEXT NOT NULL,
    config TEXT NOT NULL,
    host TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    threads INTEGER NOT NULL,
    n INTEGER NOT NULL,
    failed_runs INTEGER NOT NULL,
    qps_center REAL,
    qps_min REAL,
    qps_max REAL,
    qps_ci_low REAL,
    qps_ci_high REAL,
    qps_runs TEXT NOT NULL,
    rqps REAL,
    verdict TEXT,
    decided_by TEXT,
    p_value REAL,
    cpu_us_per_query REAL,
    p99_us REAL,
    simulated TEXT
);
CREATE INDEX IF NOT EXISTS results_key ON results (engine, benchmark, threads, host, build, config, version);
"""
COLUMNS = ("run_id", "target", "engine", "version", "build", "config", "host", "benchmark", "threads", "n",
           "failed_runs", "qps_center", "qps_min", "qps_max", "qps_ci_low", "qps_ci_high", "qps_runs", "rqps",
           "verdict", "decided_by", "p_value", "cpu_us_per_query", "p99_us", "simulated")
# What each schema version added, so that an older store is upgraded (and one from before the marker recognised).
ADDED = {2: (("results", "simulated", "TEXT"),)}


def history_path() -> Path | None:
    """The store's file, or None when recording is off."""
    value = os.environ.get("DBPERF_HISTORY")
    if value == "off":
        return None
    if value == "":
        raise UserError("DBPERF_HISTORY is set but empty: give the store's file, or 'off' to record nothing (unset "
                        "it for the default)")
    if value is not None:
        return Path(value).expanduser()
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "dbperf" / "history.sqlite"


@dataclass(frozen=True)
class Run:
    id: int
    directory: str
    started_at: str | None
    status: str | None
    host: str
    experiment: str | None
    base: str | None
    targets: int
    benchmarks: int
    rows: int


@dataclass(frozen=True)
class Result:
    run_id: int
    started_at: str | None
    target: str
    engine: str
    version: str
    build: str
    config: str
    host: str
    benchmark: str
    threads: int
    n: int
    qps_center: float | None
    qps_runs: list[float]
    rqps: float | None
    verdict: str | None
    p_value: float | None
    # the simulated tier's counters per query of (target, benchmark), one thread (runner/simulated_tier.py), where
    # the run measured them: instructions, estimated_cycles, i1_misses, ...; None where it did not
    simulated: dict[str, float] | None = None
    base: str | None = None  # the run's base target (what `verdict` is against)


def build_text(info: TargetMeta) -> str:
    build = info.build or {}
    if build.get("release"):
        r = build["release"]
        return f"release {r.get('engine')}@{r.get('version')}"
    if not build:
        return "as installed" if info.library or info.binaries else "external"
    parts = list(build.get("flags") or []) or [str(build.get("label") or "")]
    if build.get("pgo"):
        parts.append("pgo:" + ",".join((build["pgo"] or {}).get("training_set", [])))
    return " ".join(p for p in parts if p)


def config_text(info: TargetMeta) -> str:
    parts = sorted(f"{k}={v}" for k, v in info.settings or [])
    parts += sorted(f"{k}={v}" for k, v in (info.process_variant or {}).items()
                    if k in ("allocator", "hugepages") and v)
    return " ".join(parts) or "default"


def run_key(meta: RunMeta) -> str:
    ident = [meta.started_at, meta.hostname, meta.experiment, meta.target_names]
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:32]


def _tables(db: sqlite3.Connection) -> dict[str, list[str]]:
    """Every table of the file with its column names (SQLite's own tables left out)."""
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                                      "'sqlite_%' ORDER BY name")]
    return {n: [c[1] for c in db.execute(f"PRAGMA table_info({json.dumps(n)})")] for n in names}


def _own_tables(version: int = SCHEMA_VERSION) -> dict[str, list[str]]:
    """dbperf's tables and columns as schema `version` had them (SCHEMA made in a scratch in-memory database, less
    the columns added after `version`)."""
    scratch = sqlite3.connect(":memory:")
    try:
        scratch.executescript(SCHEMA)
        tables = _tables(scratch)
    finally:
        scratch.close()
    for later, added in ADDED.items():
        if later > version:
            for table, column, _ in added:
                tables[table].remove(column)
    return tables


def _check_marker(db: sqlite3.Connection, path: Path) -> int | None:
    """The schema version of dbperf's store in the file: its marker's (application_id and the schema table), or
    None when it is empty or a store of the first dbperf versions, which had no marker, with exactly their tables
    (those get the marker). A version newer than this dbperf's, or anything else, is refused before a byte of it
    is written."""
    app_id = db.execute("PRAGMA application_id").fetchone()[0]
    tables = _tables(db)
    if app_id == APPLICATION_ID:
        rows = db.execute(f"SELECT version FROM {MARKER_TABLE}").fetchall() if MARKER_TABLE in tables else []
        if len(rows) != 1 or not isinstance(rows[0][0], int):
            raise UserError(f"{path}: a dbperf history store without its schema version (damaged?); not opened")
        if not 1 <= rows[0][0] <= SCHEMA_VERSION:
            raise UserError(f"{path}: history schema version {rows[0][0]} is not one this dbperf reads "
                            f"({SCHEMA_VERSION}); a newer dbperf wrote it")
        return int(rows[0][0])
    if app_id != 0:
        raise UserError(f"{path}: another program's SQLite database (application_id {app_id:#010x}), not a dbperf "
                        "history store; not opened (set DBPERF_HISTORY to another file)")
    if not tables:
        return None
    if tables == _own_tables(1) and db.execute("PRAGMA user_version").fetchone()[0] in (0, 1):
        return None  # written by a dbperf from before the marker: adopted
    raise UserError(f"{path}: a SQLite database that is not a dbperf history store (tables: "
                    f"{', '.join(sorted(tables))}); not opened (set DBPERF_HISTORY to another file)")


def _upgrade(db: sqlite3.Connection) -> None:
    """Adds what later schema versions added to a store that lacks it (a version-1 store: results.simulated)."""
    tables = _tables(db)
    for added in ADDED.values():
        for table, column, kind in added:
            if column not in tables.get(table, []):
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def _check_file(path: Path) -> None:
    """A file that is there must be a SQLite database: sqlite3 would otherwise open it lazily and fail later."""
    try:
        with path.open("rb") as f:
            header = f.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return
    if header and header != SQLITE_HEADER:
        raise UserError(f"{path}: not a SQLite database, so not a dbperf history store; not opened (set "
                        "DBPERF_HISTORY to another file)")


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            if path.is_dir():
                raise UserError(f"{path}: a directory, not a history store file (DBPERF_HISTORY names the file)")
            _check_file(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path)
        except (OSError, sqlite3.Error) as e:
            raise UserError(f"{path}: cannot open the history store: {e}") from None
        try:
            version = _check_marker(self.db, path)
            self.db.execute("PRAGMA foreign_keys = ON")
            if version is None:
                self.db.executescript(SCHEMA)  # IF NOT EXISTS throughout: two dbperfs creating it at once agree
            if version != SCHEMA_VERSION:
                with self.db:
                    _upgrade(self.db)
                    self.db.execute(f"CREATE TABLE IF NOT EXISTS {MARKER_TABLE} (id INTEGER PRIMARY KEY CHECK "
                                    "(id = 1), version INTEGER NOT NULL)")
                    self.db.execute(f"INSERT OR REPLACE INTO {MARKER_TABLE} (id, version) VALUES (1, ?)",
                                    (SCHEMA_VERSION,))
                    self.db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.Error as e:
            self.db.close()
            raise UserError(f"{path}: cannot open the history store: {e}") from None
        except UserError:
            self.db.close()
            raise

    def close(self) -> None:
        self.db.close()

    def add_run(self, directory: Path) -> tuple[int, bool]:
        """(run id, True when newly recorded or recorded again). Reads the directory as `dbperf report` does. A run
        recorded before and measured further since (`--resume`, `--extend`: the same start, a later finish) replaces
        its earlier figures under the same id: the history holds what the run's directory says now."""
        meta, records, _ = read_results(directory)
        matrix = build_matrix(meta, records)
        key = run_key(meta)
        with self._tx():
            row = self.db.execute("SELECT id, finished_at FROM runs WHERE run_key = ?", (key,)).fetchone()
            if row and row[1] == meta.finished_at:
                return int(row[0]), False
            if row:
                self.db.execute("DELETE FROM results WHERE run_id = ?", (row[0],))
                self.db.execute("DELETE FROM runs WHERE id = ?", (row[0],))
            cur = self.db.execute(
                "INSERT INTO runs (id, run_key, directory, started_at, finished_at, status, host, experiment, base, "
                "aggregate, added_at, meta) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (row[0] if row else None, key, str(directory.absolute()), meta.started_at, meta.finished_at,
                 meta.status, meta.hostname,
                 meta.experiment, meta.base, matrix.aggregate, datetime.now(UTC).isoformat(timespec="seconds"),
                 encode_file(meta).decode()))
            run_id = int(cur.lastrowid or 0)
            self.db.executemany(f"INSERT INTO results ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                                list(_rows(run_id, matrix, meta, records)))
        return run_id, True

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        try:
            with self.db:
                yield
        except sqlite3.Error as e:
            raise UserError(f"{self.path}: cannot write the history store: {e}") from None

    def runs(self) -> list[Run]:
        rows = self.db.execute(
            "SELECT r.id, r.directory, r.started_at, r.status, r.host, r.experiment, r.base, "
            "COUNT(DISTINCT x.target), COUNT(DISTINCT x.benchmark), COUNT(x.id) "
            "FROM runs r LEFT JOIN results x ON x.run_id = r.id GROUP BY r.id ORDER BY r.started_at, r.id").fetchall()
        return [Run(*row) for row in rows]

    def meta(self, run_id: int) -> RunMeta:
        """The run's meta.json as it was recorded, upgraded like a results directory's (run_meta.py)."""
        row = self.db.execute("SELECT meta FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise UserError(f"{self.path}: no run {run_id} in the history (dbperf history list shows them)")
        try:
            return run_meta(json.loads(row[0]))
        except MetaError as e:
            raise UserError(f"{self.path}: run {run_id}'s recorded meta.json: {e}") from None

    def results(self, run_id: int | None = None, **equal: Any) -> list[Result]:
        """Stored results, optionally of one run and with columns equal to the given values (None: any)."""
        where, args = [], []
        if run_id is not None:
            where.append("x.run_id = ?")
            args.append(run_id)
        for column, value in equal.items():
            if value is not None:
                assert column in COLUMNS, column
                where.append(f"x.{column} = ?")
                args.append(value)
        sql = ("SELECT x.run_id, r.started_at, x.target, x.engine, x.version, x.build, x.config, x.host, "
               "x.benchmark, x.threads, x.n, x.qps_center, x.qps_runs, x.rqps, x.verdict, x.p_value, x.simulated, "
               "r.base FROM results x JOIN runs r ON r.id = x.run_id"
               + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY r.started_at, x.run_id, x.id")
        names = [f.name for f in fields(Result)]
        return [Result(**{**dict(zip(names, row, strict=True)), "qps_runs": json.loads(row[12]),
                          "simulated": json.loads(row[16]) if row[16] else None})
                for row in self.db.execute(sql, args)]


def _rows(run_id: int, m: Matrix, meta: RunMeta, records: Iterable[object]) -> Iterator[tuple[Any, ...]]:
    info = {t.name: t for t in meta.targets}
    host = meta.hostname
    # one thread's counts, on every thread count's row of the (target, benchmark), as the run's report shows them
    simulated = {(r.target, r.benchmark): json.dumps(r.per_query) for r in records
                 if isinstance(r, SimulatedRecord) and not r.error and r.per_query}
    for _, benchmark, threads in m.rows():
        for target in m.targets:
            cell = m.cell(target, benchmark, threads)
            if cell is None:
                continue
            t = info.get(target) or TargetMeta(name=target)
            q = cell.qps
            v = cell_verdict(m, cell)
            engine = t.engine or engines.DEFAULT.name
            yield (run_id, target, engine, t.engine_version or "unknown",
                   build_text(t), config_text(t), host, benchmark, threads, q.n if q else 0, len(cell.failures),
                   q.center if q else None, q.minimum if q else None, q.maximum if q else None,
                   q.ci_low if q else None, q.ci_high if q else None, json.dumps(cell.per_run("qps")), cell.rqps,
                   v.word, v.decided_by, cell.p_value, cell.median_of("cpu_us_per_query"), cell.median_of("p99_us"),
                   simulated.get((target, benchmark)))


def open_store(path: Path | None = None) -> Store:
    chosen = path or history_path()
    if chosen is None:
        raise UserError("DBPERF_HISTORY=off: the history store is turned off")
    return Store(chosen)
