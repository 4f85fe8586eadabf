"""Counters of server processes: PostgreSQL under cachegrind, the N-minus-0 windows of its backends; MariaDB under
callgrind, zeroed and dumped around each window; the callgrind parser against callgrind's own totals. `dbperf
profile --mode simulated` of each server, end to end, is checked in tests/test_simulated_servers.py, where it counts
the simulated tier's cell a second time (a server started under valgrind is the slow part: once, not twice)."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

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
    files = sorted(f for f in tmp_path.glob("callgrind.out*") if f.stat().st_size)  # the bare name stays empty
    assert [f.name for f in files] == ["callgrind.out-01"]  # --separate-threads=yes: a file per thread
    text = files[0].read_text()
    profile = parse_callgrind_out(text)
    totals = dict(zip(profile.events, map(int, text.split("\ntotals:")[1].split()), strict=False))
    assert profile.total() == {e: totals.get(e, 0) for e in profile.events}  # the calls= lines were left out
    assert {"Ir", "I1mr", "Bc", "Bcm"} <= set(profile.events) and totals["Ir"] > 10_000
    assert "_dl_start" in " ".join(profile.functions)


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


@pytest.mark.unit
def test_only_the_threads_that_served_the_connection_are_counted(tmp_path):
    """A dump of mariadbd is a file per thread: the connection's (it ran do_command) counts, the purge thread's
    wall-time-bound work does not."""
    from dbperf.explain.callgrind import connection_threads

    def thread(name: str, functions: dict[str, int]) -> Path:
        body = "".join(f"fn={fn}\n0 {ir}\n" for fn, ir in functions.items())
        path = tmp_path / name
        path.write_text(f"events: Ir\n{body}totals: {sum(functions.values())}\n")
        return path

    files = [thread("callgrind.out.7.1-01", {"srv_purge_coordinator_thread(void*)": 900_000}),
             thread("callgrind.out.7.1-02", {"do_command(THD*, bool)": 40, "alloc_root": 1_600}),
             thread("callgrind.out.7.1-03", {"do_command(THD*, bool)": 0, "timer_handler": 5})]
    profile, counted, threads = connection_threads(files, ("do_command",))
    assert (counted, threads) == (1, 3)
    assert profile.total() == {"Ir": 1_640}
