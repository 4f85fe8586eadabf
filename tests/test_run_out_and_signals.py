"""A careless user's runs on the real system SQLite: an --out that holds other files, is read-only or fills up,
signals other than Ctrl-C, a run in which nothing succeeds, and matrices far too big to run by accident."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DBPERF, REPO, run_cli

pytestmark = pytest.mark.e2e

SMALL = """
[run]
benchmarks = ["point-query", "update-index"]
table_size = 2000
time = "1s"
warmup = "0.2s"
repeats = 1

[[target]]
name = "a"
"""


def one_error_line(proc: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [x for x in proc.stderr.strip().splitlines() if x.startswith("dbperf: error:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@contextlib.contextmanager
def tmpfs(where: Path, options: str) -> Iterator[Path]:
    """A real small or read-only file system (needs root, as the lab's server targets do)."""
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_non_empty_directory_is_refused_and_left_as_it_was(write_experiment, tmp_path):
    mine = tmp_path / "mine"
    (mine / ".data").mkdir(parents=True)
    (mine / ".data" / "precious.db").write_text("the user's own file")
    (mine / "experiment.toml").write_text("# the user's own experiment\n")
    line = one_error_line(run_cli("run", str(write_experiment(SMALL)), "--out", str(mine)))
    assert str(mine) in line and "not empty" in line and "choose another --out" in line
    assert (mine / ".data" / "precious.db").read_text() == "the user's own file"
    assert (mine / "experiment.toml").read_text() == "# the user's own experiment\n"
    assert sorted(p.name for p in mine.iterdir()) == [".data", "experiment.toml"]


def test_an_empty_existing_directory_is_used(write_experiment, tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    proc = run_cli("run", str(write_experiment(SMALL)), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "meta.json").read_text())["status"] == "complete"
    assert not (out / ".data").exists()


def test_a_read_only_out_directory(write_experiment, tmp_path):
    with tmpfs(tmp_path / "ro", "ro,size=1m") as ro:
        line = one_error_line(run_cli("run", str(write_experiment(SMALL)), "--out", str(ro)))
        # said before the disk estimate, as calibrate and bisect say it (storage/writable.py)
        assert "is on a read-only file system" in line and str(ro) in line
        line = one_error_line(run_cli("run", str(write_experiment(SMALL)), "--out", str(ro / "sub")))
        assert "is on a read-only file system" in line and str(ro) in line


@pytest.mark.parametrize(("table_size", "message"), [
    (12000, "No space left on device"),      # the loaded file fits once, its working copy does not
    (60000, "database or disk is full"),     # SQLite itself runs out of space while loading
])
def test_disk_full_is_one_line_status_failed_and_cleaned_up(write_experiment, tmp_path, table_size, message):
    exp = write_experiment(SMALL.replace("table_size = 2000", f"table_size = {table_size}"))
    with tmpfs(tmp_path / "full", "size=4m") as full:
        out = full / "out"
        # --yes: the estimate warns that this will not fit; a disk that fills up during a run must be handled too
        proc = run_cli("run", str(exp), "--out", str(out), "--yes")
        assert "more data than the free disk" in proc.stderr
        line = one_error_line(proc)
        assert message in line and str(out) in line, line
        meta = json.loads((out / "meta.json").read_text())
        assert meta["status"] == "failed" and "finished_at" in meta
        assert (out / "experiment.toml").read_text() == exp.read_text()
        assert not (out / ".data").exists()
        assert not (out / "meta.json.tmp").exists()


def test_results_that_cannot_be_written_name_the_file(tmp_path):
    from dbperf.errors import UserError
    from dbperf.storage.results import ResultsWriter

    with tmpfs(tmp_path / "small", "size=256k") as small:
        writer = ResultsWriter(small / "out")
        writer.append({"first": 1})
        with contextlib.suppress(OSError), open(small / "filler", "wb") as f:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        with pytest.raises(UserError, match=r"results\.jsonl: cannot write: No space left on device"):
            writer.append({"big": "x" * 300_000})
        writer.close()
        assert json.loads((small / "out" / "results.jsonl").read_text().splitlines()[0]) == {"first": 1}


def test_a_run_in_which_every_cell_failed_exits_3(write_experiment, tmp_path):
    (tmp_path / "broken.toml").write_text('group = "point"\n[[statement]]\nsql = "SELECT c FROM no_such_table '
                                          'WHERE id = {id}"\nparams.id = { gen = "uniform" }\n')
    body = SMALL.replace('["point-query", "update-index"]', '["broken.toml"]')
    out = tmp_path / "out"
    proc = run_cli("run", str(write_experiment(body)), "--out", str(out))
    line = one_error_line(proc, code=3)
    assert "no cell succeeded (1 failed)" in line
    assert "no such table" in proc.stdout  # the report, with the cell's error, is still printed
    assert json.loads((out / "meta.json").read_text())["status"] == "complete"


def test_one_good_cell_is_enough_for_exit_0(write_experiment, tmp_path):
    (tmp_path / "broken.toml").write_text('group = "point"\n[[statement]]\nsql = "SELECT c FROM no_such_table '
                                          'WHERE id = {id}"\nparams.id = { gen = "uniform" }\n')
    body = SMALL.replace('["point-query", "update-index"]', '["point-query", "broken.toml"]')
    proc = run_cli("run", str(write_experiment(body)), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(("edit", "fragments"), [
    (lambda s: s.replace("repeats = 1", "repeats = 100000000000"), ["years", "over 60 min"]),
    (lambda s: s.replace("table_size = 2000", "table_size = 100000\ntables = 100000"),
     ["more data than the free disk", "TB of data in"]),
])
def test_huge_runs_need_yes(write_experiment, tmp_path, edit, fragments):
    started = time.monotonic()
    out = tmp_path / "out"
    line = one_error_line(run_cli("run", str(write_experiment(edit(SMALL))), "--out", str(out)))
    assert time.monotonic() - started < 60
    assert "add --yes to run it anyway" in line and "this run will take about" in line
    for fragment in fragments:
        assert fragment in line, line
    assert not out.exists()  # nothing was created before the user said yes


def _signal_a_run(write_experiment, tmp_path: Path, sig: int, body: str, extra: tuple[str, ...] = ()):
    out = tmp_path / "out"
    proc = subprocess.Popen([*DBPERF, "run", str(write_experiment(body)), "--out", str(out), *extra], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (results.is_file() and results.read_text().count("\n") >= 1):
        time.sleep(0.1)
    rss_kb = int(next(x for x in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                      if x.startswith("VmRSS")).split()[1])
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    return proc.returncode, stdout, stderr, out, rss_kb, proc.pid


def _drivers(lab_pid: int) -> list[str]:
    """The drivers this lab started that are still running: a driver's environment names its lab
    (DBPERF_PARENT_PID, host/driver.py), so another test's drivers running beside this one are not counted."""
    found = []
    mark = f"DBPERF_PARENT_PID={lab_pid}".encode()
    for p in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if p.name.isdigit() and b"dbperf-driver" in (p / "cmdline").read_bytes() \
                    and mark in (p / "environ").read_bytes().split(b"\0"):
                found.append(p.name)
    return found


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_term_and_hup_end_a_run_like_ctrl_c(write_experiment, tmp_path, sig, code):
    body = SMALL.replace("repeats = 1", "repeats = 20")
    returncode, stdout, stderr, out, _, lab_pid = _signal_a_run(write_experiment, tmp_path, sig, body)
    assert returncode == code, stderr
    assert "Traceback" not in stderr and f"interrupted ({signal.Signals(sig).name})" in stderr
    assert json.loads((out / "meta.json").read_text())["status"] == "interrupted"
    assert "col-1 : a" in stdout  # the partial report
    assert 1 <= len((out / "results.jsonl").read_text().splitlines()) < 40
    assert not (out / ".data").exists()
    deadline = time.monotonic() + 10
    while _drivers(lab_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _drivers(lab_pid) == []


def test_a_huge_matrix_with_yes_is_planned_lazily(write_experiment, tmp_path):
    body = SMALL.replace("repeats = 1", "repeats = 100000000000")
    returncode, _, stderr, out, rss_kb, _ = _signal_a_run(write_experiment, tmp_path, signal.SIGTERM, body, ("--yes",))
    assert returncode == 143, stderr
    assert "dbperf: warning: this run will take about" in stderr
    assert rss_kb < 400_000, f"the lab holds {rss_kb} kB with a 4e11-cell matrix"
    assert os.path.getsize(out / "results.jsonl") > 0
