"""A user's tree, read by the build lab without touching it: one commit of a git checkout (`rev`), the checkout as it
is (uncommitted and untracked files included), or a plain folder.

Every git command only reads (`--no-optional-locks`: not even `git status` refreshes the index), takes its arguments
as a list, and a revision is verified as a commit (`git rev-parse --verify REV^{commit}`) before anything else reads
it. A tree's key is its content, never its path (two clones at one commit are one build): the git tree object of
the revision's folder, or else a sha256 over the path, kind and content of every file the tree holds (git's tracked
files and the untracked ones it does not ignore; every file of a plain folder). A revision is exported with `git
archive`; the tree as it is is copied file by file, and the copy hashed again, so that a file changed meanwhile is
never built under the key of the old one.

What an engine needs in a tree (SQLite: an amalgamation or a tree that makes one) is the engine's (sqlite_tree.py);
this module knows folders and git. A later incremental build keeps one copy per tree and asks the same snapshot.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbperf.errors import UserError
from dbperf.experiment.user_source import UserTree
from dbperf.tools import tail

# The manifest lists this many of a dirty tree's changed files (`git status --porcelain`), and counts the rest.
MAX_CHANGES = 50


def _git(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A read-only git command in `tree`, never prompting, its output as text (not checked)."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        return subprocess.run(["git", "--no-optional-locks", *args], cwd=tree, capture_output=True, text=True,
                              errors="replace", env=env, stdin=subprocess.DEVNULL, timeout=600)
    except FileNotFoundError:
        raise UserError(f"tree {tree}: git not found (apt install git)") from None
    except subprocess.TimeoutExpired:
        raise UserError(f"tree {tree}: `git {' '.join(args[:3])}` did not finish within 600 s") from None


def _out(tree: Path, *args: str) -> str:
    proc = _git(tree, *args)
    if proc.returncode != 0:
        raise UserError(f"tree {tree}: `git {' '.join(args[:3])}` failed: {tail(proc.stderr) or 'no output'}")
    return proc.stdout


@dataclass(frozen=True)
class TreeSnapshot:
    """What the lab read of a tree: its git facts, its key, and what it needs to export the same content again."""
    path: Path
    rev: str | None  # as the experiment wrote it
    repository: str | None  # the checkout's top folder; None for a plain folder
    revision: str | None  # the full hash: rev's commit, or HEAD's for the tree as it is (None: no commit yet)
    subject: str | None  # that commit's subject
    dirty: bool | None  # the tree as it is differs from its HEAD (None: a plain folder)
    changes: tuple[str, ...]  # `git status --porcelain` of the tree as it is
    content: str  # the key: "git-tree:<id>" of a revision, "sha256:<hex>" of the files of a tree as it is
    files: tuple[str, ...]  # the tree as it is: its files, relative to `path`; () for a revision
    names: frozenset[str]  # the names at the tree's top, for the engine's check of what kind of tree it is

    @property
    def word(self) -> str:
        """How a build's label names the tree: its commit (and -dirty), or a plain folder's name."""
        if self.revision is None:
            return f"tree:{self.path.name}"
        return f"tree:{self.revision[:7]}{'-dirty' if self.dirty else ''}"

    def facts(self) -> dict[str, Any]:
        """The manifest's record of the tree."""
        return {"origin": "tree", "path": str(self.path), "repository": self.repository, "rev": self.rev,
                "revision": self.revision, "subject": self.subject, "dirty": self.dirty,
                "changes": list(self.changes[:MAX_CHANGES]),
                "changes_not_listed": max(0, len(self.changes) - MAX_CHANGES), "content": self.content}

    def export(self, into: Path) -> None:
        """The tree's content into `into` (a new folder of the lab's): the revision by git archive, the tree as it is
        copied and checked against its key."""
        into.mkdir(parents=True)
        if self.rev is not None and self.repository is not None:
            _archive(Path(self.repository), self.content.removeprefix("git-tree:"), into)
            return
        for name in self.files:
            source, target = self.path / name, into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_file():  # a link to a file too: its content, as the key has it
                shutil.copy2(source, target)
            elif source.is_symlink():
                os.symlink(os.readlink(source), target)
            elif source.is_dir():  # a submodule: git lists its folder, not its files
                target.mkdir()
        if _content(into, self.files) != self.content:
            # read once per run: a build made later (a PGO build's base) is of the content the run's others are
            raise UserError(f"tree {self.path}: its files changed since the lab read them; run again")


def _archive(top: Path, tree_id: str, into: Path) -> None:
    """git archive of a tree object, run from the checkout's top folder, unpacked into `into` (tarfile's data
    filter: nothing lands outside it); then each submodule at the commit the tree records for it (git archive leaves
    its folder empty: MariaDB's libmariadb, wsrep-lib...), from the submodule's own checkout, and theirs in turn. The
    tree's id, the build's key, holds those commits."""
    with tempfile.TemporaryDirectory(prefix="archive-", dir=into.parent) as scratch:
        tar = Path(scratch) / "tree.tar"
        _out(top, "archive", "--format=tar", "-o", str(tar), tree_id)
        with tarfile.open(tar) as archive:
            archive.extractall(into, filter="data")
    for path, commit in _submodules(top, tree_id):
        checkout = top / path
        if not (checkout / ".git").exists() or _git(checkout, "cat-file", "-e", f"{commit}^{{commit}}").returncode:
            raise UserError(f"tree {top}: its submodule {path} at {commit[:12]} is not in the checkout (`git "
                            "submodule update --init --recursive`, or fetch that commit in it)")
        (into / path).mkdir(parents=True, exist_ok=True)
        _archive(checkout, commit, into / path)


