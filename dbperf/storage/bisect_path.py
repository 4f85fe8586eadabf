"""A bisect's path (usecases/bisect.py): its types, and DIR/bisect.json, the versioned record of the range, the
settings and every step, written after each step (replaced whole) and read back through `read_path` only, typed:
by `--resume` (the steps to replay), by the --out claim (a bisect's folder, named) and by a study's bisect step.

    {"dbperf_bisect": 1, "settings": {...}, "versions": [...], "steps": [...], "outcome": ..., ..., "answer": ...}

A path written before `--metric` existed has no settings.metric: it was decided by the wall clock (the default); one
written before `--tree` has no settings.tree: it bisected releases."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from dbperf.errors import UserError
from dbperf.metrics import METRICS, WALL, Metric
from dbperf.storage.out_folder import FolderKind, register
from dbperf.storage.results import write_whole

PATH_FILE = "bisect.json"
VERSION = 1

SLOWER = "slower"
DECIDED = ("faster", "slower", "same")
FAILED = "failed"
SKIPPED = "skipped"  # a commit that could not be built or counted: left out, as `git bisect skip` leaves it
ONLY_SKIPPED = "only-skipped"  # the outcome when every commit left between the bracket was skipped
RESUMABLE = ("running", "interrupted")  # outcomes of a search cut short (running: killed between two steps)

# Exit statuses of `dbperf bisect` (2 is bad input, 128 + N an interrupt, as everywhere in dbperf).
FOUND = 0
NONE_SLOWER = 1  # the newest release of the range is not slower than the oldest: nothing to find
STEP_FAILED = 3  # a step's run measured nothing: a run's own NO_CELL_SUCCEEDED (usecases/run.py)
STILL_UNDECIDED = 4  # a step stayed undecided after its last try: the search stops rather than guess


def _metric_name(value: object) -> str:
    """A metric as the file says it: its name."""
    if isinstance(value, Metric):
        return value.name
    raise NotImplementedError(f"cannot encode {type(value).__name__}")


def _metric_of(kind: type, value: object) -> object:
    """A metric's name in the file, resolved once as it is read."""
    if kind is Metric and isinstance(value, str) and value in METRICS:
        return METRICS[value]
    raise ValueError(f"expected one of {', '.join(METRICS)}, got {value!r}")


class StepSettings(msgspec.Struct, frozen=True):
    """What every step's experiment holds besides its two targets (checked by usecases/bisect_settings.py)."""
    engine: str
    benchmark: str
    threshold: float
    time_s: float
    warmup_s: float
    budget_s: float
    threads: int = 1
    table_size: int = 100_000
    config: dict[str, str] = {}
    metric: Metric = WALL  # what decides a step (dbperf/metrics/, usecases/bisect_metrics.py)
    # how a step's rounds run (the experiment's `order`; None: the lab's default): "slices" for servers, whose A/A
    # spread it narrowed to 0.13-0.20 of alternation's here (docs/verdicts.md)
    order: str | None = None
    tree: str | None = None  # --tree: the checkout whose commits are bisected (absolute); None: releases
    cflags: list[str] = []  # --tree: compiler options appended to every commit's build

    def as_json(self) -> dict[str, Any]:
        result: dict[str, Any] = msgspec.to_builtins(self, enc_hook=_metric_name)
        return result


class Judgement(msgspec.Struct, frozen=True):
    """One step's verdict on `probe` against `good`: the lab's deciding verdict of the benchmark's cell."""
    verdict: str  # faster, slower, same, undecided, unstable, or failed (nothing measured)
    rqps: float | None = None
    lower: float | None = None  # the confidence interval of the relative change (-0.08 = 8% slower)
    upper: float | None = None
    rounds: int = 0
    metric: Metric = WALL  # the verdict's: wall, cpu (a wall-clock step left undecided by wall) or simulated
    directory: str | None = None
    exit_code: int = 0  # the run's: 0, 3 (no cell succeeded) or 128 + N (interrupted)
    work: float | None = None  # --metric simulated: the probe's work per query over the oldest's (1.05 = 5% more)
    why: str | None = None  # skipped: the build's or the count's error line

    @property
    def interrupted(self) -> bool:
        return self.exit_code >= 128


