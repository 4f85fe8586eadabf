"""End to end on the real system SQLite through the real driver: a small matrix, faults, and Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dbperf.host.driver import driver_path
from tests.conftest import DBPERF, REPO, run_cli

pytestmark = pytest.mark.e2e

MATRIX = """
[run]
benchmarks = ["point-query", "update-index"]
table_size = 20000
time = "1s"
warmup = "0.2s"
repeats = 2

[[target]]
name = "wal"
config = { journal_mode = "WAL", synchronous = "NORMAL" }

[[target]]
name = "delete"
config = { journal_mode = "DELETE", synchronous = "OFF" }
"""


def test_two_targets_two_benchmarks_two_repeats(write_experiment, tmp_path):
    out = tmp_path / "out"
    proc = run_cli("run", str(write_experiment(MATRIX)), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "col-1 : wal  (base)" in proc.stdout and "col-2 : delete" in proc.stdout

    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 8 and all(x["status"] == "ok" for x in lines)
    # interleaved: both targets in each repeat (round), in an order reversed every other round
    assert [x["target"] for x in lines[:4]] == ["wal", "delete", "delete", "wal"]
    assert [x["position"] for x in lines[:4]] == [1, 2, 1, 2]
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete"
    for key in ("cpu_model", "cores", "kernel", "governor", "compiler", "dbperf_version", "dbperf_commit"):
        assert key in meta["host"]
    assert all(len(t["library_sha256"]) == 64 and t["engine_version"].startswith("3.") for t in meta["targets"])
    assert (out / "experiment.toml").read_text() == MATRIX
    assert not (out / ".data").exists()

    report = run_cli("report", str(out), "--format", "json")
    assert report.returncode == 0, report.stderr
    doc = json.loads(report.stdout)
    assert doc["base"] == "wal" and doc["targets"] == ["wal", "delete"]
    assert len(doc["cells"]) == 4
    for c in doc["cells"]:
        assert c["threads"] == 1 and len(c["qps_runs"]) == 2 and c["qps_median"] > 0
        assert c["cpu_us_per_query"] > 0 and c["cs_per_query"] >= 0 and c["p99_us"] > 0
        assert c["significant"] is None  # 2 repeats cannot be tested
    base_cells = [c for c in doc["cells"] if c["target"] == "wal"]
    assert all(c["rqps"] == 1.0 for c in base_cells)
    other = next(c for c in doc["cells"] if c["target"] == "delete" and c["benchmark"] == "point-query")
    base = next(c for c in base_cells if c["benchmark"] == "point-query")
    assert abs(other["rqps"] - other["qps_median"] / base["qps_median"]) < 1e-9


def _fake_driver(tmp_path: Path, behaviour: str) -> Path:
    """A wrapper around the real driver that crashes or hangs on update-index: fault injection, not a mock."""
    script = tmp_path / "driver-wrapper"
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import json, os, signal, subprocess, sys, time
        args = sys.argv[1:]
        if args[:1] != ["run"]:
            os.execv({driver_path()!r}, [{driver_path()!r}, *args])
        job = sys.stdin.read()
        if json.loads(job)["workload"]["name"] == "update-index":
            print("about to fail on purpose", file=sys.stderr, flush=True)
            if {behaviour!r} == "crash":
                os.kill(os.getpid(), signal.SIGSEGV)
            time.sleep(3600)
        proc = subprocess.run([{driver_path()!r}, *args], input=job, text=True)
        sys.exit(proc.returncode)
        """))
    script.chmod(0o755)
    return script


def test_crashing_and_hanging_driver_fail_their_cell_and_the_matrix_goes_on(write_experiment, tmp_path):
    body = MATRIX.replace('"update-index"]', '"update-index", "scan"]').replace("repeats = 2", "repeats = 1")
    for behaviour in ("crash", "hang"):
        out = tmp_path / behaviour
        env = {"DBPERF_DRIVER": str(_fake_driver(tmp_path, behaviour)), "DBPERF_HANG_GRACE_S": "1"}
        proc = run_cli("run", str(write_experiment(body)), "--out", str(out), env=env)
        assert proc.returncode == 0, proc.stderr
        lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
        by = {(x["benchmark"], x["target"]): x for x in lines}
        failed = by[("update-index", "wal")]
        assert failed["status"] == "failed"
        assert "about to fail on purpose" in failed["stderr_tail"]
        expected = "SIGSEGV" if behaviour == "crash" else "hung past"
        assert expected in failed["error"]
        assert by[("scan@after-writes", "delete")]["status"] == "ok"
        assert "failed" in proc.stdout


def _drivers_of(out: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().decode(errors="replace")
            if "dbperf-driver" in cmd and str(out) in cmd:
                pids.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return pids


def test_ctrl_c_keeps_what_was_measured(write_experiment, tmp_path):
    out = tmp_path / "out"
    body = MATRIX.replace('time = "1s"', 'time = "2s"').replace("repeats = 2", "repeats = 5")
    # Ctrl-C in a terminal: SIGINT is not ignored in the run, even when this suite runs as a background job (where
    # the shell ignores SIGINT and every child inherits that, so Python would never raise KeyboardInterrupt).
    proc = subprocess.Popen([*DBPERF, "run", str(write_experiment(body)), "--out", str(out)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    results = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (results.is_file() and results.read_text().count("\n") >= 2):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    kept = results.read_text().splitlines()
    assert 2 <= len(kept) < 20
    assert json.loads((out / "meta.json").read_text())["status"] == "interrupted"
    assert "col-1 : wal" in stdout
    report = run_cli("report", str(out), "--format", "json")
    assert report.returncode == 0 and json.loads(report.stdout)["status"] == "interrupted"
    assert not [p for p in _drivers_of(out) if os.path.exists(f"/proc/{p}")]