def _submodules(top: Path, tree_id: str) -> list[tuple[str, str]]:
    """(path, commit) of every submodule (gitlink) the tree records."""
    found = []
    for entry in _out(top, "ls-tree", "-r", "-z", tree_id).split("\0"):
        meta, _, path = entry.partition("\t")
        words = meta.split()
        if len(words) == 3 and words[1] == "commit":
            found.append((path, words[2]))
    return found


def _digest(path: Path) -> tuple[str, str]:
    """A file's kind (f, x executable, l symlink, d a folder such as a submodule, - gone) and content's sha256. A
    symbolic link to a file is that file, wherever it lies (outside the tree too): the compiler reads its content,
    so the key is of that content, and the export copies it (`export`)."""
    if path.is_symlink() and not path.resolve().is_file():
        return "l", hashlib.sha256(os.readlink(path).encode()).hexdigest()
    if path.is_file():
        with open(path, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
        return ("x" if path.stat().st_mode & 0o100 else "f"), digest
    return ("d" if path.is_dir() else "-"), ""


def _content(root: Path, files: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        kind, sha = _digest(root / name)
        digest.update(f"{name}\0{kind}\0{sha}\n".encode())
    return f"sha256:{digest.hexdigest()}"


def _plain_files(root: Path) -> tuple[str, ...]:
    found = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        base = Path(folder).relative_to(root)
        found += [(base / n).as_posix() for n in names
                  if (Path(folder) / n).is_symlink() or (Path(folder) / n).is_file()]
    return tuple(sorted(found))


def _plain(path: Path) -> TreeSnapshot:
    """A folder outside any checkout (or one its checkout ignores): every file of it."""
    files = _plain_files(path)
    return TreeSnapshot(path, None, None, None, None, None, (), _content(path, files), files, _top_names(path, files))


def _top_names(path: Path, files: tuple[str, ...]) -> frozenset[str]:
    return frozenset(n.split("/", 1)[0] for n in files if (path / n).is_symlink() or (path / n).exists())


def _commit(path: Path, rev: str) -> str | None:
    """The full hash of the commit `rev` names in the checkout at `path`, None when it names none."""
    proc = _git(path, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else None


def _at_revision(tree: UserTree, path: Path, repository: str, prefix: str) -> TreeSnapshot:
    assert tree.rev is not None
    revision = _commit(path, tree.rev)
    if revision is None:
        raise UserError(f"tree {path}: rev = {tree.rev!r} is not a commit of {repository}")
    found = _git(path, "rev-parse", "--verify", "--quiet", f"{revision}:{prefix}")
    if found.returncode != 0:
        raise UserError(f"tree {path}: commit {revision[:12]} (rev = {tree.rev!r}) has no folder {prefix or '.'}")
    tree_id = found.stdout.strip()
    # from the top: run in a subfolder, ls-tree and archive would look for that folder inside this one
    names = frozenset(_out(Path(repository), "ls-tree", "--name-only", "-z", tree_id).split("\0")) - {""}
    subject = _out(path, "log", "-1", "--format=%s", revision).strip()
    return TreeSnapshot(path, tree.rev, repository, revision, subject, False, (), f"git-tree:{tree_id}", (), names)


def _as_it_is(path: Path, repository: str) -> TreeSnapshot:
    listed = _out(path, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    files = tuple(sorted(set(listed.split("\0")) - {""}))
    if not files:  # a folder its checkout ignores: a plain folder
        return _plain(path)
    revision = _commit(path, "HEAD")
    changes = tuple(_out(path, "status", "--porcelain", "--untracked-files=all", "--", ".").splitlines())
    subject = _out(path, "log", "-1", "--format=%s", revision).strip() if revision else None
    return TreeSnapshot(path, None, repository, revision, subject, bool(changes) or revision is None, changes,
                        _content(path, files), files, _top_names(path, files))


def read_tree(tree: UserTree) -> TreeSnapshot:
    """The tree the experiment names, read (git's facts, the key), or one line saying why it cannot be."""
    path = Path(tree.path)
    if not path.is_dir():
        raise UserError(f"tree {path}: not a folder")
    top = _git(path, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        if tree.rev is not None:
            raise UserError(f"tree {path}: rev = {tree.rev!r} needs a git checkout, and this folder is not one "
                            f"({tail(top.stderr, 1) or 'git rev-parse failed'}); drop rev to build it as it is")
        return _plain(path)
    repository = top.stdout.strip()
    if tree.rev is not None:
        prefix = _out(path, "rev-parse", "--show-prefix").strip().rstrip("/")
        return _at_revision(tree, path, repository, prefix)
    return _as_it_is(path, repository)
