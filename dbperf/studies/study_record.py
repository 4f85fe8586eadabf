"""study.json, typed: what a study run says of itself (the study, its mode, when and where it ran, the host, how each
step ended, the figures and headlines read back, its exit code), written by `dbperf study run` (first as the claim
on its directory, status running; then whole with its summary) and `dbperf study summary`, and put on record in
docs/studies/NAME.json by `dbperf study record` (with where its steps' results are kept and, narrowed by --step,
what it kept from the record before it). Written and read only through StudyRecord (run_meta.py's pattern).

Versions. `dbperf_study` is the format's version; an older file is upgraded one version at a time (UPGRADES[N]
turns version N-1 into N) before it is decoded, a newer one refused in one line. A key a writer may leave out (the
claim has no steps; records written before `mode`, `command` or `exit_code` were kept have none) is UNSET, not
null: a read and a rewrite keep every file as it was, key for key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

import dbperf
from dbperf.run_meta import MetaError, Upgrade, upgraded
from dbperf.storage.results import META
from dbperf.studies.definition import MODES, Mode
from dbperf.studies.figures import Headline, Row
from dbperf.studies.summary import Host

STUDY_JSON = "study.json"
CATCHES = 3  # the round of `dbperf study check`'s catches a record written now is held to (catches.py)
FORMAT_VERSION = 1  # study.json's "dbperf_study"; bump it with an update_to_N in UPGRADES
VERSION_KEY = "dbperf_study"
# UPGRADES[n] turns a version n-1 study.json (as a JSON object) into version n. Version 1 is the first.
UPGRADES: dict[int, Upgrade] = {}
# status from the moment a new run claims its directory until its summary replaces it: a run that never got there
# (killed, or still running) is said so, not summarised or recorded as if it had ended.
RUNNING = "running"


class StepEnded(msgspec.Struct):
    """How one step of the run ended, in words (study_run.StepEnd.how)."""
    name: str
    ended: str


class KeptFrom(msgspec.Struct):
    """A run narrowed by --step put on record on top of the record: the steps it kept from that record, and that
    record's run (record.kept_from_record)."""
    steps: list[str]
    started: str | None = None
    ended: str | None = None
    directory: str | None = None
    command: str | None = None
    host: dict[str, Any] | None = None


class StudyRecord(msgspec.Struct, kw_only=True):
    dbperf_study: int = FORMAT_VERSION
    study: str
    title: str | UnsetType = UNSET
    mode: Mode | UnsetType = UNSET  # records from before it was kept say `quick` only
    quick: bool | UnsetType = UNSET
    smoke: bool | UnsetType = UNSET
    started: str | UnsetType = UNSET
    ended: str | UnsetType = UNSET
    directory: str | UnsetType = UNSET
    command: str | UnsetType = UNSET
    status: str | UnsetType = UNSET  # RUNNING in the claim; gone once the summary is written
    left_out: dict[str, str] | UnsetType = UNSET  # step -> the option that left it out (--step, a mode's skip)
    resumed_at: list[str] | UnsetType = UNSET
    host: dict[str, Any] | UnsetType = UNSET  # summary.Host.to_json (read with Host.from_json: older hosts differ)
    steps: list[StepEnded] | UnsetType = UNSET
    figures: list[Row] | UnsetType = UNSET
    headline: Headline | UnsetType | None = UNSET
    also_headlines: dict[str, Headline] | UnsetType = UNSET
    rewritten: str | UnsetType = UNSET  # when `dbperf study summary` wrote it again
    exit_code: int | UnsetType = UNSET  # 0, 1 incomplete, 128 + N stopped by signal N
    # Put on record (record.py): where its steps' results are kept, beside the record; why it is partial; what a
    # run narrowed by --step kept from the record before it.
    results: dict[str, str] | UnsetType = UNSET
    # The JSON of each step with no results directory (a probe's timings, a diff, a bisect's path) kept beside the
    # record, by step: what `study check` reads back, and a deleted one told from one never kept.
    outputs: dict[str, str] | UnsetType = UNSET
    partial: str | UnsetType = UNSET
    kept_from_record: KeptFrom | UnsetType = UNSET
    # Cells this run decided one way and the record's kept run of the same step the other (stats/contradiction.py),
    # put on record with --contradicted: said on the page, never silently replaced.
    contradictions: list[str] | UnsetType = UNSET
    # The diff of each dirty tree a step ran from (the lab's own, a target's source), kept beside the record, by
    # step (a path relative to docs/studies): what a figure from uncommitted code rests on (catches.py).
    diffs: dict[str, str] | UnsetType = UNSET
    # The round of `dbperf study check`'s catches the record was written under (catches.CATCHES): a record from
    # before says nothing, and is held to the catches added since once it is written again under them.
    checks: int | UnsetType = UNSET

    @property
    def held_to_catches(self) -> bool:
        """Whether it opts into the latest catches (catches.py), and its words follow them."""
        return isinstance(self.checks, int) and self.checks >= CATCHES

    @property
    def running(self) -> bool:
        return self.status == RUNNING

    @property
    def run_mode(self) -> Mode:
        """The run's mode (runs from before `mode` was kept say `quick` only)."""
        said = self.mode or ("quick" if self.quick else "full")
        return next((m for m in MODES if m == said), "full")

    @property
    def run_host(self) -> Host:
        return Host.from_json(self.host or {})

    @property
    def step_ends(self) -> list[tuple[str, str]]:
        return [(s.name, s.ended) for s in self.steps or []]

    def replace(self, **changes: Any) -> StudyRecord:
        return msgspec.structs.replace(self, **changes)


