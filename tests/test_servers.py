"""Real PostgreSQL and MariaDB started, loaded, measured and stopped by the lab, through the real CLI."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import DBPERF, NEEDS_SERVERS, REPO, SERVER_DIR_PREFIX, run_cli

pytestmark = [pytest.mark.server, NEEDS_SERVERS]


def experiment(where: Path, targets: str, benchmarks: str = '"point-query", "update-index", "read-write-10"',
               extra: str = "") -> Path:
    path = where / "exp.toml"
    path.write_text(f'[run]\nbenchmarks = [{benchmarks}]\ntable_size = 2000\ntime = "1s"\nwarmup = "0.2s"\n'
                    f"repeats = 1\n{extra}\n{targets}")
    return path


BOTH = """
[[target]]
name = "pg"
engine = "postgres"
config = { shared_buffers = "64MB" }

[[target]]
name = "maria"
engine = "mariadb"
config = { innodb_buffer_pool_size = "64M" }
allocator = "jemalloc"
"""


def lab_processes() -> list[str]:
    """Servers still running from a lab data directory: the runtime directory, or a test's own directory."""
    from dbperf.servers.runtime import runtime_base

    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    places = (SERVER_DIR_PREFIX, str(runtime_base()))
    return [line for line in out.splitlines()
            if any(p in line for p in places) and ("postgres" in line or "mariadbd" in line)]


def test_both_servers_end_to_end(where):
    out = where / "out"
    marker = "Pw-marker-4c1f9e"
    proc = run_cli("run", str(experiment(where, BOTH)), "--out", str(out), "--keep-data", timeout=600,
                   env={"DBPERF_SERVER_PASSWORD": marker})
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(run_cli("report", str(out), "--format", "json").stdout)
    assert doc["targets"] == ["pg", "maria"] and len(doc["cells"]) == 6
    for c in doc["cells"]:
        assert c["status"] == "ok" and c["qps_median"] > 0, c
        assert c["server_cpu_us_per_query"] > 0 and c["server_cs_per_query"] > 0
        assert c["total_cpu_us_per_query"] == pytest.approx(c["cpu_us_per_query"] + c["server_cpu_us_per_query"],
                                                            rel=0.2)
    meta = json.loads((out / "meta.json").read_text())
    versions = {t["name"]: t["engine_version"] for t in meta["targets"]}
    # the allocator was preloaded into the server and every cell checked /proc/PID/maps for it
    assert meta["targets"][1]["process_variant"]["environment"]["LD_PRELOAD"].endswith("libjemalloc.so.2")
    assert versions["pg"].startswith("15.") and "MariaDB" in versions["maria"]
    for t in meta["targets"]:
        assert t["dsn"].startswith(("postgresql://dbperf@127.0.0.1:", "mysql://dbperf@127.0.0.1:"))
        assert Path(t["log"]).is_file()
        assert oct(Path(t["data_dir"]).stat().st_mode)[-3:] == "700"
    assert "client CPU" in proc.stdout and "server CPU" in proc.stdout
    # the password reaches no result, report or log
    for path in out.rglob("*"):
        if path.is_file() and ".data" not in path.parts:
            assert marker not in path.read_text(errors="replace"), path
    assert marker not in proc.stdout + proc.stderr
    assert not list(Path(tempfile.gettempdir()).glob("dbperf-pw-*")) and not list(
        Path(tempfile.gettempdir()).glob("dbperf-init-*"))
    assert lab_processes() == []


def test_unprepared_statements(where):
    proc = run_cli("run", str(experiment(where, BOTH, '"point-query", "write-only"', "prepared = false")),
                   "--out", str(where / "out"), timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in (where / "out" / "results.jsonl").read_text().splitlines()]
    assert all(x["status"] == "ok" and x["result"]["errors"] == 0 for x in lines), lines


