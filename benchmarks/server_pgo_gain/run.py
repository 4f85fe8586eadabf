"""benchmarks/server_pgo_gain: a server built from Debian's source package -O2 against -O2 + PGO (optionally + LTO),
the PGO build trained on the server training set (catalog/training/train-mix: secondary-key lookups, a small join,
aggregates, inserts, updates and deletes, prepared and as text, 1 and 4 connections), which is none of the measured
benchmarks. The read and write microbenchmarks, 1 thread, repeats interleaved. Prints per-benchmark rQPS, the
geometric mean, the worst benchmark and both builds' build times; the last line is `ratio <geomean>`. Target:
geomean >= 1.10, no benchmark below 0.97. A benchmark, not a test: it asserts nothing.

Then the evidence chain of both builds on the point query, through the lab's server profiles (dbperf profile):
simulated I1 misses per instruction and instructions per query of the server's processes under cachegrind (pinned
geometry, N-minus-0 windows), next to the wall-clock rQPS of the point-query benchmark (part of `reads`).

`--build O2,bolt` measures another second build against the same -O2 base with the same method (BOLT, trained on
the same server training set; any variants the lab knows, e.g. O2,pgo,lto,bolt); the target stays the PGO one's.

Usage: .venv/bin/python benchmarks/server_pgo_gain/run.py [--engine postgres] [--time 3] [--repeats 3] [--lto]
       [--build O2,bolt] [--profile-queries 5000] [--no-counters]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from rich.console import Console

from dbperf.catalog.registry import resolve
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment
from dbperf.experiment.spec import parse_experiment
from dbperf.explain.mode import CounterMode
from dbperf.explain.profile import Profiler
from dbperf.records import Profile
from dbperf.runner.matrix import run_plan
from dbperf.runner.plan import RunPlan
from dbperf.runner.targets import build_targets
from dbperf.stats.ladder import geomean
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage.results import read_results

EXPERIMENT = """
[run]
benchmarks = ["reads", "writes"]
table_size = {table_size}
time = "{time}s"
warmup = "1s"
repeats = {repeats}

[[target]]
name = "O2"
source = "{engine}@debian-src"
build = ["O2"]

[[target]]
name = "{name}"
source = "{engine}@debian-src"
build = {variants}
"""


def profiles(exp: Experiment, queries: int, work: Path) -> dict[str, Profile]:
    """Simulated counters of each target's server processes on the point query."""
    (point,) = resolve(["point-query"], exp.path.parent, "point-query")
    profiler = Profiler(exp, work, queries=queries, mode=CounterMode("simulated", "the benchmark asks for simulated "
                                                                                  "counters"))
    try:
        return {t.name: profiler.profile(t, point, "simulated") for t in exp.targets}
    finally:
        profiler.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default="postgres", choices=["postgres", "mariadb"])
    ap.add_argument("--time", type=float, default=3.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--table-size", type=int, default=100_000)
    ap.add_argument("--lto", action="store_true", help="the PGO build with LTO as well")
    ap.add_argument("--profile-queries", type=int, default=5000, help="point queries in each profiled window")
    ap.add_argument("--no-counters", action="store_true", help="skip the simulated counters")
    ap.add_argument("--build", help="the second build's variants, comma-separated (default O2,pgo, or O2,pgo,lto "
                                    "with --lto)")
    args = ap.parse_args()
    console = Console(stderr=True)
    variants = ["O2", "pgo", "lto"] if args.lto else ["O2", "pgo"]
    if args.build:
        variants = [v.strip() for v in args.build.split(",") if v.strip()]
    name = "O2-" + "-".join(variants[1:])
    with tempfile.TemporaryDirectory(prefix="dbperf-server-pgo-", dir="/tmp") as tmp:
        path = Path(tmp) / "server_pgo_gain.toml"
        path.write_text(EXPERIMENT.format(engine=args.engine, time=args.time, repeats=args.repeats,
                                          table_size=args.table_size, name=name,
                                          variants="[" + ", ".join(f'"{v}"' for v in variants) + "]"))
        exp, builds = build_targets(parse_experiment(path), console)
        out = Path(tmp) / "results"
        run_plan(RunPlan.inspected(exp, builds), out, console)
        meta, records, _ = read_results(out)
        counters = None if args.no_counters else profiles(exp, args.profile_queries, Path(tmp) / "profile")
    m = build_matrix(meta, records)
    for target, manifest in builds.items():
        pgo = manifest.get("pgo") or {}
        trained = (f", PGO: {pgo['profile_files']} .gcda files from {len(pgo['training_runs'])} training runs in "
                   f"{pgo['training_seconds']} s" if pgo else "")
        bolt = manifest.get("bolt") or {}
        if bolt:
            trained += (f", BOLT: {len(bolt['training_runs'])} training runs in {bolt['training_seconds']} s, profile "
                        f"{bolt['profile_used']} ({bolt['functions_with_profile']} functions), "
                        f"{bolt['bolt_seconds']} s")
        print(f"{target}: {manifest['label']} from {manifest['source']['package']} {manifest['source']['version']}, "
              f"built in {manifest['build_seconds']} s{' (cached)' if manifest['cached'] else ''}{trained}")
    print(f"{args.engine}: O2 vs {name}; {args.repeats} interleaved repeats of {args.time:g} s cells, 1 thread, "
          "wall-clock QPS, median per cell")
    ratios = []
    for _, benchmark, threads in m.rows():
        cell = m.cell(name, benchmark, threads)
        if cell is None or cell.rqps is None or cell.qps is None:
            print(f"{benchmark:32s} failed")
            continue
        ratios.append((cell.rqps, benchmark))
        sig = "" if cell.significant else " ~"
        print(f"{benchmark:32s} rQPS {cell.rqps:.3f}{sig}   spread {cell.qps.spread:.1%}")
    worst = min(ratios)
    if counters is None:
        print("counters: not measured (--no-counters)")
    else:
        some = next(iter(counters.values()))
        print(f"counters, point-query, {some.queries} queries per window: {some.tool}; {some.method}")
        for target, p in counters.items():
            q = p.per_query
            print(f"{target:12s} I1 misses {q['i1_miss_pct_of_instructions']:.2f}% of instructions   "
                  f"instructions/query {q['instructions']:,.0f}   I1 misses/query {q['i1_misses']:,.0f}   "
                  f"est. cycles/query {q['estimated_cycles']:,.0f}")
        base, pgo = counters["O2"].per_query, counters[name].per_query
        print(f"{name} / O2: instructions x{pgo['instructions'] / base['instructions']:.3f}, I1 misses per "
              f"instruction {base['i1_miss_pct_of_instructions']:.2f}% -> {pgo['i1_miss_pct_of_instructions']:.2f}%")
    print(f"geomean rQPS {geomean([r for r, _ in ratios]):.3f} over {len(ratios)} benchmarks; "
          f"worst {worst[1]} {worst[0]:.3f}")
    print(f"ratio {geomean([r for r, _ in ratios]):.3f}")


if __name__ == "__main__":
    try:
        main()
    except UserError as e:
        raise SystemExit(f"server_pgo_gain: {e}") from None
