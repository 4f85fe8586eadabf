"""scripts/project_requirements.py: what `make demo` installs into .venv before the package (while cargo builds the
driver) is exactly pyproject's dependencies, and with an extra named, that extra's too."""

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "project_requirements.py"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _run(*extras: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *extras], capture_output=True, text=True, timeout=60)


def test_the_dependencies_one_a_line():
    proc = _run()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == PROJECT["dependencies"]
    assert "scipy>=1.11" in proc.stdout.splitlines()


def test_an_extra_adds_its_requirements_after_them():
    lines = _run("dev").stdout.splitlines()
    assert lines == [*PROJECT["dependencies"], *PROJECT["optional-dependencies"]["dev"]]
    assert "pytest>=8" in lines


def test_an_unknown_extra_is_one_line():
    proc = _run("no-such-extra")
    assert proc.returncode != 0 and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    known = ", ".join(sorted(PROJECT["optional-dependencies"]))
    assert line == f"pyproject.toml: no extra no-such-extra (known: {known})"
