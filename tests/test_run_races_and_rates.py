"""Issue 23's run defects, each reproduced first: an open-loop rate far beyond the target (a driver that counted its
backlog one event at a time and hung), two runs racing for one --out, a lab killed with SIGKILL whose meta.json said
`running` for ever, and a bad PRAGMA on one target that ended the whole run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from dbperf.catalog.registry import builtin
from dbperf.catalog.schema import sbtest
from dbperf.catalog.workload import compile_statements
from dbperf.errors import UserError
from dbperf.experiment.load_model import MAX_RATE
from dbperf.experiment.model import default_sqlite_library
from dbperf.experiment.spec import parse_experiment
from dbperf.host.driver import run_job
from dbperf.records import DriverJob, LoadResult, RunResult
from dbperf.run_meta import run_meta
from dbperf.storage import results
from dbperf.storage.results import LOCK, ResultsWriter, read_results
from tests.conftest import DBPERF, REPO, run_cli
from tests.test_run_out_and_signals import one_error_line

EXP = """
[run]
benchmarks = ["point-query"]
table_size = 1000
time = "{time}"
warmup = "0.1s"
repeats = 1
{extra}
[[target]]
name = "a"
{targets}
"""


def _experiment(path: Path, time_: str = "0.5s", extra: str = "", targets: str = "") -> Path:
    path.write_text(EXP.format(time=time_, extra=extra, targets=targets))
    return path


# --- item 5: open-loop rates ---------------------------------------------------------------------------------------

@pytest.mark.unit
@pytest.mark.parametrize("rate", ["1e12", "1e10", "1e9", "100000001"])
def test_a_rate_above_what_the_driver_can_schedule_is_refused_at_parse_time(tmp_path, rate):
    with pytest.raises(UserError, match=r"\[run\]\.rate: .* events/s is above the 1e\+08 the driver can schedule"):
        parse_experiment(_experiment(tmp_path / "exp.toml", extra=f"rate = {rate}"))


@pytest.mark.unit
def test_the_ceiling_itself_is_accepted(tmp_path):
    assert parse_experiment(_experiment(tmp_path / "exp.toml", extra=f"rate = {MAX_RATE:.0f}")).load.rate == MAX_RATE


@pytest.mark.e2e
def test_the_driver_refuses_a_rate_above_its_ceiling_at_once(tmp_path):
    """The driver's own check (a job written by hand): it used to spin counting a backlog of 0.001 ns gaps."""
    db = str(tmp_path / "sbtest.db")
    job = DriverJob(mode="load", engine="sqlite", library=default_sqlite_library(), database=db, tables=1,
                    table_size=100, schema=sbtest("sqlite"))
    assert run_job(job, LoadResult, 60).ok
    run = job.replace(mode="run", schema=None, time_s=0.5, warmup_s=0.0, rate=1e12,
                      workload=compile_statements(builtin()["point-query"], 100, "sqlite"))
    started = time.monotonic()
    outcome = run_job(run, RunResult, 20)
    assert not outcome.ok and "above the 1e8 events/s the driver can schedule" in (outcome.error or ""), outcome
    assert time.monotonic() - started < 10


