"""benchmarks/bisect/tree_commits: `dbperf bisect --tree` over 64 commits of a SQLite tree (the amalgamation of
3.54.1 in a git checkout made here, tests/test_tree_builds.py's helper), one of which adds a loop to sqlite3VdbeExec
(every statement runs it); each other commit changes a comment, so that every commit is a build of its own. Target
(the issue's): the right commit named in at most 8 minutes (480 s), from an empty build cache, with the command's
defaults (builds at -O2, 100,000 rows, point-query, simulated work; --no-confirm: the answer, not the wall-clock
confirmation after it, which --confirm adds). Prints the answer, the steps and the elapsed time; the last line is
`ratio <elapsed / 480 s>` (below 1.0: met). A benchmark, not a test: it asserts nothing (a wrong answer is said, and
exits 1).

Usage: .venv/bin/python benchmarks/bisect/tree_commits.py [--commits 64] [--at 41] [--table-size 100000]
       [--cflag=-O0] [--confirm]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.test_tree_builds import amalgamation_repo, spin  # noqa: E402
from tests.test_user_tree import git  # noqa: E402

TARGET_S = 480.0
LOOP = 200  # iterations of the loop the commit adds: a few hundred instructions a statement, well over 2%


def make_tree(repo: Path, commits: int, at: int) -> list[str]:
    """The checkout: the amalgamation, then `commits - 1` commits, the `at`-th adding the loop (kept after it)."""
    original = amalgamation_repo(repo)
    hashes = [git(repo, "rev-parse", "HEAD").strip()]
    for i in range(1, commits):
        text = spin(original, LOOP) if i >= at else original
        (repo / "sqlite3.c").write_bytes(text + f"/* commit {i} */\n".encode())
        git(repo, "commit", "-q", "-am", "sqlite3VdbeExec: a loop in the hot path" if i == at else f"comment {i}")
        hashes.append(git(repo, "rev-parse", "HEAD").strip())
    return hashes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=64)
    ap.add_argument("--at", type=int, default=41, help="the commit (1-based after the first) that adds the loop")
    ap.add_argument("--table-size", type=int, default=100_000)
    ap.add_argument("--benchmark", default="point-query")
    ap.add_argument("--cflag", action="append", default=[], help="passed to the bisect (a quick check: -O0)")
    ap.add_argument("--confirm", action="store_true", help="include the wall-clock confirmation of the step found")
    args = ap.parse_args()
    if not 1 <= args.at < args.commits:
        ap.error(f"--at: expected 1 to {args.commits - 1}")
    with tempfile.TemporaryDirectory(prefix="dbperf-bisect-tree-") as tmp:
        repo, out = Path(tmp) / "sqlite", Path(tmp) / "out"
        hashes = make_tree(repo, args.commits, args.at)
        cmd = [sys.executable, "-m", "dbperf.cli", "bisect", "--tree", str(repo), "--engine", "sqlite", hashes[0],
               "main", "--benchmark", args.benchmark, "--table-size", str(args.table_size), "--out", str(out),
               "--format", "json", *[f"--cflag={f}" for f in args.cflag],
               *([] if args.confirm else ["--no-confirm"])]
        env = {**os.environ, "DBPERF_CACHE": str(Path(tmp) / "cache")}  # every commit built: no build kept from before
        started = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
        elapsed = time.monotonic() - started
    if proc.returncode not in (0, 1, 4):
        sys.stderr.write(proc.stderr)
        sys.exit(f"bisect failed (exit {proc.returncode})")
    doc = json.loads(proc.stdout)
    right = doc.get("first_slower") == hashes[args.at]
    print(f"dbperf bisect --tree over {args.commits} commits of SQLite 3.54.1, the loop at commit {args.at}; "
          f"{args.benchmark}, {args.table_size:,} rows{', cflags ' + ' '.join(args.cflag) if args.cflag else ''}")
    print(f"answer: {doc.get('outcome')} {doc.get('first_slower')} ({'right' if right else 'WRONG'}); "
          f"{len(doc['steps'])} steps, {len(doc.get('skipped', []))} skipped; work per query "
          f"{doc.get('work_before') or 0:,.0f} -> {doc.get('work_after') or 0:,.0f}")
    print(f"search {doc.get('search_s')} s, whole bisect {doc.get('total_s')} s, elapsed with start-up {elapsed:.1f} s "
          f"(target {TARGET_S:.0f} s)")
    print(f"ratio {elapsed / TARGET_S:.3f}")
    if not right:
        sys.exit(1)


if __name__ == "__main__":
    main()
