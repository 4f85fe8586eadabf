"""Server targets run the way a careless user runs them: the default --out from any working directory, an --out
that is private, long, or built to inject settings, hostile passwords, TERM and SIGKILL to the lab, bad values."""

from __future__ import annotations

import json
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from dbperf.servers.lifecycle import cnf_value, pg_conf_value, sql_string
from dbperf.servers.runtime import runtime_base
from tests.conftest import DBPERF, NEEDS_SERVERS, REPO, run_cli
from tests.test_servers import BOTH, experiment, lab_processes, one_line

pytestmark = [pytest.mark.server, NEEDS_SERVERS]


def runtime_dirs() -> set[str]:
    base = runtime_base()
    return {p.name for p in base.glob("run-*")} if base.is_dir() else set()


def test_default_out_from_another_working_directory(where):
    exp = experiment(where, BOTH, '"point-query"')
    before = runtime_dirs()
    proc = subprocess.run([*DBPERF, "run", "exp.toml"], cwd=where, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (out,) = (where / "results").glob("exp-*")
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete" and exp.is_file()
    assert meta["runtime_dir"].startswith(str(runtime_base()) + "/run-")
    for t in meta["targets"]:
        assert t["data_dir"].startswith(meta["runtime_dir"])
        assert Path(t["log"]).is_file() and Path(t["log"]).is_relative_to(out)
    assert not Path(meta["runtime_dir"]).exists() and runtime_dirs() == before
    assert not Path("/results").exists() and not Path("/data").exists()
    assert lab_processes() == []


def test_a_private_long_hostile_out_injects_nothing(where):
    private = Path(tempfile.mkdtemp(prefix="dbperf-private-"))  # 0700, as any mktemp -d
    marker = where / "pwned"
    hostile = (f"x'\narchive_mode = on\narchive_timeout = 1\narchive_command = 'touch {marker}'\n"
               f"[mariadbd]\ninit-file = /etc/passwd\n# it's a \"space\" ")
    out = private / ("long-" + "o" * 90) / hostile
    password = "p'a\\ss\"w$rd `x` \\'"
    try:
        proc = run_cli("run", str(experiment(where, BOTH, '"point-query", "update-index"')), "--out", str(out),
                       "--keep-data", env={"DBPERF_SERVER_PASSWORD": password}, timeout=600)
        assert proc.returncode == 0, proc.stderr
        time.sleep(1.5)  # an injected archive_timeout of 1 s would have run archive_command by now
        assert not marker.exists()
        meta = json.loads((out / "meta.json").read_text())
        lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
        assert [x["status"] for x in lines] == ["ok"] * 4
        runtime = Path(meta["runtime_dir"])
        conf = next(runtime.rglob("dbperf.conf")).read_text() + next(runtime.rglob("my.cnf")).read_text()
        assert "archive" not in conf and "passwd" not in conf and str(private) not in conf
        tmpdirs = [line for line in conf.splitlines() if line.startswith("tmpdir = ")]
        assert len(tmpdirs) == 1 and tmpdirs[0].startswith(f"tmpdir = {runtime}/"), tmpdirs  # not the shared /tmp
        for path in out.rglob("*"):
            if path.is_file():
                assert password not in path.read_text(errors="replace"), path
        assert password not in proc.stdout + proc.stderr
    finally:
        if (out / "meta.json").is_file():
            kept = json.loads((out / "meta.json").read_text()).get("runtime_dir")
            subprocess.run(["rm", "-rf", kept or "/nonexistent"])
        subprocess.run(["rm", "-rf", str(private)])
    assert lab_processes() == []


@pytest.mark.parametrize("engine", ["postgres", "mariadb"])
def test_no_password_reaches_a_server_environment(where, monkeypatch, engine):
    from dbperf.experiment.spec import parse_experiment
    from dbperf.servers.registry import server_target

    secret, other = "srv-secret\\'\"1", "external-secret-2"
    monkeypatch.setenv("DBPERF_SERVER_PASSWORD", secret)
    monkeypatch.setenv("EXT_SECRET", other)
    dsn = "postgresql://bob@127.0.0.1:1/db" if engine == "postgres" else "mysql://bob@127.0.0.1:1/db"
    body = (f'[[target]]\nname = "lab"\nengine = "{engine}"\n\n'
            f'[[target]]\nname = "ext"\nengine = "{engine}"\ndsn = "{dsn}"\npassword_env = "EXT_SECRET"\n')
    exp = parse_experiment(experiment(where, body))
    server_target(where / "ext", where / "logs", exp.targets[1], exp)  # registers its password variable
    server = server_target(where / "data", where / "logs", exp.targets[0], exp)
    server.start()
    try:
        assert server.server is not None
        environ = Path(f"/proc/{server.server.pid}/environ").read_bytes()
        assert secret.encode() not in environ and other.encode() not in environ
        assert b"DBPERF_SERVER_PASSWORD" not in environ and b"EXT_SECRET" not in environ
        server._exec(None if engine == "mariadb" else "postgres", ["SELECT 1"], "logging in with the password")
    finally:
        server.stop()
    assert lab_processes() == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_the_servers_die_with_the_lab(where, sig):
    exp = experiment(where, BOTH, '"point-query"').read_text().replace('time = "1s"', 'time = "60s"')
    (where / "exp.toml").write_text(exp)
    out = where / "out"
    proc = subprocess.Popen([*DBPERF, "run", str(where / "exp.toml"), "--out", str(out)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Both servers loaded and running, or the lab ended before that (then its own words say why).
    deadline = time.monotonic() + 300
    meta: dict = {}
    while time.monotonic() < deadline and proc.poll() is None:
        meta = json.loads((out / "meta.json").read_text()) if (out / "meta.json").is_file() else {}
        if all(t.get("load") for t in meta.get("targets", [{}])) and len(lab_processes()) >= 2:
            break
        time.sleep(0.2)
    if proc.poll() is not None or len(lab_processes()) < 2:
        proc.kill()
        _, stderr = proc.communicate(timeout=60)
        pytest.fail(f"the lab's servers were not both up (lab exit {proc.returncode}, targets "
                    f"{[(t.get('name'), bool(t.get('load')), t.get('error')) for t in meta.get('targets', [])]}, "
                    f"servers {lab_processes()}): {stderr[-2000:]}")
    runtime = Path(meta["runtime_dir"])
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == (143 if sig == signal.SIGTERM else -signal.SIGKILL), stderr
    deadline = time.monotonic() + 30  # after SIGKILL the watchdog stops them: TERM, then KILL after 10 s
    while (lab_processes() or runtime.exists()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert lab_processes() == [] and not runtime.exists()
    if sig == signal.SIGTERM:
        assert json.loads((out / "meta.json").read_text())["status"] == "interrupted"


@pytest.mark.parametrize(("engine", "config", "fragments"), [
    ("mariadb", 'innodb_buffer_pool_size = "lots"', ["'lots'", "innodb-buffer-pool-size"]),
    ("mariadb", "innodb_flush_log_at_trx_commit = 7", ["did not take a setting as written", "7 adjusted to"]),
    ("postgres", 'shared_buffers = "lots"', ["invalid value for parameter", "shared_buffers", "lots"]),
])
def test_a_bad_setting_value_quotes_the_servers_line(where, engine, config, fragments):
    body = f'[[target]]\nname = "t"\nengine = "{engine}"\nconfig = {{ {config} }}\n'
    line = one_line(run_cli("run", str(experiment(where, body, '"point-query"')), "--out", str(where / "out"),
                            timeout=300))
    for fragment in fragments:
        assert fragment in line, line
    assert "Aborting" not in line
    assert lab_processes() == []


def test_values_are_quoted_for_their_format():
    assert pg_conf_value("it's a \\path", "x") == "'it''s a \\\\path'"
    assert sql_string("a'b\\c", "x") == "'a''b\\\\c'"
    assert sql_string("a'b\\c", "x", backslash_escapes=False) == "'a''b\\c'"
    for bad in ("line\nbreak", "nul\0", "tab\t"):
        with pytest.raises(Exception, match="control character"):
            pg_conf_value(bad, "x")
        with pytest.raises(Exception, match="control character"):
            sql_string(bad, "x")
    assert cnf_value("/var/lib/dbperf/run-x/t1/data", "x") == "/var/lib/dbperf/run-x/t1/data"
    for bad in ("with space", "hash#comment", "quote'", "back\\slash", "new\nline"):
        with pytest.raises(Exception, match=r"cannot be written to my\.cnf"):
            cnf_value(bad, "x")


def test_a_refused_server_target_leaves_nothing_behind(where):
    body = ('[[target]]\nname = "ext"\nengine = "postgres"\ndsn = "postgresql://bob@127.0.0.1:1/db"\n'
            'password_env = "NOT_SET_ANYWHERE"\n\n[[target]]\nname = "pg"\nengine = "postgres"\n')
    before = runtime_dirs()
    out = where / "out"
    line = one_line(run_cli("run", str(experiment(where, body, '"point-query"')), "--out", str(out)))
    assert "environment variable NOT_SET_ANYWHERE is not set" in line
    assert not out.exists() and runtime_dirs() == before
