"""benchmarks/verdicts/rerun.py: does a decided verdict hold on a rerun? A benchmark script, not a test: it asserts
nothing. Run it on a quiet machine (no helpers, builds or suites), and quote the load it prints.

A run's verdict is built from its own rounds, with the round as the unit: for a server target the whole run serves
from one process per target, so whatever that process drew for its life (where its memory landed, its data files'
placement after the load, its background threads' phase) is in every round and no count of rounds averages it out.
The test of what a verdict speaks of is an independent rerun: the same experiment again, as a new `dbperf run`
(new driver processes, new server instances on new data directories), later.

Each experiment is run `--runs` times; the runs of the experiments are interleaved (sqlite 1, pg 1, sqlite 2, ...),
so a run of one experiment lies between runs of the other, `--gap` seconds apart at least. Per experiment and over
all cells it prints
- per cell: each run's deciding verdict (wall clock, else CPU time) and rQPS, with its interval;
- **contradictions** (stats/contradiction.py): one run decided faster and another slower, or one same and another a
  change beyond the minimum effect;
- the **A/A false-decided rate** (the base against its `aa` copy, two processes of one build: any faster or slower
  is false) with its Clopper-Pearson 90% upper bound;
- the **coverage**: of the (run, cell) intervals, how many contain the median rQPS over all runs of that cell (a
  rule whose interval speaks of the builds covers it at least as often as its stated level; one that speaks of the
  run's processes covers it less often when processes differ).
Last line `ratio <contradictions + excess A/A false calls>`, target 0. Excess false calls: those beyond 1% of the
A/A cells (floor: under 100 A/A cells, every false call is excess).

Experiments (`--experiments`, comma-separated):
  sqlite   SQLite 3.54.1 -O2 against -O3 and the -O2 A/A copy, one driver process a round in slices (the demo's order)
  pg       PostgreSQL: Debian's 15 as the base, its A/A copy (a second server of the same package) and the released
           16 (Maven Central's binaries): reads and writes
  mariadb  MariaDB: Debian's 10.11 as the base, its A/A copy and the released 11.4.5 (Maven Central's binaries):
           reads and writes
  pg-processes, mariadb-processes  the same with `processes = 5`: each server started again between 5 blocks
           of a group's rounds, the verdicts' unit the process; adds the levels of the ratio's variance (round in a
           process, process in a run, run), as standard deviations
  pg-auto, mariadb-auto  the same with `processes = "auto"`: the count each run chose is printed beside its run

Usage: .venv/bin/python benchmarks/verdicts/rerun.py [--runs 5] [--experiments sqlite,pg] [--budget-sqlite 60s]
       [--budget-server 120s] [--gap 0] [--out DIR] [--analyze DIR ...]
`--analyze DIR ...`: no run, only the analysis of kept runs (each DIR a `dbperf run` output, grouped by their
experiment file's name).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from scipy.stats import beta

from dbperf.records import CellRecord
from dbperf.stats.contradiction import Contradiction, RunCall, contradictions
from dbperf.stats.process_level import level_interval
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage.results import read_results

ROOT = Path(__file__).resolve().parents[2]
DBPERF = ROOT / ".venv" / "bin" / "dbperf"

EXPERIMENTS = {
    "sqlite": """
[run]
benchmarks = ["point-query", "range-covered-si", "update-index"]
table_size = 100000
order = "slices"
time = "0.3s"
warmup = "0.2s"
repeats = "auto"
budget = "{budget}"
aa = true

[[target]]
name = "O2"
source = "sqlite@3.54.1"
build = ["O2"]
config = {{ journal_mode = "WAL", synchronous = "NORMAL" }}

