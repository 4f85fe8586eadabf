"""dbperf as an installed tool: a wheel built from the checkout, installed into a fresh virtual environment outside
it, runs the catalog listing and a one-cell SQLite run with the dbperf-driver the wheel carries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.network  # the fresh environment installs typer, rich and scipy from the package index


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DBPERF_DRIVER", "PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def test_a_wheel_installs_a_working_lab(tmp_path):
    wheels = tmp_path / "wheels"
    built = _run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation", "-q",
                  "-w", str(wheels)], cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("dbperf-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("dbperf/catalog/training/train-mix.toml", "dbperf/buildlab/sqlite_versions.toml",
                   "dbperf/probes/c/probe.h", "dbperf/catalog/workloads/point-query.toml"):
        assert needed in names
    assert any(n.endswith(".data/scripts/dbperf-driver") for n in names)

    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path).returncode == 0
    installed = _run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr

    where = tmp_path / "elsewhere"
    where.mkdir()
    found = _run([str(venv / "bin" / "python"), "-c",
                  "import dbperf; from dbperf.host.driver import driver_path; print(dbperf.__file__); "
                  "print(driver_path())"], cwd=where)
    package, driver = found.stdout.split()
    assert package.startswith(str(venv)) and driver == str(venv / "bin" / "dbperf-driver"), found.stdout

    listing = _run([str(venv / "bin" / "dbperf"), "list", "--no-sql"], cwd=where)
    assert listing.returncode == 0 and "point-query" in listing.stdout and "group reads" in listing.stdout

    (where / "exp.toml").write_text('[run]\nbenchmarks = ["point-query"]\ntable_size = 2000\ntime = "1s"\n'
                                    'warmup = "0.2s"\nrepeats = 1\n\n[[target]]\nname = "system"\n')
    run = _run([str(venv / "bin" / "dbperf"), "run", "exp.toml"], cwd=where)
    assert run.returncode == 0, run.stderr
    (out,) = (where / "results").glob("exp-*")
    (line,) = (out / "results.jsonl").read_text().splitlines()
    assert json.loads(line)["status"] == "ok"
    assert json.loads((out / "meta.json").read_text())["driver"].startswith("dbperf-driver ")
