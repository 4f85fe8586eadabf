"""`dbperf layout` on something that is not an ELF file says what it is (a directory, a device), not "no such file"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("path", "said"), [
    ("DIR", "is a directory"),
    ("/dev/null", "is not a regular file"),
    ("MISSING", "no such file"),
])
def test_layout_says_what_the_path_is(tmp_path: Path, path: str, said: str) -> None:
    where = {"DIR": str(tmp_path), "MISSING": str(tmp_path / "missing")}.get(path, path)
    done = run_cli("layout", where)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0] and "Traceback" not in done.stderr, done.stderr
