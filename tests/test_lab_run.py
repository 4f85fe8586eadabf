"""The lab run's context (runner/lab_run.py): on every way out (it ends, an error, Ctrl-C, SIGTERM, a full disk)
it stops what the run started, removes the runtime folder and the lab's own data, records the status in the last
meta.json and lets the results directory go; a run refused before it claimed its directory leaves nothing."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from rich.console import Console

from dbperf.runner import interrupts, lab_run
from dbperf.runner.lab_run import LabRun
from dbperf.storage.results import LOCK, ResultsWriteError
from tests.synthetic import _cell, meta_of

pytestmark = pytest.mark.unit


class Thing:
    """Something a run starts (a server, a data copy): stopped once at the finish."""

    def __init__(self) -> None:
        self.stops = 0

    def stop(self) -> None:
        self.stops += 1


class FakeWatchdog:
    watched: ClassVar[set[str]] = set()

    @classmethod
    def get(cls) -> FakeWatchdog:
        return cls()

    def watch_dir(self, path: Path) -> None:
        self.watched.add(str(path))

    def forget_dir(self, path: Path) -> None:
        self.watched.discard(str(path))


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A runtime base short enough for the servers' socket paths (pytest's own are too long)."""
    base = Path(tempfile.mkdtemp(prefix="dbperf-lab-run-"))
    monkeypatch.setenv("DBPERF_RUNTIME_DIR", str(base))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def watchdog(monkeypatch: pytest.MonkeyPatch, runtime: Path) -> type[FakeWatchdog]:
    monkeypatch.setattr(lab_run, "Watchdog", FakeWatchdog)
    FakeWatchdog.watched = set()
    return FakeWatchdog


def _run(out: Path, body: Any, keep_data: bool = False, thing: Thing | None = None) -> tuple[LabRun, Thing]:
    """A lab run with servers into `out`: claimed, one thing owned, meta.json started, then `body(lab)`."""
    thing = thing or Thing()
    lab = LabRun(out, Console(quiet=True), keep_data=keep_data, servers=True)
    with lab:
        lab.claim()
        lab.own(thing)
        lab.start(meta_of({"base": "a", "targets": [{"name": "a"}], "status": "running"}), "[run]\n")
        (lab.data_root / "a").mkdir(parents=True)
        assert lab.runtime is not None and lab.runtime.path.is_dir()
        lab.keep(_cell("a", "point-query", 1, 100.0, False), ok=True)
        body(lab)
    return lab, thing


def _status(out: Path) -> str:
    return json.loads((out / "meta.json").read_text())["status"]


def _finished(lab: LabRun, thing: Thing, out: Path, status: str, watchdog: type[FakeWatchdog]) -> None:
    assert thing.stops == 1
    assert lab.runtime is not None and not lab.runtime.path.exists() and not watchdog.watched
    assert not (out / ".data").exists() and not (out / LOCK).exists()
    assert _status(out) == status and json.loads((out / "meta.json").read_text())["finished_at"]
    assert len((out / "results.jsonl").read_text().splitlines()) == 1  # what was measured is kept


def test_a_run_that_ends_is_complete_and_leaves_only_its_results(tmp_path, watchdog):
    out = tmp_path / "out"
    lab, thing = _run(out, lambda lab: None)
    _finished(lab, thing, out, "complete", watchdog)
    assert lab.outcome.cells_ok == 1 and lab.outcome.runtime_dir == lab.runtime.path


def _raises(error: BaseException) -> Any:
    def body(_lab: LabRun) -> None:
        raise error
    return body


@pytest.mark.parametrize(("error", "status"), [(RuntimeError("boom"), "failed"), (KeyboardInterrupt(), "interrupted")])
def test_an_error_or_ctrl_c_stops_what_was_started_and_records_why(tmp_path, watchdog, runtime, error, status):
    out = tmp_path / "out"
    thing = Thing()
    with pytest.raises(type(error)):
        _run(out, _raises(error), thing=thing)
    assert thing.stops == 1
    assert _status(out) == status and not (out / LOCK).exists() and not (out / ".data").exists()
    assert not watchdog.watched and not list(runtime.iterdir())


def test_sigterm_ends_the_run_as_ctrl_c_does(tmp_path, watchdog, runtime):
    out = tmp_path / "out"
    handlers = {s: signal.getsignal(s) for s in interrupts.HANDLED}
    interrupts.install()
    thing = Thing()
    try:
        with pytest.raises(interrupts.Interrupted):
            _run(out, lambda _lab: os.kill(os.getpid(), signal.SIGTERM), thing=thing)
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
    assert thing.stops == 1
    assert _status(out) == "interrupted" and not (out / LOCK).exists() and not watchdog.watched
    assert not list(runtime.iterdir())


def test_a_full_disk_is_one_line_naming_the_path_and_the_run_failed(tmp_path, watchdog):
    out = tmp_path / "out"

    def full(_lab: LabRun) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(out / ".data" / "a"))

    with pytest.raises(ResultsWriteError, match=r"\.data/a: No space left on device"):
        _run(out, full)
    assert _status(out) == "failed"


def test_keep_data_keeps_the_runtime_folder_and_the_data(tmp_path, watchdog):
    out = tmp_path / "out"
    lab, thing = _run(out, lambda lab: None, keep_data=True)
    assert thing.stops == 1 and lab.runtime is not None and lab.runtime.path.is_dir()
    assert (out / ".data" / "a").is_dir() and _status(out) == "complete" and not watchdog.watched


def test_a_run_refused_before_it_claims_its_directory_leaves_nothing(tmp_path, watchdog):
    out = tmp_path / "mine"
    (out / ".data").mkdir(parents=True)  # the user's, not the lab's
    (out / "notes.txt").write_text("mine\n")
    thing = Thing()
    lab = LabRun(out, Console(quiet=True), servers=True)
    with pytest.raises(Exception, match="not empty"), lab:
        lab.own(thing)
        lab.claim()
    assert (out / ".data").is_dir() and sorted(p.name for p in out.iterdir()) == [".data", "notes.txt"]
    assert lab.runtime is not None and not lab.runtime.path.exists() and not watchdog.watched
