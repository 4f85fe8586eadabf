"""MySQL as a target (issue 51): the engine's descriptor and the lab-owned settings of its own listeners, the
install check (not there, a MariaDB install, a MySQL older than 8.0: one line each), the my.cnf the lab writes
(127.0.0.1 only, the X Plugin off), and end to end against a MySQL when one is at hand (DBPERF_MYSQL_BINARIES: a
MySQL basedir), skipped with its reason otherwise."""

from __future__ import annotations

import json
import os
import pwd
import stat
from pathlib import Path

import pytest

from dbperf import engines
from dbperf.engines.lab_owned import lab_owned_refusal
from dbperf.experiment.model import Experiment, Target
from dbperf.servers.mysql import MySQLServer, install_problem, mysqld_of
from tests.conftest import run_cli
from tests.refusal import assert_refused


def mysql_at_hand() -> str | None:
    """A MySQL basedir for the end-to-end tiers: DBPERF_MYSQL_BINARIES, else the lab's cached -O2 build from Debian's
    source (`source = "mysql@debian-src"`, build = ["O2"]) when this machine has built one."""
    from dbperf.buildlab.server_cache_listing import cached_server_builds

    named = os.environ.get("DBPERF_MYSQL_BINARIES")
    if named:
        return named
    built = [m["install"] for m in cached_server_builds()
             if m.get("engine") == "mysql" and m.get("variants") == ["O2"] and not m.get("pgo")]
    return built[0] if built else None


MYSQL_BINARIES = mysql_at_hand()
NO_MYSQL = ("no MySQL at hand: DBPERF_MYSQL_BINARIES names a MySQL basedir, or the lab's cached build of "
            "mysql@debian-src with build = [\"O2\"] (no registry this project reaches serves one)")


