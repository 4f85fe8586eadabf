"""The replication lab on PostgreSQL: the [replication] section for a postgres target and its report (unit), and a
real primary with a hot standby started, replicated, measured and stopped by the lab (server)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.records import (
    ApplyRecord,
    LagSample,
    StaleReadsRecord,
    StaleReadsResult,
    WaitLatency,
    encode,
    results_record,
)
from dbperf.replication import pg_cluster
from dbperf.replication.lab import run_replication
from dbperf.report.formats import render
from dbperf.report.formats.html import chart_page
from dbperf.report.replication_html import replication_page
from dbperf.report.replication_report import replication_view
from dbperf.report.replication_view import replication_summary
from tests.conftest import DBPERF, NEEDS_SERVERS, REPO, run_cli
from tests.synthetic import replication_meta

TARGET = '[[target]]\nname = "pg"\nengine = "postgres"\n'


def pg_experiment(where: Path, replication: str, run: str = "") -> Path:
    path = where / "exp.toml"
    path.write_text(f'[run]\nbenchmarks = ["update-index"]\ntable_size = 2000\nthreads = [2]\n{run}\n'
                    f"[replication]\n{replication}\n{TARGET}")
    return path


@pytest.mark.unit
def test_postgres_section_defaults_and_choices(tmp_path):
    r = parse_experiment(pg_experiment(tmp_path, "")).replication
    assert r is not None
    assert r.workers == (1,) and r.modes == ("physical",) and r.commit_wait_counts == (0,)
    assert r.durability == ("standby-fsync", "standby-no-fsync", "no-full-page-writes", "primary-sync-commit")
    assert r.stale_durability == "standby-fsync" and r.studies == ("apply", "stale-reads")
    r = parse_experiment(pg_experiment(tmp_path, 'modes = ["physical", "physical-prefetch"]\nworkers = [1]\n'
                                                 'durability = "standby-no-fsync"')).replication
    assert r is not None and r.apply_measurements(benchmarks=1, thread_counts=1) == 3 * 2  # 3 repeats by default
    with pytest.raises(UserError, match="modes: unknown 'conservative'"):
        parse_experiment(pg_experiment(tmp_path, 'modes = ["conservative"]'))


@pytest.mark.unit
def test_scram_verifier_and_lsn():
    verifier = pg_cluster.scram_verifier("s3cret", iterations=4096)
    mech, rest = verifier.split("$", 1)
    iterations_salt, keys = rest.split("$")
    iterations, salt = iterations_salt.split(":")
    stored, server = keys.split(":")
    assert mech == "SCRAM-SHA-256" and iterations == "4096" and "s3cret" not in verifier
    # RFC 5802: StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key")
    salted = hashlib.pbkdf2_hmac("sha256", b"s3cret", base64.b64decode(salt), 4096)
    assert base64.b64decode(stored) == hashlib.sha256(hmac.new(salted, b"Client Key", "sha256").digest()).digest()
    assert base64.b64decode(server) == hmac.new(salted, b"Server Key", "sha256").digest()
    assert pg_cluster.lsn("0/3000000") == 0x3000000 and pg_cluster.lsn("16/B374D848") == (0x16 << 32) + 0xB374D848
    assert pg_cluster.lsn(None) == 0


def _lat(p50: float) -> WaitLatency:
    return WaitLatency(p50_us=p50, p95_us=2 * p50, p99_us=3 * p50, max_us=4 * p50, mean_us=p50)


def _pg_records() -> list:
    series = [LagSample(t_s=0.0, phase="load", replay_behind_bytes=0, receive_behind_bytes=0),
              LagSample(t_s=0.1, phase="load", replay_behind_bytes=3 << 20, receive_behind_bytes=0, replay_lag_s=0.2),
              LagSample(t_s=0.2, phase="apply", replay_behind_bytes=0, receive_behind_bytes=0, replay_lag_s=0.3)]
    apply = ApplyRecord(type="replication_apply", replica="pg-replica1", benchmark="update-index", client_threads=2,
                        workers=1, mode="physical", durability="standby-fsync", commit_wait_count=0,
                        commit_wait_usec=0, repeat=1, status="ok", transactions=2000, primary_s=0.5,
                        primary_trx_per_s=4000.0, apply_s=0.2, trx_per_s=10000.0, wal_bytes=600_000,
                        lag_series=series)

    def stale(wait: bool, stale_n: int, write: float) -> StaleReadsRecord:
        res = StaleReadsResult(reads=100, stale=stale_n, wait_timeouts=0, write_latency=_lat(write),
                               read_latency=_lat(50.0), background_transactions=10, background_trx_per_s=200.0,
                               elapsed_s=1.0, wait_latency=_lat(write) if wait else None)
        return StaleReadsRecord(type="replication_stale_reads", wait=wait, reads=100, background_threads=1,
                                status="ok", durability="standby-fsync", workers=1, mode="physical", result=res)

    return [results_record(json.loads(encode(r))) for r in (apply, stale(False, 97, 400.0), stale(True, 0, 1400.0))]


@pytest.mark.unit
def test_postgres_summary_says_workers_do_not_apply_and_what_the_wait_adds():
    records = _pg_records()
    meta = replication_meta({"replication": {"cpus": 2, "engine": "postgres"}})
    s = replication_summary(meta, records)
    (row,) = s["apply"]
    assert row["workers"] == 1 and row["vs_serial"] is None and "not applicable" in row["workers_note"]
    assert row["peak_replay_behind_bytes"] == 3 << 20 and row["peak_replay_lag_s"] == 0.3
    assert [x["phase"] for x in row["lag_series"]] == ["load", "load", "apply"]
    st = s["stale_reads"]
    assert st["without_wait"] == 0.97 and st["with_wait"] == 0.0 and st["wait"] == "synchronous_commit = remote_apply"
    assert st["wait_added_us"] == {"p50_us": 1000.0, "p95_us": 2000.0, "p99_us": 3000.0}
    assert "startup process" in s["cores_note"]
    md = render(replication_view(meta, records, []), "markdown")
    assert "| 1 (n/a) |" in md and "remote_apply" in md and "replay lag over time" in md


def _postgres_of(runtime_dir: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if runtime_dir in line and "postgres" in line]


SMALL = """studies = ["apply", "stale-reads"]
transactions = 1500
durability = ["primary-sync-commit", "standby-fsync"]
stale_durability = "standby-fsync"
stale_reads = 200
background_threads = 1
repeats = 1
"""


@pytest.mark.server
@NEEDS_SERVERS
def test_postgres_primary_and_standby_apply_and_stale_reads(tmp_path):
    marker = "Pw-pg-repl-marker-5c1d"
    out = tmp_path / "out"
    proc = run_cli("run", str(pg_experiment(tmp_path, SMALL)), "--out", str(out), timeout=900,
                   env={"DBPERF_SERVER_PASSWORD": marker})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "standby apply rate" in proc.stdout and "remote_apply" in proc.stdout
    report = run_cli("report", str(out), "--format", "json")
    assert report.returncode == 0, report.stderr
    r = json.loads(report.stdout)["replication"]
    assert r["engine"] == "postgres" and r["failures"] == []
    assert {(a["workers"], a["mode"], a["durability"]) for a in r["apply"]} == {
        (1, "physical", d) for d in ("primary-sync-commit", "standby-fsync")}
    for a in r["apply"]:
        assert a["trx_per_s"] > 0 and a["transactions"] >= 1500 and a["wal_bytes"] > 0, a
        assert a["resume_delay_s"] is not None and a["resume_delay_s"] >= 0
        phases = {x["phase"] for x in a["lag_series"]}
        assert phases == {"load", "apply"}, a["lag_series"]
        # replay was paused during the load: the standby fell behind, then caught up
        last = a["lag_series"][-1]
        assert last["phase"] == "apply" and last["replay_behind_bytes"] < a["peak_replay_behind_bytes"]
    stale = r["stale_reads"]
    assert 0.0 <= stale["without_wait"] <= 1.0
    assert stale["with_wait"] == 0.0  # remote_apply: the commit returns once the standby has replayed it
    assert stale["wait_latency_us"]["p50_us"] > 0 and stale["reads_with_wait"] == 200
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete"
    servers = {s["role"]: s for s in meta["replication"]["servers"]}
    assert set(servers) == {"primary", "replica1"}
    conninfo = dict(servers["replica1"]["settings"])["primary_conninfo"]
    assert "passfile=" in conninfo and "password" not in conninfo.replace("passfile", "")
    assert sorted(p.name for p in (out / "logs").iterdir()) == ["pg-primary.log", "pg-replica1.log"]
    # Neither the lab's password nor the replication role's (nor its verifier) reaches a result, report or log.
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert marker not in text and "SCRAM-SHA-256$" not in text and "PASSWORD" not in text, path
    assert marker not in proc.stdout + proc.stderr + report.stdout
    assert not Path(meta["runtime_dir"]).exists() and _postgres_of(meta["runtime_dir"]) == []


@pytest.mark.server
@NEEDS_SERVERS
def test_standby_killed_mid_study_fails_it_with_its_log_and_stops_everything(tmp_path):
    out = tmp_path / "out"
    exp = pg_experiment(tmp_path, 'transactions = 30000\ndurability = ["standby-fsync"]\nstale_reads = 100\n'
                                  'repeats = 1\n')
    proc = subprocess.Popen([*DBPERF, "run", str(exp), "--out", str(out)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    killed: list[int] = []

    def kill_standby_during_apply() -> None:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            meta_path = out / "meta.json"
            if meta_path.is_file():
                servers = json.loads(meta_path.read_text()).get("replication", {}).get("servers")
                standby = next((s for s in servers or [] if s["role"] == "replica1"), None)
                # The first measurement has paused the replay (the standby logs it): the primary writes now.
                if standby and "pg_wal_replay_resume() to continue" in Path(standby["log"]).read_text():
                    os.kill(standby["server_pid"], signal.SIGKILL)
                    killed.append(standby["server_pid"])
                    return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_standby_during_apply)
    killer.start()
    _, stderr = proc.communicate(timeout=900)
    killer.join()
    assert killed, stderr
    assert "Traceback" not in stderr
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    apply = [x for x in lines if x["type"] == "replication_apply"]
    assert apply[-1]["status"] == "failed" and "replica1" in apply[-1]["error"], apply[-1]
    assert "killed by SIGKILL" in apply[-1]["server_log_tail"]
    # The standby was started again (it resumes from its slot) for the next study, which ran.
    stale = [x for x in lines if x["type"] == "replication_stale_reads"]
    assert stale and all(x["status"] == "ok" for x in stale), stale
    assert proc.returncode == 0, stderr
    meta = json.loads((out / "meta.json").read_text())
    assert next(s for s in meta["replication"]["servers"] if s["role"] == "replica1")["restarts"] == 1
    assert _postgres_of(meta["runtime_dir"]) == [] and not Path(meta["runtime_dir"]).exists()
    assert "FAILED apply" in run_cli("report", str(out)).stdout


@pytest.mark.server
@NEEDS_SERVERS
def test_a_standby_that_cannot_connect_names_the_step_and_quotes_the_server(tmp_path, monkeypatch):
    """The standby's passfile holds a wrong password: pg_basebackup is refused by the primary."""
    real = pg_cluster.PgCluster._write_passfile
    secrets: list[str] = []

    def wrong_password(self, r, user):
        saved, self.repl_password = self.repl_password, "not-the-password"
        secrets.extend([saved, self.primary.password])
        try:
            real(self, r, user)
        finally:
            self.repl_password = saved

    monkeypatch.setattr(pg_cluster.PgCluster, "_write_passfile", wrong_password)
    e = parse_experiment(pg_experiment(tmp_path, 'studies = ["stale-reads"]\nstale_reads = 10\n'))
    out = tmp_path / "out"
    with pytest.raises(UserError) as err:
        run_replication(e, out, Console(file=open(os.devnull, "w")))  # noqa: SIM115
    message = str(err.value)
    assert "pg-replica1" in message and "pg_basebackup" in message, message
    assert "password authentication failed" in message and "\n" not in message
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "failed" and _postgres_of(meta["runtime_dir"]) == []
    assert not Path(meta["runtime_dir"]).exists()
    # The real replication password and the lab's reach no result or log (the primary logged the refused login).
    assert secrets and all(secrets)
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert not any(x in text for x in secrets) and "SCRAM-SHA-256$" not in text, path


