"""`dbperf bisect --tree PATH --engine sqlite GOOD BAD` without an engine: the search with skipped commits (`git
bisect skip`'s way) for every position of a change, and the whole use case over a checkout of small text files made
here, each commit's count faked from its file (a build that fails is a line saying "broken"), so that the real
range, count files, skip files, bisect.json, --resume and view are exercised. End to end with real builds:
tests/test_bisect_tree_builds.py."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import pytest

from dbperf.errors import UserError
from dbperf.metrics import SIMULATED
from dbperf.records import Profile
from dbperf.report.bisect_view import bisect_view
from dbperf.storage.bisect_path import (
    FOUND,
    ONLY_SKIPPED,
    SKIPPED,
    STILL_UNDECIDED,
    BisectPath,
    Judgement,
    StepSettings,
    read_path,
)
from dbperf.usecases import bisect as bisect_usecase
from dbperf.usecases import bisect_work
from dbperf.usecases.bisect import bisect
from dbperf.usecases.bisect_search import search
from dbperf.usecases.bisect_work import WorkCounts
from tests.test_user_tree import git, snapshot

pytestmark = pytest.mark.unit

COMMITS = [str(i) for i in range(16)]


def judge_of(position: int, broken: set[int]):
    def judge(good: str, probe: str, attempt: int) -> Judgement:
        if int(probe) in broken:
            return Judgement(SKIPPED, metric=SIMULATED, why=f"build of {probe} failed")
        return Judgement("slower" if int(probe) >= position else "same", metric=SIMULATED)
    return judge


@pytest.mark.parametrize("position", range(1, 16))
def test_every_position_is_found_around_a_commit_that_does_not_build(position):
    result = search(COMMITS, judge_of(position, {7}), tries=1)
    assert set(result.skipped) <= {"7"} and all(s.attempt == 1 for s in result.steps)
    if position in (7, 8):  # the change at the broken commit or just after it: git bisect's "only skipped left"
        assert (result.outcome, result.exit_code) == (ONLY_SKIPPED, STILL_UNDECIDED)
        assert (result.last_not_slower, result.first_slower, result.skipped) == ("6", "8", ["7"])
        assert result.answer == "after 6, at or before 8 (every commit between skipped)"
    else:
        assert (result.outcome, result.exit_code, result.first_slower) == ("found", FOUND, str(position))
        assert result.last_not_slower == str(position - 1)


def test_a_run_of_broken_commits_is_walked_around_nearest_the_middle_first():
    result = search(COMMITS, judge_of(12, {5, 6, 7, 8, 9}), tries=1)
    assert (result.outcome, result.first_slower, result.last_not_slower) == ("found", "12", "11")
    assert [s.version for s in result.steps][:4] == ["15", "7", "6", "8"]  # the middle, then below and above it
    assert len(result.steps) == len(set(s.version for s in result.steps))  # none judged twice


def test_a_newest_or_oldest_that_cannot_be_counted_ends_the_bisect_in_one_line():
    with pytest.raises(UserError, match="the newest, 15, could not be judged: build of 15 failed"):
        search(COMMITS, judge_of(3, {15}), tries=1)

    def source(version: str):
        raise bisect_work.Uncountable("build failed (log x)")
    with pytest.raises(UserError, match="the oldest, 0, could not be counted: build failed"):
        search(COMMITS, WorkCounts(source).judge(0.02), tries=1)


def write(repo: Path, subject: str, text: str) -> str:
    (repo / "work.txt").write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    """16 commits: work 1000 per query up to commit 10, 1100 from commit 11 on; commit 7 does not build."""
    repo = tmp_path / "checkout"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    hashes = [write(repo, f"commit {i}" + (": a loop in the hot path" if i == 11 else ""),
                    ("broken" if i == 7 else str(1000 if i < 11 else 1100)) + f"\ncommit {i}\n") for i in range(16)]
    return repo, hashes


class FakeCounts:
    """bisect_work._profile faked: a commit's work read from its work.txt's first line (a "broken" one fails as a
    build does); every count kept, and a count raising KeyboardInterrupt at call `stop_at` (a bisect killed)."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.calls: list[str] = []
        self.stop_at = stop_at

    def __call__(self, experiment: Path, err: object) -> Profile:
        target = tomllib.loads(experiment.read_text())["target"][0]
        self.calls.append(target["rev"])
        if self.stop_at is not None and len(self.calls) == self.stop_at:
            raise KeyboardInterrupt
        text = subprocess.run(["git", "show", f"{target['rev']}:work.txt"], cwd=target["tree"], capture_output=True,
                              text=True, check=True).stdout.splitlines()[0]
        if text == "broken":
            raise UserError(f"build of sqlite@tree:{target['rev'][:7]} failed (log /x/build.log): error: expected ';'")
        work = float(text)
        return Profile(mode="simulated", mode_reason="test", tool="cachegrind", target=target["name"],
                       benchmark="point-query", events=100, queries=100, method="fake",
                       per_query={"instructions": work}, functions={"sqlite3VdbeExec": {"instructions": work - 200},
                                                                    "main": {"instructions": 200.0}})