def fake_mysqld(basedir: Path, says: str) -> Path:
    """A basedir whose bin/mysqld prints `says` for --version."""
    program = basedir / "bin" / "mysqld"
    program.parent.mkdir(parents=True)
    program.write_text(f"#!/bin/sh\necho '{says}'\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return program


@pytest.mark.unit
def test_mysql_is_a_server_engine_of_the_family():
    m = engines.engine("mysql")
    assert m.server and m.title == "MySQL" and m.process_model.one_process and m.service_user == "mysql"
    assert "MySQL" in engines.SERVER_TITLES and m.counters_query is not None
    assert m.counters_query(9)[0] == engines.engine("mariadb").counters_query(11)[0]


@pytest.mark.unit
@pytest.mark.parametrize("name", ["mysqlx_bind_address", "mysqlx-port", "admin_address", "bind_address",
                                  "authentication_policy"])
def test_mysqls_own_listeners_and_logins_are_the_labs(name):
    refusal = lab_owned_refusal("mysql", name, "target 'm' config")
    assert refusal and "\n" not in refusal, refusal


@pytest.mark.unit
def test_an_install_that_is_not_mysql_says_what_it_is(where):
    """The fakes live where the service user can run them: the lab runs `mysqld --version` as that user."""
    assert "MySQL server not found: no " in (install_problem(where / "nothing") or "")
    assert "MySQL server not found" in (install_problem(Path("/nonexistent")) or "")  # never "MariaDB" for /
    (where / "empty").mkdir()
    assert "no MySQL server there" in (install_problem(where / "empty") or "")
    maria = where / "maria"
    fake_mysqld(maria, "mysqld  Ver 11.4.5-MariaDB for Linux on x86_64")
    assert "is a MariaDB install" in (install_problem(maria) or "")
    (maria / "bin" / "mariadbd").write_text("")
    assert "is a MariaDB install" in (install_problem(maria) or "")
    old = where / "old"
    fake_mysqld(old, "mysqld  Ver 5.7.44 for linux-glibc2.12 on x86_64 (MySQL Community Server (GPL))")
    line = install_problem(old) or ""
    assert "MySQL 5.7.44 is older than the lab supports (MySQL 8.0 and later)" in line and "\n" not in line
    new = where / "new"
    fake_mysqld(new, "/x/bin/mysqld  Ver 9.7.0 for Linux on x86_64 (MySQL Community Server - GPL)")
    assert install_problem(new) is None and install_problem(new / "bin" / "mysqld") is None
    assert mysqld_of(new) == new / "bin" / "mysqld"


@pytest.mark.unit
def test_debians_mysqld_is_mariadb_and_said_so():
    debian = Path("/usr/sbin/mysqld")
    if not debian.exists():
        pytest.skip("no /usr/sbin/mysqld here (make setup installs mariadb-server)")
    assert "is a MariaDB install" in (install_problem(debian) or "")


@pytest.mark.unit
def test_the_my_cnf_listens_on_127_0_0_1_only_with_the_x_plugin_off(tmp_path):
    e = Experiment(path=tmp_path / "e.toml", text="", benchmarks=(), targets=(), base="m")
    target = Target(name="m", engine="mysql", library="", binaries=str(tmp_path),
                    config={"innodb_flush_log_at_trx_commit": "2"})
    server = MySQLServer(tmp_path / "t1", tmp_path / "logs", target, e)
    user = pwd.getpwuid(os.getuid())
    cnf = server.my_cnf(tmp_path / "t1" / "data", 33306, user, tmp_path / "t1" / "init.sql", tmp_path)
    lines = cnf.splitlines()
    assert lines[0] == "[mysqld]" and "bind-address = 127.0.0.1" in lines and "loose-mysqlx = OFF" in lines
    assert "port = 33306" in lines and f"basedir = {tmp_path}" in lines
    assert lines[-1] == "innodb_flush_log_at_trx_commit = 2"  # the target's settings last
    assert f"socket = {tmp_path}/t1/data/mysqld.sock" in lines
    assert f"tmpdir = {tmp_path}/t1/tmp" in lines  # private, never the shared /tmp


@pytest.mark.unit
def test_a_restart_with_the_password_already_set_runs_no_init_file(tmp_path):
    """The init file's six statements (two users, each hashed by caching_sha2_password) run when the data directory
    is new or the password is not the one this server set; a restart (a cell's data loaded natively, then the server
    under lackey) skips them, and its my.cnf names no init file."""
    e = Experiment(path=tmp_path / "e.toml", text="", benchmarks=(), targets=(), base="m")
    server = MySQLServer(tmp_path / "t1", tmp_path / "logs", Target(name="m", engine="mysql", library="",
                                                                    binaries=str(tmp_path)), e)
    (tmp_path / "t1").mkdir()
    user = pwd.getpwuid(os.getuid())
    password = server.password
    assert password is not None
    first = server.write_init_file(user, password, initialised=True)
    assert first is not None and "IDENTIFIED BY" in first.read_text()
    assert server.write_init_file(user, password, initialised=False) is not None  # logins not yet seen to work
    server._logins_set = password  # what start_with records once logins work
    assert server.write_init_file(user, password, initialised=False) is None
    assert server.write_init_file(user, password, initialised=True) is not None  # a new data directory
    assert server.write_init_file(user, password + "x", initialised=False) is not None  # another password
    cnf = server.my_cnf(tmp_path / "t1" / "data", 33306, user, None, tmp_path)
    assert not any(line.startswith("init-file") for line in cnf.splitlines())
    assert any(line.startswith("init-file") for line in server.my_cnf(tmp_path / "t1" / "data", 33306, user, first,
                                                                       tmp_path).splitlines())


@pytest.mark.unit
def test_a_mysql_target_without_its_install_is_one_line(tmp_path):
    (tmp_path / "e.toml").write_text('[run]\nbenchmarks = ["point-query"]\ntable_size = 100\n'
                                     '[[target]]\nname = "m"\nengine = "mysql"\n')
    out = tmp_path / "out"
    proc = run_cli("run", str(tmp_path / "e.toml"), "--out", str(out), timeout=300)
    assert_refused(proc, 2, "target 'm': a MySQL target names its install", out)


@pytest.mark.unit
def test_a_missing_install_is_not_found_before_the_run_claims_its_folder(tmp_path):
    """A path that is not there is not found, in the run as in its dry run: it is never a MariaDB install because
    its would-be basedir, /, holds Debian's /bin/mariadb-install-db; and the run refuses before --out is made."""
    exp = tmp_path / "e.toml"
    exp.write_text('[run]\nbenchmarks = ["point-query"]\ntable_size = 100\n'
                   '[[target]]\nname = "m"\nengine = "mysql"\nbinaries = "/nonexistent"\n')
    out = tmp_path / "out"
    line = assert_refused(run_cli("run", str(exp), "--out", str(out)), 2,
                          "target 'm': binaries = '/nonexistent': MySQL server not found: no /nonexistent", out)
    assert "MariaDB" not in line, line
    dry = run_cli("run", str(exp), "--out", str(out), "--dry-run")
    assert dry.returncode != 0 and "target m: binaries = '/nonexistent': MySQL server not found" in dry.stderr, (
        dry.stderr)
    assert not out.exists()


@pytest.mark.server
@pytest.mark.skipif(not MYSQL_BINARIES, reason=NO_MYSQL)
def test_mysql_end_to_end(where):
    """The lab initialises, starts, loads, measures and stops a MySQL: its version said, the driver's connections
    authenticated with caching_sha2_password over TCP (the first one in full, through the server's RSA key; the
    others on the fast path), InnoDB's counters and the server's CPU per query, the post-write flush, the sizes."""
    exp = where / "e.toml"
    exp.write_text('[run]\nbenchmarks = ["update-index", "point-query"]\nthreads = [1, 2]\ntable_size = 2000\n'
                   'time = "0.5s"\nwarmup = "0.2s"\nrepeats = 2\nwrites = "cumulative"\npost_write_wait = "0.1s"\n'
                   f'[[target]]\nname = "m"\nengine = "mysql"\nbinaries = "{MYSQL_BINARIES}"\n'
                   'config = { innodb_buffer_pool_size = "64M" }\n')
    out = where / "out"
    proc = run_cli("run", str(exp), "--out", str(out), timeout=1200)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    (target,) = meta["targets"]
    assert target["engine_version"].split(".")[0] in {"8", "9"}, target["engine_version"]
    assert target["db_bytes_after_load"] > 100_000
    [flush] = target["post_write"]
    assert flush["dirty_pages_left"] == 0
    cells = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(cells) == 2 * 2 * 2 and all(c["status"] == "ok" for c in cells), [c.get("error") for c in cells]
    update = next(c for c in cells if c["benchmark"] == "update-index" and c["threads"] == 2)
    assert update["result"]["server_usage"]["user_us"] > 0
    counters = update["resources"]["engine_counters"]
    assert counters["Innodb_rows_updated"] > 0 and counters["Handler_read_key"] > 0
    view = run_cli("report", str(out), "--resources")
    assert view.returncode == 0 and "bp req" in view.stdout, view.stderr
