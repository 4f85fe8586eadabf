"""The driver on the real system SQLite: settings that did not take fail the target, and a driver never outlives
the lab."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import DBPERF, REPO, run_cli
from tests.test_hardening_run import one_error_line

pytestmark = pytest.mark.e2e

EXP = """
[run]
benchmarks = ["point-query"]
table_size = 2000
time = "{time}"
warmup = "0.2s"
repeats = 1

[[target]]
name = "a"
config = {{ {config} }}
"""


@pytest.mark.parametrize(("config", "fragments"), [
    ('no_such_pragma = "1"', ["target 'a'", "unknown PRAGMA no_such_pragma"]),
    ('journal_mode = "BOGUS"', ["target 'a'", "PRAGMA journal_mode = BOGUS did not take", "reads back 'delete'"]),
    ('synchronous = "SOMETIMES"', ["PRAGMA synchronous = SOMETIMES did not take: it reads back '"]),
])
def test_a_setting_that_does_not_take_fails_the_target(write_experiment, tmp_path, config, fragments):
    proc = run_cli("run", str(write_experiment(EXP.format(time="1s", config=config))), "--out", str(tmp_path / "o"))
    line = one_error_line(proc)
    for fragment in fragments:
        assert fragment in line, line


def test_settings_that_take_are_applied_and_recorded(write_experiment, tmp_path):
    config = ('locking_mode = "EXCLUSIVE", journal_mode = "WAL", synchronous = "OFF", cache_size = -20000, '
              'foreign_keys = true, temp_store = "MEMORY", mmap_size = 0')
    out = tmp_path / "o"
    proc = run_cli("run", str(write_experiment(EXP.format(time="1s", config=config))), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert ["journal_mode", "WAL"] in meta["targets"][0]["settings"]
    assert json.loads((out / "results.jsonl").read_text())["status"] == "ok"


def _driver_pids() -> set[int]:
    pids = set()
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and (p / "cmdline").read_bytes().startswith(
                    str(REPO / "driver" / "target").encode()):
                pids.add(int(p.name))
        except OSError:
            continue
    return pids


def test_the_driver_dies_with_the_lab(write_experiment, tmp_path):
    before = _driver_pids()
    out = tmp_path / "o"
    lab = subprocess.Popen([*DBPERF, "run", str(write_experiment(EXP.format(time="60s", config=""))), "--out",
                            str(out)], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def measuring() -> bool:  # loaded, and a driver running the 60 s cell
        loaded = (out / "meta.json").is_file() and json.loads((out / "meta.json").read_text())["targets"][0].get("load")
        return bool(loaded and _driver_pids() - before)

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not measuring():
        time.sleep(0.1)
    time.sleep(0.5)
    drivers = _driver_pids() - before
    assert drivers, "no driver started"
    lab.send_signal(signal.SIGKILL)
    lab.wait(timeout=30)
    deadline = time.monotonic() + 10
    while drivers & _driver_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not drivers & _driver_pids(), "the driver outlived the lab"


def test_a_driver_whose_lab_is_already_gone_exits(tmp_path):
    from dbperf.runner.driver import driver_path

    gone = subprocess.Popen(["true"])
    gone.wait()  # exited and reaped: as if the lab had died before the driver's prctl
    proc = subprocess.run([driver_path(), "--version"], capture_output=True, text=True, timeout=30,
                          env={"DBPERF_PARENT_PID": str(gone.pid)})
    assert proc.returncode == 3 and f"the lab (pid {gone.pid}) is gone" in proc.stderr
    # a parent other than the lab (a wrapper) is fine while the lab lives
    proc = subprocess.run([driver_path(), "--version"], capture_output=True, text=True, timeout=30,
                          env={"DBPERF_PARENT_PID": "1"})
    assert proc.returncode == 0 and proc.stdout.startswith("dbperf-driver ")
