"""The driver on the real system SQLite: settings that did not take fail the target, and a driver never outlives
the lab."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from dbperf.records import DriverJob, ExecResult
from tests.conftest import DBPERF, REPO, run_cli

pytestmark = pytest.mark.e2e

EXP = """
[run]
benchmarks = ["point-query"]
table_size = 2000
time = "{time}"
warmup = "0.2s"
repeats = 1
threads = [{threads}]

[[target]]
name = "a"
config = {{ {config} }}
"""


def the_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """Exit 2, no traceback, and exactly one `dbperf: error:` line on stderr, the last one (the run's header line may
    come before it)."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    errors = [x for x in lines if x.startswith("dbperf: error: ")]
    assert errors == lines[-1:] and not any("dbperf-driver" in x for x in lines[:-1]), proc.stderr
    return lines[-1]


@pytest.mark.parametrize(("config", "fragments"), [
    ('no_such_pragma = "1"', ["target 'a'", "unknown PRAGMA no_such_pragma (asked to set it to 1)"]),
    ('journal_mode = "BOGUS"', ["target 'a'", "PRAGMA journal_mode = BOGUS did not take: it reads back 'delete'"]),
    ('synchronous = "SOMETIMES"', ["PRAGMA synchronous = SOMETIMES did not take: it reads back '"]),
    # the lab's multi-threaded WAL default comes after the target's own settings, which are checked all the same
    ('temp_store = "RAM"', ["PRAGMA temp_store = RAM did not take: it reads back '0'"]),
])
def test_a_setting_that_does_not_take_fails_the_target(write_experiment, tmp_path, config, fragments):
    threads = "2" if "temp_store" in config else "1"
    out = tmp_path / "o"
    proc = run_cli("run", str(write_experiment(EXP.format(time="1s", threads=threads, config=config))), "--out",
                   str(out))
    line = the_error_line(proc)
    for fragment in fragments:
        assert fragment in line, line
    assert json.loads((out / "meta.json").read_text())["status"] == "failed"
    assert (out / "results.jsonl").read_text() == ""  # nothing was measured, and nothing claims it was


def test_settings_that_take_are_applied_and_recorded(write_experiment, tmp_path):
    # Read back as SQLite spells them: wal, 0, 2, UTF-8, 16777216, and cache_spill as its threshold (e.g. 483).
    config = ('locking_mode = "EXCLUSIVE", journal_mode = "WAL", synchronous = "OFF", cache_size = -20000, '
              'foreign_keys = true, temp_store = "MEMORY", mmap_size = "0x1000000", cache_spill = "ON", '
              'encoding = "UTF8", optimize = "0x10002"')
    out = tmp_path / "o"
    proc = run_cli("run", str(write_experiment(EXP.format(time="0.5s", threads="1", config=config))), "--out",
                   str(out))
    assert proc.returncode == 0, proc.stderr
    settings = json.loads((out / "meta.json").read_text())["targets"][0]["settings"]
    assert settings == [["locking_mode", "EXCLUSIVE"], ["journal_mode", "WAL"], ["synchronous", "OFF"],
                        ["cache_size", "-20000"], ["foreign_keys", "ON"], ["temp_store", "MEMORY"],
                        ["mmap_size", "0x1000000"], ["cache_spill", "ON"], ["encoding", "UTF8"],
                        ["optimize", "0x10002"]]
    assert json.loads((out / "results.jsonl").read_text())["status"] == "ok"


def test_the_multi_threaded_wal_default_takes_on_every_connection(write_experiment, tmp_path):
    out = tmp_path / "o"
    proc = run_cli("run", str(write_experiment(EXP.format(time="0.5s", threads="2", config=""))), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "meta.json").read_text())["targets"][0]["settings"] == [["journal_mode", "WAL"]]
    cell = json.loads((out / "results.jsonl").read_text())
    assert cell["status"] == "ok" and cell["threads"] == 2


def _state(pid: int) -> str | None:
    """A process's state letter, None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()[0]


def _running_cell(lab: int) -> int | None:
    """The pid of the lab's child `dbperf-driver run -` (a cell being measured, not the load), if there is one."""
    for p in Path("/proc").iterdir():
        try:
            if not p.name.isdigit():
                continue
            ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = (p / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == lab and argv[0].endswith(b"dbperf-driver") and argv[1:2] == [b"run"]:
            return int(p.name)
    return None


def test_the_driver_dies_with_the_lab(write_experiment, tmp_path):
    out = tmp_path / "o"
    exp = write_experiment(EXP.format(time="30s", threads="1", config=""))
    lab = subprocess.Popen([*DBPERF, "run", str(exp), "--out", str(out)], cwd=REPO, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        driver = None
        deadline = time.monotonic() + 60  # start-up and the 2000-row load: about 2 s, more on a loaded machine
        while driver is None and time.monotonic() < deadline and lab.poll() is None:
            driver = _running_cell(lab.pid)
            time.sleep(0.05)
        assert driver is not None, "no driver started running the cell"
        assert _state(driver) not in (None, "Z")
        lab.send_signal(signal.SIGKILL)
        lab.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _state(driver) not in (None, "Z") and time.monotonic() < deadline:  # a zombie is dead, not yet reaped
            time.sleep(0.05)
        assert _state(driver) in (None, "Z"), f"the driver (pid {driver}) outlived the lab"
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.wait()


def test_a_driver_whose_lab_is_already_gone_exits(tmp_path):
    from dbperf.host.driver import driver_path

    gone = subprocess.Popen(["true"])
    gone.wait()  # exited and reaped: as if the lab had died before the driver's prctl
    proc = subprocess.run([driver_path(), "--version"], capture_output=True, text=True, timeout=30,
                          env={"DBPERF_PARENT_PID": str(gone.pid)})
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr == f"dbperf-driver: the lab (pid {gone.pid}) is gone; exiting\n"
    # a parent other than the lab (a wrapper) is fine while the lab lives
    proc = subprocess.run([driver_path(), "--version"], capture_output=True, text=True, timeout=30,
                          env={"DBPERF_PARENT_PID": str(os.getpid())})
    assert proc.returncode == 0 and proc.stdout.startswith("dbperf-driver ")


def test_the_lab_passes_its_pid_to_every_driver_it_starts(tmp_path, monkeypatch):
    """run_job, library_info and driver_version all start the driver with DBPERF_PARENT_PID: a wrapper that records
    its environment shows it (a real driver behind it does the work)."""
    from dbperf.host import driver as d

    seen = tmp_path / "seen"
    wrapper = tmp_path / "wrapper"
    wrapper.write_text(f'#!/bin/sh\necho "$DBPERF_PARENT_PID" >> {seen}\nexec {d.driver_path()} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("DBPERF_DRIVER", str(wrapper))
    d.driver_path.cache_clear()
    try:
        assert d.driver_version().startswith("dbperf-driver ")
        assert d.library_info("sqlite", "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0").engine_version
        job = DriverJob(engine="sqlite", library="/usr/lib/x86_64-linux-gnu/libsqlite3.so.0",
                        database=str(tmp_path / "x.db"), settings=[("journal_mode", "WAL")], mode="exec",
                        statements=["CREATE TABLE t (x)"], tables=1, table_size=1)
        outcome = d.run_job(job, ExecResult, 60)
        assert outcome.ok, outcome
    finally:
        monkeypatch.delenv("DBPERF_DRIVER")
        d.driver_path.cache_clear()
    assert seen.read_text().split() == [str(os.getpid())] * 3
