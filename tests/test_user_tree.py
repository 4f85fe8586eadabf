"""A user's tree as the build lab reads it (buildlab/user_tree.py, sqlite_tree.py): a git checkout at a revision or
as it is, or a plain folder; keyed by content, exported into the lab's own folder, the checkout never touched; bad
input one line each. Real git in a temporary repository, nothing compiled."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from dbperf.buildlab.sqlite_tree import TreeSource, amalgamate, amalgamation_facts, resolve_tree
from dbperf.buildlab.user_tree import read_tree
from dbperf.errors import UserError
from dbperf.experiment.user_source import UserTree

pytestmark = pytest.mark.unit

HEADER = '#define SQLITE_VERSION        "3.99.0"\n'


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "--no-optional-locks", *args], cwd=repo, check=True, capture_output=True,
                          text=True, env=env).stdout


def snapshot(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file under `root` (.git's included): its bytes, mode and mtime."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            st = path.lstat()
            found[str(path.relative_to(root))] = (path.read_bytes() if path.is_file() else b"", st.st_mode,
                                                  st.st_mtime_ns)
    return found


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A checkout holding an amalgamation (two small files standing for it) and two commits; .gitignore'd build/."""
    repo = tmp_path / "sqlite"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "sqlite3.h").write_text(HEADER)
    (repo / "sqlite3.c").write_text("int hot(void) { return 1; }\n")
    (repo / ".gitignore").write_text("build/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    (repo / "sqlite3.c").write_text("int hot(void) { int i, s = 0; for (i = 0; i < 9; i++) s += i; return s; }\n")
    git(repo, "commit", "-q", "-am", "hot() does more work")
    return repo


def test_two_revisions_are_two_keys_and_each_exports_its_own_content(repo: Path, tmp_path: Path):
    first, second = (resolve_tree(UserTree(str(repo), rev)) for rev in ("HEAD~1", "main"))
    assert first.identity() != second.identity()
    assert first.snapshot.subject == "first" and second.snapshot.subject == "hot() does more work"
    assert second.snapshot.revision == git(repo, "rev-parse", "HEAD").strip() and len(second.snapshot.revision) == 40
    assert first.snapshot.dirty is False and first.word == f"tree:{first.snapshot.revision[:7]}"
    first.export(tmp_path / "a")
    assert (tmp_path / "a" / "sqlite3.c").read_text() == "int hot(void) { return 1; }\n"
    # the same commit named otherwise is the same build
    assert resolve_tree(UserTree(str(repo), first.snapshot.revision)).identity() == first.identity()


def test_the_tree_as_it_is_picks_up_uncommitted_and_untracked_files_not_ignored_ones(repo: Path, tmp_path: Path):
    clean = resolve_tree(UserTree(str(repo)))
    assert clean.snapshot.dirty is False and clean.snapshot.changes == ()
    (repo / "build").mkdir()
    (repo / "build" / "sqlite3.o").write_text("ignored")
    assert resolve_tree(UserTree(str(repo))).identity() == clean.identity()
    (repo / "sqlite3.c").write_text("int hot(void) { return 2; }\n")
    edited = resolve_tree(UserTree(str(repo)))
    assert edited.identity() != clean.identity() and edited.snapshot.dirty is True
    assert edited.word == f"tree:{edited.snapshot.revision[:7]}-dirty" and edited.snapshot.changes == (" M sqlite3.c",)
    (repo / "extra.h").write_text("#define EXTRA 1\n")
    untracked = resolve_tree(UserTree(str(repo)))
    assert untracked.identity() != edited.identity() and "?? extra.h" in untracked.snapshot.changes
    untracked.export(tmp_path / "copy")
    assert (tmp_path / "copy" / "sqlite3.c").read_text() == "int hot(void) { return 2; }\n"
    assert (tmp_path / "copy" / "extra.h").is_file() and not (tmp_path / "copy" / "build").exists()
    facts = untracked.provenance(tmp_path / "copy")
    assert facts["dirty"] is True and facts["repository"] == str(repo) and facts["sqlite_version"] == "3.99.0"


def test_the_checkout_is_byte_identical_after_it_is_read_and_exported(repo: Path, tmp_path: Path):
    (repo / "sqlite3.c").write_text("int hot(void) { return 3; }\n")  # dirty, as a user's checkout is
    (repo / "new.c").write_text("int cold(void) { return 0; }\n")
    before, status = snapshot(repo), git(repo, "status", "--porcelain")
    for rev in (None, "HEAD~1", "main"):
        source = resolve_tree(UserTree(str(repo), rev))
        source.export(tmp_path / f"export-{rev}")
        source.provenance(tmp_path / f"export-{rev}")
    assert snapshot(repo) == before and git(repo, "status", "--porcelain") == status


def test_a_subfolder_of_a_checkout_is_its_own_tree(repo: Path, tmp_path: Path):
    sub = repo / "amalgamation"
    sub.mkdir()
    (sub / "sqlite3.c").write_text("int sub(void) { return 0; }\n")
    (sub / "sqlite3.h").write_text(HEADER)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a folder of its own")
    at_rev = resolve_tree(UserTree(str(sub), "HEAD"))
    at_rev.export(tmp_path / "sub")
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["sqlite3.c", "sqlite3.h"]
    assert resolve_tree(UserTree(str(sub))).snapshot.files == ("sqlite3.c", "sqlite3.h")


def test_a_plain_folder_is_keyed_by_its_files(tmp_path: Path):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "sqlite3.h").write_text(HEADER)
    (folder / "sqlite3.c").write_text("int hot(void) { return 1; }\n")
    source = resolve_tree(UserTree(str(folder)))
    assert source.snapshot.repository is None and source.snapshot.dirty is None and source.word == "tree:plain"
    (folder / "sqlite3.c").write_text("int hot(void) { return 2; }\n")
    assert resolve_tree(UserTree(str(folder))).identity() != source.identity()