class Step(msgspec.Struct, frozen=True):
    number: int  # 1-based, in the order run
    version: str
    attempt: int  # 1-based try of this version
    judgement: Judgement


class LeadRow(msgspec.Struct, frozen=True):
    """--metric simulated: one function's change at the found step, per query (simulated counts)."""
    function: str
    before: float  # instructions per query in the last release at the old level
    after: float  # and in the first at the new
    misses: float | None  # change of L1 misses (instruction + data) per query; None when not counted
    why: str  # ranked by "instructions" or by "misses"


class CommitFacts(msgspec.Struct, frozen=True):
    """--tree: a commit the answer names."""
    hash: str
    subject: str
    author: str


class BisectResult(msgspec.Struct):
    versions: list[str]
    steps: list[Step] = []
    outcome: str = "running"  # until the search ends: found, none-slower, undecided, failed, interrupted
    first_slower: str | None = None
    last_not_slower: str | None = None
    exit_code: int = STILL_UNDECIDED
    metric: Metric = WALL  # what decided each step: wall (the sequential verdicts) or simulated (work per query)
    # --metric simulated, a found step: the wall clock's and CPU time's verdicts of the first release at the new
    # level against the last at the old (one run, reported beside the answer, never deciding it) ...
    confirmation: list[Judgement] = []
    lead: list[LeadRow] = []  # ... and the per-function changes between the two
    search_s: float | None = None  # wall time of the search to its answer (this sitting), and of the whole bisect
    total_s: float | None = None
    error: str | None = None  # outcome "failed" by an error, not a step's verdict: the error's line
    # --metric simulated, a found step: instructions per query at the last candidate at the old level and at the
    # first at the new (the step's own change, not against the oldest)
    work_before: float | None = None
    work_after: float | None = None
    found: CommitFacts | None = None  # --tree, a found step: the first commit with more work

    @property
    def answer(self) -> str | None:
        """The first slower release as far as the search got: the release when found; when a step stopped the
        search, the bracket it had narrowed to and the step that stopped it; None when none is slower (or no step
        has been decided yet)."""
        if self.outcome == ONLY_SKIPPED:
            return f"after {self.last_not_slower}, at or before {self.first_slower} (every commit between skipped)"
        if self.outcome == "found" or not self.first_slower or self.outcome == "none-slower":
            return self.first_slower if self.outcome == "found" else None
        last = self.steps[-1] if self.steps else None
        why = (f"{last.version} {last.judgement.verdict} after {last.attempt} tr{'y' if last.attempt == 1 else 'ies'}"
               if last else self.outcome)
        return f"after {self.last_not_slower}, at or before {self.first_slower} (stopped: {why})"

    @property
    def resumable(self) -> bool:
        """Whether the search goes on with --resume: cut short, or stopped by an error (a release not fetched, a
        tool that failed: its `error`) rather than by a step's verdict; failed, it is not taken for cut short."""
        return self.outcome in RESUMABLE or (self.outcome == FAILED and bool(self.error))

    @property
    def skipped(self) -> list[str]:
        """The candidates left out, in the order tried (`git bisect skip`'s): each could not be built or counted."""
        return [s.version for s in self.steps if s.judgement.verdict == SKIPPED]

    def work_at(self, version: str | None) -> float | None:
        """--metric simulated: `version`'s work per query over the oldest's, from its last step (None: not judged)."""
        return next((s.judgement.work for s in reversed(self.steps) if s.version == version), None)

    def to_json(self) -> dict[str, Any]:
        return {**msgspec.to_builtins(self, enc_hook=_metric_name), "answer": self.answer, "skipped": self.skipped}


class _Head(msgspec.Struct):
    """The part of bisect.json that is not the result: its format and the settings."""
    dbperf_bisect: int
    settings: StepSettings


