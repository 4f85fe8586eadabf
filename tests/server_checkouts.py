"""Checkouts of a server's source made here for tree bisects (tests/test_server_tree_builds.py, benchmarks/bisect/):
Debian's source package of the engine, fetched and unpacked by the build lab's own apt (as `source =
"ENGINE@debian-src"` is), committed whole as a git checkout's first commit; and, per engine, the hot function every
statement runs, where a commit adds a loop (more work per query, which the bisect must name)."""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from dbperf.buildlab.debian_source import candidate_versions, fetch_debian_source
from dbperf.buildlab.paths import server_cache
from dbperf.errors import UserError
from tests.test_user_tree import git


@dataclass(frozen=True)
class HotPath:
    """A function of `file` every statement runs, found by the start of its body."""
    engine: str
    file: str
    function: str
    start: re.Pattern[bytes]

    def spin(self, text: bytes, count: int) -> bytes:
        """`text` (the file's bytes) with a loop of `count` at the start of the function: more work a statement."""
        found = self.start.search(text)
        if found is None:
            raise AssertionError(f"{self.file}: no {self.function} to add the loop to")
        loop = f"\t{{ volatile int dbperf_spin; for (dbperf_spin = 0; dbperf_spin < {count}; dbperf_spin++) {{}} }}\n"
        return text[:found.end()] + loop.encode() + text[found.end():]


POSTGRES = HotPath("postgres", "src/backend/access/transam/xact.c", "StartTransactionCommand",
                   re.compile(rb"\nStartTransactionCommand\(void\)\n\{\n"))
# every statement of a client goes through dispatch_command (COM_QUERY, COM_STMT_EXECUTE ...)
MARIADB = HotPath("mariadb", "sql/sql_parse.cc", "dispatch_command",
                  re.compile(rb"\n\w+ dispatch_command\(enum enum_server_command command, THD \*thd,\n"
                             rb"[^{;]*\)\n\{\n"))


def debian_checkout(hot: HotPath, repo: Path, said: list[str] | None = None) -> bytes:
    """A new git checkout at `repo` whose one commit is Debian's source of `hot.engine`, unpacked (Debian's patches
    applied) by the build lab's fetch, through the apt of the server cache DBPERF_SERVER_CACHE names; the hot file's
    bytes, for commits that change it. Every file is committed, those a .gitignore names too (a release's generated
    parsers)."""
    apt, package, versions = candidate_versions(hot.engine)
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix=f"{hot.engine}-source-", dir=server_cache()) as work:
        for version in versions:
            try:
                source = fetch_debian_source(apt, package, hot.engine, version, Path(work), skipped,
                                             said.append if said is not None else None)
            except UserError as e:  # the next version, as the build lab does
                skipped.append(f"{version}: {e}")
                continue
            shutil.move(source.tree, repo)
            break
        else:
            raise AssertionError(f"no version of {package} could be fetched: {skipped}")
    git(repo, "init", "-q", "-b", "main")
    # no `git gc --auto` after a commit (thousands of loose objects start one, in the background): it would repack
    # the checkout while a test holds it as the bisect left it
    git(repo, "config", "gc.auto", "0")
    git(repo, "add", "-A", "--force")
    git(repo, "commit", "-q", "-m", f"Debian's {package} {version}")
    text = (repo / hot.file).read_bytes()
    hot.spin(text, 1)  # the function is there (else one line now, not a bisect that finds nothing)
    return text


def commit(repo: Path, file: str, text: bytes, subject: str) -> str:
    (repo / file).write_bytes(text)
    git(repo, "commit", "-q", "-am", subject)
    return git(repo, "rev-parse", "HEAD").strip()