def settings(repo: Path) -> StepSettings:
    return StepSettings("sqlite", "point-query", 0.02, 5.0, 1.0, 120.0, table_size=1000, metric=SIMULATED,
                        tree=str(repo))


@pytest.fixture
def fake_counts(monkeypatch):
    def install(counts: FakeCounts) -> FakeCounts:
        monkeypatch.setattr(bisect_work, "_profile", counts)
        monkeypatch.setattr(bisect_usecase, "require_tools", lambda s: None)
        return counts
    return install


def test_the_first_commit_with_more_work_is_named_and_the_broken_one_skipped(repo, fake_counts, tmp_path):
    checkout, hashes = repo
    counts = fake_counts(FakeCounts())
    before = snapshot(checkout)
    done = bisect(settings(checkout), hashes[0], "main", tmp_path / "out", tries=3, confirm=False)
    result = done.path.result
    assert (result.outcome, result.first_slower, result.last_not_slower) == ("found", hashes[11], hashes[10])
    assert result.skipped == [hashes[7]] and len(counts.calls) == len(set(counts.calls)) == len(result.steps) + 1
    assert result.found is not None and result.found.hash == hashes[11]
    assert (result.found.subject, result.found.author) == ("commit 11: a loop in the hot path", "t <t@example.org>")
    assert (result.work_before, result.work_after) == (1000.0, 1100.0)
    assert result.lead[0].function == "sqlite3VdbeExec" and not result.confirmation
    assert "error: expected ';'" in (tmp_path / "out" / "simulated" / f"{hashes[7]}.skipped").read_text()
    doc = json.loads((tmp_path / "out" / "bisect.json").read_text())
    assert doc["settings"]["tree"] == str(checkout) and doc["skipped"] == [hashes[7]]
    assert doc["found"]["subject"] == "commit 11: a loop in the hot path" and doc["answer"] == hashes[11]
    text = "\n".join(bisect_view(BisectPath(done.path.settings, result), done.expected_steps).sections[-1].lines)
    assert f"first commit with more work: {hashes[11]} \"commit 11: a loop in the hot path\" by t <t@example.org>" \
           in text and "1,000 → 1,100 instructions per query at the step (+10.00%)" in text
    assert f"skipped (1, could not be built or counted; the steps say why): {hashes[7]}" in text
    assert snapshot(checkout) == before  # the user's checkout untouched


def test_a_bisect_killed_mid_search_resumes_without_counting_or_building_anything_twice(repo, fake_counts, tmp_path):
    checkout, hashes = repo
    first = fake_counts(FakeCounts(stop_at=4))  # the oldest, the newest, the broken 7, then killed at the 4th
    with pytest.raises(KeyboardInterrupt):
        bisect(settings(checkout), hashes[0], hashes[15], tmp_path / "out", tries=1, confirm=False)
    kept = read_path(tmp_path / "out")
    assert kept is not None and kept.result.resumable and kept.result.skipped == [hashes[7]]
    # bisect.json says how it ended, as the command does: interrupted, 128 + SIGINT
    assert (kept.result.outcome, kept.result.exit_code) == ("interrupted", 130)
    again = fake_counts(FakeCounts())
    done = bisect(settings(checkout), hashes[0], hashes[15], tmp_path / "out", tries=1, resume=True, confirm=False)
    assert (done.path.result.outcome, done.path.result.first_slower) == ("found", hashes[11])
    assert done.path.result.skipped == [hashes[7]]
    assert first.calls[:3] == [hashes[0], hashes[15], hashes[7]] and hashes[7] not in again.calls
    assert not set(first.calls[:3]) & set(again.calls)  # counted (or skipped) before: kept
    with pytest.raises(UserError, match="nothing to resume"):
        bisect(settings(checkout), hashes[0], hashes[15], tmp_path / "out", tries=1, resume=True, confirm=False)


def test_resuming_another_range_is_refused_in_one_line(repo, fake_counts, tmp_path):
    checkout, hashes = repo
    fake_counts(FakeCounts(stop_at=2))
    with pytest.raises(KeyboardInterrupt):
        bisect(settings(checkout), hashes[0], hashes[15], tmp_path / "out", tries=1, confirm=False)
    with pytest.raises(UserError, match="run with other settings or another range"):
        bisect(settings(checkout), hashes[1], hashes[15], tmp_path / "out", tries=1, resume=True, confirm=False)


