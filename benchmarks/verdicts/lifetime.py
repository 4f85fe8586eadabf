"""benchmarks/verdicts/lifetime.py: is this host's noise drawn per process, or does it follow time? (issue 50) A
benchmark script, not a test: it asserts nothing. Run it on a quiet machine.

The verdicts' unit is a short cell, one driver process each; two such cells of the same target (A/A) differ by
their spread. If that spread is a level each process draws at its start (where its pages land, its alignment, its
CPU), then two stretches of one long-lived process, of the same length and as far apart in time as two short cells,
differ much less. If it follows time (the host's other tenants, the hypervisor's scheduling), they differ as much.

One interleaved run, driving dbperf-driver directly on one SQLite target (its data loaded once, each process given
a fresh copy): per round, two short processes A and B of `--time` seconds each (after `--warmup`), then one long
process of `--long` seconds, all with `--interval` samples. It prints
- the short A/A spread: sd of log(B/A) over the rounds, % (between processes);
- the long process's: sd of log(next block / block) over adjacent blocks of `--time` seconds within it (within a
  process; also for blocks one short process's start-up apart, as A and B are);
- each with a 90% bootstrap interval of their ratio, and the long processes' own levels (sd of their means);
- what alternating A and B every interval inside one process would leave: even intervals as A, odd as B, each side
  `--time` seconds of samples (the same code on both sides: the noise floor of such an A/B, not a measured one).
Last line `ratio <within-process block spread / between-process spread>`: near 1, the noise follows time; well
below 1, each process draws its level.

Usage: .venv/bin/python benchmarks/verdicts/lifetime.py [--rounds 20] [--time 0.5] [--long 10] [--interval 0.1]
       [--warmup 0.3] [--benchmark point-query] [--source sqlite@3.54.1 --build O2] [--cpu 0]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console

from dbperf.catalog.workload import compile_statements
from dbperf.experiment.spec import parse_experiment
from dbperf.host.driver import run_job
from dbperf.records import RunResult
from dbperf.runner.targets import build_targets
from dbperf.targets.sqlite_data import SqliteData

EXPERIMENT = """
[run]
benchmarks = ["{benchmark}"]
table_size = {table_size}

