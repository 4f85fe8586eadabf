"""`dbperf bisect --tree` end to end: a checkout of the SQLite amalgamation made here (tests/test_tree_builds.py's
helper), 8 commits, the sixth adding a loop to sqlite3VdbeExec (every statement runs it) and the fourth not
compiling; every commit the search probes built by the build lab with the machine's gcc at -O0 (--cflag: the lab's
behaviour is checked, not speed) and counted under cachegrind on a small table. The bisect names the commit with the
loop, skips the broken one, and leaves the checkout as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.test_tree_builds import amalgamation_repo, spin
from tests.test_user_tree import git, snapshot

pytestmark = pytest.mark.e2e

LOOP_AT, BROKEN_AT = 5, 3


def commits(repo: Path) -> list[str]:
    """8 commits of the amalgamation: each a comment at its end; the LOOP_AT-th adds the loop (kept after), the
    BROKEN_AT-th a line that does not compile (removed by the next)."""
    original = amalgamation_repo(repo)
    hashes = [git(repo, "rev-parse", "HEAD").strip()]
    for i in range(1, 8):
        text = spin(original, 500) if i >= LOOP_AT else original
        broken = b"this does not compile;\n" if i == BROKEN_AT else b""
        (repo / "sqlite3.c").write_bytes(text + broken + f"/* commit {i} */\n".encode())
        subject = {LOOP_AT: "sqlite3VdbeExec: a loop in the hot path", BROKEN_AT: "a typo"}.get(i, f"comment {i}")
        git(repo, "commit", "-q", "-am", subject)
        hashes.append(git(repo, "rev-parse", "HEAD").strip())
    return hashes


def test_the_commit_that_adds_work_is_named_and_the_one_that_does_not_build_is_skipped(tmp_path: Path):
    repo = tmp_path / "sqlite"
    hashes = commits(repo)
    before = snapshot(repo)
    out = tmp_path / "out"
    proc = run_cli("bisect", "--tree", str(repo), "--engine", "sqlite", hashes[0], "main", "--cflag=-O0",
                   "--table-size", "1000", "--no-confirm", "--out", str(out), "--format", "json",
                   env={"DBPERF_CACHE": str(tmp_path / "cache")}, timeout=600)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["outcome"], doc["first_slower"], doc["last_not_slower"]) == ("found", hashes[LOOP_AT],
                                                                            hashes[LOOP_AT - 1])
    assert doc["found"]["subject"] == "sqlite3VdbeExec: a loop in the hot path"
    assert doc["skipped"] == [hashes[BROKEN_AT]] and "failed" in doc["steps"][1]["judgement"]["why"]
    assert doc["work_after"] > doc["work_before"] * 1.02
    assert "sqlite3VdbeExec" in doc["lead"][0]["function"]
    manifests = [json.loads(p.read_text()) for p in (tmp_path / "cache" / "builds").glob("*/manifest.json")]
    built = {m["source"]["revision"] for m in manifests if "source" in m and "revision" in m["source"]}
    assert hashes[LOOP_AT] in built and hashes[BROKEN_AT] not in built
    assert snapshot(repo) == before