def test_a_range_with_no_more_work_is_not_found_with_why(repo, fake_counts, tmp_path):
    checkout, hashes = repo
    fake_counts(FakeCounts())
    done = bisect(settings(checkout), hashes[0], hashes[10], tmp_path / "out", tries=1, confirm=False)
    assert (done.path.result.outcome, done.path.result.exit_code) == ("none-slower", 1)
    line = bisect_view(done.path, done.expected_steps).sections[-1].lines[0]
    assert line.startswith(f"not found: no commit with more work: sqlite {hashes[10]} is at +0.0% work per query")


@pytest.mark.parametrize(("args", "said"), [
    (["--tree", "{repo}", "--engine", "mariadb", "main~3", "main"], "not a MariaDB source tree (its top has no"),
    (["--tree", "{repo}", "--engine", "sqlite", "--metric", "wall", "a", "b"], "--metric wall is not supported"),
    (["--tree", "{repo}", "a", "b"], "--tree: give the engine of the tree with --engine"),
    (["--tree", "{repo}", "--engine", "sqlite", "a", "b", "c"], "bisect --tree: expected GOOD BAD"),
    (["--engine", "sqlite", "postgres", "12", "13"], "--engine goes with --tree"),
    (["--cflag=-O0", "postgres", "12", "13"], "--cflag goes with --tree"),
    (["--tree", "{repo}", "--engine", "sqlite", "nope", "main"], "GOOD: 'nope' is not a commit of the checkout"),
    (["--tree", "{repo}", "--engine", "sqlite", "main", "main~3"], "is not an ancestor of BAD"),
    (["--tree", "{repo}", "--engine", "sqlite", "--cflag=-O0; rm", "main~3", "main"], "--cflag: expected a compiler"),
    (["--tree", "{repo}", "--engine", "sqlite", "--order", "bogus", "main~3", "main"], "--order: expected one of"),
    (["--tree", "{repo}", "--engine", "sqlite", "--threads", "0", "main~3", "main"], "--threads: expected at least 1"),
])
def test_bad_input_is_one_line(repo, run_cli_here, tmp_path, args, said):
    checkout, _ = repo
    proc = run_cli_here("bisect", *[a.format(repo=checkout) for a in args], "--out", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert said in line and not (tmp_path / "out").exists()


def test_a_commit_is_a_tree_target_at_its_hash_in_the_count_and_the_confirmation(repo, tmp_path):
    from dbperf.usecases.bisect_step import step_experiment
    from dbperf.usecases.bisect_work import count_experiment
    checkout, hashes = repo
    s = StepSettings("sqlite", "point-query", 0.02, 5.0, 1.0, 120.0, table_size=1000, metric=SIMULATED,
                     tree=str(checkout), cflags=["-O1"])
    (counted,) = tomllib.loads(count_experiment(s, hashes[3]))["target"]
    assert counted == {"name": f"sqlite-{hashes[3][:12]}", "tree": str(checkout), "rev": hashes[3], "cflags": ["-O1"]}
    doc = tomllib.loads(step_experiment(s, hashes[2], hashes[3], 120.0))
    assert doc["run"]["base"] == f"sqlite-{hashes[2][:12]}" and [t["rev"] for t in doc["target"]] == hashes[2:4]
    assert "source" not in doc["target"][0]


def test_a_sqlite_tree_is_bisected_with_its_settings(repo, tmp_path, run_cli_here):
    """`--config journal_mode=WAL`: every count and every step runs the tree in WAL, as the demo and most users do,
    so a regression in the WAL path is seen; a name that is not a PRAGMA is one line before anything is built."""
    from dbperf.usecases.bisect_candidates import candidates
    from dbperf.usecases.bisect_step import step_experiment
    from dbperf.usecases.bisect_work import count_experiment
    checkout, hashes = repo
    s = StepSettings("sqlite", "point-query", 0.02, 5.0, 1.0, 120.0, table_size=1000, metric=SIMULATED,
                     tree=str(checkout), config={"journal_mode": "WAL", "synchronous": "NORMAL"})
    candidates(s).check()
    (counted,) = tomllib.loads(count_experiment(s, hashes[3]))["target"]
    assert counted["config"] == {"journal_mode": "WAL", "synchronous": "NORMAL"}
    doc = tomllib.loads(step_experiment(s, hashes[2], hashes[3], 120.0))
    assert [t["config"]["journal_mode"] for t in doc["target"]] == ["WAL", "WAL"]
    proc = run_cli_here("bisect", "--tree", str(checkout), "--engine", "sqlite", "--config", "Journal-Mode=WAL",
                        "main~3", "main", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "config key 'Journal-Mode' is not a PRAGMA name" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()