@dataclass(frozen=True)
class BisectPath:
    """bisect.json, typed: the settings a bisect ran with and its result so far."""
    settings: StepSettings
    result: BisectResult

    @property
    def candidates(self) -> str:
        """What the search went over, as its lines say it."""
        return "commits" if self.settings.tree else "releases"

    @property
    def span(self) -> str:
        versions = self.result.versions
        return f"{versions[0]}..{versions[-1]}" if versions else "?"

    def describe(self) -> str:
        """The bisection as a user would name it: postgres 13.23..17.0, point-query, slower at 5.0%."""
        s = self.settings
        by = f" by {s.metric.name} work" if s.metric.work else ""
        return f"{s.engine} {self.span}, {s.benchmark}, slower at {s.threshold:.1%}{by}"

    def document(self) -> dict[str, Any]:
        """What bisect.json holds (and `dbperf bisect --format json` prints)."""
        return {"dbperf_bisect": VERSION, "settings": self.settings.as_json(), **self.result.to_json()}

    def differences(self, settings: StepSettings, versions: list[str]) -> str:
        """What differs between this bisect and one of `settings` over `versions` ("" when nothing does)."""
        before, now = self.settings.as_json(), settings.as_json()
        parts = [f"{k} {before.get(k)!r} there, {v!r} here" for k, v in now.items() if before.get(k) != v]
        if self.result.versions != versions:
            parts.append(f"releases {self.span} there, {versions[0]}..{versions[-1]} here")
        return "; ".join(parts)


def write_path(out: Path, path: BisectPath) -> Path:
    """out/bisect.json, replaced whole (written beside and renamed), so that an interrupt or a full disk mid-write
    leaves the path of the step before."""
    where = out / PATH_FILE
    write_whole(where, msgspec.json.format(msgspec.json.encode(path.document()), indent=2) + b"\n")
    return where


def read_path(out: Path) -> BisectPath | None:
    """out/bisect.json, typed; None when there is none; a UserError naming it when it cannot be read, is not a
    bisect's, or was written by a newer dbperf."""
    where = out / PATH_FILE
    try:
        data = where.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise UserError(f"{where}: unreadable ({e.strerror or e})") from None
    try:
        head = msgspec.json.decode(data, type=_Head, dec_hook=_metric_of)
        if head.dbperf_bisect > VERSION:
            raise UserError(f"{where}: written by a newer dbperf (format {head.dbperf_bisect}; this one reads up to "
                            f"{VERSION})")
        return BisectPath(head.settings, msgspec.json.decode(data, type=BisectResult, dec_hook=_metric_of))
    except (msgspec.DecodeError, RecursionError) as e:
        raise UserError(f"{where}: not a bisect path ({e})") from None


class BisectKind(FolderKind):
    noun = "bisect"
    writer = "bisect"

    def record(self, directory: Path) -> BisectPath | None:
        return read_path(directory)

    def said(self, record: object) -> str:
        return f"a bisect ({record.describe()})" if isinstance(record, BisectPath) else "a bisect"

    def taken(self, directory: Path, record: object) -> str:
        assert isinstance(record, BisectPath)
        result = record.result
        if result.outcome == FAILED and result.error:
            return (f"--out {directory}: already holds {self.said(record)} that failed ({result.error}); give "
                    "another directory, or --resume to go on with it once that is fixed")
        if result.resumable:
            return (f"--out {directory}: already holds {self.said(record)}, cut short; give another directory, or "
                    "--resume to go on with it")
        return f"--out {directory}: already holds {self.said(record)} that ended ({result.outcome}); give another " \
               "directory"

    def goes_on(self, directory: Path, record: object) -> str | None:
        assert isinstance(record, BisectPath)
        if record.result.resumable:
            return None
        return (f"--out {directory}: its bisect ended ({record.result.outcome}): nothing to resume (it was "
                f"{record.describe()})")


BISECT = register(BisectKind())