[[target]]
name = "O3"
source = "sqlite@3.54.1"
build = ["O3"]
config = {{ journal_mode = "WAL", synchronous = "NORMAL" }}
""",
}


def _server_ab(base: str, engine: str, other: str, source: str, config: str) -> str:
    """A server A/B: Debian's package as the base (its A/A copy beside it) against a released build, reads and
    writes, the same settings on both sides; `{budget}` left to fill."""
    return ("\n[run]\nbenchmarks = [\"point-query\", \"update-index\"]\ntable_size = 100000\ntime = \"1s\"\n"
            f"warmup = \"0.5s\"\nrepeats = \"auto\"\nbudget = \"{{budget}}\"\naa = true\nbase = \"{base}\"\n\n"
            f"[[target]]\nname = \"{base}\"\nengine = \"{engine}\"\nconfig = {{{{ {config} }}}}\n\n"
            f"[[target]]\nname = \"{other}\"\nsource = \"{source}\"\nconfig = {{{{ {config} }}}}\n")


EXPERIMENTS["pg"] = _server_ab("pg15-debian", "postgres", "pg16", "postgres@16", 'shared_buffers = "256MB"')
EXPERIMENTS["mariadb"] = _server_ab("maria-debian", "mariadb", "maria-11.4", "mariadb@11.4.5",
                                    'innodb_buffer_pool_size = "256M"')
# Each server experiment with its servers started as 5 processes over a group's rounds: the verdicts' unit the
# process, and the levels of the ratio's variance (round in a process, process in a run, run) measured.
# `-auto`: the count chosen by the run (`processes = "auto"`, said in its stderr and meta.json).
for _name in ("pg", "mariadb"):
    EXPERIMENTS[f"{_name}-processes"] = EXPERIMENTS[_name].replace('aa = true\n', 'aa = true\nprocesses = 5\n')
    EXPERIMENTS[f"{_name}-auto"] = EXPERIMENTS[_name].replace('aa = true\n', 'aa = true\nprocesses = "auto"\n')
COVERAGE_GOAL = 0.90
AA_RATE = 0.01


@dataclass(frozen=True)
class CellCall:
    run: str
    verdict: str
    metric: str
    rqps: float | None
    low: float | None  # the deciding verdict's interval, as a ratio target / base
    high: float | None


def _run(name: str, budget: str, out: Path, index: int) -> Path:
    experiment = out / f"{name}.toml"
    experiment.write_text(EXPERIMENTS[name].format(budget=budget))
    folder = out / f"{name}-{index}"
    started = datetime.now(UTC).strftime("%H:%M:%S")
    load = os.getloadavg()[0]
    proc = subprocess.run([str(DBPERF), "run", str(experiment), "--out", str(folder)],
                          env={**os.environ, "DBPERF_HISTORY": "off"}, capture_output=True, text=True)
    (out / f"{name}-{index}.stderr").write_text(proc.stderr)
    print(f"{name} run {index}: started {started} UTC, load {load:.2f} at its start, exit {proc.returncode}",
          flush=True)
    if proc.returncode != 0:
        print(proc.stderr[-2000:], file=sys.stderr)
    return folder


def _label(folder: Path, folders: list[Path]) -> str:
    """A run's name in the lines: its folder's, with the batch's folder where runs of two batches share it."""
    return folder.name if [f.name for f in folders].count(folder.name) == 1 else f"{folder.parent.name}/{folder.name}"


def _calls(folder: Path, label: str) -> dict[tuple[str, str, int], CellCall]:
    meta, records, _ = read_results(folder)
    m = build_matrix(meta, records)
    out = {}
    for (target, bench, threads), cell in m.cells.items():
        v = cell.deciding_verdict
        if target == m.base or v is None:
            continue
        low = 1 + v.lower if v.lower is not None else None
        high = 1 + v.upper if v.upper is not None else None
        out[(target, bench, threads)] = CellCall(label, v.verdict, v.metric, cell.rqps, low, high)
    return out


def _aa_target(folder: Path) -> str | None:
    meta, _, _ = read_results(folder)
    return meta.aa_target


