"""benchmarks/verdicts/states.py: do this host's fast and slow states follow time (the host) or the process? A
benchmark script, not a test: it asserts nothing. Run it on a quiet machine.

Two identical SQLite targets, A and B (the same build and settings, data of their own), one benchmark, the driver's
per-interval throughput samples (`interval`, default 0.25 s):
- N **duets** (`order = "duet"`, orders/duet_rounds.py): A and B run at the same moment on two CPUs, released together;
- N **interleaved rounds** (`order = "alternate"`): A and B one after the other, as the lab runs them by default.

It prints
- (a) the correlation between the two simultaneous sides' interval throughputs within each duet (median over the
  duets, each side's own mean removed) and between the duets' two cell medians across duets. High: both processes
  speed up and slow down together, so the state follows time (the host), and a duet cancels it;
- (b) the spread of the A/A ratio B/A: between the sides of a duet against between the two cells of an interleaved
  round (the unit the paired verdict uses), as the standard deviation of log(B/A) in %. A duet spread well below the
  interleaved one means simultaneity removes most of the noise;
- (c) whether a process keeps its level across its whole cell: the variance of the cell means against what the
  variance within cells alone would give them (F = between-cell variance / (within-cell variance / intervals per
  cell); ~1: cells differ no more than their samples; >> 1: each cell has a level of its own), per mode, and the
  same F for the two sides of each duet (do two simultaneous processes sit at different levels?). High F between
  the simultaneous sides with a high within-duet correlation is a per-process state riding on a per-time one.
Last line `ratio <duet A/A spread / interleaved A/A spread>`.

`--remedies [heap-thp,warm-file,...]` (issue 50) asks instead what the lab's noise remedies (dbperf/host/remedies/)
do to the per-process spread: A/A pairs alternated round by round, today's pair (`remedies = "none"`) and a pair
with the remedies, and with `--candidates` also a pair per candidate alone (each remedy, and `mmap`: SQLite reading
the file through mmap_size, an engine option; `--also` adds candidates alone that are not in the remedies' pair,
such as the engine options). The candidate `slices` is an order, not a remedy: the pair's two sides take turns in
one driver process every `--slice` seconds (default 0.1; `order = "slices"`, orders/slice_rounds.py), each measured
`--time` seconds of its own slices, the same measured time per side as today's pair. When `--remedies` names
`slices` (alone or with remedies), the remedies' pair is measured that way. One experiment runs in one order, so
the pairs of two processes are one run (today's order, `alternate`) and each slices pair a run of its own; their
rounds alternate (round r of each run in turn, reversed every other round), so that they stay interleaved in time.
Per pair: the A/A spread (sd of log B/A over the rounds of the median interval QPS of each side, a slices side's
intervals being its slices), %, with its 90% bootstrap interval, the per-process spread (A/A / sqrt 2), and F
(cell levels, as in (c)); a slices pair also its sides' `turns` (the time their events ran into the other side's
slices, and their turn checkpoints). The candidate `turn-checkpoint` is a slices pair with `turn_checkpoint = true`
(a write benchmark's sides checkpoint their WAL at the start of their own turns): `--remedies slices --also
turn-checkpoint --benchmark update-index` alternates the slices pair without and with it round by round. Last line
`ratio <spread with remedies / spread today>` (target <= 0.5).

Usage: .venv/bin/python benchmarks/verdicts/states.py [--rounds 30] [--time 3] [--interval 0.25]
       [--benchmark point-query] [--source sqlite@3.54.1 --build O2]   (default: the system libsqlite3)
       [--source mysql@debian-src --build O2 --lean]   (a server the lab builds)
       [--remedies heap-thp,warm-file,slices [--candidates] [--also pagecache-buffer,mmap,slices,turn-checkpoint]
        [--slice 0.02]]
       (--remedies alone: slices)
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from dbperf.engines import SERVER_NAMES
from dbperf.experiment.spec import parse_experiment
from dbperf.host.remedies import NAMES as REMEDY_NAMES
from dbperf.records import CellRecord
from dbperf.runner.lab_run import LabRun
from dbperf.runner.matrix import MatrixRun, open_targets, run_plan
from dbperf.runner.plan import RunPlan
from dbperf.runner.targets import build_targets
from dbperf.storage.results import read_results

EXPERIMENT = """
[run]
benchmarks = ["{benchmark}"]
table_size = {table_size}
time = "{time}s"
warmup = "{warmup}s"
interval = "{interval}s"
repeats = {rounds}
order = "{order}"
resources = false

