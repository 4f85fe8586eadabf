"""A run in the lab, as a context: what the run starts, writes and must put back, owned in one place and finished on
every exit path (an error, Ctrl-C, TERM or HUP through runner/interrupts.py; the watchdog when the lab is killed
hard). The matrix (matrix.py) and the fleet's host run through it; the replication lab can too.

    with LabRun(out, console, keep_data=..., servers=True) as lab:   # the runtime folder, when servers are started
        things = open_things(lab.runtime)   # anything that can refuse the run, before anything is written
        lab.claim()                         # the results writer: `out` is the run's (--resume: reopened)
        lab.own(*things)                    # stopped at the finish, whatever happens
        progress = lab.start(meta, text)    # meta.json and experiment.toml written; the progress display
        ... lab.keep(record, ok), lab.set_target(name, ...), lab.save() ...
    lab.outcome                             # cells ok and failed, the runtime folder

The finish, in order: the progress display stopped; everything owned stopped; the lab's own data (`out/.data`) and
the runtime folder removed (unless `keep_data`); the run's status recorded (complete, interrupted, failed) in the
last meta.json and the writer closed. A run refused before it claimed `out` leaves nothing behind."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeRemainingColumn

from dbperf.records import ResultsRecord
from dbperf.run_meta import RunMeta, TargetMeta
from dbperf.servers.runtime import RuntimeDir
from dbperf.servers.watchdog import Watchdog
from dbperf.storage.results import ResultsWriteError, ResultsWriter, close_run

DATA = ".data"  # the lab's own SQLite files in the results directory: the lab created them, so they are its to remove


def matrix_columns() -> Sequence[ProgressColumn | str]:
    return (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())


class Stoppable(Protocol):
    def stop(self) -> None: ...


@dataclass
class RunOutcome:
    directory: Path
    cells_ok: int = 0
    cells_failed: int = 0
    runtime_dir: Path | None = None  # where the servers' data directories were (kept with --keep-data)


def say(console: Console, line: str) -> None:
    """One line of the lab's on the console, as written (no markup, no highlighting)."""
    console.print(line, markup=False, highlight=False, soft_wrap=True)


class LabRun:
    """See the module's docstring. `servers`: the run starts servers (a runtime folder for their data and sockets);
    `on_record`: called with every record kept (the fleet's host forwards them)."""

    def __init__(self, out: Path, console: Console, *, keep_data: bool = False, servers: bool = False,
                 on_record: Callable[[Any], None] | None = None) -> None:
        self.out = out.absolute()  # servers and tools run with another working directory
        self.console = console
        self.keep_data = keep_data
        self.servers = servers
        self.on_record = on_record
        self.runtime: RuntimeDir | None = None
        self.writer: ResultsWriter | None = None
        self.meta: RunMeta | None = None
        self.progress: Progress | None = None
        self.outcome = RunOutcome(self.out)
        self._owned: list[Stoppable] = []
        self._watched = False

    @property
    def data_root(self) -> Path:
        return self.out / DATA

    # -- opening

    def __enter__(self) -> LabRun:
        if self.servers:
            self.runtime = RuntimeDir()
            self.outcome.runtime_dir = self.runtime.path
        return self

    def claim(self, reopen: bool = False) -> ResultsWriter:
        """`out` made the run's: a new or empty directory, or (`reopen`) the run this one goes on with."""
        self.writer = ResultsWriter.reopen(self.out) if reopen else ResultsWriter(self.out)
        if self.runtime is not None and not self.keep_data:
            Watchdog.get().watch_dir(self.runtime.path)  # removed even if the lab is killed hard
            self._watched = True
        return self.writer

    def own(self, *things: Stoppable) -> None:
        """Things the run started (or will start): each is stopped at the finish."""
        self._owned.extend(things)

    def start(self, meta: RunMeta, experiment_text: str,
              columns: Sequence[ProgressColumn | str] | None = None) -> Progress:
        """The run begins: its meta.json (the runtime folder named in it) and experiment file written, its status
        recorded from now on, the progress display started."""
        assert self.writer is not None, "claim() first"
        if self.runtime is not None:
            meta.runtime_dir = str(self.runtime.path)
        self.meta = meta
        self.writer.write_meta(meta, experiment_text)
        self.progress = Progress(*(columns or matrix_columns()), console=self.console, transient=True)
        self.progress.start()
        return self.progress

    # -- during the run

    def save(self) -> None:
        """meta.json written as it is now."""
        assert self.writer is not None and self.meta is not None
        self.writer.update_meta(self.meta)

    def set_target(self, name: str, **changes: Any) -> TargetMeta:
        """A target's part of meta.json changed and written."""
        assert self.meta is not None
        part = self.meta.set_target(name, **changes)
        self.save()
        return part

    def append(self, record: ResultsRecord) -> None:
        """A record written to results.jsonl the moment it is known (not a cell: profiles, tiers)."""
        assert self.writer is not None
        self.writer.append(record)

    def keep(self, record: Any, ok: bool) -> None:
        """A measured record (a cell, a replication measurement) written and counted."""
        self.append(record)
        if self.on_record is not None:
            self.on_record(record)
        if ok:
            self.outcome.cells_ok += 1
        else:
            self.outcome.cells_failed += 1

    def say(self, line: str) -> None:
        say(self.console, line)

    # -- the finish

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 _tb: TracebackType | None) -> None:
        if self.meta is not None:
            self.meta.status = _status(error)
        try:
            self.finish()
        finally:
            if self.meta is not None and isinstance(error, OSError):
                # loading or restoring data on a full disk, mostly: one line naming the path, never a traceback
                raise ResultsWriteError(f"{error.filename or self.out}: {error.strerror or error}") from None

    def finish(self) -> None:
        """Stops what the run started, removes what it made (unless kept), records its status; every step runs even
        if one before it fails."""
        try:
            if self.progress is not None:
                self.progress.stop()
            for thing in self._owned:
                thing.stop()
        finally:
            self._remove()
            if self.writer is not None:
                if self.meta is not None:
                    close_run(self.meta, self.writer)
                else:
                    self.writer.close()

    def _remove(self) -> None:
        if self.writer is not None and not self.keep_data:  # `out` is the run's: not before it is claimed
            shutil.rmtree(self.data_root, ignore_errors=True)
        if self.runtime is not None and not self.keep_data:
            self.runtime.remove()
        elif self.runtime is not None and self.writer is None:
            self.runtime.remove()  # refused before it claimed `out`: nothing of it is left behind
        if self._watched and self.runtime is not None:
            Watchdog.get().forget_dir(self.runtime.path)


def _status(error: BaseException | None) -> str:
    if error is None:
        return "complete"
    return "interrupted" if isinstance(error, KeyboardInterrupt) else "failed"