@pytest.mark.e2e
def test_html_report_of_a_replication_run_draws_its_charts(tmp_path):
    """PostgreSQL (bars per durability and mode, the lag over time) and MariaDB (trx/s against workers) pages in
    chromium: every chart drawn, no script error, the tables there."""
    from tests.browser import browser, render
    from tests.test_replication import _apply
    pages = {
        "pg": chart_page(replication_page(replication_meta({"experiment": "<b>pg</b>", "status": "complete",
                                                 "replication": {"cpus": 2, "engine": "postgres"}}), _pg_records())),
        "maria": chart_page(replication_page(replication_meta({"experiment": "m", "status": "complete",
                                                    "replication": {"cpus": 2}}),
                                  [results_record(json.loads(encode(_apply(w, 100.0 * (w + 1)))))
                                   for w in (0, 2, 4)])),
    }
    with browser() as context:
        for name, document in pages.items():
            path = tmp_path / f"{name}.html"
            path.write_text(document)
            shown = render(context, path, f"replication-{name}.png")
            assert shown.state == "rendered" and shown.errors == [], (name, shown.state, shown.errors)
            assert len(shown.charts) == (2 if name == "pg" else 1)
            assert all(c["svg"] >= 1 and c["marks"] >= 1 for c in shown.charts), shown.charts
    assert "<b>pg</b>" not in pages["pg"] and "1 (n/a)" in pages["pg"]
