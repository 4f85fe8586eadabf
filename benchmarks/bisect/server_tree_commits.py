"""benchmarks/bisect/server_tree_commits: `dbperf bisect --tree --engine ENGINE` over the commits of a server's tree
(a git checkout made here from Debian's source of the engine, fetched by the build lab: tests/server_checkouts.py),
one of which adds a loop to a function every statement runs (PostgreSQL's StartTransactionCommand in xact.c,
MariaDB's dispatch_command in sql_parse.cc); each other commit adds a comment to the same file, so that every commit
is a build of its own that recompiles one object (and, for MariaDB, relinks mariadbd and installs it).

The targets (the issues'): PostgreSQL, 64 commits, the right commit named in at most 25 minutes (1500 s) after the
first build of the tree; MariaDB, 16 commits, each step (its commit's incremental build, then its count under
callgrind) under 5 minutes (300 s). Both with the command's defaults (builds at -O2, 100,000 rows, point-query,
simulated work; --no-confirm: the answer, not the wall-clock confirmation after it, which --confirm adds).

The first build (the oldest commit, every object compiled in the checkout's kept build tree: about 8 minutes for
PostgreSQL, longer for MariaDB, on 2 cores) is made before the clock starts, through the build lab as the bisect's
own builds are; with --cache naming a server cache that holds it from an earlier run (the checkout is made again at
the same place inside it), it is taken from there; --prepare makes it and stops. A step's time is the time from the
previous count's file to its own (DIR/simulated/HASH.json, written when the count ends): its build and its count.
Prints the answer, each step's time and the elapsed time; the last line is `ratio <elapsed / 1500 s>` (PostgreSQL)
or `ratio <slowest step / 300 s>` (MariaDB), below 1.0: met. A benchmark, not a test: it asserts nothing (a wrong
answer is said, and exits 1), and is measured on a quiet machine (it prints the load before and after).

Usage: .venv/bin/python benchmarks/bisect/server_tree_commits.py --engine mariadb [--commits 16] [--at 11]
       [--table-size 100000] [--cache DIR] [--prepare] [--confirm]
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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from dbperf.buildlab.server_build import build_server  # noqa: E402
from dbperf.buildlab.server_cache_listing import how_built  # noqa: E402
from dbperf.experiment.build_variants import ServerBuildSpec  # noqa: E402
from dbperf.experiment.user_source import UserTree  # noqa: E402
from tests.server_checkouts import MARIADB, POSTGRES, HotPath, debian_checkout  # noqa: E402
from tests.test_user_tree import git  # noqa: E402

LOOP = 2000  # iterations of the loop the commit adds: about 10,000 instructions a statement, well over 2%


@dataclass(frozen=True)
class Target:
    """The issue's target: on the whole bisect after the first build, or on every step (its build and its count)."""
    seconds: float
    each_step: bool

    def says(self) -> str:
        what = "every step (its build and its count)" if self.each_step else "the whole bisect after the first build"
        return f"{what} under {self.seconds:.0f} s"

    def ratio(self, elapsed: float, steps: Sequence[float]) -> float:
        return (max(steps) if self.each_step else elapsed) / self.seconds


@dataclass(frozen=True)
class Case:
    hot: HotPath
    commits: int
    at: int
    target: Target


CASES = {"postgres": Case(POSTGRES, 64, 41, Target(1500.0, each_step=False)),
         "mariadb": Case(MARIADB, 16, 11, Target(300.0, each_step=True))}


def make_tree(hot: HotPath, repo: Path, commits: int, at: int) -> list[str]:
    """The checkout: Debian's source, then `commits - 1` commits to the hot file, the `at`-th adding the loop (kept
    after it), every one a comment of its own."""
    original = debian_checkout(hot, repo)
    hashes = [git(repo, "rev-parse", "HEAD").strip()]
    for i in range(1, commits):
        text = hot.spin(original, LOOP) if i >= at else original
        (repo / hot.file).write_bytes(text + f"/* commit {i} */\n".encode())
        git(repo, "commit", "-q", "-am", f"{hot.function}: a loop in the hot path" if i == at
            else f"{Path(hot.file).name}: comment {i}")
        hashes.append(git(repo, "rev-parse", "HEAD").strip())
    return hashes


def _no_training(*args: Any) -> dict[str, Any]:
    raise AssertionError("an -O2 build trains nothing")


