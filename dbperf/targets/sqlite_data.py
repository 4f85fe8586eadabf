"""The sbtest data of a SQLite target: loaded once into a pristine file, copied to a working file before every
write cell so that each repeat of a write benchmark starts from the same data. Read cells use the working file
as the previous cells left it, which is how reads `@after-writes` see the written data."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from dbperf.catalog.schema import sbtest
from dbperf.engines.sqlite import SQLITE
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.host.driver import run_job
from dbperf.records import DriverJob, ExecResult, LoadResult

LOAD_TIMEOUT_S = 3600.0


EXEC_TIMEOUT_S = 3600.0  # a checkpoint of a large WAL


class TargetLoadFailed(UserError):
    """A SQLite target whose tables could not be loaded (a PRAGMA that does not take, mostly: the driver applies
    and checks the target's settings on every connection). That target fails; the others are measured."""


class SqliteData:
    def __init__(self, root: Path, target: Target, experiment: Experiment) -> None:
        self.dir = root / target.name
        self.target = target
        self.experiment = experiment
        self.pristine = self.dir / "pristine.db"
        self.working = self.dir / "work.db"
        self.settings = target.settings(max(experiment.threads))
        self.failed: str | None = None  # why the load failed: nothing to restore, its cells fail in the driver

    def job(self, database: Path) -> DriverJob:
        e = self.experiment
        return DriverJob(mode="run", engine=SQLITE.name, library=self.target.library, database=str(database),
                         settings=self.settings, tables=e.tables, table_size=e.table_size, seed=e.seed,
                         prepared=e.prepared)

    def load(self) -> LoadResult:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.dir.chmod(0o700)
        _remove_db(self.pristine)
        job = self.job(self.pristine).replace(mode="load", schema=sbtest(SQLITE.name))
        outcome = run_job(job, LoadResult, LOAD_TIMEOUT_S)
        if not outcome.ok or outcome.result is None:
            self.failed = (f"target {self.target.name!r}: loading the tables into {self.pristine} failed: "
                           f"{outcome.error}")
            raise TargetLoadFailed(self.failed)
        self.restore()
        return outcome.result

    def restore(self) -> None:
        self.restore_to(self.working)

    def restore_to(self, path: Path) -> None:
        """The pristine data copied to `path` (the working file, or a profiler's own copy)."""
        if self.failed:
            return  # nothing was loaded; the cells fail when the driver connects, as the load did
        _remove_db(path)
        shutil.copyfile(self.pristine, path)

    # The same surface as a server target, so that the matrix treats every target alike.
    def start(self) -> None:
        """Nothing to start: the engine runs inside the driver."""

    def stop(self) -> None:
        """Nothing to stop."""

    def working_job(self) -> DriverJob:
        return self.job(self.working)

    def execute(self, statements: list[str], what: str) -> None:
        outcome = run_job(self.working_job().replace(mode="exec", statements=statements), ExecResult, EXEC_TIMEOUT_S)
        if not outcome.ok:
            raise UserError(f"target {self.target.name!r}: {what} failed: {outcome.error}")

    def env(self) -> dict[str, str]:
        return {}

    def ensure_running(self) -> bool:
        return False

    def new_process(self) -> bool:
        return False  # the engine lives in the driver, a new process every round

    def restart(self) -> bool:
        return False

    def died(self) -> bool:
        return False

    def log_tail(self) -> str:
        return ""

    def describe(self) -> dict[str, Any]:
        return {}


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(path) + suffix).unlink(missing_ok=True)
