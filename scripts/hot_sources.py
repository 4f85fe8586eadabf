"""A recipe's hot sources from a query-path PGO build's profile (dbperf/buildlab/hot_sources.py; docs/build-lab.md):
`python scripts/hot_sources.py PROFILE OBJECTS_ROOT --engine mysql --version 9.7.2 --derived-from KEY --out FILE
[--ninja-log LOG] [--share 0.9999] [--dir sql ...]`. PROFILE is the build's -fprofile-generate folder after its
training (copied before the build lab removes it), OBJECTS_ROOT the build folder its objects were compiled in (a
path only: it need not exist any more), LOG that build's .ninja_log for the compile seconds the list saves."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from dbperf.buildlab.hot_sources import HotSources, choose, gcda_counts, object_source, write
from dbperf.buildlab.profile_proof import gcda_object
from dbperf.buildlab.rebuilt import ninja_entries
from dbperf.errors import UserError

QUERY_PATH = ["sql", "storage/innobase", "mysys", "strings", "vio"]


def compile_seconds(log: Path) -> dict[str, float]:
    """Each object's first compile in a .ninja_log (the instrumented stage's), in seconds."""
    seconds: dict[str, float] = {}
    for start, end, _, out in ninja_entries(log.read_text()):
        seconds.setdefault(out, (end - start) / 1000)
    return seconds


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("profile", type=Path)
    p.add_argument("objects_root")
    p.add_argument("--engine", required=True)
    p.add_argument("--version", required=True)
    p.add_argument("--derived-from", required=True)
    p.add_argument("--training", default="train-mix")
    p.add_argument("--share", type=float, default=0.9999)
    p.add_argument("--dir", action="append", dest="dirs")
    p.add_argument("--ninja-log", type=Path)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    dump = shutil.which("gcov-dump") or shutil.which("gcov-dump-12")
    if dump is None:
        print("hot_sources: no gcov-dump (it comes with gcc)", file=sys.stderr)
        return 2
    root = str(Path(a.objects_root).resolve())
    dirs = tuple(d.strip("/") + "/" for d in (a.dirs or QUERY_PATH))
    object_of = {}
    for f in sorted(a.profile.glob("*.gcda")):
        key = gcda_object(a.profile, f)
        if key.startswith(root + "/") and key[len(root) + 1:].startswith(dirs):
            object_of[f] = key[len(root) + 1:] + ".o"
    try:
        counts = gcda_counts(object_of, dump)
        hot = choose(counts, a.share)
    except UserError as e:
        print(f"hot_sources: {e}", file=sys.stderr)
        return 1
    seconds = compile_seconds(a.ninja_log) if a.ninja_log else {}
    in_dirs = {o: s for o, s in seconds.items() if o.endswith(".o") and o.startswith(dirs)}
    compile_share = (round(sum(in_dirs.get(o, 0.0) for o in hot) / sum(in_dirs.values()), 4)
                     if in_dirs else None)
    sources = sorted(dict.fromkeys(object_source(o) for o in hot))
    write(a.out, HotSources(engine=a.engine, version=a.version, derived_from=a.derived_from, training=[a.training],
                            share=a.share, objects=len(counts), compile_share=compile_share, sources=sources))
    print(f"{len(hot)} of {len(counts)} objects ({len(sources)} sources) hold {a.share:.2%} of the counts"
          + (f", {compile_share:.1%} of the compile seconds" if compile_share is not None else "") + f": {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
