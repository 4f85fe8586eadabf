"""`dbperf bisect --out`: `dbperf run`'s rule (a new or empty directory; `--resume` only on a folder of the same
bisection, named when refused), a read-only destination in one line, all of it before anything is fetched: nothing
the user had is touched."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fake_maven import UNREACHABLE, fake_maven
from tests.refusal import assert_refused
from tests.synthetic import write_run

pytestmark = pytest.mark.unit

# Nothing answers there: a bisect that fetched the release list before refusing its --out would say so instead.
NO_FETCH = {"DBPERF_MAVEN_URL": UNREACHABLE}


def one_error_line(proc: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dbperf: error: "), proc.stderr
    return lines[0]


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root with its bytes (a directory as b'<dir>'), to tell that nothing changed."""
    return {str(p.relative_to(root)): b"<dir>" if p.is_dir() else p.read_bytes() for p in sorted(root.rglob("*"))}


def bisect(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli("bisect", "postgres", "13", "17", *args, env=env or NO_FETCH, timeout=120)


def test_an_existing_file_is_refused_in_one_line_and_kept(tmp_path):
    mine = tmp_path / "notes.txt"
    mine.write_text("the user's own notes\n")
    line = one_error_line(bisect("--out", str(mine)))
    assert "exists and is not a directory" in line and str(mine) in line
    assert mine.read_text() == "the user's own notes\n"


def test_a_complete_run_folder_is_refused_and_left_as_it_was(tmp_path):
    run = write_run(tmp_path / "run", ["a", "b"], ["point-query"], 3)
    before = snapshot(run)
    line = one_error_line(bisect("--out", str(run)))
    assert "holds a dbperf run's results" in line and "new or empty directory" in line
    assert snapshot(run) == before  # no bisect.json, no step beside the run's files


def test_a_folder_with_a_users_file_is_refused(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n")
    line = one_error_line(bisect("--out", str(folder)))
    assert "not empty (holds notes.txt)" in line
    assert snapshot(folder) == {"notes.txt": b"mine\n"}


def test_resume_on_a_run_folder_is_not_a_bisect_to_resume(tmp_path):
    run = write_run(tmp_path / "run", ["a", "b"], ["point-query"], 3)
    before = snapshot(run)
    line = one_error_line(bisect("--out", str(run), "--resume"))
    assert "no bisect to resume" in line and "it holds a dbperf run's results" in line
    assert snapshot(run) == before


def bisect_json(folder: Path, outcome: str, threshold: float = 0.05, versions: list[str] | None = None) -> None:
    """A bisect's folder as `dbperf bisect` leaves it (its path file; its steps are not needed here)."""
    folder.mkdir(parents=True)
    settings = {"engine": "postgres", "benchmark": "point-query", "threshold": threshold, "time_s": 5.0,
                "warmup_s": 1.0, "budget_s": 120.0, "threads": 1, "table_size": 100000, "config": {}}
    doc = {"dbperf_bisect": 1, "settings": settings, "versions": versions or ["13.23", "14.0", "14.10", "16.4",
                                                                             "17.0"],
           "steps": [], "outcome": outcome, "first_slower": None, "last_not_slower": None, "exit_code": 4,
           "answer": None}
    (folder / "bisect.json").write_text(json.dumps(doc, indent=2) + "\n")


def test_a_bisect_folder_without_resume_is_refused_and_says_what_it_holds(tmp_path):
    cut_short, ended = tmp_path / "cut", tmp_path / "ended"
    bisect_json(cut_short, "interrupted")
    bisect_json(ended, "found")
    line = one_error_line(bisect("--out", str(cut_short)))
    assert "already holds a bisect (postgres 13.23..17.0, point-query, slower at 5.0%)" in line
    assert "--resume" in line
    line = one_error_line(bisect("--out", str(ended)))
    assert "that ended (found)" in line and "--resume" not in line


def test_resume_on_another_bisection_names_it_and_what_differs(tmp_path):
    folder = tmp_path / "other"
    bisect_json(folder, "interrupted", threshold=0.03, versions=["13.23", "14.0", "14.10", "16.4"])
    before = snapshot(folder)
    with fake_maven() as (env, requests):
        line = one_error_line(bisect("--out", str(folder), "--resume", env=env))
    assert "holds the bisect of postgres 13.23..16.4, point-query, slower at 3.0%" in line
    assert "threshold 0.03 there, 0.05 here" in line and "releases 13.23..16.4 there, 13.23..17.0 here" in line
    assert all(r.endswith("maven-metadata.xml") for r in requests)  # the release list only: no release fetched
    assert snapshot(folder) == before


@contextlib.contextmanager
def read_only(where: Path) -> Iterator[Path]:
    """A real read-only file system (needs root, as the lab's server targets do)."""
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(where)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a read-only file system needs root")
def test_a_read_only_destination_is_one_line_before_anything_is_fetched(tmp_path):
    with read_only(tmp_path / "ro") as ro:
        for out in (ro / "bisect", ro):  # a folder to create there, and the empty mount point itself
            line = one_error_line(bisect("--out", str(out)))
            assert f"{ro} is on a read-only file system" in line, line


def test_a_bisect_stopped_in_its_first_step_holds_its_folder_and_can_be_resumed(tmp_path, where):
    """The folder is the bisect's from the start (bisect.json, outcome running, before the first step): here the
    first step stops on a release the repository does not have, and the path says failed, with why; a new bisect
    there is refused saying so (not "cut short"), --resume goes on."""
    out = tmp_path / "b"
    env = {"DBPERF_SERVER_CACHE": str(where / "cache")}
    with fake_maven() as (maven, _):
        first = bisect("--out", str(out), env={**env, **maven})
        assert first.returncode == 2 and "HTTP 404" in first.stderr, first.stderr
        doc = json.loads((out / "bisect.json").read_text())
        # bisect.json's exit code is the command's (2: a release that cannot be fetched is bad input here)
        assert doc["outcome"] == "failed" and "HTTP 404" in doc["error"] and doc["exit_code"] == 2, doc
        line = one_error_line(bisect("--out", str(out), env={**env, **maven}))
        assert "already holds a bisect (postgres 13.23..17.0, point-query, slower at 5.0%) that failed (" in line
        assert "HTTP 404" in line and "--resume to go on with it once that is fixed" in line, line
        again = bisect("--out", str(out), "--resume", env={**env, **maven})
    assert again.returncode == 2 and "HTTP 404" in again.stderr, again.stderr  # past the folder: at the release
    assert not (out / ".lock").exists()  # let go at the end


def test_a_driver_that_is_not_there_is_said_before_the_folder_is_made(tmp_path):
    """A step's run would find it only once the bisect's folder holds its path (a folder the next bisect refuses)."""
    out = tmp_path / "bisect"
    proc = bisect("--out", str(out), env={**NO_FETCH, "DBPERF_DRIVER": str(tmp_path / "no-driver")})
    assert_refused(proc, 2, f"DBPERF_DRIVER={tmp_path / 'no-driver'}: not an executable file", out)