def _load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def _first_build(engine: str, repo: Path, oldest: str) -> None:
    """The oldest commit built in the checkout's kept tree, as the bisect asks for it (no cflags: -O2)."""
    said: list[str] = []

    def show(phase: str, done: int, expected: int) -> None:
        if not said or said[-1] != phase:
            said.append(phase)
            print(f"  {phase}", flush=True)

    spec = ServerBuildSpec(engine, "tree", tree=UserTree(str(repo), oldest))
    print(f"first build of the tree: {spec.label()}  {_load()}", flush=True)
    started = time.monotonic()
    first = build_server(spec, _no_training, show)
    print(f"  {'cached' if first.cached else how_built(first.manifest)} ({time.monotonic() - started:.0f} s)  "
          f"{_load()}", flush=True)


def _step_times(out: Path, started_wall: float) -> list[tuple[str, float]]:
    """Each count's commit and its time since the previous count ended (the first: since the bisect started)."""
    counts = sorted((p.stat().st_mtime, p.stem) for p in (out / "simulated").glob("*.json")
                    if not p.stem.endswith(".experiment"))
    times, last = [], started_wall
    for ended, commit in counts:
        times.append((commit, ended - last))
        last = ended
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", choices=sorted(CASES), required=True)
    ap.add_argument("--commits", type=int)
    ap.add_argument("--at", type=int, help="the commit (1-based after the first) that adds the loop")
    ap.add_argument("--table-size", type=int, default=100_000)
    ap.add_argument("--benchmark", default="point-query")
    ap.add_argument("--cache", help="the server cache to use and keep (default: a new temporary one)")
    ap.add_argument("--prepare", action="store_true", help="make the checkout and its first build, then stop")
    ap.add_argument("--confirm", action="store_true", help="include the wall-clock confirmation of the step found")
    args = ap.parse_args()
    case = CASES[args.engine]
    commits, at = args.commits or case.commits, args.at or case.at
    if not 1 <= at < commits:
        ap.error(f"--at: expected 1 to {commits - 1}")
    if args.prepare and not args.cache:
        ap.error("--prepare keeps its build in --cache DIR")
    cache = Path(tempfile.mkdtemp(prefix=f"dbperf-{args.engine}-tree-commits-", dir="/tmp")) if not args.cache \
        else Path(args.cache).resolve()
    cache.mkdir(parents=True, exist_ok=True)
    cache.chmod(0o755)  # the servers' users must reach an install through it
    os.environ["DBPERF_SERVER_CACHE"] = str(cache)
    print(f"{datetime.now(UTC).isoformat(timespec='seconds')}  {platform.node()}  {os.cpu_count()} cores  {_load()}")
    work = cache / f"{args.engine}-tree-commits"  # the checkout at one place: its kept tree is found again
    try:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        repo, out = work / case.hot.engine, work / "out"
        hashes = make_tree(case.hot, repo, commits, at)
        _first_build(args.engine, repo, hashes[0])
        if args.prepare:
            return 0
        cmd = [sys.executable, "-m", "dbperf.cli", "bisect", "--tree", str(repo), "--engine", args.engine, hashes[0],
               "main", "--benchmark", args.benchmark, "--table-size", str(args.table_size), "--out", str(out),
               "--format", "json", *([] if args.confirm else ["--no-confirm"])]
        print(f"bisect over {commits} commits, the loop at commit {at}; {_load()}", flush=True)
        started, started_wall = time.monotonic(), time.time()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
        elapsed = time.monotonic() - started
        if proc.returncode not in (0, 1, 4):
            sys.stderr.write(proc.stderr)
            print(f"bisect failed (exit {proc.returncode})", file=sys.stderr)
            return 2
        doc = json.loads(proc.stdout)
        right = doc.get("first_slower") == hashes[at]
        steps = _step_times(out, started_wall)
        print(f"dbperf bisect --tree over {commits} commits of {args.engine}, the loop at commit {at} "
              f"({case.hot.function}); {args.benchmark}, {args.table_size:,} rows")
        print(f"answer: {doc.get('outcome')} {doc.get('first_slower')} ({'right' if right else 'WRONG'}); "
              f"{len(doc['steps'])} steps, {len(doc.get('skipped', []))} skipped; work per query "
              f"{doc.get('work_before') or 0:,.0f} -> {doc.get('work_after') or 0:,.0f} instructions (simulated)")
        for commit, seconds in steps:
            print(f"  count of {commit[:12]} (commit {hashes.index(commit) if commit in hashes else '?'}): "
                  f"{seconds:.1f} s since the previous count (its build and its count)")
        print(f"search {doc.get('search_s')} s, whole bisect {doc.get('total_s')} s, elapsed with start-up "
              f"{elapsed:.1f} s; slowest step {max(s for _, s in steps):.1f} s; target: {case.target.says()}; "
              f"{_load()}")
        print(f"ratio {case.target.ratio(elapsed, [s for _, s in steps]):.3f}")
        return 0 if right else 1
    finally:
        if not args.cache:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
