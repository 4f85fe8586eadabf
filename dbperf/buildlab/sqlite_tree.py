"""A SQLite build's source from the user's tree (`tree`, `rev`): a folder holding the amalgamation (sqlite3.c and
sqlite3.h), or a SQLite source tree that makes it (`./configure && make sqlite3.c`, in the lab's own copy, never in
the user's). The tree is read by user_tree.py: its key is the tree's content, its manifest record the tree's facts
(repository, revision, subject, dirty state) with the SQLite version and sqlite3.c of what was compiled.

The other origin is a released version (sqlite_source.py); the builder asks either the same questions: `word` (how
the label names it), `identity()` (what the build's key hashes), `ready()` (a folder to compile in place, or None),
`export(into)` and `provenance(folder)`."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbperf.buildlab.sqlite_source import SQLITE_VERSION
from dbperf.buildlab.user_tree import TreeSnapshot, read_tree
from dbperf.errors import UserError
from dbperf.experiment.user_source import UserTree
from dbperf.host.compiler import build_environment
from dbperf.host.facts import sha256_of
from dbperf.tools import tail

AMALGAMATION = ("sqlite3.c", "sqlite3.h")
# `make sqlite3.c` makes sqlite3.h as well; the tree's own configure, with its defaults (only the amalgamation is
# made: the build lab compiles it with the target's flags).
MAKE_AMALGAMATION = (["sh", "configure"], ["make", "sqlite3.c"])
CONFIGURE_TIMEOUT_S = 300
NEITHER = ("holds neither sqlite3.c and sqlite3.h (an amalgamation) nor a configure script that makes them (a SQLite "
           "source tree)")


@dataclass(frozen=True)
class TreeSource:
    snapshot: TreeSnapshot

    @property
    def word(self) -> str:
        return self.snapshot.word

    def identity(self) -> dict[str, Any]:
        return {"tree": self.snapshot.content}

    def ready(self) -> Path | None:
        return None  # always the lab's copy: configure, make and patches never touch the user's tree

    def export(self, into: Path) -> None:
        self.snapshot.export(into)

    def provenance(self, folder: Path | None = None) -> dict[str, Any]:
        return {**self.snapshot.facts(), **(amalgamation_facts(folder) if folder else {})}


def resolve_tree(tree: UserTree) -> TreeSource:
    """The tree read, and checked to be a SQLite tree (before any build starts: a bad revision is one line)."""
    snapshot = read_tree(tree)
    if not (set(AMALGAMATION) <= snapshot.names or "configure" in snapshot.names):
        at = f" at rev = {tree.rev!r}" if tree.rev else ""
        raise UserError(f"tree {tree.path}{at}: {NEITHER}")
    return TreeSource(snapshot)


def amalgamation_facts(folder: Path) -> dict[str, Any]:
    """The SQLite version and sqlite3.c's sha256 of the amalgamation compiled."""
    found = SQLITE_VERSION.search((folder / "sqlite3.h").read_text(errors="replace"))
    return {"sqlite_version": found.group(1) if found else "unknown",
            "sqlite3_c_sha256": sha256_of(str(folder / "sqlite3.c"))}


def configures(tree: TreeSource, label: str) -> str:
    """For a dry run: a source tree's configure run in a temporary copy of the tree (never in the user's folder), so
    that a tree that does not configure is refused before a run claims its folder; what was found ("" for a tree
    that holds the amalgamation: nothing to configure). The copy and its output are removed: nothing is built or
    kept."""
    if set(AMALGAMATION) <= tree.snapshot.names:
        return ""
    with tempfile.TemporaryDirectory(prefix="dbperf-configure-") as tmp:
        folder, log = Path(tmp) / "src", Path(tmp) / "configure.log"
        tree.export(folder)
        with open(log, "w") as f:
            try:
                proc = subprocess.run(MAKE_AMALGAMATION[0], cwd=folder, stdout=f, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env=build_environment(), timeout=CONFIGURE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise UserError(f"{label}: the tree's configure did not end within {CONFIGURE_TIMEOUT_S} s (tried "
                                "in a temporary copy)") from None
        if proc.returncode != 0:
            raise UserError(f"{label}: the tree's configure fails (exit {proc.returncode}, tried in a temporary "
                            f"copy): {tail(log.read_text(errors='replace'), 2)}")
    return "its configure ran in a temporary copy"


def amalgamate(folder: Path, log: Path, label: str) -> None:
    """The amalgamation in the lab's copy `folder`: there already, or made by the tree's configure and make."""
    if all((folder / name).is_file() for name in AMALGAMATION):
        return
    if not (folder / "configure").is_file():
        raise UserError(f"{label}: the tree {NEITHER}")
    for cmd in MAKE_AMALGAMATION:
        try:
            with open(log, "a") as f:
                f.write("$ " + " ".join(cmd) + "\n")
                f.flush()
                proc = subprocess.run(cmd, cwd=folder, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      env=build_environment())
        except FileNotFoundError:
            raise UserError(f"{label}: making the amalgamation needs {cmd[0]} (apt install {cmd[0]})") from None
        if proc.returncode != 0:
            raise UserError(f"{label}: making the amalgamation failed at `{' '.join(cmd)}` (log {log}): "
                            f"{tail(log.read_text(errors='replace'), 3)}")
    if not all((folder / name).is_file() for name in AMALGAMATION):
        raise UserError(f"{label}: `make sqlite3.c` left no sqlite3.c and sqlite3.h in the tree (log {log})")
