"""benchmarks/verdicts/feasibility.py: could any test have decided these cells in these rounds? A benchmark script,
not a test: it asserts nothing, runs nothing, and reads a results directory (`make demo`'s, or one of run.py's).

For every (target, benchmark) cell against the base it takes the per-round log ratios (the sequential rule's unit,
paired as the lab pairs them: stats/verdict.pair_rounds) and sets the rule's confidence sequence beside an
**oracle**: a single look after all rounds, normal with the standard deviation taken as known, at the same alpha a
metric (stats/verdict.METRIC_ALPHA). No valid test is narrower than that oracle at the same error rate, so a cell it
cannot decide is out of reach of any rule given these rounds; its "rounds needed" is what the oracle would need at
the observed mean and spread (faster/slower: |mean| beyond the bound; same: |mean| + the bound within min_effect).

Two rules on the same rounds: the anytime-valid rule (stats/sequential.py, which looks after every round) and the
rule with planned looks (stats/planned.py), its plan the rounds meta.json recorded for the group, or else the rounds
the group ran (as if it had planned them: what a budget that affords them plans). It prints a line per cell (mean and
standard deviation of the log ratio in %, each rule's half-width and call, the oracle's, and the rounds the oracle
would need), then
    oracle decided <d> of <n> cells; anytime-valid rule decided <r>; planned looks decided <p>; median rounds the
    oracle needs <m> (<k> rounds were run)
and last `ratio <planned looks' median half-width / oracle's> (anytime-valid <the same of the anytime-valid rule>)`
(1.0: as narrow as a one-look test that knows the noise; the price of not knowing it, and of looking more than
once), over the cells both rules bound.

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
from dbperf.stats.planned import planned_interval
from dbperf.stats.rqps_matrix import metric_value
from dbperf.stats.sequential import ConfidenceSequence, call, confidence_sequence
from dbperf.stats.verdict import METRIC_ALPHA, pair_rounds
from dbperf.storage.results import read_results

Runs = list[tuple[int, str | None, float | None]]


def _cells(directory: Path, metric: str) -> tuple[dict[tuple[str, str], Runs], dict[str, int]]:
    """Per (target, benchmark), its repeats (one thread count: the demo's); per benchmark, the rounds it planned
    (meta.json's `rounds`), else the rounds it ran."""
    meta, records, _ = read_results(directory)
    cells: dict[tuple[str, str], Runs] = defaultdict(list)
    ran: dict[str, int] = defaultdict(int)
    for r in records:
        if isinstance(r, CellRecord) and r.status == "ok":
            cells[(r.target, r.benchmark)].append((r.repeat, r.partner, metric_value(r, metric)))  # type: ignore[arg-type]
            ran[r.benchmark] = max(ran[r.benchmark], r.repeat)
    recorded = {g.benchmark: g.planned for g in meta.rounds or [] if g.planned}
    return cells, {b: recorded.get(b, n) for b, n in ran.items()}


def _half(cs: ConfidenceSequence) -> str:
    return f"±{cs.half_width:5.1%}" if cs.bounded else "  none"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results", type=Path)
    p.add_argument("--base", default="O2")
    p.add_argument("--metric", choices=["wall", "cpu"], default="wall")
    p.add_argument("--min-effect", type=float, default=0.02)
    args = p.parse_args()
    cells, plans = _cells(args.results, args.metric)
    z = float(norm.ppf(1 - METRIC_ALPHA / 2))
    m = math.log1p(args.min_effect)
    oracle_decided = rule_decided = planned_decided = 0
    needed: list[float] = []
    widths: list[tuple[float, float, float]] = []
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
        looks = planned_interval([r for r, _, _ in pairs], logs, METRIC_ALPHA, plans[bench])
        planned_word = call(looks, args.min_effect)
        planned_decided += planned_word in ("faster", "slower", "same")
        if abs(mean) > m:
            oracle = ("faster" if mean > 0 else "slower") if abs(mean) > half else "undecided"
            margin = abs(mean)
        else:
            oracle = "same" if abs(mean) + half < m else "undecided"
            margin = m - abs(mean)
        oracle_decided += oracle != "undecided"
        need = (z * sd / margin) ** 2 if margin > 0 else math.inf
        needed.append(need)
        if cs.bounded and looks.bounded:
            widths.append((looks.half_width, cs.half_width, half))
        print(f"{target:>12} {bench:<22} n {n:3d}  mean {math.expm1(mean):+6.1%}  sd {sd:5.1%}  "
              f"anytime {_half(cs)} {word:<9}  planned {plans[bench]:3d} {_half(looks)} {planned_word:<9}  "
              f"oracle ±{half:5.1%} {oracle:<9}  rounds needed {need:7.0f}")
    median_need = statistics.median(needed) if needed else math.nan
    print(f"oracle decided {oracle_decided} of {len(needed)} cells; anytime-valid rule decided {rule_decided}; "
          f"planned looks decided {planned_decided}; median rounds the oracle needs {median_need:.0f} ({rounds} rounds "
          f"were run); metric {args.metric}, alpha {METRIC_ALPHA:.1%}, min_effect {args.min_effect:.0%}")
    planned_ratio = statistics.median(p / o for p, _, o in widths) if widths else math.nan
    anytime_ratio = statistics.median(a / o for _, a, o in widths) if widths else math.nan
    print(f"ratio {planned_ratio:.3f} (anytime-valid {anytime_ratio:.3f})")


if __name__ == "__main__":
    main()