[[target]]
name = "A"
{source}

[[target]]
name = "B"
{source}
"""


def intervals(record: CellRecord, interval_s: float) -> list[float]:
    """The cell's per-interval QPS, whole intervals only."""
    r = record.result
    if r is None:
        return []
    return [i.qps for i in r.intervals if i.duration_s >= 0.9 * interval_s and i.qps > 0]


def pearson(x: list[float], y: list[float]) -> float | None:
    if len(x) < 3 or len(x) != len(y):
        return None
    try:
        return statistics.correlation(x, y)
    except statistics.StatisticsError:  # a constant series
        return None


def log_spread(ratios: list[float]) -> float | None:
    """Standard deviation of log ratios, in % (about the relative spread)."""
    logs = [math.log(r) for r in ratios if r > 0]
    return 100 * statistics.stdev(logs) if len(logs) >= 2 else None


def level_f(cells: list[list[float]]) -> float | None:
    """Between-cell variance of the cells' mean log QPS over the within-cell variance / intervals per cell."""
    cells = [[math.log(q) for q in c] for c in cells if len(c) >= 2]
    if len(cells) < 2:
        return None
    k = statistics.mean(len(c) for c in cells)
    within = statistics.mean(statistics.variance(c) for c in cells)
    between = statistics.variance([statistics.mean(c) for c in cells])
    return between / (within / k) if within > 0 else None


