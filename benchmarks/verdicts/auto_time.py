"""benchmarks/verdicts/auto_time.py: does `time = "auto"` decide more per minute than the demo's fixed rounds? A
benchmark script, not a test: it asserts nothing. Run it on a quiet machine.

Method. The demo's experiment (examples/demo.toml, or --experiment: three SQLite builds, slices rounds of 0.3 s,
`repeats = "auto"`) runs as two sides: **fixed**, its own `time`, and **auto**, `time = "auto"` (each (benchmark,
threads) first runs pilot rounds, not kept, then its rounds at the length it chose: stats/round_length.py). Every
run has the same `budget` (--budget) and `repeats = "auto"`, the simulated tier and `explain` off (the same work on
both sides, deciding nothing here). The runs alternate fixed, auto, auto, fixed, fixed, auto, ... (--runs of each
side), so that a drift of the host falls on both sides alike. Per run:
- the cells decided (faster, slower or same by the deciding verdict, wall clock else CPU time, which the rounds
  stop on) of the cells compared with the base;
- the minutes from the run's start to its end (meta.json's `started_at` and `finished_at`: the loads and the pilot
  rounds included, the builds not);
- the median noise threshold: the wall-clock rule's half-width when the rounds stopped, over the compared cells;
- the rounds (summed over the groups) and the round lengths (auto: each group's choice).
Per side: the cells decided per minute (summed over its runs), and an efficiency that does not depend on whole
counts: 1 / (median half-width² × minutes), the geometric mean over its runs (a half-width shrinks like
1/sqrt(rounds), so for one design this is flat in the budget). The line before the last `decided per minute
<auto / fixed>`, the last `ratio <auto efficiency / fixed efficiency>` (above 1.0: auto decides more per minute).
The load average is printed before and after, and the host's CPU model.

Usage: .venv/bin/python benchmarks/verdicts/auto_time.py [--budget 3m] [--runs 2] [--experiment examples/demo.toml]
       [--auto-time '{ shortest = "0.3s" }'] [--out DIR] [--results DIR ...]
(--auto-time: `[run].auto_time` of the auto side, a TOML inline table; --out: where the runs go, kept, by default a
new directory under /tmp; --results: run directories this script made before, reported again, nothing measured,
each one's side read from its meta.json.)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import tempfile
import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rich.console import Console

from dbperf.experiment.spec import parse_experiment
from dbperf.host.facts import cpu_model
from dbperf.runner.matrix import run_plan
from dbperf.runner.plan import RunPlan
from dbperf.runner.targets import build_targets
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage.results import read_results

REPO = Path(__file__).resolve().parents[2]
SET = ("time", "budget", "repeats", "simulated", "explain", "auto_time")  # the [run] keys each side sets itself
DECIDED = ("faster", "slower", "same")
HEADER = re.compile(r"\s*\[\[?[\w.-]+\]\]?\s*(#.*)?$")  # a table's header line: [run], [[target]]


def variant(text: str, settings: dict[str, str]) -> str:
    """The experiment's text with its [run] table's SET keys replaced by `settings` (each a TOML value)."""
    out: list[str] = []
    in_run = False
    for line in text.splitlines():
        header = HEADER.match(line) is not None
        if header:
            in_run = line.split("#", 1)[0].strip() == "[run]"
        elif in_run and line.split("=", 1)[0].strip() in SET and "=" in line:
            continue
        out.append(line)
        if header and in_run:
            out.extend(f"{key} = {value}" for key, value in settings.items())
    return "\n".join(out) + "\n"


def sides(text: str, budget: str, auto_time: str | None) -> dict[str, str]:
    """The two sides' experiment texts: the experiment's own `time` (fixed) and `time = "auto"`."""
    fixed = tomllib.loads(text).get("run", {}).get("time", "10s")
    if fixed == "auto":
        raise SystemExit("--experiment: its time is already \"auto\"; the fixed side needs a length")
    common = {"budget": json.dumps(budget), "repeats": '"auto"', "simulated": "false"}
    auto = {"time": '"auto"', **common, **({"auto_time": auto_time} if auto_time else {})}
    return {"fixed": variant(text, {"time": json.dumps(fixed), **common}), "auto": variant(text, auto)}


def measure(text: str, name: str, out: Path, console: Console) -> Path:
    path = out / f"{name}.toml"
    path.write_text(text)
    exp, builds = build_targets(parse_experiment(path), console)
    run_plan(RunPlan.inspected(exp, builds), out / name, console)
    console.print(f"{name}: done, load average now {os.getloadavg()[0]:.2f}", highlight=False)
    return out / name


@dataclass(frozen=True)
class Run:
    side: str
    directory: Path
    decided: int
    cells: int
    minutes: float
    half_width: float  # the median over the compared cells (nan: none bounded)
    rounds: int
    lengths: str

    @property
    def efficiency(self) -> float:
        return 1 / (self.half_width ** 2 * self.minutes) if self.half_width > 0 and self.minutes > 0 else math.nan

    def line(self) -> str:
        return (f"  {self.side:5s} {self.directory.name:12s} decided {self.decided:2d} of {self.cells:2d} in "
                f"{self.minutes:5.2f} min; median noise threshold ±{self.half_width:.2%}; {self.rounds:4d} rounds; "
                f"efficiency {self.efficiency:8.0f}; lengths {self.lengths}")


def read_run(directory: Path) -> Run:
    meta, records, _ = read_results(directory)
    m = build_matrix(meta, records)
    compared = [c for (t, _, _), c in m.cells.items() if t != m.base and c.verdict_detail is not None]
    decided = sum(1 for c in compared if (v := c.deciding_verdict) is not None and v.verdict in DECIDED)
    halves = [v.noise_threshold for c in compared if (v := c.verdict_detail) is not None
              and math.isfinite(v.noise_threshold)]
    ends = [meta.started_at, meta.finished_at]
    minutes = ((datetime.fromisoformat(ends[1]) - datetime.fromisoformat(ends[0])).total_seconds() / 60
               if ends[0] and ends[1] else math.nan)
    if meta.auto_time is not None:
        lengths = ", ".join(f"{x.benchmark} t={x.threads} {x.time_s:g} s" for x in meta.auto_time.lengths)
    else:
        lengths = f"{meta.time_s:g} s"
    return Run("auto" if meta.auto_time is not None else "fixed", directory, decided, len(compared), minutes,
               statistics.median(halves) if halves else math.nan, sum(r.rounds for r in meta.rounds or []), lengths)


def summary(runs: list[Run], side: str) -> tuple[float, float]:
    """A side's decided cells per minute and its efficiency (geometric mean over its runs)."""
    mine = [r for r in runs if r.side == side]
    minutes = sum(r.minutes for r in mine)
    per_minute = sum(r.decided for r in mine) / minutes if minutes > 0 else math.nan
    good = [r.efficiency for r in mine if r.efficiency > 0]
    efficiency = math.exp(statistics.fmean(map(math.log, good))) if good else math.nan
    print(f"{side}: {len(mine)} runs, {sum(r.decided for r in mine)} of {sum(r.cells for r in mine)} cells decided "
          f"in {minutes:.2f} min: {per_minute:.2f} decided per minute; efficiency {efficiency:.0f} "
          f"(1 / (median half-width² × minutes))")
    return per_minute, efficiency


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", default="3m", help="each run's budget (both sides the same)")
    ap.add_argument("--runs", type=int, default=2, help="runs of each side, alternating")
    ap.add_argument("--experiment", type=Path, default=REPO / "examples" / "demo.toml")
    ap.add_argument("--auto-time", help="the auto side's [run].auto_time, a TOML inline table (default: the lab's)")
    ap.add_argument("--out", type=Path, help="where the runs go (kept; default: a new directory under /tmp)")
    ap.add_argument("--results", type=Path, nargs="*", help="run directories this script made before: reported "
                    "again, nothing measured")
    args = ap.parse_args()
    console = Console(stderr=True)
    print(f"host CPU {cpu_model()}, {os.cpu_count()} CPUs; load average before {os.getloadavg()[0]:.2f}")
    directories = args.results
    if not directories:
        texts = sides(args.experiment.read_text(), args.budget, args.auto_time)
        out = args.out or Path(tempfile.mkdtemp(prefix="dbperf-auto-time-"))
        out.mkdir(parents=True, exist_ok=True)
        order = [s for i in range(args.runs) for s in (("fixed", "auto") if i % 2 == 0 else ("auto", "fixed"))]
        print(f"{args.experiment}: budget {args.budget} a run, {args.runs} runs a side in the order "
              f"{', '.join(order)}; the runs in {out}")
        directories = [measure(texts[side], f"{n:02d}-{side}", out, console) for n, side in enumerate(order, 1)]
    runs = [read_run(d) for d in directories]
    for run in runs:
        print(run.line())
    print(f"load average after {os.getloadavg()[0]:.2f}")
    fixed, auto = summary(runs, "fixed"), summary(runs, "auto")
    print(f"decided per minute {auto[0] / fixed[0] if fixed[0] else math.nan:.3f} (auto / fixed)")
    print(f"ratio {auto[1] / fixed[1]:.3f}")


if __name__ == "__main__":
    main()
