"""benchmarks/tiers: do the lab's tiers agree, and is every contradiction flagged? A benchmark, not a test: it
asserts nothing.

One run (`repeats = "auto"`, its own budget, `simulated = true`) of the demo's builds and benchmarks plus a
`-DSQLITE_THREADSAFE=0` build: SQLite 3.54.1 -O2 (the base), -O3, -O2 + PGO (trained on the default mix, none of the
measured benchmarks) and -O2 -DSQLITE_THREADSAFE=0. Per compared cell it prints the measured change of CPU per query
(user, or user + system for a model that predicts that; paired rounds, 95% interval) and the CPU-time verdict, the
simulated tier's Δ est. cycles (work: fewer, more, same), the host's calibrated prediction of that CPU change with
its band (`dbperf calibrate`; none: said), and the report's `tiers` mark. Then:
- `median abs error of predicted change <x>%` over the cells with a prediction and a measured change;
- `sign right <k> of <n> decided cells`: cells the measured CPU-time verdict (else the wall clock) called faster or
  slower, whose predicted change points the same way (without a model: the simulated Δ's sign, said so);
- `disagreements flagged <f> of <m> contradictions`: contradictions are recomputed here from the raw figures (a
  decided faster/slower whose simulated Δ points the other way or is within 0.5%; a prediction whose distance from
  the measured change exceeds its band plus the measurement's half-width), flagged = the report's `tiers` says
  `disagree` for them;
- last line `ratio <sign right / n>`.
The demo's builds are among the calibration's builds (`dbperf calibrate`): this run measures how a model carries over
to cells measured in another run; the out-of-sample error is calibrate's leave-one-build-out figure.

Usage: .venv/bin/python benchmarks/tiers/run.py [--budget 15m] [--time 0.5] [--out DIR] [--results DIR/results]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import msgspec
from rich.console import Console

from dbperf.experiment.spec import parse_experiment
from dbperf.records import CostModelRecord
from dbperf.runner.matrix import run_plan
from dbperf.runner.plan import RunPlan
from dbperf.runner.targets import build_targets
from dbperf.stats.rqps_matrix import Cell, Matrix, build_matrix
from dbperf.stats.simulated import SAME_WITHIN
from dbperf.stats.tiers import Interval
from dbperf.storage.cost_models import load_current
from dbperf.storage.results import read_results

TARGET = """
[[target]]
name = "{name}"
source = "sqlite@{version}"
build = {build}
cflags = {cflags}
config = {{ journal_mode = "WAL", synchronous = "NORMAL" }}
"""
BUILDS = (("O2", '["O2"]', "[]"), ("O3", '["O3"]', "[]"), ("O2-pgo", '["O2", "pgo"]', "[]"),
          ("O2-ts0", '["O2"]', '["-DSQLITE_THREADSAFE=0"]'))
DEMO_BENCHMARKS = ("point-query", "random-points-100", "range-covered-si", "read-only-100", "update-index",
                   "update-nonindex", "write-only", "insert")
CHANGED = ("faster", "slower")


def _experiment(args: argparse.Namespace) -> str:
    head = (f'[run]\nbenchmarks = [{", ".join(repr(b) for b in args.benchmarks.split(","))}]\n'
            f'table_size = {args.table_size}\ntime = "{args.time}s"\nwarmup = "0.2s"\nrepeats = "auto"\n'
            f'budget = "{args.budget}"\nsimulated = true\n').replace("'", '"')
    return head + "".join(TARGET.format(name=n, version=args.version, build=b, cflags=c) for n, b, c in BUILDS)


def _measure(args: argparse.Namespace, tmp: Path, console: Console) -> Path:
    path = tmp / "tiers.toml"
    path.write_text(_experiment(args))
    exp, builds = build_targets(parse_experiment(path), console)
    out = tmp / "results"
    started = time.monotonic()
    run_plan(RunPlan.inspected(exp, builds), out, console)
    console.print(f"measured in {(time.monotonic() - started) / 60:.1f} min, load average now "
                  f"{os.getloadavg()[0]:.2f}", highlight=False)
    return out


def _measured(cell: Cell, model: CostModelRecord | None) -> Interval | None:
    """The measured change of what the model predicts: user + system CPU for a "total" model, else user CPU."""
    return cell.cpu_change if model is not None and model.measure == "total" else cell.user_cpu_change


def _contradiction(cell: Cell, model: CostModelRecord | None) -> str | None:
    """Why the raw figures contradict each other (computed apart from stats/tiers.py), or None."""
    v, sim = cell.deciding_verdict, cell.sim
    if v is None or not v.decided or sim is None or sim.estimated_cycles_delta is None:
        return None
    d = sim.estimated_cycles_delta
    if v.verdict in CHANGED:
        work_points = "fewer" if d <= -SAME_WITHIN else "more" if d >= SAME_WITHIN else "same"
        if work_points != {"faster": "fewer", "slower": "more"}[v.verdict]:
            return f"measured {v.verdict}, simulated {d:+.2%}"
    p, u = cell.predicted, _measured(cell, model)
    if p is not None and u is not None and abs(p.delta - u.estimate) > p.band + u.half_width:
        return f"predicted {p.delta:+.1%} ±{p.band:.1%}, measured {u.estimate:+.1%} ±{u.half_width:.1%}"
    return None


def _report(directory: Path, current_model: bool) -> float:
    meta, records, _ = read_results(directory)
    if current_model:  # the host's model now, not the one the run recorded (a model calibrated after the run)
        model = load_current(msgspec.to_builtins(meta.host) if meta.host else {})
        records = [r for r in records if not isinstance(r, CostModelRecord)] + ([model] if model else [])
    m: Matrix = build_matrix(meta, records)
    model = m.cost_model
    print(f"\nresults {directory}")
    print("cost model: " + (f"calibrated {model.created}, weights (ns/event) "
                            + ", ".join(f"{k} {w:.3g}" for k, w in model.weights_ns.items() if w)
                            + f", change error median {model.change_error_median or 0:.1%} p90 "
                              f"{model.change_error_p90 or 0:.1%} (leave one build out)"
                            if model else f"none ({m.cost_model_note})"))
    errors: list[float] = []
    decided = sign_right = flagged = contradictions = 0
    what = "CPU/q" if model is not None and model.measure == "total" else "user CPU/q"
    print(f"{'target':8s} {'benchmark':18s} {what + ' Δ (95%)':>22s} {'CPU verdict':>12s} {'sim Δcyc':>16s} "
          f"{'predicted Δ':>18s}  tiers")
    for _, benchmark, threads in m.rows():
        for target in m.targets:
            cell = m.cell(target, benchmark, threads)
            if target == m.base or cell is None:
                continue
            u, p, sim, v = _measured(cell, model), cell.predicted, cell.sim, cell.deciding_verdict
            measured = f"{u.estimate:+.1%} ({u.low:+.1%}..{u.high:+.1%})" if u else "-"
            simulated = f"{sim.estimated_cycles_delta:+.2%} {sim.verdict}" if sim and sim.estimated_cycles_delta \
                is not None else "-"
            predicted = f"{p.delta:+.1%} ±{p.band:.1%} {p.verdict}" if p else "-"
            word = f"{v.verdict}({v.metric})" if v else "-"
            tiers = cell.tiers.tiers if cell.tiers else "-"
            print(f"{target:8s} {benchmark:18s} {measured:>22s} {word:>12s} {simulated:>16s} {predicted:>18s}  "
                  f"{tiers}")
            if p is not None and u is not None:
                errors.append(abs(p.delta - u.estimate))
            if v is not None and v.verdict in CHANGED:
                decided += 1
                says = p.delta if p is not None else (sim.estimated_cycles_delta if sim else None)
                sign_right += says is not None and (says < 0) == (v.verdict == "faster")
            why = _contradiction(cell, model)
            if why:
                contradictions += 1
                flagged += tiers == "disagree"
                print(f"  contradiction: {why}; report: {tiers}")
    median = f"{statistics.median(errors):.1%}" if errors else "n/a (no prediction)"
    print(f"\nmedian abs error of predicted change {median}")
    print(f"sign right {sign_right} of {decided} decided cells" + ("" if model else
                                                                    " (no cost model: the simulated Δ's sign)"))
    print(f"disagreements flagged {flagged} of {contradictions} contradictions")
    return sign_right / decided if decided else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="3.54.1")
    ap.add_argument("--budget", default="15m")
    ap.add_argument("--time", type=float, default=0.5)
    ap.add_argument("--table-size", type=int, default=100_000)
    ap.add_argument("--benchmarks", default=",".join(DEMO_BENCHMARKS))
    ap.add_argument("--results", type=Path, help="a results directory this script measured before: reported again")
    ap.add_argument("--current-model", action="store_true", help="with --results: predict with the host's current "
                    "cost model instead of the one the run recorded")
    ap.add_argument("--out", type=Path, help="where to keep the run's results (default: a temporary directory)")
    args = ap.parse_args()
    console = Console(stderr=True)
    print(f"SQLite {args.version}: {', '.join(n for n, _, _ in BUILDS)} (base O2); repeats = auto, budget "
          f"{args.budget}, {args.time:g} s cells, simulated tier on; load average at start {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="dbperf-tiers-") as tmp:
        where = args.out or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        ratio = _report(args.results or _measure(args, where, console), args.current_model)
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    print(f"ratio {ratio:.3f}")


if __name__ == "__main__":
    main()
