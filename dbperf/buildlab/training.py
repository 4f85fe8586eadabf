"""PGO training: what a training set is, and running it through dbperf-driver against an instrumented library."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Any

from dbperf.catalog.registry import resolve
from dbperf.catalog.schema import sbtest
from dbperf.catalog.workload import Workload, compile_statements, parse_workload_file
from dbperf.engines.sqlite import SQLITE
from dbperf.errors import UserError
from dbperf.experiment.build_variants import DEFAULT_TRAIN_SECONDS
from dbperf.host.driver import run_job
from dbperf.records import DriverJob, LoadResult, RunResult

TRAINING_DIR = Path(__file__).resolve().parents[1] / "catalog" / "training"
TRAIN_TABLES = 2
TRAIN_TABLE_SIZE = 20_000


def training_workloads(names: tuple[str, ...], base_dir: Path | None = None) -> list[Workload]:
    """Training-only workloads (catalog/training) first, then whatever the catalog resolves (names, files)."""
    out = []
    for name in names:
        own = TRAINING_DIR / f"{name}.toml"
        if own.is_file():
            out.extend(parse_workload_file(own))
        else:
            out.extend(resolve([name], base_dir or Path.cwd(), "pgo_train"))
    return out


def training_identity(workloads: list[Workload], seconds: float = DEFAULT_TRAIN_SECONDS) -> list[dict[str, Any]]:
    """What the build cache key needs to know of the training set: names, the exact statements, and how long each
    runs."""
    return [{"name": w.name, "statements": hashlib.sha256(repr(w.statements).encode()).hexdigest()[:16],
             "seconds": float(seconds), "tables": TRAIN_TABLES, "table_size": TRAIN_TABLE_SIZE} for w in workloads]


def _client_log(log: Path | None, what: str, stderr_tail: str) -> None:
    """What a training driver printed on stderr (the instrumented library's libgcov speaks there at exit), for the
    profile's proof (profile_proof.py)."""
    if log is not None:
        with open(log, "a") as f:
            f.write(f"== {what}\n{stderr_tail}\n")


def run_training(library: Path, workloads: list[Workload], seconds: float = DEFAULT_TRAIN_SECONDS,
                 log: Path | None = None) -> list[dict[str, Any]]:
    """Loads a small database with the instrumented library, then runs every training workload for `seconds`, half
    with prepared statements and half without. The instrumented library writes its profile when each driver process
    exits; what each driver printed on stderr is appended to `log`."""
    runs = []
    with tempfile.TemporaryDirectory(prefix="dbperf-train-") as tmp:
        db = Path(tmp) / "train.db"
        base = DriverJob(mode="run", engine=SQLITE.name, library=str(library), database=str(db),
                         settings=[("journal_mode", "WAL")], tables=TRAIN_TABLES, table_size=TRAIN_TABLE_SIZE, seed=7)
        loaded = run_job(base.replace(mode="load", schema=sbtest(SQLITE.name)), LoadResult, 600)
        _client_log(log, "load", loaded.stderr_tail)
        if not loaded.ok:
            raise UserError(f"PGO training: loading with the instrumented library failed: {loaded.error}")
        for w in workloads:
            for prepared in (True, False):
                job = base.replace(mode="run", threads=1, time_s=seconds / 2, warmup_s=0.0, prepared=prepared,
                                   workload=compile_statements(w, TRAIN_TABLE_SIZE))
                outcome = run_job(job, RunResult, seconds + 120)
                _client_log(log, f"{w.name} prepared={prepared}", outcome.stderr_tail)
                if not outcome.ok or outcome.result is None:
                    raise UserError(f"PGO training run {w.name} failed: {outcome.error}")
                runs.append({"workload": w.name, "prepared": prepared, "events": outcome.result.events,
                             "errors": outcome.result.errors, "seconds": outcome.result.duration_s})
    return runs
