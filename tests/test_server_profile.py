"""Counters of server processes: PostgreSQL under cachegrind, the N-minus-0 windows of its backends; MariaDB under
callgrind, zeroed and dumped around each window; the callgrind parser against callgrind's own totals."""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest

from dbperf.explain.callgrind import CALLGRIND_OPTIONS, parse_callgrind_out
from dbperf.explain.perfstat import perf_stat_pids
from tests.conftest import NEEDS_SERVERS, run_cli

SERVER = [pytest.mark.server, NEEDS_SERVERS]

EXPERIMENT = ('[run]\nbenchmarks = ["point-query", "update-index"]\ntable_size = 2000\n'
              '[[target]]\nname = "pg"\nengine = "postgres"\n'
              '[[target]]\nname = "maria"\nengine = "mariadb"\n')


@pytest.mark.unit
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_callgrind_self_costs_add_up_to_callgrinds_totals(tmp_path):
    out = tmp_path / "callgrind.out"
    subprocess.run(["valgrind", *CALLGRIND_OPTIONS, f"--callgrind-out-file={out}", "/bin/true"], check=True,
                   capture_output=True, timeout=300)
    text = out.read_text()
    profile = parse_callgrind_out(text)
    totals = dict(zip(profile.events, map(int, text.split("\ntotals:")[1].split()), strict=False))
    assert profile.total() == {e: totals.get(e, 0) for e in profile.events}  # the calls= lines were left out
    assert {"Ir", "I1mr", "Bc", "Bcm"} <= set(profile.events) and totals["Ir"] > 10_000
    assert "_dl_start" in " ".join(profile.functions)


@pytest.mark.server
@NEEDS_SERVERS
def test_postgres_backend_counters_per_query(write_experiment, tmp_path):
    exp = write_experiment(EXPERIMENT)
    proc = run_cli("profile", str(exp), "--target", "pg", "--benchmark", "point-query", "--queries", "1000",
                   "--mode", "simulated", "--json", str(tmp_path / "p.json"), timeout=900)
    assert proc.returncode == 0, proc.stderr
    p = json.loads((tmp_path / "p.json").read_text())
    assert p["mode"] == "simulated" and p["queries"] == 1000 and "backend" in p["method"]
    # A PostgreSQL point query through the protocol costs tens of thousands of instructions in the server.
    assert 5_000 < p["per_query"]["instructions"] < 1_000_000
    assert p["per_query"]["i1_misses"] > 0 and p["top_by_instructions"]
    assert p["slowdown"]["native_s"] is None  # not timed natively, and not claimed
    assert "not timed natively" in proc.stdout


@pytest.mark.server
@NEEDS_SERVERS
def test_mariadb_counters_per_query_from_callgrind_windows(write_experiment, tmp_path):
    exp = write_experiment(EXPERIMENT)
    proc = run_cli("profile", str(exp), "--target", "maria", "--benchmark", "point-query", "--queries", "200",
                   "--mode", "simulated", "--json", str(tmp_path / "p.json"), timeout=1500)
    assert proc.returncode == 0, proc.stderr
    p = json.loads((tmp_path / "p.json").read_text())
    assert p["mode"] == "simulated" and p["queries"] == 200
    assert "callgrind" in p["tool"] and "--I1=32768,8,64" in p["tool"] and "held open" in p["method"]
    # A MariaDB point query through the protocol costs tens of thousands of instructions in the server.
    assert 5_000 < p["per_query"]["instructions"] < 2_000_000
    assert p["per_query"]["i1_misses"] > 0
    assert any("alloc_root" in f["function"] or "JOIN::" in f["function"] for f in p["top_by_instructions"])


@pytest.mark.server
@NEEDS_SERVERS
def test_server_hardware_counters_are_refused_with_perfs_reason(write_experiment):
    exp = write_experiment(EXPERIMENT)
    hardware = run_cli("profile", str(exp), "--target", "pg", "--benchmark", "point-query", "--mode", "hardware")
    assert hardware.returncode == 2 and "Traceback" not in hardware.stderr
    assert "perf" in hardware.stderr and len(hardware.stderr.strip().splitlines()) == 1


@pytest.mark.unit
@pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed")
def test_perf_stat_attached_to_running_processes_counts_only_the_window():
    busy = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        stat, result = perf_stat_pids([busy.pid], ["task-clock", "instructions"], lambda: time.sleep(1.0) or "done")
    finally:
        busy.kill()
        busy.wait()
    assert result == "done" and stat.counts["task-clock"] > 50  # ms of the busy process inside the window
    # No PMU here: said as unsupported, never counted as zero; with a PMU, counted.
    assert ("instructions" in stat.unsupported) != ("instructions" in stat.counts)
