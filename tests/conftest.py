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


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DBPERF, *args], capture_output=True, text=True, cwd=REPO, timeout=timeout,
                          env={**os.environ, **(env or {})})


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
    base = Path(tempfile.mkdtemp(prefix="dbperf-srv-", dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(autouse=True, scope="session")
def _private_history(tmp_path_factory: pytest.TempPathFactory):
    """Runs made by tests are recorded in a store of the session's own, never the user's history."""
    os.environ["DBPERF_HISTORY"] = str(tmp_path_factory.mktemp("history") / "history.sqlite")
    yield