def test_bad_trees_are_one_line_each(repo: Path, tmp_path: Path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "sqlite3.c").write_text("")
    (plain / "sqlite3.h").write_text(HEADER)
    cases = [(UserTree(str(plain), "HEAD"), "rev = 'HEAD' needs a git checkout, and this folder is not one"),
             (UserTree(str(repo), "no-such-branch"), f"rev = 'no-such-branch' is not a commit of {repo}"),
             (UserTree(str(repo), "HEAD:sqlite3.c"), "is not a commit of"),
             (UserTree(str(tmp_path / "gone")), "not a folder")]
    for tree, message in cases:
        with pytest.raises(UserError, match="^tree .*" + re.escape(message)) as err:
            resolve_tree(tree)
        assert "\n" not in str(err.value)
    (repo / "sqlite3.c").unlink()
    git(repo, "commit", "-q", "-am", "no amalgamation")
    for rev in (None, "HEAD"):
        with pytest.raises(UserError, match=r"holds neither sqlite3\.c and sqlite3\.h .* nor a configure script"):
            resolve_tree(UserTree(str(repo), rev))


def test_a_source_tree_is_amalgamated_by_its_own_configure_and_make_in_the_copy(tmp_path: Path):
    """A stand-in for SQLite's configure and Makefile: the lab runs them in its copy, never in the user's tree."""
    tree = tmp_path / "src-tree"
    tree.mkdir()
    (tree / "configure").write_text("#!/bin/sh\nprintf 'sqlite3.c:\\n\\tcat src/*.c > sqlite3.c\\n\\t"
                                    "cp src/sqlite3.h sqlite3.h\\n' > Makefile\n")
    (tree / "src").mkdir()
    (tree / "src" / "a.c").write_text("int a(void) { return 1; }\n")
    (tree / "src" / "sqlite3.h").write_text(HEADER)
    source = resolve_tree(UserTree(str(tree)))
    assert isinstance(source, TreeSource) and source.ready() is None
    copy = tmp_path / "copy"
    source.export(copy)
    log = tmp_path / "build.log"
    amalgamate(copy, log, "sqlite@tree:src-tree [O2]")
    assert (copy / "sqlite3.c").read_text() == "int a(void) { return 1; }\n"
    assert amalgamation_facts(copy)["sqlite_version"] == "3.99.0"
    assert "$ sh configure" in log.read_text() and "$ make sqlite3.c" in log.read_text()
    assert not (tree / "sqlite3.c").exists() and not (tree / "Makefile").exists()
    (copy / "sqlite3.c").unlink()
    (copy / "Makefile").unlink()
    (copy / "configure").write_text("#!/bin/sh\necho 'configure: error: no tclsh found'\nexit 1\n")
    with pytest.raises(UserError, match=r"^sqlite@tree:src-tree \[O2\]: making the amalgamation failed at "
                                        r"`sh configure` \(log .*\): .*no tclsh found"):
        amalgamate(copy, log, "sqlite@tree:src-tree [O2]")


def test_read_tree_lists_what_a_tree_as_it_is_holds(repo: Path):
    (repo / "sqlite3.h").unlink()  # a tracked file deleted: listed, gone from the copy and from the names
    snapshot = read_tree(UserTree(str(repo)))
    assert "sqlite3.h" in snapshot.files and "sqlite3.h" not in snapshot.names
    assert snapshot.changes == (" D sqlite3.h",)


def test_a_file_linked_from_outside_the_tree_is_keyed_and_exported_by_its_content(tmp_path: Path):
    """A tree whose sqlite3.c is a symbolic link to a file elsewhere: the compiler reads that file, so a change to
    it is a new key (the cache never serves the build of the old content), and the export holds the content."""
    elsewhere = tmp_path / "elsewhere.c"
    elsewhere.write_text("int x;\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "sqlite3.c").symlink_to(elsewhere)
    (tree / "dangling.h").symlink_to(tmp_path / "gone.h")
    before = read_tree(UserTree(str(tree)))
    elsewhere.write_text("int x = 1;\n")
    after = read_tree(UserTree(str(tree)))
    assert before.content != after.content
    after.export(tmp_path / "copy")
    copied = tmp_path / "copy" / "sqlite3.c"
    assert not copied.is_symlink() and copied.read_text() == "int x = 1;\n"
    assert (tmp_path / "copy" / "dangling.h").is_symlink()  # a link to nothing stays what it is
    elsewhere.write_text("int x = 2;\n")
    with pytest.raises(UserError, match="its files changed since the lab read them"):
        after.export(tmp_path / "copy2")
