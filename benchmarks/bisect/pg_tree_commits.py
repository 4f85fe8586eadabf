"""benchmarks/bisect/pg_tree_commits: `dbperf bisect --tree --engine postgres` over 64 commits of a PostgreSQL tree (a
git checkout made here from Debian's PostgreSQL source, fetched by the build lab: tests/test_server_tree_builds.py's
helper), one of which adds a loop to StartTransactionCommand in xact.c (every statement runs it); each other commit
adds a comment to the same file, so that every commit is a build of its own that recompiles one object. Target (the
issue's): the right commit named in at most 25 minutes (1500 s) after the first build of the tree, with the
command's defaults (builds at -O2, 100,000 rows, point-query, simulated work; --no-confirm: the answer, not the
wall-clock confirmation after it, which --confirm adds).

The first build (the oldest commit, every object compiled in the checkout's kept build tree: about 8 minutes on 2
cores) is made before the clock starts, through the build lab as the bisect's own builds are; with --cache naming a
server cache that holds it from an earlier run (the checkout is made again at the same place inside it), it is taken
from there. Prints the answer, the steps and the elapsed time; the last line is `ratio <elapsed / 1500 s>` (below
1.0: met). A benchmark, not a test: it asserts nothing (a wrong answer is said, and exits 1), and is measured on a
quiet machine (it prints the load before and after).

Usage: .venv/bin/python benchmarks/bisect/pg_tree_commits.py [--commits 64] [--at 41] [--table-size 100000]
       [--cache DIR] [--confirm]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from dbperf.buildlab.server_build import build_server, how_built  # noqa: E402
from dbperf.experiment.build_variants import ServerBuildSpec  # noqa: E402
from dbperf.experiment.user_source import UserTree  # noqa: E402
from tests.test_server_tree_builds import XACT, postgres_checkout, spin  # noqa: E402
from tests.test_user_tree import git  # noqa: E402

TARGET_S = 1500.0
LOOP = 2000  # iterations of the loop the commit adds: about 10,000 instructions a statement, well over 2%


def make_tree(repo: Path, commits: int, at: int) -> list[str]:
    """The checkout: Debian's source, then `commits - 1` commits to xact.c, the `at`-th adding the loop (kept after
    it), every one a comment of its own."""
    original = postgres_checkout(repo)
    hashes = [git(repo, "rev-parse", "HEAD").strip()]
    for i in range(1, commits):
        text = spin(original, LOOP) if i >= at else original
        (repo / XACT).write_bytes(text + f"/* commit {i} */\n".encode())
        git(repo, "commit", "-q", "-am", "StartTransactionCommand: a loop in the hot path" if i == at
            else f"xact.c: comment {i}")
        hashes.append(git(repo, "rev-parse", "HEAD").strip())
    return hashes


def _no_training(*args: Any) -> dict[str, Any]:
    raise AssertionError("an -O2 build trains nothing")


def _load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def _first_build(repo: Path, oldest: str) -> None:
    """The oldest commit built in the checkout's kept tree, as the bisect asks for it (no cflags: -O2)."""
    said: list[str] = []

    def show(phase: str, done: int, expected: int) -> None:
        if not said or said[-1] != phase:
            said.append(phase)
            print(f"  {phase}", flush=True)

    spec = ServerBuildSpec("postgres", "tree", tree=UserTree(str(repo), oldest))
    print(f"first build of the tree: {spec.label()}", flush=True)
    first = build_server(spec, _no_training, show)
    print(f"  {'cached' if first.cached else how_built(first.manifest)}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=64)
    ap.add_argument("--at", type=int, default=41, help="the commit (1-based after the first) that adds the loop")
    ap.add_argument("--table-size", type=int, default=100_000)
    ap.add_argument("--benchmark", default="point-query")
    ap.add_argument("--cache", help="the server cache to use and keep (default: a new temporary one)")
    ap.add_argument("--confirm", action="store_true", help="include the wall-clock confirmation of the step found")
    args = ap.parse_args()
    if not 1 <= args.at < args.commits:
        ap.error(f"--at: expected 1 to {args.commits - 1}")
    temporary = not args.cache
    cache = Path(tempfile.mkdtemp(prefix="dbperf-pg-tree-commits-", dir="/tmp")) if temporary else \
        Path(args.cache).resolve()
    cache.mkdir(parents=True, exist_ok=True)
    cache.chmod(0o755)  # the servers' users must reach an install through it
    os.environ["DBPERF_SERVER_CACHE"] = str(cache)
    print(f"{datetime.now(UTC).isoformat(timespec='seconds')}  {platform.node()}  {os.cpu_count()} cores  {_load()}")
    work = cache / "pg-tree-commits"  # the checkout at one place: its kept tree is found again with --cache
    try:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        repo, out = work / "postgresql", work / "out"
        hashes = make_tree(repo, args.commits, args.at)
        _first_build(repo, hashes[0])
        cmd = [sys.executable, "-m", "dbperf.cli", "bisect", "--tree", str(repo), "--engine", "postgres", hashes[0],
               "main", "--benchmark", args.benchmark, "--table-size", str(args.table_size), "--out", str(out),
               "--format", "json", *([] if args.confirm else ["--no-confirm"])]
        print(f"bisect over {args.commits} commits, the loop at commit {args.at}; {_load()}", flush=True)
        started = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
        elapsed = time.monotonic() - started
        if proc.returncode not in (0, 1, 4):
            sys.stderr.write(proc.stderr)
            print(f"bisect failed (exit {proc.returncode})", file=sys.stderr)
            return 2
        doc = json.loads(proc.stdout)
        right = doc.get("first_slower") == hashes[args.at]
        print(f"dbperf bisect --tree over {args.commits} commits of PostgreSQL, the loop at commit {args.at}; "
              f"{args.benchmark}, {args.table_size:,} rows")
        print(f"answer: {doc.get('outcome')} {doc.get('first_slower')} ({'right' if right else 'WRONG'}); "
              f"{len(doc['steps'])} steps, {len(doc.get('skipped', []))} skipped; work per query "
              f"{doc.get('work_before') or 0:,.0f} -> {doc.get('work_after') or 0:,.0f}")
        print(f"search {doc.get('search_s')} s, whole bisect {doc.get('total_s')} s, elapsed with start-up "
              f"{elapsed:.1f} s (target {TARGET_S:.0f} s after the first build); {_load()}")
        print(f"ratio {elapsed / TARGET_S:.3f}")
        return 0 if right else 1
    finally:
        if not args.cache:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