@pytest.mark.e2e
def test_a_rate_at_the_ceiling_ends_on_time_and_says_not_kept_up(tmp_path):
    out = tmp_path / "o"
    exp = _experiment(tmp_path / "exp.toml", extra=f"rate = {MAX_RATE:.0f}")
    started = time.monotonic()
    proc = run_cli("run", str(exp), "--out", str(out), timeout=120)
    wall = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    # The cell is 0.1 s + 0.5 s; the rest is the lab's start, the load and the report on a loaded machine.
    assert wall < 30, wall
    (cell,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert cell["status"] == "ok", cell
    o = cell["result"]["open_loop"]
    assert o["rate_asked"] == MAX_RATE and not o["sustained"]
    assert 0 < o["rate_achieved"] < MAX_RATE / 10
    # What was due and never started is the backlog: about 0.5 s × 1e8, less what ran.
    assert o["backlog_events"] > 0.9 * 0.5 * MAX_RATE - cell["result"]["events"], o
    assert cell["wall_s"] < 20, cell["wall_s"]
    table = proc.stdout
    assert "kept up" in table and "NO" in table, table


@pytest.mark.e2e
def test_a_rate_at_the_ceiling_with_a_latency_limit_skips_arithmetically(tmp_path):
    out = tmp_path / "o"
    exp = _experiment(tmp_path / "exp.toml", extra=f'rate = {MAX_RATE:.0f}\narrivals = "poisson"\n'
                                                   'latency_limit = "1ms"')
    proc = run_cli("run", str(exp), "--out", str(out), timeout=120)
    assert proc.returncode == 0, proc.stderr
    (cell,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    o = cell["result"]["open_loop"]
    assert not o["sustained"] and o["skipped"] > 0.5 * 0.5 * MAX_RATE, o
    assert cell["wall_s"] < 20, cell["wall_s"]


# --- item 7: two runs racing for one --out -------------------------------------------------------------------------

@pytest.mark.unit
def test_two_writers_claiming_one_directory_the_second_is_refused(tmp_path, monkeypatch):
    """Deterministic: the first writer is held between its claim and its first write until the second has tried."""
    out = tmp_path / "o"
    in_window, second_tried = threading.Event(), threading.Event()
    first: list[ResultsWriter | BaseException] = []

    def pause() -> None:
        if threading.current_thread().name == "first":
            in_window.set()
            assert second_tried.wait(30)

    def claim_first() -> None:
        try:
            first.append(ResultsWriter(out))
        except BaseException as err:  # handed to the test's thread
            first.append(err)

    monkeypatch.setattr(results, "_pause_after_claim", pause)
    thread = threading.Thread(target=claim_first, name="first")
    thread.start()
    assert in_window.wait(30)
    try:
        with pytest.raises(UserError) as refused:
            ResultsWriter(out)
    finally:
        second_tried.set()
        thread.join(30)
    assert str(refused.value) == f"{out} is in use by another dbperf run (pid {os.getpid()})"
    (writer,) = first
    assert isinstance(writer, ResultsWriter)
    writer.close()
    # Released: the directory is now a finished run's (it holds results), refused for its contents, not the lock.
    with pytest.raises(UserError, match="already holds results"):
        ResultsWriter(out)
    assert not (out / LOCK).exists()


@pytest.mark.unit
def test_a_refused_claim_leaves_nothing_in_the_users_directory(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not empty"):
        ResultsWriter(mine)
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


@pytest.mark.unit
def test_a_resumed_fleet_directory_is_claimed_too(tmp_path):
    out = tmp_path / "o"
    writer = ResultsWriter(out)
    try:
        with pytest.raises(UserError, match="is in use by another dbperf run"):
            ResultsWriter.reopen(out)
    finally:
        writer.close()
    ResultsWriter.reopen(out).close()


@pytest.mark.e2e
def test_two_runs_started_together_on_one_out(tmp_path):
    """Both pause 3 s after their claim (before any write): both used to pass the emptiness check and append to one
    results.jsonl. Now the second is refused in one line, whatever the timing."""
    out = tmp_path / "o"
    exp = _experiment(tmp_path / "exp.toml", time_="0.3s")
    env = {**os.environ, "DBPERF_TEST_CLAIM_DELAY_S": "3"}
    procs = [subprocess.Popen([*DBPERF, "run", str(exp), "--out", str(out)], cwd=REPO, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    ends = [(p, *p.communicate(timeout=300)) for p in procs]
    codes = sorted(p.returncode for p, *_ in ends)
    assert codes == [0, 2], [(p.returncode, err) for p, _, err in ends]
    (loser,) = [(p, err) for p, _, err in ends if p.returncode == 2]
    (winner,) = [p for p, *_ in ends if p.returncode == 0]
    line = one_error_line(subprocess.CompletedProcess([], 2, "", loser[1]))
    assert line == f"dbperf: error: {out} is in use by another dbperf run (pid {winner.pid})", line
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 1 and records[0]["status"] == "ok"
    assert json.loads((out / "meta.json").read_text())["status"] == "complete"


# --- after SIGKILL: meta.json says running, but no run holds the directory -----------------------------------------

@pytest.mark.unit
def test_a_running_directory_whose_lab_holds_it_is_running(tmp_path):
    out = tmp_path / "o"
    writer = ResultsWriter(out)
    try:
        writer.write_meta(run_meta({"dbperf_results": 1, "status": "running", "base": "a",
                                    "targets": [{"name": "a"}], "benchmarks": []}), "")
        meta, _, _ = read_results(out)
        assert meta.status == "running" and meta.status_note is None
    finally:
        writer.close()


@pytest.mark.e2e
def test_a_lab_killed_mid_run_is_reported_as_died(tmp_path):
    out = tmp_path / "o"
    exp = _experiment(tmp_path / "exp.toml", time_="20s")
    lab = subprocess.Popen([*DBPERF, "run", str(exp), "--out", str(out)], cwd=REPO, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        # Mid-run: the tables are loaded (the target's load is in meta.json) and the cell's driver is running.
        while time.monotonic() < deadline:
            meta = json.loads((out / "meta.json").read_text()) if (out / "meta.json").is_file() else {}
            if meta and "load" in meta["targets"][0]:
                break
            assert lab.poll() is None, "the run ended before it could be killed"
            time.sleep(0.2)
        time.sleep(1)
        assert lab.poll() is None
        os.killpg(lab.pid, signal.SIGKILL)  # the lab and its driver, as a kill -9 of the session would
        lab.wait(30)
    finally:
        if lab.poll() is None:
            os.killpg(lab.pid, signal.SIGKILL)
            lab.wait(30)
    assert json.loads((out / "meta.json").read_text())["status"] == "running"
    proc = run_cli("report", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "run status: died" in proc.stdout, proc.stdout
    assert f"dbperf: note: {out}: the lab died while running (killed?)" in proc.stderr, proc.stderr
    doc = json.loads(run_cli("report", str(out), "--format", "json").stdout)
    assert doc["status"] == "died" and doc["meta"]["status_note"] == "the lab died while running (killed?)"
    markdown = run_cli("report", str(out), "--format", "markdown").stdout
    assert "died" in markdown
    # Read only: the report wrote nothing into the directory.
    assert json.loads((out / "meta.json").read_text())["status"] == "running"


# --- a bad PRAGMA on one target fails that target only -------------------------------------------------------------

@pytest.mark.e2e
@pytest.mark.parametrize("config", ['journal_mode = "NOPE"', 'no_such_pragma = "1"'])
def test_a_bad_pragma_fails_its_target_and_the_others_are_measured(tmp_path, config):
    out = tmp_path / "o"
    exp = _experiment(tmp_path / "exp.toml", time_="0.3s",
                      targets=f'\n[[target]]\nname = "b"\nconfig = {{ {config} }}\n')
    exp.write_text(exp.read_text().replace('["point-query"]', '["point-query", "update-index"]'))
    proc = run_cli("run", str(exp), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    notes = [x for x in proc.stderr.splitlines() if "target 'b'" in x]
    assert len(notes) == 1 and "its cells are recorded as failed" in notes[0], proc.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    by_target = {t: [r for r in records if r["target"] == t] for t in ("a", "b")}
    assert len(by_target["a"]) == 2 and all(r["status"] == "ok" for r in by_target["a"])
    assert len(by_target["b"]) == 2 and all(r["status"] == "failed" for r in by_target["b"])
    pragma = config.split()[0]
    assert all(pragma in r["error"] for r in by_target["b"]), by_target["b"]
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete" and pragma in meta["targets"][1]["error"]


@pytest.mark.e2e
def test_every_target_bad_is_one_line_and_exit_2(tmp_path):
    out = tmp_path / "o"
    exp = _experiment(tmp_path / "exp.toml", time_="0.3s", targets='config = { journal_mode = "NOPE" }\n'
                      '\n[[target]]\nname = "b"\nconfig = { no_such_pragma = "1" }\n')
    line = one_error_line(run_cli("run", str(exp), "--out", str(out)))
    assert "target 'a'" in line and "journal_mode" in line