[[target]]
name = "A"
{source}
config = {{ journal_mode = "WAL", synchronous = "NORMAL" }}
"""


def qps_series(result: RunResult, interval_s: float) -> list[float]:
    return [i.qps for i in result.intervals if i.duration_s >= 0.9 * interval_s and i.qps > 0]


def block_means(series: list[float], per_block: int) -> list[float]:
    """Mean QPS of consecutive whole blocks of `per_block` intervals."""
    return [statistics.fmean(series[k:k + per_block]) for k in range(0, len(series) - per_block + 1, per_block)]


def sd_pct(logs: list[float]) -> float | None:
    return 100 * statistics.stdev(logs) if len(logs) >= 2 else None


def bootstrap(num: list[float], den: list[float], draws: int = 2000, seed: int = 50) -> tuple[float, float] | None:
    """90% percentile interval of sd(num) / sd(den), resampling each list."""
    if len(num) < 3 or len(den) < 3:
        return None
    rng = random.Random(seed)
    ratios = sorted(statistics.stdev(rng.choices(num, k=len(num))) / sd
                    for _ in range(draws) if (sd := statistics.stdev(rng.choices(den, k=len(den)))) > 0)
    return (ratios[int(0.05 * len(ratios))], ratios[int(0.95 * len(ratios)) - 1]) if ratios else None


def fmt(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--time", type=float, default=0.5, help="a short process's measured seconds, and a block's")
    ap.add_argument("--long", type=float, default=10.0, help="the long process's measured seconds")
    ap.add_argument("--warmup", type=float, default=0.3)
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--benchmark", default="point-query")
    ap.add_argument("--table-size", type=int, default=100_000)
    ap.add_argument("--source", help="e.g. sqlite@3.54.1 (built by the lab); default: the system libsqlite3")
    ap.add_argument("--build", default="O2")
    ap.add_argument("--keep", help="write the long processes' interval series and the short pairs here (JSON)")
    ap.add_argument("--cpu", type=int, default=0, help="the CPU every driver is pinned to, as the lab's quiet cells "
                                                       "pin the client (-1: not pinned)")
    args = ap.parse_args()
    per_block = round(args.time / args.interval)
    if per_block < 1 or abs(per_block * args.interval - args.time) > 1e-9:
        raise SystemExit("--time must be a whole number of --interval")
    console = Console(stderr=True)
    source = f'source = "{args.source}"\nbuild = ["{args.build}"]' if args.source else ""
    started = time.monotonic()
    short_logs: list[float] = []
    adjacent: list[float] = []  # log(next block / block) within a long process, non-overlapping pairs
    apart: list[float] = []  # blocks as far apart as A's and B's measured windows
    long_means: list[float] = []
    alternating: list[float] = []  # within a long process: even intervals as A, odd as B, over 2 x --time
    series_kept: list[list[float]] = []
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="dbperf-lifetime-") as tmp:
        path = Path(tmp) / "lifetime.toml"
        path.write_text(EXPERIMENT.format(benchmark=args.benchmark, table_size=args.table_size, source=source))
        exp, _ = build_targets(parse_experiment(path), console)
        target, bench = exp.targets[0], exp.benchmarks[0]
        data = SqliteData(Path(tmp) / "data", target, exp)
        data.load()
        base = target.process.apply(data.job(data.working)).replace(
            mode="run", threads=1, warmup_s=args.warmup, interval_s=args.interval, seed=exp.seed,
            workload=compile_statements(bench, exp.table_size))
        # A short process's start-up and warm-up, in blocks: how far apart A's and B's measured windows are.
        gap_blocks = max(1, round((args.warmup + args.time + 0.15) / args.time))

        def one(seconds: float) -> list[float]:
            data.restore()  # a fresh copy per process, as the lab's fresh-copy remedy
            outcome = run_job(base.replace(time_s=seconds), RunResult, seconds + 120,
                              cpus=frozenset({args.cpu}) if args.cpu >= 0 else None)
            if not outcome.ok or outcome.result is None:
                raise SystemExit(f"driver failed: {outcome.error}")
            return qps_series(outcome.result, args.interval)

        for k in range(args.rounds):
            console.print(f"round {k + 1}/{args.rounds}", highlight=False)
            a, b = one(args.time), one(args.time)
            if a and b:
                short_logs.append(math.log(statistics.fmean(b) / statistics.fmean(a)))
            series = one(args.long)
            series_kept.append(series)
            blocks = block_means(series, per_block)
            span = 2 * per_block  # as much measured time per side as a short process has
            for k0 in range(0, len(series) - span + 1, span):
                part = series[k0:k0 + span]
                alternating.append(math.log(statistics.fmean(part[1::2]) / statistics.fmean(part[0::2])))
            adjacent += [math.log(blocks[i + 1] / blocks[i]) for i in range(0, len(blocks) - 1, 2)]
            apart += [math.log(blocks[i + gap_blocks] / blocks[i])
                      for i in range(0, len(blocks) - gap_blocks, gap_blocks + 1)]
            if blocks:
                long_means.append(statistics.fmean(blocks))
        shutil.rmtree(data.dir, ignore_errors=True)
    between, within, far = sd_pct(short_logs), sd_pct(adjacent), sd_pct(apart)
    levels = sd_pct([math.log(m) for m in long_means])
    print(f"{args.benchmark}, {args.source or 'system libsqlite3'}: {args.rounds} rounds of two {args.time:g} s "
          f"processes and one {args.long:g} s process, {args.interval:g} s intervals, warm-up {args.warmup:g} s, "
          f"{f'pinned to CPU {args.cpu}' if args.cpu >= 0 else 'not pinned'}; "
          f"measured in {(time.monotonic() - started) / 60:.1f} min, load average {load[0]:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    print(f"  between processes (A/A of short processes): spread {fmt(between, '.2f')}% ({len(short_logs)} pairs)")
    band = bootstrap(adjacent, short_logs)
    print(f"  within a process, adjacent {args.time:g} s blocks: spread {fmt(within, '.2f')}% ({len(adjacent)} pairs)"
          + (f"; x{within / between:.2f} of between (90% bootstrap {band[0]:.2f}-{band[1]:.2f})"
             if within and between and band else ""))
    band_far = bootstrap(apart, short_logs)
    print(f"  within a process, blocks {gap_blocks} apart (as A's and B's windows): spread {fmt(far, '.2f')}% "
          f"({len(apart)} pairs)" + (f"; x{far / between:.2f} of between (90% bootstrap {band_far[0]:.2f}-"
                                     f"{band_far[1]:.2f})" if far and between and band_far else ""))
    print(f"  the long processes' own levels: spread of their means {fmt(levels, '.2f')}% ({len(long_means)} "
          "processes; per process, not a pair)")
    alt = sd_pct(alternating)
    band_alt = bootstrap(alternating, short_logs)
    print(f"  within a process, A on even and B on odd {args.interval:g} s intervals, {args.time:g} s each: spread "
          f"{fmt(alt, '.2f')}% ({len(alternating)} pairs)" + (
              f"; x{alt / between:.2f} of between (90% bootstrap {band_alt[0]:.2f}-{band_alt[1]:.2f})"
              if alt and between and band_alt else ""))
    if args.keep:
        Path(args.keep).write_text(json.dumps({"args": vars(args), "short_logs": short_logs,
                                               "long_series": series_kept}))
    ratio = far / between if far and between else None
    print(f"ratio {fmt(ratio, '.3f')}")


if __name__ == "__main__":
    main()