def fmt(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def measure(order: str, args: argparse.Namespace, tmp: Path, console: Console) -> list[CellRecord]:
    path = tmp / f"states-{order}.toml"
    source = target_lines(args)
    path.write_text(EXPERIMENT.format(benchmark=args.benchmark, table_size=args.table_size, time=args.time,
                                      warmup=args.warmup, interval=args.interval, rounds=args.rounds, order=order,
                                      source=source))
    exp, builds = build_targets(parse_experiment(path), console)
    out = tmp / f"results-{order}"
    run_plan(RunPlan.inspected(exp, builds), out, console)
    meta, records, _ = read_results(out)
    if order == "duet" and not (meta.duet or {}).get("used"):
        raise SystemExit(f"no duet could be formed here: {(meta.duet or {}).get('why')}")
    return [r for r in records if isinstance(r, CellRecord) and r.ok]


PAIR = """
[[target]]
name = "{name}-1"
{source}
{remedies}

[[target]]
name = "{name}-2"
{source}
{remedies}
"""
MMAP = ", mmap_size = 1073741824"  # the candidate `mmap`: the whole file read through the mapping
# Candidates that are not host/remedies' remedies: `mmap`, an engine option, `slices`, an order (the pair's two
# sides take turns every --slice seconds in one driver process, orders/slice_rounds.py), and `turn-checkpoint`,
# slices whose write cells checkpoint each side in its own turns ([run] turn_checkpoint).
OTHER_CANDIDATES = ("mmap", "slices", "turn-checkpoint")
TURN_CHECKPOINT = "turn-checkpoint"


@dataclass(frozen=True)
class Pair:
    """An A/A pair of the remedies mode: what its two targets take (remedies, and `mmap`), and whether they take
    turns in one driver process (slices) instead of running as two processes one after the other (today's order)."""
    remedies: tuple[str, ...]
    slices: bool = False
    turn_checkpoint: bool = False  # slices with [run] turn_checkpoint

    @classmethod
    def of(cls, names: list[str]) -> Pair:
        checkpoint = TURN_CHECKPOINT in names
        return cls(tuple(n for n in names if n not in ("slices", TURN_CHECKPOINT)), "slices" in names or checkpoint,
                   checkpoint)


# As the studies run each server (shared_buffers as pgo-postgres.toml, the buffer pool as pgo-mysql.toml).
SERVER_CONFIG = {"postgres": '\nconfig = { shared_buffers = "256MB" }',
                 "mysql": '\nconfig = { innodb_buffer_pool_size = "512M" }'}


def server_engine(args: argparse.Namespace) -> str | None:
    """The server engine of `--source` (a release the lab fetches, e.g. postgres@12.22), None for SQLite."""
    engine = (args.source or "").split("@", 1)[0]
    return engine if engine in SERVER_NAMES else None


def target_lines(args: argparse.Namespace, mmap: bool = False) -> str:
    """A target's source and settings: SQLite (the system library, or --source built with --build) in WAL, or a
    server release the lab fetches and starts with its own data directory (--source postgres@12.22; the server's
    defaults but for shared_buffers, as the studies run it)."""
    engine = server_engine(args)
    if engine and args.source.endswith("@debian-src"):  # a server the lab builds: its build (and recipe) named
        return (f'source = "{args.source}"\nbuild = ["{args.build}"]' + ("\nlean = true" if args.lean else "")
                + SERVER_CONFIG.get(engine, ""))
    if engine:
        return f'source = "{args.source}"' + SERVER_CONFIG.get(engine, "")
    source = f'source = "{args.source}"\nbuild = ["{args.build}"]\n' if args.source else ""
    return (source + 'config = { journal_mode = "WAL", synchronous = "NORMAL"' + (MMAP if mmap else "") + " }")


def _pair(name: str, pair: Pair, args: argparse.Namespace) -> str:
    wanted = [r for r in pair.remedies if r != "mmap"]
    listed = "[" + ", ".join(f'"{r}"' for r in wanted) + "]" if wanted else '"none"'
    line = "" if server_engine(args) else f"remedies = {listed}"  # a server target takes none (remedy_pairs)
    return PAIR.format(name=name, source=target_lines(args, "mmap" in pair.remedies), remedies=line)


def bootstrap_sd_ratio(num: list[float], den: list[float], draws: int = 2000,
                       seed: int = 50) -> tuple[float, float] | None:
    """90% percentile interval of sd(num) / sd(den), resampling each list's rounds."""
    if len(num) < 3 or len(den) < 3:
        return None
    rng = random.Random(seed)
    ratios = []
    for _ in range(draws):
        a, b = rng.choices(num, k=len(num)), rng.choices(den, k=len(den))
        sb = statistics.stdev(b)
        if sb > 0:
            ratios.append(statistics.stdev(a) / sb)
    ratios.sort()
    return (ratios[int(0.05 * len(ratios))], ratios[int(0.95 * len(ratios)) - 1]) if ratios else None


def _huge_pages(cells: list[CellRecord]) -> str:
    """Per target with heap-thp or pagecache-buffer: the range of the huge pages its processes got, and the
    correlation of that with the cell's median interval QPS."""
    parts = []
    for target in sorted({r.target for r in cells}):
        got = [(r.remedies["heap-thp"].get("anon_huge_kb") if "heap-thp" in (r.remedies or {}) else
                (r.remedies or {}).get("pagecache-buffer", {}).get("huge_kb"), r) for r in cells if r.target == target]
        pairs = [(kb, statistics.median(q)) for kb, r in got if kb is not None and (q := intervals(r, 0.0))]
        if pairs:
            kbs = [kb for kb, _ in pairs]
            r_ = pearson([float(k) for k in kbs], [q for _, q in pairs])
            parts.append(f"{target} {min(kbs)}-{max(kbs)} (r with QPS {fmt(r_, '+.2f')})")
    return "; ".join(parts)


def remedy_pairs(args: argparse.Namespace) -> dict[str, Pair]:
    """today's pair, the remedies' pair and the candidates' pairs, by name (`slices` among the remedies: the
    remedies' pair takes turns in one process)."""
    remedies = [r.strip() for r in args.remedies.split(",") if r.strip()]
    also = [r.strip() for r in (args.also or "").split(",") if r.strip()]
    unknown = [r for r in (*remedies, *also) if r not in (*REMEDY_NAMES, *OTHER_CANDIDATES)]
    if unknown:
        raise SystemExit(f"--remedies/--also: unknown remedy {unknown[0]!r} (known: {', '.join(REMEDY_NAMES)}, "
                         f"{', '.join(OTHER_CANDIDATES)})")
    if server_engine(args) and any(r != "slices" for r in (*remedies, *also)):
        # the remedies act on the process that runs SQLite; a server's are its own (docs/verdicts.md)
        raise SystemExit(f"--remedies/--also: a server source ({args.source}) takes slices only")
    pairs = {"today": Pair(()), "remedied": Pair.of(remedies)}
    if args.candidates:
        pairs |= {f"only-{r}": Pair.of([r]) for r in remedies if len(remedies) > 1}
    pairs |= {f"only-{r}": Pair.of([r]) for r in also}
    return pairs


def remedy_experiments(args: argparse.Namespace, pairs: dict[str, Pair]) -> list[str]:
    """The experiments that measure the pairs: one in today's order (alternate) holding every pair of two processes,
    and one per slices pair (a slices process holds one pair, its A/A: every target of a run shares its process)."""
    head = EXPERIMENT[:EXPERIMENT.index("[[target]]")]

    def run(order: str, turn_checkpoint: bool = False) -> str:
        text = head.format(benchmark=args.benchmark, table_size=args.table_size, time=args.time, warmup=args.warmup,
                           interval=args.interval, rounds=args.rounds, order=order)
        if order != "slices":
            return text
        return text + f'slice = "{args.slice}s"\n' + ("turn_checkpoint = true\n" if turn_checkpoint else "")

    today = [name for name, pair in pairs.items() if not pair.slices]
    texts = [run("alternate") + "".join(_pair(name, pairs[name], args) for name in today)]
    texts += [run("slices", pair.turn_checkpoint) + _pair(name, pair, args) for name, pair in pairs.items()
              if pair.slices]
    return texts


@contextmanager
def opened_run(text: str, directory: Path, console: Console) -> Iterator[MatrixRun]:
    """A lab run of the experiment `text`, set up as run_plan sets one up (targets built and loaded, meta.json
    begun), whose rounds the caller runs one at a time, so that several runs' rounds alternate in time."""
    path = directory / "experiment.toml"
    directory.mkdir()
    path.write_text(text)
    exp, builds = build_targets(parse_experiment(path), console)
    plan = RunPlan.inspected(exp, builds)
    with LabRun(directory / "results", console, servers=plan.starts_servers) as lab:
        data = open_targets(plan, lab)
        lab.claim()
        lab.own(*data.values())
        run = MatrixRun(plan, lab, data)
        run.open(in_history=False)
        run.load()
        yield run


def measure_alternating(texts: list[str], rounds: int, tmp: Path, console: Console) -> list[CellRecord]:
    """Every experiment's rounds, round by round: round r of each run in turn (their order reversed every other
    round), so that the runs are interleaved in time, not one after the other. Their ok cells."""
    with ExitStack() as stack:
        runs = [stack.enter_context(opened_run(text, tmp / f"run-{i}", console)) for i, text in enumerate(texts)]
        for r in range(1, rounds + 1):
            for run in runs if r % 2 else runs[::-1]:
                for group in run.plan.groups:
                    run.measure(group, run.plan.order, r)
    cells: list[CellRecord] = []
    for i in range(len(texts)):
        _, records, _ = read_results(tmp / f"run-{i}" / "results")
        cells += [r for r in records if isinstance(r, CellRecord) and r.ok]
    return cells


def own_intervals(record: CellRecord) -> list[float]:
    """The cell's per-interval QPS at its own interval (a slices side's: one per slice)."""
    return intervals(record, record.result.interval_s if record.result else 0.0)


def turns_line(name: str, cells: list[CellRecord]) -> str | None:
    """A slices pair's time outside its own slices, per cell (its sides' `turns`): the median time its events ran
    into the other side's slices, the stalls (overruns over 1 ms), and the turn checkpoints' median time."""
    turns = [r.result.turns for r in cells if r.target.startswith(f"{name}-") and r.result and r.result.turns]
    if not turns:
        return None
    line = (f"    {name} per cell: spill into the other side's slices median "
            f"{1000 * statistics.median(t.spill_s for t in turns):.2f} ms (longest "
            f"{1000 * max(t.spill_max_s for t in turns):.2f} ms), stalls over 1 ms median "
            f"{statistics.median(t.spills for t in turns):g}")
    if any(t.turn_checkpoint for t in turns):
        line += (f"; turn checkpoints median {statistics.median(t.checkpoints for t in turns):g} taking "
                 f"{1000 * statistics.median(t.checkpoint_s for t in turns):.2f} ms (longest "
                 f"{1000 * max(t.checkpoint_max_s for t in turns):.2f} ms)")
    return line


def pair_spread(name: str, cells: list[CellRecord]) -> tuple[list[float], float | None]:
    """The pair's log(B/A) per round (median interval QPS of each side), and F of its cells' levels."""
    by_round: dict[int, dict[str, CellRecord]] = {}
    for r in cells:
        if r.target in (f"{name}-1", f"{name}-2"):
            by_round.setdefault(r.repeat, {})[r.target] = r
    ratios = []
    for both in by_round.values():
        if len(both) < 2:
            continue
        qa, qb = (own_intervals(both[f"{name}-{i}"]) for i in (1, 2))
        if qa and qb:
            ratios.append(math.log(statistics.median(qb) / statistics.median(qa)))
    return ratios, level_f([own_intervals(r) for r in cells if r.target.startswith(f"{name}-")])


def remedies_mode(args: argparse.Namespace, console: Console) -> None:
    """Today's A/A pair against the remedies' (and each candidate's), alternated round by round."""
    pairs = remedy_pairs(args)
    texts = remedy_experiments(args, pairs)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dbperf-remedies-") as tmp:
        cells = measure_alternating(texts, args.rounds, Path(tmp), console)
    slices = [name for name, pair in pairs.items() if pair.slices]
    how = f"; {', '.join(slices)} in slices of {args.slice:g} s, one process a round" if slices else ""
    print(f"{args.benchmark}, {args.source or 'system libsqlite3'}: {len(pairs)} A/A pairs ({', '.join(pairs)}) "
          f"alternated round by round in {len(texts)} run(s){how}, {args.rounds} rounds of {args.time:g} s cells, "
          f"{args.interval:g} s intervals; measured in {(time.monotonic() - started) / 60:.1f} min")
    logs: dict[str, list[float]] = {}
    for name, pair in pairs.items():
        ratios, level = pair_spread(name, cells)
        logs[name] = ratios
        applied = sorted({n for r in cells if r.target.startswith(f"{name}-") for n in (r.remedies or {})})
        sd = 100 * statistics.stdev(ratios) if len(ratios) >= 2 else None
        band = bootstrap_sd_ratio(ratios, logs["today"]) if name != "today" else None
        versus = "" if band is None or sd is None or not logs["today"] else (
            f"; against today's x{sd / (100 * statistics.stdev(logs['today'])):.2f} "
            f"(90% bootstrap {band[0]:.2f}-{band[1]:.2f})")
        shown = ",".join([*applied, *(["mmap"] if "mmap" in pair.remedies else []),
                          *(["slices"] if pair.slices else []),
                          *([TURN_CHECKPOINT] if pair.turn_checkpoint else [])]) or "none"
        print(f"  {name:<18} remedies {shown:<28} "
              f"A/A spread {fmt(sd, '.2f')}% ({len(ratios)} rounds), per process "
              f"{fmt(sd / math.sqrt(2) if sd else None, '.2f')}%, F = {fmt(level, '.1f')}{versus}")
        turns = turns_line(name, cells) if pair.slices else None
        if turns:
            print(turns)
    steal = [r.noise.steal for r in cells if r.noise and r.noise.steal is not None]
    interfered = sum(1 for r in cells if r.noise and r.noise.interfered)
    if steal:  # what the host took: a spread no remedy in the guest can narrow
        print(f"  steal of the cells' CPUs: median {100 * statistics.median(steal):.1f}%, max {100 * max(steal):.1f}%; "
              f"{interfered} of {len(cells)} cells interfered")
    huge = _huge_pages(cells)
    if huge:
        print(f"  huge pages the processes ended with (kB; a per-process draw of its own if they differ): {huge}")
    today, remedied = logs["today"], logs["remedied"]
    ratio = (statistics.stdev(remedied) / statistics.stdev(today)
             if len(today) >= 2 and len(remedied) >= 2 and statistics.stdev(today) > 0 else None)
    print(f"ratio {fmt(ratio, '.3f')}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30, help="duets, and interleaved rounds")
    ap.add_argument("--time", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=0.3)
    ap.add_argument("--interval", type=float, default=0.25)
    ap.add_argument("--benchmark", default="point-query")
    ap.add_argument("--table-size", type=int, default=100_000)
    ap.add_argument("--source", help="e.g. sqlite@3.54.1 (built by the lab) or a server release the lab fetches "
                                     "and starts, postgres@12.22 (--remedies slices: two servers of it taking "
                                     "turns in one driver); default: the system libsqlite3")
    ap.add_argument("--build", default="O2")
    ap.add_argument("--lean", action="store_true", help="with --source mysql@debian-src: the lean recipe's build")
    ap.add_argument("--remedies", nargs="?", const="slices",
                    help="compare today's A/A spread with these remedies' (comma-separated; alone: slices, the "
                         "one that narrowed it here; mmap: an engine option; "
                         "slices: both sides in one driver process, taking turns every --slice seconds)")
    ap.add_argument("--candidates", action="store_true", help="with --remedies: also each remedy alone")
    ap.add_argument("--also", help="with --remedies: more candidates measured alone, not in the remedies' pair "
                                   "(e.g. pagecache-buffer,mmap,fresh-copy,cpu-free,slices,turn-checkpoint: slices "
                                   "whose write cells checkpoint each side in its own turns)")
    ap.add_argument("--slice", type=float, default=0.02,
                    help="with --remedies slices: seconds each side runs before the other takes its turn")
    args = ap.parse_args()
    console = Console(stderr=True)
    if args.remedies is not None:
        remedies_mode(args, console)
        return
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dbperf-states-") as tmp:
        duet = measure("duet", args, Path(tmp), console)
        interleaved = measure("alternate", args, Path(tmp), console)
    print(f"{args.benchmark}, {args.source or 'system libsqlite3'}: A and B identical; {args.rounds} duets and "
          f"{args.rounds} interleaved rounds of {args.time:g} s cells, {args.interval:g} s intervals; measured in "
          f"{(time.monotonic() - started) / 60:.1f} min")

    # Duets: A's record and B's record of one round are the two sides.
    sides: dict[int, dict[str, CellRecord]] = {}
    for r in duet:
        sides.setdefault(r.repeat, {})[r.target] = r
    pairs = [(s["A"], s["B"]) for s in sides.values() if "A" in s and "B" in s]
    within_r, a_medians, b_medians, duet_ratios, duet_f = [], [], [], [], []
    for a, b in pairs:
        qa, qb = intervals(a, args.interval), intervals(b, args.interval)
        n = min(len(qa), len(qb))
        r = pearson(qa[:n], qb[:n])
        if r is not None:
            within_r.append(r)
        if qa and qb:
            a_medians.append(statistics.median(qa))
            b_medians.append(statistics.median(qb))
            duet_ratios.append(b_medians[-1] / a_medians[-1])
            f = level_f([qa, qb])
            if f is not None:
                duet_f.append(f)
    across_r = pearson(a_medians, b_medians)
    print(f"(a) correlation of the two simultaneous sides' interval QPS within a duet: median r = "
          f"{fmt(statistics.median(within_r) if within_r else None, '+.2f')} over {len(within_r)} duets "
          f"(range {fmt(min(within_r) if within_r else None, '+.2f')} to "
          f"{fmt(max(within_r) if within_r else None, '+.2f')}); "
          f"of the duets' cell medians across duets: r = {fmt(across_r, '+.2f')}")

    rounds: dict[int, dict[str, CellRecord]] = {}
    for r in interleaved:
        rounds.setdefault(r.repeat, {})[r.target] = r
    inter_ratios = []
    for s in rounds.values():
        if "A" in s and "B" in s:
            qa, qb = intervals(s["A"], args.interval), intervals(s["B"], args.interval)
            if qa and qb:
                inter_ratios.append(statistics.median(qb) / statistics.median(qa))
    duet_spread, inter_spread = log_spread(duet_ratios), log_spread(inter_ratios)
    print(f"(b) spread of the A/A ratio B/A (sd of log, %): between the sides of a duet {fmt(duet_spread, '.2f')}% "
          f"({len(duet_ratios)} duets), between the cells of an interleaved round {fmt(inter_spread, '.2f')}% "
          f"({len(inter_ratios)} rounds)")

    inter_cells = [intervals(r, args.interval) for r in interleaved]
    duet_cells = [intervals(r, args.interval) for r in duet]
    print(f"(c) level kept across a cell, F = between-cell variance / (within-cell variance / intervals): "
          f"interleaved cells F = {fmt(level_f(inter_cells), '.1f')}, duet cells F = "
          f"{fmt(level_f(duet_cells), '.1f')}, the two sides of one duet median F = "
          f"{fmt(statistics.median(duet_f) if duet_f else None, '.1f')} (~1: no level of its own; >> 1: each "
          f"process keeps a level)")
    ratio = duet_spread / inter_spread if duet_spread is not None and inter_spread else None
    print(f"ratio {fmt(ratio, '.3f')}")


if __name__ == "__main__":
    main()
