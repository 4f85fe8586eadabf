"""`dbperf bisect --config NAME=VALUE`: a name the server does not know is refused before any release is fetched
or server started, asked of a server binary of the range at hand (Debian's package here); a setting the lab owns
is refused with the remedy that fits that setting and a bisect, in whatever form the server would read it."""

from __future__ import annotations

import subprocess

import pytest

from dbperf import engines
from dbperf.engines.lab_owned import GENERAL, REASONS, lab_owned_refusal
from dbperf.servers.setting_names import mariadb_knows, unknown_setting, witnesses
from tests.conftest import NEEDS_SERVERS, run_cli
from tests.fake_maven import fake_maven

pytestmark = pytest.mark.unit

RANGES = {"postgres": ("13", "17"), "mariadb": ("10.2", "11.4")}  # both hold Debian's packaged version


@pytest.fixture
def cache(where):
    """An empty server cache of the test's own (reachable by the service users, as the lab requires): the only
    binaries at hand are Debian's, and a release fetched by mistake would land here, not in the lab's."""
    return {"DBPERF_SERVER_CACHE": str(where / "cache")}


def bisect(engine: str, *settings: str, env: dict[str, str], out: str) -> subprocess.CompletedProcess[str]:
    config = [a for s in settings for a in ("--config", s)]
    return run_cli("bisect", engine, *RANGES[engine], *config, "--out", out, env=env, timeout=180)


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dbperf: error: "), proc.stderr
    return lines[0]


@NEEDS_SERVERS
@pytest.mark.parametrize(("engine", "setting", "says"), [
    ("postgres", "shared_bufers=128MB", "PostgreSQL has no such setting"),
    ("mariadb", "innodb_bufer_pool_size=1G", "MariaDB has no such setting"),
])
def test_an_unknown_setting_is_refused_before_any_release_is_fetched(tmp_path, cache, engine, setting, says):
    name = setting.split("=")[0]
    with fake_maven() as (env, requests):
        line = one_error_line(bisect(engine, "work_mem=4MB" if engine == "postgres" else "max_connections=50",
                                     setting, env={**env, **cache}, out=str(tmp_path / "b")))
    assert f"bisect --config {name}: {says}" in line
    assert f"did you mean {name.replace('bufer', 'buffer')}?" in line  # the server's own name, suggested
    assert all(r.endswith("maven-metadata.xml") for r in requests), requests  # the release list, no release
    assert not (tmp_path / "b").exists()


@NEEDS_SERVERS
@pytest.mark.parametrize(("engine", "config"), [
    # zero_damaged_pages is kept out of --describe-config's list; a dotted name is an extension's
    ("postgres", {"shared_buffers": "1", "zero_damaged_pages": "off", "auto_explain.log_min_duration": "1"}),
    # the forms MariaDB's option parser reads: '-' or '_', loose- (ignored when unknown), skip-, abbreviations
    ("mariadb", {"innodb-buffer-pool-size": "1G", "loose-no-such-plugin-option": "1", "skip-name-resolve": "1",
                 "innodb_adaptive_hash": "0", "skip_innodb_adaptive_hash_index": "1"}),
])
def test_names_the_server_reads_are_not_refused(engine, config):
    versions = {"postgres": ["13.23", "17.0"], "mariadb": ["10.2.11", "11.4.5"]}[engine]
    assert witnesses(engine, versions)  # Debian's binary is inside the range: the check ran
    assert unknown_setting(engine, config, versions, "bisect --config") is None


@pytest.mark.parametrize(("name", "known"), [
    ("innodb_buffer_pool_size", True), ("innodb-buffer-pool-size", True), ("innodb_buffer", True),
    ("loose_anything", True), ("skip_innodb_x", True), ("maximum_max_connections", True),
    ("innodb_bufer_pool_size", False), ("skip_no_such", False), ("nonexistent", False),
])
def test_mariadb_names_are_read_as_its_option_parser_reads_them(name, known):
    names = {"innodb_buffer_pool_size", "innodb_x", "max_connections"}
    assert mariadb_knows(name, names) is known