def test_sigkill_during_a_cell_fails_it_and_the_next_cell_runs(where):
    out = where / "out"
    body = '[[target]]\nname = "maria"\nengine = "mariadb"\n'
    exp = experiment(where, body, '"point-query", "update-index"').read_text().replace('time = "1s"', 'time = "4s"')
    (where / "exp.toml").write_text(exp)
    proc = subprocess.Popen([*DBPERF, "run", str(where / "exp.toml"), "--out", str(out)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def kill_during_first_cell() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            meta_path = out / "meta.json"
            if meta_path.is_file():
                meta = json.loads(meta_path.read_text())
                pid = meta["targets"][0].get("server_pid")
                if pid and meta["targets"][0].get("load") and not (out / "results.jsonl").read_text():
                    time.sleep(1.5)  # inside the first cell's measured window
                    os.kill(pid, signal.SIGKILL)
                    return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_during_first_cell)
    killer.start()
    _, stderr = proc.communicate(timeout=600)
    killer.join()
    assert proc.returncode == 0, stderr
    first, second = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert first["status"] == "failed" and "server died" in first["error"]
    assert first["server_log_tail"]
    assert second["status"] == "ok" and second.get("server_restarted_before") is True
    meta = json.loads((out / "meta.json").read_text())
    assert meta["targets"][0]["restarts"] == 1
    assert lab_processes() == []


def one_line(proc) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [x for x in proc.stderr.strip().splitlines() if x.startswith("dbperf: error:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_missing_binaries_the_user_named_are_theirs_to_fix(where):
    body = '[[target]]\nname = "pg"\nengine = "postgres"\nbinaries = "/nonexistent/bin"\n'
    line = one_line(run_cli("run", str(experiment(where, body)), "--out", str(where / "out")))
    assert "PostgreSQL server not found: no /nonexistent/bin/initdb, /nonexistent/bin/postgres" in line, line
    assert "apt install" not in line and "check the target's binaries" in line
    body = '[[target]]\nname = "m"\nengine = "mariadb"\nbinaries = "/nonexistent/mariadbd"\n'
    line = one_line(run_cli("run", str(experiment(where, body)), "--out", str(where / "out2")))
    assert "MariaDB server not found: no /nonexistent/mariadbd" in line and "apt install" not in line, line


def test_missing_default_binaries_name_debians_package(monkeypatch, tmp_path):
    from dbperf.servers.mariadb import MariaDBServer
    from dbperf.servers.postgres import PostgresServer

    monkeypatch.setattr(PostgresServer, "default_binaries", str(tmp_path / "15" / "bin"))
    monkeypatch.setattr(MariaDBServer, "default_binaries", str(tmp_path / "mariadbd"))
    assert "(apt install postgresql)" in (PostgresServer.missing_programs(tmp_path / "15" / "bin") or "")
    assert "(apt install mariadb-server)" in (MariaDBServer.missing_programs(tmp_path / "mariadbd") or "")


def test_port_already_taken(where):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        body = f'[[target]]\nname = "pg"\nengine = "postgres"\nport = {port}\n'
        line = one_line(run_cli("run", str(experiment(where, body)), "--out", str(where / "out")))
    assert f"port {port} on 127.0.0.1 is already in use" in line


def test_rejected_config_key_quotes_the_server_log(where):
    body = '[[target]]\nname = "pg"\nengine = "postgres"\nconfig = { no_such_setting = "1" }\n'
    line = one_line(run_cli("run", str(experiment(where, body)), "--out", str(where / "out"), timeout=300))
    assert "no_such_setting" in line
    body = '[[target]]\nname = "m"\nengine = "mariadb"\nconfig = { no_such_variable = "1" }\n'
    line = one_line(run_cli("run", str(experiment(where, body)), "--out", str(where / "out2"), timeout=300))
    assert "no_such_variable" in line or "no-such-variable" in line
    assert lab_processes() == []


def test_unwritable_data_directory(where):
    blocked = where / "blocked"
    blocked.mkdir()
    (blocked / "out").write_text("a file where the results directory should go")
    body = '[[target]]\nname = "pg"\nengine = "postgres"\n'
    line = one_line(run_cli("run", str(experiment(where, body)), "--out", str(blocked / "out" / "x")))
    assert f"{blocked / 'out'} is not a directory" in line


def test_unreachable_dsn_and_wrong_password(where):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nobody listens here
    body = f'[[target]]\nname = "ext"\nengine = "postgres"\ndsn = "postgresql://bob@127.0.0.1:{port}/db"\n'
    line = one_line(run_cli("run", str(experiment(where, body)), "--out", str(where / "out")))
    assert f"nothing listens at 127.0.0.1:{port}" in line and not (where / "out").exists()
    body = '[[target]]\nname = "ext"\nengine = "postgres"\ndsn = "postgresql://bob:hunter2@127.0.0.1/db"\n'
    line = one_line(run_cli("run", str(experiment(where, body)), "--out", str(where / "out")))
    assert "keep the password out of the experiment file" in line and "hunter2" not in line


def test_wrong_password_against_a_lab_server(where):
    """Start a lab server, then point an external target at it with a wrong password."""
    from dbperf.experiment.spec import parse_experiment
    from dbperf.servers.registry import server_target

    exp = parse_experiment(experiment(where, '[[target]]\nname = "pg"\nengine = "postgres"\n'))
    server = server_target(where / "data", where / "logs", exp.targets[0], exp)
    server.start()
    try:
        body = (f'[[target]]\nname = "ext"\nengine = "postgres"\n'
                f'dsn = "postgresql://dbperf@127.0.0.1:{server.port}/postgres"\npassword_env = "WRONG_PW"\n')
        proc = run_cli("run", str(experiment(where, body)), "--out", str(where / "out"),
                       env={"WRONG_PW": "not-the-password"})
        line = one_line(proc)
        assert "password authentication failed" in line and "not-the-password" not in proc.stderr
    finally:
        server.stop()
    assert lab_processes() == []


def test_external_target_runs_without_lifecycle(where):
    """An external DSN: the lab neither starts nor stops it, loads its tables and reloads them before writes."""
    from dbperf.experiment.spec import parse_experiment
    from dbperf.servers.registry import server_target

    exp = parse_experiment(experiment(where, '[[target]]\nname = "m"\nengine = "mariadb"\n'))
    server = server_target(where / "data", where / "logs", exp.targets[0], exp)
    server.start()
    try:
        server._exec(None, ["CREATE DATABASE IF NOT EXISTS ext"], "creating the external database")
        body = (f'[[target]]\nname = "ext"\nengine = "mariadb"\n'
                f'dsn = "mariadb://dbperf@127.0.0.1:{server.port}/ext"\npassword_env = "EXT_PW"\n')
        proc = run_cli("run", str(experiment(where, body, '"point-query", "update-index", "delete"')),
                       "--out", str(where / "out"), env={"EXT_PW": server.password}, timeout=300)
        assert proc.returncode == 0, proc.stderr
        lines = [json.loads(x) for x in (where / "out" / "results.jsonl").read_text().splitlines()]
        assert [x["status"] for x in lines] == ["ok", "ok", "ok"]
        assert "server_usage" not in lines[0]["result"] or lines[0]["result"]["server_usage"] is None
        assert server.server is not None and server.server.alive()  # the lab left it running
    finally:
        server.stop()
