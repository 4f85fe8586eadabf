"""The commits a `dbperf bisect --tree` searches (buildlab/commit_range.py): GOOD then the first-parent commits up to
BAD, oldest first, each with its subject and author; a merged branch is one candidate (its merge); bad input is one
line. Repositories of small text files made here (no engine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbperf.buildlab.commit_range import commit_of, commit_range
from dbperf.errors import UserError
from tests.test_user_tree import git, snapshot

pytestmark = pytest.mark.unit


def commit(repo: Path, subject: str, text: str | None = None) -> str:
    (repo / "file.txt").write_text(text if text is not None else subject)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def linear(tmp_path: Path) -> tuple[Path, list[str]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    return repo, [commit(repo, f"change {i}") for i in range(6)]


def test_the_range_is_good_then_every_commit_up_to_bad_oldest_first_with_subject_and_author(linear):
    repo, hashes = linear
    found = commit_range(repo, hashes[1], "main")
    assert [c.hash for c in found] == hashes[1:]
    assert [c.subject for c in found] == [f"change {i}" for i in range(1, 6)]
    assert {c.author for c in found} == {"t <t@example.org>"}
    assert commit_of(repo, hashes[3]).subject == "change 3"
    git(repo, "tag", "v1", hashes[2])
    assert [c.hash for c in commit_range(repo, "v1", "HEAD~1")] == hashes[2:5]  # tags and relative names


def test_a_merged_branch_is_one_candidate_its_merge_commit_as_git_bisect_first_parent(linear):
    repo, hashes = linear
    git(repo, "checkout", "-q", "-b", "side", hashes[2])
    side = [commit(repo, f"side {i}", f"side {i}") for i in range(3)]
    git(repo, "checkout", "-q", "main")
    (repo / "other.txt").write_text("after")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "after the fork")
    git(repo, "merge", "-q", "--no-ff", "-X", "ours", "-m", "merge side", "side")
    merge = git(repo, "rev-parse", "HEAD").strip()
    found = [c.hash for c in commit_range(repo, hashes[0], "main")]
    assert found[:6] == hashes and found[-1] == merge and len(found) == 8
    assert not set(side) & set(found)


def test_reading_the_range_leaves_the_checkout_as_it_was(linear):
    repo, hashes = linear
    (repo / "file.txt").write_text("uncommitted")
    before = snapshot(repo)
    commit_range(repo, hashes[0], hashes[-1])
    assert snapshot(repo) == before


@pytest.mark.parametrize(("good", "bad", "said"), [
    ("nope", "main", "GOOD: 'nope' is not a commit of the checkout"),
    ("HEAD~5", "nope", "BAD: 'nope' is not a commit of the checkout"),
    ("-x", "main", "GOOD: expected a git revision"),
    ("main", "HEAD~5", "is not an ancestor of BAD"),
    ("main", "HEAD", "are the same commit"),
])
def test_bad_revisions_are_one_line(linear, good, bad, said):
    repo, _ = linear
    with pytest.raises(UserError, match=said.replace("(", r"\(")):
        commit_range(repo, good, bad)


def test_a_folder_that_is_not_a_checkout_is_one_line(tmp_path: Path):
    with pytest.raises(UserError, match="is not a git checkout"):
        commit_range(tmp_path, "a", "b")
    with pytest.raises(UserError, match="is not a folder"):
        commit_range(tmp_path / "none", "a", "b")