def test_with_no_binary_of_the_range_at_hand_the_name_is_left_to_the_server(tmp_path, cache):
    """PostgreSQL 16.4..17.0: Debian's 15 is outside it, and no release is cached: nothing to ask, nothing refused
    here (the first step's server says what it does not know)."""
    with fake_maven() as (env, _):
        proc = run_cli("bisect", "postgres", "16.4", "17", "--config", "shared_bufers=1", "--out",
                       str(tmp_path / "b"), env={**env, **cache}, timeout=180)
    assert "shared_bufers" not in proc.stderr
    assert "HTTP 404" in proc.stderr  # it went on to fetch a release (the fake repository has none)


@pytest.mark.parametrize(("engine", "setting", "says"), [
    # the lab chooses ports: the remedy an experiment file has (port = N on the target) does not exist in a bisect
    ("postgres", "port=5433", "bisect config.port: the lab gives each server it starts a free port on 127.0.0.1; "
                              "each step's servers get free ports: leave it out"),
    # a form MariaDB reads as a lab-owned option is that option: these would listen on every address
    ("mariadb", "loose-bind-address=0.0.0.0", "bisect config.loose-bind-address: MariaDB reads it as bind_address: "
                                              "the lab's servers listen on 127.0.0.1 only"),
    ("mariadb", "bind=0.0.0.0", "bisect config.bind: MariaDB reads it as an abbreviation of bind_address"),
])
def test_a_lab_owned_setting_is_refused_with_its_own_remedy(tmp_path, engine, setting, says):
    with fake_maven() as (env, requests):
        line = one_error_line(bisect(engine, setting, env=env, out=str(tmp_path / "b")))
    assert says in line and "port = N" not in line, line
    assert requests == []  # refused before the release list is asked for
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(("engine", "setting", "says"), [
    ("postgres", "listen_addresses", "the lab's servers listen on 127.0.0.1 only, over TCP; bisect measures the "
                                     "lab's own servers: leave it out"),
    ("postgres", "data_directory", "DBPERF_RUNTIME_DIR chooses where that directory is"),
    ("postgres", "include_dir", "the lab writes a server's configuration file itself; give each setting as its "
                                "own NAME=VALUE"),
    ("postgres", "unix_socket_directories", "the steps connect over TCP: leave it out"),
    ("mariadb", "log_error", "each step's log is in its results directory (logs/)"),
    ("mariadb", "loose_user", "MariaDB reads it as user: a server the lab starts runs as its service user"),
    ("mariadb", "disable-networking", "MariaDB reads it as networking"),
    ("mariadb", "pid", "MariaDB reads it as an abbreviation of pid_file"),
    ("mariadb", "p", "could read it as an abbreviation of pid_file, plugin_dir or port (settings the lab owns)"),
])
def test_each_lab_owned_setting_says_its_own_reason_and_remedy_in_a_bisect(engine, setting, says):
    line = lab_owned_refusal(engine, setting, "bisect", bisect=True)
    assert line is not None and says in line and "port = N" not in line, line


def test_every_lab_owned_setting_has_a_reason_of_its_own():
    for name in engines.SERVER_NAMES:
        owned = engines.engine(name).lab_owned_settings
        assert owned <= set(REASONS[name]), sorted(owned - set(REASONS[name]))
        assert all(REASONS[name][s] is not GENERAL for s in owned)


def test_an_experiment_file_gets_the_targets_remedy():
    line = lab_owned_refusal("postgres", "port", "exp.toml target 'pg'")
    assert line == ("exp.toml target 'pg' config.port: the lab gives each server it starts a free port on "
                    "127.0.0.1; port = N on the target fixes the port")
    assert lab_owned_refusal("postgres", "shared_buffers", "x") is None
    assert lab_owned_refusal("postgres", "port_x", "x") is None  # PostgreSQL reads names exactly
