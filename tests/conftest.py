"""Shared helpers: running the real CLI as a subprocess, writing experiment files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DBPERF = [sys.executable, "-m", "dbperf.cli"]
TIERS = ("unit", "e2e", "server", "network")
# One runtime directory and one server-directory prefix per test session, so that two sessions on one machine (two
# checkouts, CI beside a developer's run) never count each other's servers or runtime directories as their own.
SESSION = str(os.getpid())
SERVER_DIR_PREFIX = f"dbperf-srv-{SESSION}-"
# Set here, not by the user: each worker of a parallel run (pytest -n, pytest-xdist) inherits its controller's and
# takes one of its own, so that a worker's checks that the lab left no server never see the other worker's.
OWN_RUNTIME = "DBPERF_TESTS_OWN_RUNTIME_DIR"
if os.geteuid() == 0 and ("DBPERF_RUNTIME_DIR" not in os.environ or os.environ.get(OWN_RUNTIME)):
    os.environ["DBPERF_RUNTIME_DIR"] = f"/var/lib/dbperf/pytest-{SESSION}"
    os.environ[OWN_RUNTIME] = "1"
NEEDS_SERVERS = pytest.mark.skipif(not (Path("/usr/lib/postgresql/15/bin/postgres").exists()
                                        and Path("/usr/sbin/mariadbd").exists()),
                                   reason="postgresql and mariadb-server are installed by make setup")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test belongs to exactly one tier (see pyproject.toml's markers), so `make test-fast` misses none by
    accident."""
    for item in items:
        tiers = [m.name for m in item.iter_markers() if m.name in TIERS]
        if len(tiers) != 1:
            raise pytest.UsageError(f"{item.nodeid}: needs exactly one tier marker of {', '.join(TIERS)}, has {tiers}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    if os.environ.get("DBPERF_RUNTIME_DIR", "").startswith(f"/var/lib/dbperf/pytest-{SESSION}"):
        shutil.rmtree(os.environ["DBPERF_RUNTIME_DIR"], ignore_errors=True)


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DBPERF, *args], capture_output=True, text=True, cwd=REPO, timeout=timeout,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def run_cli_here(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """run_cli's result, from the CLI run in this process: for the many inputs refused (or reports drawn) before
    anything is measured, where a subprocess would cost more in interpreter and import start-up on a loaded machine
    than the command itself. An exception that escaped the CLI's one-line handling fails the test outright."""
    from dbperf.cli import main
    monkeypatch.setattr("dbperf.cli.interrupts.install", lambda: None)  # leave pytest's signal handlers alone

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        capsys.readouterr()  # what the test printed before is not the command's
        monkeypatch.setattr(sys, "argv", ["dbperf", *args])
        with pytest.raises(SystemExit) as exited:
            main()
        out, err = capsys.readouterr()
        code = exited.value.code
        return subprocess.CompletedProcess([*DBPERF, *args], code if isinstance(code, int) else int(code is not None),
                                           out, err)
    return run


@pytest.fixture
def write_experiment(tmp_path: Path):
    def write(body: str, name: str = "exp.toml") -> Path:
        path = tmp_path / name
        path.write_text(body)
        return path
    return write


@pytest.fixture
def where():
    """A directory the service users can traverse (pytest's own tmp directories are private to root): for tests
    that start servers through the lab's API directly, with data directories of their own."""
    base = Path(tempfile.mkdtemp(prefix=SERVER_DIR_PREFIX, dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(autouse=True, scope="session")
def _private_history(tmp_path_factory: pytest.TempPathFactory):
    """Runs made by tests are recorded in a store of the session's own, never the user's history."""
    os.environ["DBPERF_HISTORY"] = str(tmp_path_factory.mktemp("history") / "history.sqlite")
    # and no cost model of the user's (`dbperf calibrate`) enters a test's simulated run
    os.environ["DBPERF_DATA"] = str(tmp_path_factory.mktemp("cost-models"))
    yield
