"""What a verdict, a bisect step or a series is of: a Metric, asked for its words and its figure, never compared by
name. Its name is what the command line (`--metric`) and the files (bisect.json, a verdict's `metric`) say; it is
resolved once where it comes in (dbperf.metrics.named) and the object is passed on. A new metric is a new file
here and one entry in dbperf/metrics/__init__.py."""

from __future__ import annotations

from typing import Any, Protocol


class Rates(Protocol):
    """A measured round or repeat: its QPS by the wall clock and per CPU second (None: not measured)."""
    @property
    def qps(self) -> float | None: ...

    @property
    def cpu_qps(self) -> float | None: ...


class Stored(Protocol):
    """A stored result (history/store.py's Result): its center QPS and its simulated tier's counts."""
    @property
    def qps_center(self) -> float | None: ...

    @property
    def simulated(self) -> dict[str, Any] | None: ...


class Metric:
    """One of a few singletons (one a file), equal only to itself; a plain class, not a dataclass, so that a
    record holding one writes its name (the files' hooks, storage/bisect_path.py) rather than its fields."""

    def __init__(self, name: str, label: str, figure: str, *, work: bool = False, deterministic: bool = False,
                 headline: bool = False, bisects: bool = False, trees: bool = False, series: bool = False,
                 threshold: str = "5%", help: str = "") -> None:
        self.name = name  # as the command line and the files say it
        self.label = label  # in words: "wall clock"
        self.figure = figure  # what its figure is, in words: "QPS", "instructions per query"
        self.work = work  # a count of work, not a speed: more is slower, a step up is a regression
        self.deterministic = deterministic  # the same build gives the same figure: one try a bisect step
        self.headline = headline  # the verdict a cell is named by: said without its metric
        self.bisects = bisects  # `dbperf bisect --metric` decides steps by it
        self.trees = trees  # `dbperf bisect --tree` decides a tree's commits by it
        self.series = series  # `dbperf series --metric` draws it from the history
        self.threshold = threshold  # bisect: the default --threshold
        self.help = help  # bisect: --metric's help line

    def __repr__(self) -> str:
        return f"<metric {self.name}>"

    def rate(self, measured: Rates) -> float | None:
        """Its figure of one measured round or repeat (higher is better), None where it has none."""
        return None

    def stored(self, result: Stored) -> float | None:
        """Its figure of a stored result, None where the result has none."""
        return None

    def regression(self, change: float) -> bool:
        """Whether a change of its figure (after/before - 1) is for the worse."""
        return change > 0 if self.work else change < 0

    @property
    def said(self) -> str:
        """Beside a verdict word: nothing for the headline metric, else its name in brackets."""
        return "" if self.headline else f" ({self.name})"
