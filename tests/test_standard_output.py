"""Standard output that refuses a write, issue 45: `dbperf report R > /dev/full` (a full disk) is one line and a
non-zero exit, never a traceback (it reproduced the traceback before the fix); a reader that stops reading (`| head`)
ends the command quietly, with exit 1 as Typer and Rich end it (before the fix Python dropped the rest of a large
document and exited 0)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import DBPERF, REPO, run_cli
from tests.synthetic import write_run

FULL = "dbperf: error: cannot write to standard output: No space left on device"


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", ["a", "b"], ["point-query", "range"], 3)


def _to_full_disk(*args: str) -> subprocess.CompletedProcess[str]:
    with open("/dev/full", "w") as full:
        return subprocess.run([*DBPERF, *args], stdout=full, stderr=subprocess.PIPE, text=True, cwd=REPO,
                              timeout=300)


@pytest.mark.unit
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="Linux's /dev/full is the full disk")
def test_a_full_disk_on_stdout_is_one_line(results):
    assert run_cli("history", "add", str(results)).returncode == 0  # the session's own store (conftest)
    for args in (["report", str(results)], ["report", str(results), "--format", "html"],
                 ["report", str(results), "--format", "csv"], ["compare", str(results), str(results)],
                 ["compare", str(results), str(results), "--format", "json"], ["history", "list"],
                 ["history", "list", "--json"]):
        done = _to_full_disk(*args)
        assert done.returncode == 1, (args, done.returncode, done.stderr)
        assert done.stderr.strip().splitlines() == [FULL], (args, done.stderr)


@pytest.mark.unit
def test_a_reader_that_stops_reading_ends_the_command_quietly(results):
    # 2 MB of HTML into a pipe whose reader leaves after a few bytes, like `| head -c 15`
    with subprocess.Popen([*DBPERF, "report", str(results), "--format", "html"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, cwd=REPO) as child:
        assert child.stdout is not None and child.stderr is not None
        assert child.stdout.read(15) == b"<!DOCTYPE html>"
        child.stdout.close()
        err = child.stderr.read().decode()
        assert child.wait(timeout=300) == 1
    assert err == "", err
