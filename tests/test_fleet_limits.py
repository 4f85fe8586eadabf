"""Issue 23, the fleet's part: `fleet local --workers N` capped by the host and stopped whole by a signal during
start-up; durations (CLI options and experiment keys) refused in one line when negative, malformed or not finite;
`dbperf import` refusing runs of zero threads, zero time or zero transactions."""

from __future__ import annotations

import math
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from dbperf.errors import UserError
from dbperf.experiment.durations import parse_duration
from dbperf.experiment.spec import parse_experiment
from dbperf.fleet.local import WORKER_RSS_BYTES, worker_cap
from dbperf.tooldrivers.importer import import_outputs
from tests.conftest import DBPERF, REPO, run_cli

DATA = Path(__file__).parent / "data"
SMALL = """
[run]
benchmarks = ["point-query"]
table_size = 100
time = "0.2s"
warmup = "0s"
repeats = 1

[[target]]
name = "A"
"""


def _one_line_exit_2(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("dbperf: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def _fleet_processes(*words: str) -> list[tuple[int, int, str]]:
    """(pid, ppid, command line) of every process whose command line holds every word."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if all(w in cmdline for w in words):
            found.append((int(pid), ppid, cmdline))
    return found


# -- durations: one validating parser ----------------------------------------------------------------------------

@pytest.mark.unit
@pytest.mark.parametrize("value, message", [
    ("-5", "must not be negative"),
    (-5, "must not be negative"),
    ("-0.5s", "must not be negative"),
    ("abc", "cannot parse duration 'abc'"),
    ("5 parsecs", "cannot parse duration '5 parsecs'"),
    ("", "cannot parse duration ''"),
    (float("nan"), "not a finite number"),
    (float("inf"), "not a finite number"),
    (True, "cannot parse duration True"),
])
def test_a_negative_malformed_or_non_finite_duration_is_one_line(value: object, message: str) -> None:
    with pytest.raises(UserError, match=message.replace("(", r"\(")) as caught:
        parse_duration(value, "--x")
    assert str(caught.value).startswith("--x: ") and "\n" not in str(caught.value)


@pytest.mark.unit
def test_durations_that_must_be_positive_or_bounded_say_so() -> None:
    assert parse_duration("0", "--x") == 0.0
    assert parse_duration("1.5m", "--x") == 90.0 and parse_duration("250ms", "--x") == 0.25
    with pytest.raises(UserError, match="--x: must be longer than 0"):
        parse_duration("0s", "--x", positive=True)
    with pytest.raises(UserError, match="--x: '2h' is longer than 1 h"):
        parse_duration("2h", "--x", maximum=3600)
    assert not math.isnan(parse_duration(0.5, "--x"))


@pytest.mark.unit
def test_an_experiment_time_of_nan_is_refused(write_experiment) -> None:
    """TOML has nan and inf: a nan time passed every check (nan < 0 and nan > a week are both false)."""
    with pytest.raises(UserError, match=r"\[run\]\.time: .*not a finite number"):
        parse_experiment(write_experiment(SMALL.replace('time = "0.2s"', "time = nan")))


@pytest.mark.unit
@pytest.mark.parametrize("value", ["-5", "abc", "5 parsecs", "0", "nan"])
def test_worker_join_timeout_bad_values_are_one_line(value: str) -> None:
    proc = run_cli("worker", "--scheduler", "tcp://127.0.0.1:9", "--name", "w1", "--join-timeout", value,
                   timeout=120)
    assert "--join-timeout" in _one_line_exit_2(proc)


@pytest.mark.unit
def test_worker_join_timeout_over_a_week_is_not_said_per_cell() -> None:
    proc = run_cli("worker", "--scheduler", "tcp://127.0.0.1:9", "--name", "w1", "--join-timeout", "200h",
                   timeout=120)
    assert _one_line_exit_2(proc).endswith("--join-timeout: '200h' is longer than a week")


@pytest.mark.unit
def test_scheduler_port_out_of_range_or_in_use_is_one_line() -> None:
    """Tornado took --port 99999 as 34463 without a word; -5 and a port in use were distributed's traceback."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert "Address already in use" in _one_line_exit_2(run_cli("scheduler", "--port", str(port), timeout=120))
    for bad in ("-5", "99999"):
        assert "--port: expected 0 (a free one) to 65535" in _one_line_exit_2(run_cli("scheduler", "--port", bad,
                                                                                       timeout=120))


# -- fleet local: the cap ----------------------------------------------------------------------------------------

@pytest.mark.unit
def test_the_cap_is_four_workers_per_cpu_and_half_the_available_memory() -> None:
    assert worker_cap(cpus=2, mem_available=64 << 30).workers == 8
    memory_bound = worker_cap(cpus=64, mem_available=10 * WORKER_RSS_BYTES)  # half of it: 5 workers
    assert memory_bound.workers == 5 and "memory" in memory_bound.reason
    assert worker_cap(cpus=1, mem_available=WORKER_RSS_BYTES).workers == 0  # not even one fits in half


@pytest.mark.unit
@pytest.mark.parametrize("workers", ["1000", "0", "-3"])
def test_fleet_local_above_the_cap_is_refused_in_one_line_and_starts_nothing(write_experiment, tmp_path: Path,
                                                                             workers: str) -> None:
    started = time.monotonic()
    proc = run_cli("fleet", "local", "--workers", workers, str(write_experiment(SMALL)), "--out",
                   str(tmp_path / "out"), env={"TMPDIR": str(tmp_path)}, timeout=120)
    line = _one_line_exit_2(proc)
    assert "--workers" in line
    if workers == "1000":
        assert "at most" in line and "CPU" in line and "MemAvailable" in line
    assert time.monotonic() - started < 60  # refused before anything starts, not after 2 minutes
    assert not list(tmp_path.glob("dbperf-fleet-*")) and not (tmp_path / "out").exists()


# -- fleet local: a signal during start-up stops every worker started so far --------------------------------------

@pytest.mark.e2e
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_start_up_stops_every_worker(write_experiment, tmp_path: Path, signum: int) -> None:
    """Three workers start (at most as many at once as there are CPUs, at least two); the signal is sent once the
    first has joined and the third is launched, so at least that one is still starting (importing Dask takes
    seconds). Then no process of this fleet remains, adopted by init
    or not: each one's command line names the fleet's state directory, made under this test's TMPDIR."""
    marker = (str(tmp_path), "dbperf-fleet-")
    # SIGINT as a terminal's Ctrl-C delivers it: not ignored in the controller even when this suite runs as a
    # background job (the shell ignores SIGINT there, every child inherits it, and Python then never raises).
    proc = subprocess.Popen([*DBPERF, "fleet", "local", "--workers", "3", str(write_experiment(SMALL)), "--out",
                             str(tmp_path / "out")], cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            text=True, env={**os.environ, "TMPDIR": str(tmp_path)},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stderr is not None
    seen = []
    try:
        for line in proc.stderr:
            seen.append(line)
            if "starting workers 1/3" in line:
                break
        else:
            pytest.fail(f"no progress line: {''.join(seen)}")
        deadline = time.monotonic() + 60  # local-3 is launched once local-1 joined: signal while it starts
        while not _fleet_processes(*marker, "--name local-3") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _fleet_processes(*marker, "--name local-3"), "the fleet's processes are not found by their state " \
                                                            "directory"
        proc.send_signal(signum)
        rest = proc.stderr.read()
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = "".join(seen) + rest
    assert code == 128 + signum, stderr
    assert "starting workers 3/3" not in stderr  # it was mid-start
    assert "Traceback" not in stderr
    deadline = time.monotonic() + 30
    while (left := _fleet_processes(*marker)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not left, f"left running: {left}"
    assert not list(tmp_path.glob("dbperf-fleet-*"))  # and its state directory removed


# -- dbperf import: zero threads, zero time, zero transactions -----------------------------------------------------

SYSBENCH = (DATA / "sysbench-point-query.txt").read_text()
PGBENCH = (DATA / "pgbench-point-query.txt").read_text()


def _line_of(text: str, start: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.strip().startswith(start))


@pytest.mark.unit
@pytest.mark.parametrize("tool, text, start, message", [
    ("sysbench", SYSBENCH.replace("Number of threads: 1", "Number of threads: 0"), "Number of threads",
     "no thread"),
    ("sysbench", SYSBENCH.replace("1.0128s", "0.0000s"), "total time", "total time of 0"),
    ("sysbench", SYSBENCH.replace("total number of events:              20332",
                                  "total number of events:              0"), "total number of events",
     "no event"),
    ("pgbench", PGBENCH.replace("number of clients: 2", "number of clients: 0"), "number of clients", "no client"),
    ("pgbench", PGBENCH.replace("duration: 1 s", "duration: 0 s"), "duration", "duration of 0"),
    ("pgbench", PGBENCH.replace("processed: 15360", "processed: 0"), "number of transactions actually",
     "no transaction"),
    ("pgbench", PGBENCH.replace("processed: 15360", "processed: 0/0"), "number of transactions actually",
     "no transaction"),
    ("pgbench", PGBENCH.replace("tps = 16572.976122", "tps = 0.000000"), "tps", "tps of 0"),
])
def test_import_refuses_a_run_of_zero_threads_time_or_transactions(tmp_path: Path, tool: str, text: str,
                                                                   start: str, message: str) -> None:
    good = tmp_path / "point.1.txt"
    good.write_text(SYSBENCH if tool == "sysbench" else PGBENCH)
    bad = tmp_path / "point.2.txt"
    bad.write_text(text)
    out = tmp_path / "out"
    with pytest.raises(UserError) as caught:
        import_outputs([good, bad], tool, out, None, 1)
    assert str(caught.value).startswith(f"{bad}:{_line_of(text, start)}: ") and message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert not out.exists()  # nothing written


@pytest.mark.unit
def test_import_of_zero_threads_is_one_line_exit_2_on_the_command_line(tmp_path: Path) -> None:
    bad = tmp_path / "point.txt"
    bad.write_text(SYSBENCH.replace("Number of threads: 1", "Number of threads: 0"))
    proc = run_cli("import", str(bad), "--tool", "sysbench", "--out", str(tmp_path / "out"), timeout=120)
    assert f"{bad}:4: " in _one_line_exit_2(proc)
    assert not (tmp_path / "out").exists()