def _levels(folders: list[Path]) -> None:
    """Where the ratio varies, per (target, benchmark) of runs whose rounds say their process block: the variance of
    log(target / base) split into round within a process, process within a run, and run (nested one-way ANOVA by
    the method of moments, balanced enough here: the blocks of one plan), as standard deviations in %."""
    per_cell: dict[tuple[str, str], list[dict[int, list[float]]]] = defaultdict(list)
    for folder in folders:
        meta, records, _ = read_results(folder)
        cells = [r for r in records if isinstance(r, CellRecord) and r.ok and r.result is not None]
        base = {(r.benchmark, r.threads, r.repeat): r.result.qps for r in cells if r.target == meta.base
                and r.result is not None}
        blocks: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        for r in cells:
            b = base.get((r.benchmark, r.threads, r.repeat))
            if r.target == meta.base or r.process is None or not b or r.result is None or not r.result.qps:
                continue
            blocks[(r.target, r.benchmark)][r.process].append(math.log(r.result.qps / b))
        for key, found in blocks.items():
            per_cell[key].append(dict(found))
    for (target, bench), runs in per_cell.items():
        rounds = [x for run in runs for block in run.values() for x in block]
        within = [statistics.variance(v) for run in runs for v in run.values() if len(v) > 1]
        s_round = statistics.fmean(within) if within else float("nan")
        n_round = statistics.fmean(len(v) for run in runs for v in run.values())
        proc_means = [[statistics.fmean(v) for v in run.values()] for run in runs]
        between_proc = [statistics.variance(m) for m in proc_means if len(m) > 1]
        s_proc = max(0.0, statistics.fmean(between_proc) - s_round / n_round) if between_proc else float("nan")
        n_proc = statistics.fmean(len(m) for m in proc_means)
        run_means = [statistics.fmean(m) for m in proc_means]
        s_run = (max(0.0, statistics.variance(run_means) - (s_proc + s_round / n_round) / n_proc)
                 if len(run_means) > 1 else float("nan"))
        found = level_interval(runs, 0.90)
        interval = (f" (of blocks of 2+ rounds: {found.point:.2%} [{found.low:.2%}, {found.high:.2%}] 90%, F on "
                    f"{found.between_df} and {found.within_df} df)"
                    if found else "")
        print(f"  levels {target:14s} {bench:18s} sd round-in-process {math.sqrt(s_round):.2%}, process-in-run "
              f"{math.sqrt(s_proc):.2%}{interval}, run {math.sqrt(s_run):.2%} ({len(runs)} runs, {n_proc:.1f} "
              f"processes a run, {n_round:.1f} rounds a process, {len(rounds)} rounds)")


def analyze(name: str, folders: list[Path]) -> tuple[int, int, int]:
    """Prints one experiment's lines; returns (contradictions, A/A false calls, A/A cells)."""
    runs = [_calls(f, _label(f, folders)) for f in folders]
    aa = _aa_target(folders[0])
    print(f"\n== {name}: {len(folders)} runs ({', '.join(_label(f, folders) for f in folders)})")
    for folder in folders:
        meta, _, _ = read_results(folder)
        if meta.processes_chosen:
            print(f"  {_label(folder, folders)}: processes = \"auto\": {meta.processes_chosen}")
    cells = list(dict.fromkeys(k for r in runs for k in r))
    covered = judged = 0
    for key in cells:
        found = [r[key] for r in runs if key in r]
        ratios = [c.rqps for c in found if c.rqps is not None]
        median = statistics.median(ratios) if ratios else None
        words = defaultdict(int)
        for c in found:
            words[c.verdict] += 1
            if median is not None and c.low is not None and c.high is not None:
                judged += 1
                covered += c.low <= median <= c.high
        spread = f"{min(ratios):.3f}–{max(ratios):.3f}" if ratios else "-"
        said = ", ".join(f"{w} {n}" for w, n in sorted(words.items()))
        intervals = " ".join(f"[{c.low:.3f},{c.high:.3f}]" if c.low and c.high else "[open]" for c in found)
        print(f"  {key[0]:14s} {key[1]:18s} rQPS {spread:13s} {said}   {intervals}")
    clashes: list[Contradiction] = contradictions(
        [[(k, RunCall(c.run, c.verdict, c.rqps, c.metric)) for k, c in r.items()] for r in runs])
    for c in clashes:
        print(f"  CONTRADICTED {c.line()}")
    aa_cells = [(r[k].verdict) for r in runs for k in r if aa is not None and k[0] == aa]
    false = sum(1 for w in aa_cells if w in ("faster", "slower"))
    bound = float(beta.ppf(0.90, false + 1, len(aa_cells) - false)) if aa_cells else float("nan")
    print(f"{name}: contradictions {len(clashes)} of {len(cells)} cells; A/A false-decided {false} of {len(aa_cells)}"
          f" (Clopper-Pearson 90% upper bound {bound:.1%}); coverage of the median over runs "
          f"{covered} of {judged} intervals ({covered / judged:.0%})" if judged else "")
    _cost(name, folders, runs)
    _levels(folders)
    return len(clashes), false, len(aa_cells)


