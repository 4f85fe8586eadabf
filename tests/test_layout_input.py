"""`dbperf layout` on something that is not an ELF file says what it is (a directory, a device), not "no such file"."""

from __future__ import annotations

import os
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


def test_a_build_cache_that_cannot_be_created_is_one_line() -> None:
    done = run_cli("layout", "--demo", env={"DBPERF_CACHE": "/sys/dbperf-cache"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot create the build cache" in lines[0], done.stderr


def test_the_json_file_is_never_written_over_a_device(tmp_path: Path) -> None:
    from dbperf.errors import UserError
    from dbperf.layout.check import write_json

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match=r"not a regular file|FIFO"):
        write_json(fifo, {"a": 1})
    assert fifo.is_fifo()
    link = tmp_path / "link.json"
    (tmp_path / "real.json").write_text("old")
    link.symlink_to(tmp_path / "real.json")
    with pytest.raises(UserError, match="symbolic link"):  # never written through: output_file.py's one rule
        write_json(link, {"a": 1})
    assert link.is_symlink() and (tmp_path / "real.json").read_text() == "old"
