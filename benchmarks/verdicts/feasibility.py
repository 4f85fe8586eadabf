"""benchmarks/verdicts/feasibility.py: could any test have decided these cells in these rounds? A benchmark script,
not a test: it asserts nothing, runs nothing, and reads a results directory (`make demo`'s, or one of run.py's).

For every (target, benchmark) cell against the base it takes the per-round log ratios (the sequential rule's unit,
paired as the lab pairs them: stats/verdict.pair_rounds) and sets the rule's confidence sequence beside an
**oracle**: a single look after all rounds, normal with the standard deviation taken as known, at the same alpha a
metric (stats/verdict.METRIC_ALPHA). No valid test is narrower than that oracle at the same error rate, so a cell it
cannot decide is out of reach of any rule given these rounds; its "rounds needed" is what the oracle would need at
the observed mean and spread (faster/slower: |mean| beyond the bound; same: |mean| + the bound within min_effect).

It prints a line per cell (mean and standard deviation of the log ratio in %, the rule's half-width, the oracle's,
the oracle's call and the rounds it would need), then
    oracle decided <d> of <n> cells; rule decided <r>; median rounds the oracle needs <m> (<k> rounds were run)
and last `ratio <rule's median half-width / oracle's>` (1.0: the rule as narrow as a one-look test that knows the
noise; the price of looking after every round and not knowing it).

Usage: .venv/bin/python benchmarks/verdicts/feasibility.py RESULTS_DIR [--base O2] [--metric wall|cpu]
       [--min-effect 0.02]
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections import defaultdict
from pathlib import Path

from scipy.stats import norm

from dbperf.records import CellRecord
from dbperf.stats.rqps_matrix import metric_value
from dbperf.stats.sequential import call, confidence_sequence
from dbperf.stats.verdict import METRIC_ALPHA, pair_rounds
from dbperf.storage.results import read_results


def _cells(directory: Path, metric: str) -> dict[tuple[str, str], list[tuple[int, str | None, float | None]]]:
    _, records, _ = read_results(directory)
    cells: dict[tuple[str, str], list[tuple[int, str | None, float | None]]] = defaultdict(list)
    for r in records:
        if isinstance(r, CellRecord) and r.status == "ok":
            cells[(r.target, r.benchmark)].append((r.repeat, r.partner, metric_value(r, metric)))  # type: ignore[arg-type]
    return cells


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results", type=Path)
    p.add_argument("--base", default="O2")
    p.add_argument("--metric", choices=["wall", "cpu"], default="wall")
    p.add_argument("--min-effect", type=float, default=0.02)
    args = p.parse_args()
    cells = _cells(args.results, args.metric)
    z = float(norm.ppf(1 - METRIC_ALPHA / 2))
    m = math.log1p(args.min_effect)
    oracle_decided = rule_decided = 0
    needed: list[float] = []
    widths: list[tuple[float, float]] = []
    rounds = 0
    for (target, bench), runs in sorted(cells.items()):
        if target == args.base or (args.base, bench) not in cells:
            continue
        pairs = pair_rounds(target, [(r, v) for r, _, v in runs], cells[(args.base, bench)])
        if len(pairs) < 3:
            continue
        logs = [math.log(t / b) for _, t, b in pairs]
        n, mean, sd = len(logs), statistics.fmean(logs), statistics.stdev(logs)
        rounds = max(rounds, n)
        half = z * sd / math.sqrt(n)
        cs = confidence_sequence(logs, METRIC_ALPHA)
        word = call(cs, args.min_effect)
        rule_decided += word in ("faster", "slower", "same")
        if abs(mean) > m:
            oracle = ("faster" if mean > 0 else "slower") if abs(mean) > half else "undecided"
            margin = abs(mean)
        else:
            oracle = "same" if abs(mean) + half < m else "undecided"
            margin = m - abs(mean)
        oracle_decided += oracle != "undecided"
        need = (z * sd / margin) ** 2 if margin > 0 else math.inf
        needed.append(need)
        if cs.bounded:
            widths.append((cs.half_width, half))
        print(f"{target:>12} {bench:<22} n {n:3d}  mean {math.expm1(mean):+6.1%}  sd {sd:5.1%}  "
              f"rule ±{cs.half_width:5.1%} {word:<9}  oracle ±{half:5.1%} {oracle:<9}  rounds needed {need:7.0f}")
    median_need = statistics.median(needed) if needed else math.nan
    print(f"oracle decided {oracle_decided} of {len(needed)} cells; rule decided {rule_decided}; median rounds the "
          f"oracle needs {median_need:.0f} ({rounds} rounds were run); metric {args.metric}, alpha {METRIC_ALPHA:.1%}, "
          f"min_effect {args.min_effect:.0%}")
    ratio = statistics.median(r / o for r, o in widths) if widths else math.nan
    print(f"ratio {ratio:.3f}")


if __name__ == "__main__":
    main()