def _cost(name: str, folders: list[Path], runs: list[dict[tuple[str, str, int], CellCall]]) -> None:
    """What the runs cost: the cells they decided (A/A copies left out: a decided A/A cell is a false call, not
    work done) per minute of their wall clock, start of the run to its end (load, restarts and rounds)."""
    minutes = 0.0
    for folder in folders:
        meta, _, _ = read_results(folder)
        try:
            minutes += (datetime.fromisoformat(str(meta.finished_at)) -
                        datetime.fromisoformat(str(meta.started_at))).total_seconds() / 60
        except ValueError:
            print(f"  {folder.name}: no start and end kept: cost not counted")
    aa = _aa_target(folders[0])
    decided = sum(1 for r in runs for k, c in r.items() if k[0] != aa and c.verdict in ("faster", "slower", "same"))
    if minutes:
        print(f"{name}: cost: {decided} decided target cells in {minutes:.1f} minutes of runs, "
              f"{decided / minutes:.2f} a minute")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--experiments", default="sqlite,pg")
    parser.add_argument("--budget-sqlite", default="60s")
    parser.add_argument("--budget-server", "--budget-pg", dest="budget_server", default="120s",
                        help="each server experiment's budget")
    parser.add_argument("--gap", type=float, default=0.0, help="seconds between one round of runs and the next")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--analyze", type=Path, nargs="*", default=None)
    args = parser.parse_args()
    groups: dict[str, list[Path]] = defaultdict(list)
    if args.analyze:
        for folder in args.analyze:
            groups[folder.name.rsplit("-", 1)[0]].append(folder)
    else:
        names = [n.strip() for n in args.experiments.split(",")]
        unknown = [n for n in names if n not in EXPERIMENTS]
        if unknown:
            sys.exit(f"--experiments: unknown {', '.join(unknown)} (known: {', '.join(EXPERIMENTS)})")
        out = args.out or Path(f"/tmp/dbperf-rerun-{datetime.now(UTC):%Y%m%d-%H%M}")
        if out.exists() and any(out.iterdir()):
            sys.exit(f"--out {out}: not empty")
        out.mkdir(parents=True, exist_ok=True)
        print(f"host {os.uname().nodename}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} at the start; "
              f"runs kept in {out}", flush=True)
        for i in range(1, args.runs + 1):
            for name in names:
                budget = args.budget_sqlite if name == "sqlite" else args.budget_server
                groups[name].append(_run(name, budget, out, i))
            if args.gap and i < args.runs:
                time.sleep(args.gap)
    total_clashes = total_false = total_aa = 0
    for name, folders in groups.items():
        done = [f for f in folders if (f / "meta.json").is_file()]
        clashes, false, aa_cells = analyze(name, done)
        total_clashes, total_false, total_aa = total_clashes + clashes, total_false + false, total_aa + aa_cells
    allowed = int(AA_RATE * total_aa)
    excess = max(0, total_false - allowed)
    print(f"\nall: contradictions {total_clashes}; A/A false calls {total_false} of {total_aa} "
          f"(allowed {allowed} at {AA_RATE:.0%}); load {os.getloadavg()[0]:.2f} at the end")
    print(f"ratio {total_clashes + excess}")


if __name__ == "__main__":
    if not DBPERF.exists():
        sys.exit(f"{DBPERF}: not found (make setup)")
    main()