def _shape_problem(raw: dict[str, Any]) -> str | None:
    return None if isinstance(raw.get("study"), str) else "no study name"


def study_record(raw: Any) -> StudyRecord:
    """A study.json's JSON value, upgraded to the current version and decoded; a MetaError says what is wrong."""
    if not isinstance(raw, dict):
        raise MetaError("expected a JSON object")
    if VERSION_KEY not in raw:  # hand-made, or a test's: the first version
        raw = {VERSION_KEY: 1, **raw}
    raw = upgraded(raw, FORMAT_VERSION, UPGRADES, VERSION_KEY, "study.json format")
    problem = _shape_problem(raw)
    if problem:
        raise MetaError(problem)
    try:
        return msgspec.convert(raw, StudyRecord)
    except msgspec.ValidationError as e:
        raise MetaError(str(e)) from None


def read_record(path: Path) -> StudyRecord:
    """The study.json at `path`. OSError (FileNotFoundError: none there), ValueError (not JSON) and MetaError (not
    a study run's) are the caller's to say."""
    return study_record(json.loads(path.read_text(encoding="utf-8")))


def record_text(record: StudyRecord) -> str:
    """study.json's text, as dbperf has always written it (json.dumps, indented, a newline at the end)."""
    return json.dumps(msgspec.to_builtins(record), indent=2) + "\n"


T = TypeVar("T")


def known(value: T | UnsetType) -> T | None:
    """A field as the JSON said it, None where the file has no such key (as dict.get said it)."""
    return None if value is UNSET else value


DOCS_STUDIES = Path(dbperf.__file__).resolve().parents[1] / "docs" / "studies"


def recorded(name: str, docs: Path = DOCS_STUDIES) -> StudyRecord | None:
    try:
        return read_record(docs / f"{name}.json")
    except (OSError, ValueError):
        return None  # a missing or damaged record is not a reason to lose this run's summary


def recorded_results(record: StudyRecord, docs: Path = DOCS_STUDIES) -> dict[str, Path]:
    """The record's steps whose results directories are kept beside it (docs/studies/<name>/<step>), by step (none
    in a record written before the results were kept beside it)."""
    return {step: docs / rel for step, rel in (record.results or {}).items() if (docs / rel / META).is_file()}


def shown_path(path: Path) -> str:
    """A path under dbperf's docs as a clone of dbperf names it (docs/studies/...); elsewhere as it is."""
    try:
        return str(Path("docs/studies") / path.relative_to(DOCS_STUDIES))
    except ValueError:
        return str(path)
