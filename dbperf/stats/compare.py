"""The same target from two runs (two hosts, two days) side by side. Each target's pair is made a two-target Matrix,
A's repeats as the base and B's as the other target, so that the comparison goes through exactly the statistics and
verdict rules of a single run's report (rQPS, Mann-Whitney, and whatever verdict fields build_matrix gives cells)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import msgspec

from dbperf.errors import UserError
from dbperf.records import CellRecord, CountersRecord, ResultsRecord, SimulatedRecord
from dbperf.run_meta import RunMeta
from dbperf.stats.contradiction import Contradiction, RunCall, contradictions
from dbperf.stats.rqps_matrix import Matrix, build_matrix
from dbperf.storage.results import read_results


@dataclass(frozen=True)
class Side:
    label: str
    directory: Path
    run_meta: RunMeta
    records: list[ResultsRecord]



@dataclass(frozen=True)
class Pair:
    target: str
    a: str  # the pair matrix's target names
    b: str
    matrix: Matrix


def load_side(directory: Path, label: str) -> Side:
    meta, records, _ = read_results(directory)
    return Side(label, directory, meta, records)


def side_labels(a: Path, b: Path) -> tuple[str, str]:
    """Short names for the two runs: their directory names, or A and B when those are the same."""
    na, nb = a.absolute().name, b.absolute().name
    return (na, nb) if na != nb else ("A", "B")


def pair_matrices(a: Side, b: Side, targets: list[str] | None, aggregate: str | None = None) -> list[Pair]:
    names_a = a.run_meta.target_names
    names_b = b.run_meta.target_names
    if targets:
        for t in targets:
            for side, names in ((a, names_a), (b, names_b)):
                if t not in names:
                    raise UserError(f"--target {t}: not a target of {side.directory} (it has {', '.join(names)})")
        chosen = targets
    else:
        chosen = [t for t in names_a if t in names_b]
        if not chosen:
            raise UserError(f"{a.directory} and {b.directory} have no target name in common ({', '.join(names_a)} / "
                            f"{', '.join(names_b)}); name one with --target")
    return [_pair(a, b, t, aggregate) for t in chosen]


def _renamed(records: list[ResultsRecord], target: str, new: str) -> list[ResultsRecord]:
    out: list[ResultsRecord] = []
    for r in records:
        if isinstance(r, (CellRecord, CountersRecord, SimulatedRecord)) and r.target == target:
            out.append(msgspec.structs.replace(r, target=new))
    return out


def _pair(a: Side, b: Side, target: str, aggregate: str | None) -> Pair:
    name_a, name_b = f"{target} @{a.label}", f"{target} @{b.label}"
    info_a, info_b = a.run_meta.target(target), b.run_meta.target(target)
    assert info_a is not None and info_b is not None  # pair_matrices chose targets both sides have
    benchmarks = list({x.name: x for x in [*a.run_meta.benchmarks, *b.run_meta.benchmarks]}.values())
    center = str(aggregate or a.run_meta.aggregate)
    meta = RunMeta(base=name_a, aggregate=center, threads=sorted(set(a.run_meta.threads) | set(b.run_meta.threads)),
                   benchmarks=benchmarks, targets=[msgspec.structs.replace(info_a, name=name_a),
                                                   msgspec.structs.replace(info_b, name=name_b)])
    records = _renamed(a.records, target, name_a) + _renamed(b.records, target, name_b)
    return Pair(target, name_a, name_b, build_matrix(meta, records, center))


def own_contradictions(a: Side, b: Side, targets: list[str]) -> list[Contradiction]:
    """The cells of `targets` that each run decided against its own base (the same name in both) one way in A and
    the other in B: each run's verdict holds of its own rounds and processes, and the two disagree on the builds.
    None to check when the runs' bases differ (their verdicts answer different questions) or the target is the
    base."""
    if a.run_meta.base != b.run_meta.base:
        return []
    chosen = [t for t in targets if t != a.run_meta.base]
    return contradictions([_own_calls(side, chosen) for side in (a, b)])


def _own_calls(side: Side, targets: list[str]) -> list[tuple[tuple[str, str, int], RunCall]]:
    matrix = build_matrix(side.run_meta, side.records)
    out = []
    for cell in matrix.cells.values():
        verdict = cell.deciding_verdict
        if cell.target in targets and verdict is not None:
            out.append(((cell.target, cell.benchmark, cell.threads),
                        RunCall(side.label, verdict.verdict, cell.rqps, verdict.metric.name)))
    return out
