"""benchmarks/buildlab/pg_one_file_rebuild.py: a one-line change to one PostgreSQL backend file, rebuilt in the kept
build tree of a first build (buildlab/build_tree.py). Builds postgres@debian-src [O2] (the first build of its tree:
fetched, configured, every object compiled; not what is measured), then the same source with a one-line patch to
one backend .c file (a new global at its end, named anew each run, so that neither the build cache nor ccache has
it), timed from the call to the build lab to the installed, cached build: the archive's index refresh, the switch to
the patch, make's rebuild, the install. Prints both builds, the objects the second rebuilt and ccache's counts, and
ends with `ratio <rebuild seconds / 90>` (the target: at most 90 s, ratio <= 1). A benchmark, not a test: it asserts
nothing, and is measured on a quiet machine (it prints the load before and after).

The server cache is a new temporary folder (removed at the end) unless --cache names one: with a cache that has the
tree already, the first build comes from the cache and only the second is made.

Usage: .venv/bin/python benchmarks/buildlab/pg_one_file_rebuild.py [--file src/backend/tcop/postgres.c]
       [--cache DIR]
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dbperf.buildlab.server_build import build_server, how_built
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.experiment.user_source import PatchFile

TARGET_S = 90.0


def _no_training(*args: Any) -> dict[str, Any]:
    raise AssertionError("an -O2 build trains nothing")


def _progress() -> Any:
    said: list[str] = []

    def show(phase: str, done: int, expected: int) -> None:
        if not said or said[-1] != phase:
            said.append(phase)
            print(f"  {phase}", flush=True)
    return show


def _one_line_patch(tree: Path, file: str, into: Path) -> PatchFile:
    """A patch appending one line to `file` of the kept tree's source as unpacked (its pristine copy when the tree
    holds another patch set)."""
    pristine = tree / "pristine" / file
    original = (pristine if pristine.is_file() else tree / "src" / file).read_text()
    line = f"int dbperf_one_line_change_{time.time_ns()} = 1;\n"
    text = "".join(difflib.unified_diff(original.splitlines(keepends=True), [*original.splitlines(keepends=True), line],
                                        f"a/{file}", f"b/{file}"))
    path = into / "one-line.patch"
    path.write_text(text)
    return PatchFile(path.name, str(path), hashlib.sha256(text.encode()).hexdigest())


def _load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default="src/backend/tcop/postgres.c", help="the backend file changed")
    parser.add_argument("--cache", help="the server cache to use (default: a new temporary one)")
    args = parser.parse_args()
    cache = Path(args.cache) if args.cache else Path(tempfile.mkdtemp(prefix="dbperf-pg-rebuild-"))
    cache.mkdir(parents=True, exist_ok=True)
    cache.chmod(0o755)  # the servers' users must reach an install through it
    os.environ["DBPERF_SERVER_CACHE"] = str(cache)
    print(f"{datetime.now(UTC).isoformat(timespec='seconds')}  {platform.node()}  {os.cpu_count()} cores  {_load()}")
    try:
        spec = ServerBuildSpec("postgres")
        print(f"first build of the tree: {spec.label()}", flush=True)
        first = build_server(spec, _no_training, _progress())
        if "incremental" not in first.manifest:
            raise UserError(f"{spec.label()} in {cache} was built before kept trees: use another --cache")
        tree = Path(first.manifest["incremental"]["tree"])
        print(f"  {'cached' if first.cached else how_built(first.manifest)}  (tree {tree})")
        with tempfile.TemporaryDirectory() as patches:
            patch = _one_line_patch(tree, args.file, Path(patches))
            changed = ServerBuildSpec("postgres", patches=(patch,))
            print(f"one-line change to {args.file}: {changed.label()}", flush=True)
            started = time.monotonic()
            second = build_server(changed, _no_training, _progress())
            seconds = time.monotonic() - started
        incremental = second.manifest["incremental"]
        differs = second.manifest["server_binary_sha256"] != first.manifest["server_binary_sha256"]
        print(f"  {how_built(second.manifest)}")
        print(f"rebuild: {seconds:.1f} s from the call to the cached build (make and install: "
              f"{second.manifest['build_seconds']} s), {incremental['objects_rebuilt']} objects rebuilt, "
              f"server binary {'changed' if differs else 'UNCHANGED'}; {_load()}")
        print(f"ratio {seconds / TARGET_S:.3f}")
        return 0
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        if not args.cache:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
