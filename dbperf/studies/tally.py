"""A study's headline: one target of an experiment step against its base over every benchmark it was not trained
on (held out), its geomean rQPS and how many cells the lab decided, under the rule of the run (a geomean measure's
figure, and the [headline] line of a record)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from dbperf.stats.rqps_matrix import Matrix
from dbperf.stats.verdict import CellVerdict
from dbperf.studies.measured import run_verdict


@dataclass(frozen=True)
class Headline:
    target: str
    geomean: float | None
    decided: int  # under the rule the run had (stats/rule_history.py)
    compared: int
    slower: int
    on_cpu_time: int = 0  # of `decided`: by CPU time, the wall clock undecided (docs/verdicts.md)
    faster: int | None = None  # None: a headline recorded before the lab counted them
    # Cells today's rule calls that the run's rule left undecided (not in `decided`), and the change that did.
    by_later_rule: int = 0
    later_rule: str | None = None
    superseded: str | None = None  # what is wrong with the builds it compares (builds.py)
    # The base's A/A copy (a second server of the same build) over the same benchmarks: how many of its cells were
    # compared, and the benchmarks where the run's rule called it changed: there the base differed from itself by
    # as much as a verdict, so the target's call on those benchmarks is not the build's. None: no A/A copy.
    aa_compared: int | None = None
    aa_changed: tuple[str, ...] | None = None
    aa_overlap: int = 0  # of `decided`: cells on a benchmark where the A/A copy changed

    def first_line(self, study: str) -> str:
        g = "–" if self.geomean is None else f"{self.geomean:.3f}"
        return f"study {study}: geomean rQPS {g}, decided {self.decided} of {self.compared}, slower {self.slower}"

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Headline:
        """The headline as study.json holds it (asdict)."""
        return cls(**{f.name: doc[f.name] for f in fields(cls) if f.name in doc})

    def breakdown(self) -> str:
        """How the cells were decided, short: the geomean figure's verdict column."""
        faster = "" if self.faster is None else f", {self.faster} faster"
        how = (f" ({self.decided - self.on_cpu_time} on the wall clock, {self.on_cpu_time} on CPU time only)"
               if self.decided else "")
        later = f"; {self.by_later_rule} more called by a rule added after the run" if self.by_later_rule else ""
        return f"decided {self.decided} of {self.compared}{how}: {self.slower} slower{faster}{later}"

    def decided_by(self) -> str:
        """The line under the headline: how each decided cell was decided, and what a later rule would add."""
        said = (f"Of the {self.decided} decided, {self.decided - self.on_cpu_time} on the wall clock (QPS) and "
                f"{self.on_cpu_time} on CPU time only (queries per CPU second; their wall clock undecided); "
                f"{self.compared - self.decided} undecided." if self.decided else
                f"None of the {self.compared} cells was decided.")
        if self.by_later_rule:
            said += (f" {self.by_later_rule} more cell(s) are called by a rule added after the run "
                     f"({self.later_rule}); they are not counted as decided here.")
        if self.aa_compared:
            changed = self.aa_changed or ()
            said += f" The A/A copy of the base changed {len(changed)} of {self.aa_compared} cells"
            said += (f" ({', '.join(changed)}): on {'that benchmark' if len(changed) == 1 else 'those benchmarks'} "
                     "two servers of the same build differed by as much as a verdict, so "
                     f"{self.aa_overlap} of the decided cells above say{'s' if self.aa_overlap == 1 else ''} "
                     "nothing of the build there." if changed else ".")
        if self.superseded:
            said += f" Superseded: {self.superseded}."
        return said

    def last_line(self) -> str:
        return f"ratio {'–' if self.geomean is None else f'{self.geomean:.3f}'}"



def tallied(m: Matrix, target: str, started: str | None = None) -> Headline:
    """One target of an experiment against its base over every benchmark it was not trained on (held out): the
    geomean rQPS, and how many cells the lab decided under the rule of the run started at `started`, called slower
    and called faster; the cells only a later rule calls are counted apart."""
    keyed = [(b, c) for (t, b, _), c in m.cells.items() if t == target and c.rqps and not m.was_trained_on(t, b)]
    cells = [c for _, c in keyed]
    judged_ = [run_verdict(c.verdict_detail, c.cpu_verdict_detail, started) for c in cells]
    geomean = math.exp(sum(math.log(c.rqps) for c in cells if c.rqps) / len(cells)) if cells else None
    decided = [v for v, _ in judged_ if v is not None and v.decided]
    later = [change for _, change in judged_ if change is not None]
    slower, on_cpu, faster = _counted(decided)
    aa_compared, changed, overlap = _aa_changed(m, target, started, [b for b, _ in keyed], [v for v, _ in judged_])
    return Headline(target, geomean, len(decided), len(cells), slower, on_cpu, faster,
                    len(later), "; ".join(dict.fromkeys(f"{c.date}: {c.what}" for c in later)) or None,
                    aa_compared=aa_compared, aa_changed=changed, aa_overlap=overlap)


def _aa_changed(m: Matrix, target: str, started: str | None, benchmarks: list[str],
                verdicts: list[CellVerdict | None]) -> tuple[int | None, tuple[str, ...] | None, int]:
    """How many cells of the base's A/A copy were compared over `target`'s held-out benchmarks, the benchmarks where
    the run's rule called it faster or slower, and how many of `target`'s decided cells (its `verdicts` on
    `benchmarks`) lie on those; (None, None, 0) without an A/A copy."""
    aa = [(b, run_verdict(c.verdict_detail, c.cpu_verdict_detail, started)[0])
          for (t, b, _), c in m.cells.items() if t == f"{m.base}-aa" and c.rqps and not m.was_trained_on(target, b)]
    if not aa:
        return None, None, 0
    changed = tuple(sorted({b for b, v in aa if v is not None and v.decided and v.verdict in ("faster", "slower")}))
    return len(aa), changed, sum(1 for b, v in zip(benchmarks, verdicts, strict=True)
                                 if v is not None and v.decided and b in changed)


def _counted(decided: list[CellVerdict]) -> tuple[int, int, int]:
    """Of the decided verdicts: how many slower, how many on CPU time only, how many faster."""
    return (sum(v.verdict == "slower" for v in decided), sum(not v.metric.headline for v in decided),
            sum(v.verdict == "faster" for v in decided))
