"""`dbperf bisect`: the first released version of a server whose verdict against the oldest of a range turns slower,
Pinpoint's way ([Pinpoint]): a binary search in which every step is an A/B experiment, the oldest version ("good")
as the base against the probed one, decided by the lab's sequential verdict (`repeats = "auto"`, `min_effect` =
the threshold). A step that ends undecided (or unstable) is run again with twice the budget, up to a cap of tries;
if it is still undecided the search stops and says so with the path so far: it never guesses a side.

The search (`search`) only sees a judge, `judge(good, probe, attempt) -> Judgement`, so that its order, its
handling of undecided steps and its number of steps are tested with a fake judge; `release_judge` is the real one,
which runs each step through the run use case (usecases/run.py) into a directory of its own under the output
directory, so that nothing measured is lost. A search cut short goes on (`--resume`): the search is deterministic
given its judgements, so the steps decided before are replayed from bisect.json and the step that was running
resumes its own run (runner/resume.py). The output directory is taken as `dbperf run` takes its --out: new or
empty (or, with --resume, a folder of the same bisection), writable, checked before anything is fetched, and held
while the search runs (`check_out`, `claimed`).
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rich.console import Console

from dbperf.buildlab.server_releases import SOURCES, release_name, resolve_version, version_key
from dbperf.catalog.registry import builtin
from dbperf.engines.lab_owned import lab_owned_refusal
from dbperf.errors import UserError
from dbperf.experiment.keys import fraction
from dbperf.experiment.spec import server_settings
from dbperf.report.model import Block, Row, Section, View
from dbperf.servers.setting_names import unknown_setting
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage.results import (
    EXPERIMENT,
    LOCK,
    META,
    DirectoryClaim,
    meta_status,
    read_results,
    write_whole,
    writing,
)
from dbperf.storage.writable import check_writable
from dbperf.usecases.progress import PROGRESS, say
from dbperf.usecases.run import NO_CELL_SUCCEEDED, run_experiment

SLOWER = "slower"
DECIDED = ("faster", "slower", "same")
FAILED = "failed"

# Exit statuses of `dbperf bisect` (2 is bad input, 128 + N an interrupt, as everywhere in dbperf).
FOUND = 0
NONE_SLOWER = 1  # the newest release of the range is not slower than the oldest: nothing to find
STEP_FAILED = NO_CELL_SUCCEEDED  # 3: a step's run measured nothing
STILL_UNDECIDED = 4  # a step stayed undecided after its last try: the search stops rather than guess

DEFAULT_TRIES = 3
PATH_FILE = "bisect.json"


@dataclass(frozen=True)
class Judgement:
    """One step's verdict on `probe` against `good`: the lab's deciding verdict of the benchmark's cell."""
    verdict: str  # faster, slower, same, undecided, unstable, or failed (nothing measured)
    rqps: float | None = None
    lower: float | None = None  # the confidence interval of the relative change (-0.08 = 8% slower)
    upper: float | None = None
    rounds: int = 0
    metric: str = "wall"
    directory: str | None = None
    exit_code: int = 0  # the run's: 0, 3 (no cell succeeded) or 128 + N (interrupted)
    work: float | None = None  # --metric simulated: the probe's work per query over the oldest's (1.05 = 5% more)

    @property
    def interrupted(self) -> bool:
        return self.exit_code >= 128


@dataclass(frozen=True)
class Step:
    number: int  # 1-based, in the order run
    version: str
    attempt: int  # 1-based try of this version
    judgement: Judgement


@dataclass(frozen=True)
class LeadRow:
    """--metric simulated: one function's change at the found step, per query (simulated counts)."""
    function: str
    before: float  # instructions per query in the last release at the old level
    after: float  # and in the first at the new
    misses: float | None  # change of L1 misses (instruction + data) per query; None when not counted
    why: str  # ranked by "instructions" or by "misses"


@dataclass
class BisectResult:
    versions: list[str]
    steps: list[Step] = field(default_factory=list)
    outcome: str = "running"  # until the search ends: found, none-slower, undecided, failed, interrupted
    first_slower: str | None = None
    last_not_slower: str | None = None
    exit_code: int = STILL_UNDECIDED
    metric: str = "wall"  # what decided each step: wall (the sequential verdicts) or simulated (work per query)
    # --metric simulated, a found step: the wall clock's and CPU time's verdicts of the first release at the new
    # level against the last at the old (one run, reported beside the answer, never deciding it) ...
    confirmation: list[Judgement] = field(default_factory=list)
    lead: list[LeadRow] = field(default_factory=list)  # ... and the per-function changes between the two
    search_s: float | None = None  # wall time of the search to its answer (this sitting), and of the whole bisect
    total_s: float | None = None
    error: str | None = None  # outcome "failed" by an error, not a step's verdict: the error's line

    @property
    def answer(self) -> str | None:
        """The first slower release as far as the search got: the release when found; when a step stopped the
        search, the bracket it had narrowed to and the step that stopped it; None when none is slower (or no step
        has been decided yet)."""
        if self.outcome == "found" or not self.first_slower or self.outcome == "none-slower":
            return self.first_slower if self.outcome == "found" else None
        last = self.steps[-1] if self.steps else None
        why = (f"{last.version} {last.judgement.verdict} after {last.attempt} tr{'y' if last.attempt == 1 else 'ies'}"
               if last else self.outcome)
        return f"after {self.last_not_slower}, at or before {self.first_slower} (stopped: {why})"

    def work_at(self, version: str | None) -> float | None:
        """--metric simulated: `version`'s work per query over the oldest's, from its last step (None: not judged)."""
        return next((s.judgement.work for s in reversed(self.steps) if s.version == version), None)

    def to_json(self) -> dict:
        return {**asdict(self), "answer": self.answer}


Judge = Callable[[str, str, int], Judgement]  # (good, probe, attempt from 0) -> verdict of probe against good


def search(versions: list[str], judge: Judge, tries: int = DEFAULT_TRIES,
           on_step: Callable[[BisectResult], object] | None = None) -> BisectResult:
    """Binary search for the first version whose verdict against versions[0] is slower. The newest is judged
    first (if it is not slower there is nothing to find); then the middle of the bracket (last not slower, first
    slower) until the two are neighbours: 1 + ceil(log2(n - 1)) steps when every step is decided at once.
    `on_step` sees the result after every step (its outcome still "undecided" until the search ends)."""
    if len(versions) < 2:
        raise UserError("bisect: the range holds one release: give an older first and a newer last version")
    if tries < 1:
        raise UserError(f"--tries: expected at least 1, got {tries}")
    result = BisectResult(list(versions))
    good = versions[0]

    def decide(index: int) -> Judgement:
        judgement = Judgement("undecided")
        for attempt in range(tries):
            judgement = judge(good, versions[index], attempt)
            step = Step(len(result.steps) + 1, versions[index], attempt + 1, judgement)
            result.steps.append(step)
            if on_step is not None:
                on_step(result)  # the path so far, e.g. to be written before the next step runs
            if judgement.verdict in DECIDED or judgement.verdict == FAILED or judgement.exit_code:
                break
        return judgement

    def stopped(j: Judgement) -> bool:
        """Sets the outcome of a step that does not count: interrupted, failed, or undecided after every try."""
        if j.interrupted:
            result.outcome, result.exit_code = "interrupted", j.exit_code
        elif j.verdict == FAILED or j.exit_code:
            result.outcome, result.exit_code = "failed", STEP_FAILED
        elif j.verdict not in DECIDED:
            result.outcome, result.exit_code = "undecided", STILL_UNDECIDED
        else:
            return False
        return True

    lo, hi = 0, len(versions) - 1
    newest = decide(hi)
    if stopped(newest):
        return result
    if newest.verdict != SLOWER:
        result.outcome, result.exit_code, result.last_not_slower = "none-slower", NONE_SLOWER, versions[hi]
        return result
    while hi - lo > 1:
        mid = (lo + hi) // 2
        j = decide(mid)
        if stopped(j):
            result.last_not_slower, result.first_slower = versions[lo], versions[hi]  # the bracket so far
            return result
        if j.verdict == SLOWER:
            hi = mid
        else:
            lo = mid
    result.outcome, result.exit_code = "found", FOUND
    result.first_slower, result.last_not_slower = versions[hi], versions[lo]
    return result


def expected_steps(n: int) -> int:
    """Steps of a search over n versions in which every step is decided at its first try (at most)."""
    return 1 + math.ceil(math.log2(n - 1)) if n > 2 else 1


def release_range(engine: str, first: str, last: str, published: list[str]) -> list[str]:
    """The published releases from `first` to `last` (both included), oldest first, one per release (the newest
    rebuild of each), as a user names them (PostgreSQL's 16.4.0 is 16.4). Unknown versions and a reversed range
    are a UserError."""
    if engine not in SOURCES:
        raise UserError(f"bisect: engine {engine!r} has no released binaries (known: {', '.join(sorted(SOURCES))})")
    lo = resolve_version(engine, first, published)
    hi = resolve_version(engine, last, published)
    if version_key(lo) > version_key(hi):
        raise UserError(f"bisect: reversed range: {first} ({release_name(engine, lo)}) is newer than {last} "
                        f"({release_name(engine, hi)}); give the older version first")
    newest: dict[str, str] = {}
    for p in published:
        if version_key(lo) <= version_key(p) <= version_key(hi):
            name = release_name(engine, p)
            if name not in newest or version_key(p) > version_key(newest[name]):
                newest[name] = p
    ordered = sorted(newest, key=lambda n: version_key(newest[n]))
    if len(ordered) < 2:
        raise UserError(f"bisect: {first}..{last} holds one release ({ordered[0]}): nothing to bisect")
    return ordered


def parse_threshold(value: str) -> float:
    """`--threshold 5%` or 0.05: the smallest slowdown a step calls slower (the experiment's min_effect)."""
    number: object = value
    if not value.strip().endswith("%"):
        with contextlib.suppress(ValueError):  # else said by fraction(), with the expected form
            number = float(value)
    return fraction(number, "--threshold")


@dataclass(frozen=True)
class StepSettings:
    """What every step's experiment holds besides its two targets."""
    engine: str
    benchmark: str
    threshold: float
    time_s: float
    warmup_s: float
    budget_s: float
    threads: int = 1
    table_size: int = 100_000
    config: dict[str, str] = field(default_factory=dict)
    metric: str = "wall"  # what decides a step (usecases/bisect_metrics.py)

    def check(self) -> None:
        if self.engine not in SOURCES:
            raise UserError(f"bisect: engine {self.engine!r} has no released binaries (known: "
                            f"{', '.join(sorted(SOURCES))})")
        if self.benchmark not in builtin():
            raise UserError(f"--benchmark: {self.benchmark!r} is not a catalog benchmark (`dbperf list` lists them)")
        for name, value in (("--time", self.time_s), ("--budget", self.budget_s)):
            if not value > 0:
                raise UserError(f"{name}: expected a positive duration, got {value}")
        if self.threads < 1:
            raise UserError(f"--threads: expected at least 1, got {self.threads}")
        if self.table_size < 1:
            raise UserError(f"--table-size: expected at least 1, got {self.table_size}")
        for key in self.config:  # with the remedy that fits a bisect (no target to set a port or a dsn on)
            refusal = lab_owned_refusal(self.engine, key, "bisect", bisect=True)
            if refusal:
                raise UserError(refusal)
        server_settings(self.config, self.engine, "bisect")  # checked before the first release is fetched


def check_config_names(settings: StepSettings, versions: list[str]) -> None:
    """Each --config name against the server's own list, where a binary of the range is at hand
    (servers/setting_names.py): before any release is fetched or server started."""
    refusal = unknown_setting(settings.engine, settings.config, versions, "bisect --config")
    if refusal:
        raise UserError(refusal)


def target_name(engine: str, version: str) -> str:
    return f"{engine}-{version}"


def step_experiment(s: StepSettings, good: str, probe: str, budget_s: float) -> str:
    """The A/B experiment of one step, as TOML (strings and lists written as JSON, which TOML reads the same)."""
    def target(version: str) -> str:
        lines = [f"name = {json.dumps(target_name(s.engine, version))}",
                 f"source = {json.dumps(f'{s.engine}@{version}')}"]
        if s.config:
            lines.append("config = { " + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in
                                                   s.config.items()) + " }")
        return "[[target]]\n" + "\n".join(lines) + "\n"

    return (f"# dbperf bisect: one step, {good} (base) against {probe}\n"
            "[run]\n"
            f"benchmarks = [{json.dumps(s.benchmark)}]\n"
            f"threads = [{s.threads}]\n"
            f"table_size = {s.table_size}\n"
            f"time = \"{s.time_s:g}s\"\n"
            f"warmup = \"{s.warmup_s:g}s\"\n"
            "repeats = \"auto\"\n"
            f"budget = \"{budget_s:g}s\"\n"
            f"min_effect = {s.threshold:g}\n"
            f"base = {json.dumps(target_name(s.engine, good))}\n\n"
            + target(good) + "\n" + target(probe))


def judgement_of(directory: Path, target: str, benchmark: str, threads: int, exit_code: int) -> Judgement:
    """The probed target's cell of a step's results directory, as the report decides it."""
    where = str(directory)
    try:
        meta, records, _ = read_results(directory)
    except UserError:
        return Judgement(FAILED, directory=where, exit_code=exit_code)  # nothing written (interrupted early)
    cell = build_matrix(meta, records).cell(target, benchmark, threads)
    if cell is None or not cell.runs:
        return Judgement(FAILED, directory=where, exit_code=exit_code)
    v = cell.deciding_verdict
    if v is None:
        return Judgement("undecided", cell.rqps, rounds=len(cell.runs), directory=where, exit_code=exit_code)
    return Judgement(v.verdict, cell.rqps, v.lower, v.upper, len(cell.runs), v.metric, where, exit_code)


def judgements_of(deciding: Judgement, settings: StepSettings, probe: str) -> list[Judgement]:
    """The wall clock's and the CPU time's verdicts of the probe's cell in the run `deciding` came from (its
    directory), each as a Judgement (metric "wall", "cpu"); `deciding` alone when the run has no cell to read."""
    if deciding.directory is None:
        return [deciding]
    try:
        meta, records, _ = read_results(Path(deciding.directory))
    except UserError:
        return [deciding]
    cell = build_matrix(meta, records).cell(target_name(settings.engine, probe), settings.benchmark,
                                            settings.threads)
    if cell is None or not cell.runs:
        return [deciding]
    out = []
    for metric, v in (("wall", cell.verdict_detail), ("cpu", cell.cpu_verdict_detail)):
        if v is not None:
            out.append(Judgement(v.verdict, cell.rqps if metric == "wall" else None, v.lower, v.upper,
                                 len(cell.runs), metric, deciding.directory, deciding.exit_code))
    return out or [deciding]


RESUMABLE = ("running", "interrupted")  # outcomes of a search cut short (running: killed between two steps)


def resumable(doc: dict) -> bool:
    """Whether the bisect of a bisect.json goes on with --resume: cut short, or stopped by an error (a release not
    fetched, a tool that failed: its `error`) rather than by a step's verdict; failed, it is not taken for cut
    short."""
    return doc.get("outcome") in RESUMABLE or (doc.get("outcome") == FAILED and bool(doc.get("error")))


WRITES_INTO = "bisect writes only into a new or empty directory: choose another --out"


def _span(doc: dict) -> str:
    versions = doc.get("versions")
    return f"{versions[0]}..{versions[-1]}" if isinstance(versions, list) and versions else "?"


def _settings_of(doc: dict) -> dict:
    """A path's settings; one written before `--metric` existed was decided by the wall clock."""
    settings = doc.get("settings")
    return {"metric": "wall", **settings} if isinstance(settings, dict) else {}


def describe(doc: dict) -> str:
    """The bisection a bisect.json holds, as a user would name it: postgres 13.23..17.0, point-query, 5.0%."""
    settings = _settings_of(doc)
    threshold = settings.get("threshold")
    slower = f"slower at {threshold:.1%}" if isinstance(threshold, int | float) else f"threshold {threshold!r}"
    by = "" if settings.get("metric") == "wall" else f" by {settings.get('metric')} work"
    return f"{settings.get('engine', '?')} {_span(doc)}, {settings.get('benchmark', '?')}, {slower}{by}"


def _read_path(path: Path) -> dict:
    """A bisect.json: a UserError naming it when it cannot be read or is not a bisect's."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"--out {path.parent}: no bisect to resume (no {PATH_FILE})") from None
    except (OSError, ValueError, RecursionError) as e:
        raise UserError(f"{path}: unreadable ({e})") from None
    if not isinstance(doc, dict):
        raise UserError(f"{path}: not a bisect path (not a JSON object)")
    return doc


def _differences(doc: dict, settings: StepSettings, versions: list[str]) -> str:
    """What differs between the bisect in a folder and this one, for the refusal of --resume."""
    before = _settings_of(doc)
    now = json.loads(json.dumps(asdict(settings)))
    parts = [f"{k} {before.get(k)!r} there, {v!r} here" for k, v in now.items() if before.get(k) != v]
    if doc.get("versions") != versions:
        parts.append(f"releases {_span(doc)} there, {versions[0]}..{versions[-1]} here")
    return "; ".join(parts)


def earlier_steps(out: Path, settings: StepSettings, versions: list[str]) -> list[Step]:
    """The steps of the search cut short in `out` (its bisect.json), for `--resume`. Refused in one line: no
    bisect there, one that ended, or another bisection (other settings or another range: its path would not
    replay), named."""
    path = out / PATH_FILE
    doc = _read_path(path)
    if not resumable(doc):
        raise UserError(f"--out {out}: its bisect ended ({doc.get('outcome')}): nothing to resume (it was "
                        f"{describe(doc)})")
    if _settings_of(doc) != json.loads(json.dumps(asdict(settings))) or doc.get("versions") != versions:
        raise UserError(f"--out {out}: holds the bisect of {describe(doc)}, run with other settings or another range "
                        f"of releases ({_differences(doc, settings, versions)}); resume it with the same ones")
    try:
        return [Step(s["number"], s["version"], s["attempt"], Judgement(**s["judgement"])) for s in doc["steps"]]
    except (KeyError, TypeError) as e:
        raise UserError(f"{path}: not a bisect path ({e})") from None


def _held(directory: Path) -> list[str]:
    """What a directory holds besides a claim's lock file ([] when it does not exist)."""
    try:
        return sorted(p.name for p in directory.iterdir() if p.name != LOCK) if directory.is_dir() else []
    except OSError as e:
        raise UserError(f"--out {directory}: cannot read the directory: {e.strerror or e}") from None


def _not_empty(directory: Path, held: list[str]) -> str:
    if PATH_FILE in held:
        try:
            doc = _read_path(directory / PATH_FILE)
        except UserError:
            doc = {}
        if doc.get("outcome") == FAILED and doc.get("error"):
            return (f"--out {directory}: already holds a bisect ({describe(doc)}) that failed ({doc['error']}); "
                    "give another directory, or --resume to go on with it once that is fixed")
        if resumable(doc):
            return (f"--out {directory}: already holds a bisect ({describe(doc)}), cut short; give another "
                    "directory, or --resume to go on with it")
        return (f"--out {directory}: already holds a bisect ({describe(doc)}) that ended ({doc.get('outcome')}); "
                "give another directory")
    if META in held:
        return f"--out {directory}: holds a dbperf run's results; {WRITES_INTO}"
    more = ", ..." if len(held) > 3 else ""
    return f"--out {directory}: not empty (holds {', '.join(held[:3])}{more}); {WRITES_INTO}"


def check_out(directory: Path, resume: bool) -> None:
    """`--out` as `dbperf run` takes it, before anything is fetched or started: a new or empty directory; with
    --resume, a bisect's (whose settings and range earlier_steps checks once the range is known); writable."""
    if directory.exists() and not directory.is_dir():
        raise UserError(f"--out {directory}: exists and is not a directory; {WRITES_INTO}")
    held = _held(directory)
    if resume and PATH_FILE not in held:
        what = ": it holds a dbperf run's results" if META in held else ""
        raise UserError(f"--out {directory}: no bisect to resume (no {PATH_FILE}){what}")
    if not resume and held:
        raise UserError(_not_empty(directory, held))
    check_writable(directory)


@contextlib.contextmanager
def claimed(directory: Path, resume: bool) -> Iterator[None]:
    """The bisect's folder, created and held while the search runs (storage/results.py's DirectoryClaim), and
    checked again once held: of two bisects started together on one --out, the second is refused. A refused
    bisect leaves no folder it created."""
    created = not directory.exists()
    claim = None
    try:
        with writing(directory):
            directory.mkdir(parents=True, exist_ok=True)
        claim = DirectoryClaim(directory)
        check_out(directory, resume)
    except BaseException:
        if claim is not None:
            claim.release()
        if created:
            with contextlib.suppress(OSError):
                directory.rmdir()
        raise
    try:
        yield
    finally:
        claim.release()


def release_judge(settings: StepSettings, out: Path, yes: bool = False, err: Console = PROGRESS,
                  earlier: Sequence[Step] = (), prefix: str = "") -> Judge:
    """Each step: its experiment written as out/NN-VERSION.toml, run into out/NN-VERSION/ (a retry: -tryK), with
    the budget doubled at every try (`prefix` before NN: the confirmation's run is confirm-NN-VERSION). `earlier`:
    the steps of a search cut short (`earlier_steps`), replayed in order; the one interrupted, or one whose
    directory exists without a step in the path (killed), goes on with its run."""
    counter = [0]

    def judge(good: str, probe: str, attempt: int) -> Judgement:
        counter[0] += 1
        stem = f"{prefix}{counter[0]:02d}-{probe}" + (f"-try{attempt + 1}" if attempt else "")
        before = earlier[counter[0] - 1] if counter[0] <= len(earlier) else None
        if before is not None and (before.version, before.attempt) != (probe, attempt + 1):
            raise UserError(f"bisect --resume: step {counter[0]} was {before.version} (try {before.attempt}) "
                            f"before and is {probe} (try {attempt + 1}) now: the earlier path does not replay")
        if before is not None and not before.judgement.interrupted:
            say(f"dbperf: bisect step {counter[0]}: {good} against {probe} (try {attempt + 1}): kept from before the "
                f"resume", err)
            return before.judgement
        budget = settings.budget_s * 2 ** attempt
        experiment = out / f"{stem}.toml"
        with writing(experiment):
            out.mkdir(parents=True, exist_ok=True)
            experiment.write_text(step_experiment(settings, good, probe, budget))
        status = meta_status(out / stem)
        kept = out / stem / EXPERIMENT
        if status == "complete" and kept.is_file() and kept.read_text() == experiment.read_text():
            # measured, but killed before the path was written (another experiment there: the run refuses it)
            return judgement_of(out / stem, target_name(settings.engine, probe), settings.benchmark,
                                settings.threads, 0)
        say(f"dbperf: bisect step {counter[0]}: {good} against {probe} (try {attempt + 1}, budget {budget:g} s)"
            + (": resuming its run" if status is not None else ""), err)
        end = run_experiment(experiment, out / stem, keep_data=False, yes=yes, err=err, resume=status is not None)
        return judgement_of(end.directory, target_name(settings.engine, probe), settings.benchmark,
                            settings.threads, end.exit_code)

    return judge


def write_path(out: Path, result: BisectResult, settings: StepSettings) -> Path:
    """out/bisect.json: the range, the settings and every step, for the record. Replaced whole (written beside
    and renamed), so that an interrupt or a full disk mid-write leaves the path of the step before."""
    path = out / PATH_FILE
    write_whole(path, (json.dumps({"dbperf_bisect": 1, "settings": asdict(settings), **result.to_json()},
                                  indent=2) + "\n").encode())
    return path


def _interval(step: Step) -> str:
    j = step.judgement
    if j.lower is None or j.upper is None:
        return "–"
    return f"[{j.lower:+.1%}, {j.upper:+.1%}]"


def _work(step: Step) -> str:
    w = step.judgement.work
    return "–" if w is None else f"{w:.4f}"


def _change(step: Step) -> str:
    w = step.judgement.work
    return "–" if w is None else f"{w - 1:+.2%}"


def path_view(result: BisectResult) -> View:
    """The path the search took, a row per step (drawn by the format registry); then, for --metric simulated, the
    found step's wall-clock confirmation."""
    if result.metric == "simulated":
        rows = tuple(Row((str(s.number), s.version, _work(s), _change(s), s.judgement.verdict,
                          s.judgement.directory or "–")) for s in result.steps)
        block = Block("", "", ("step", "version", "work per query / oldest's", "change", "verdict (simulated)",
                               "counts"), rows, text_columns=0, left=(1, 4, 5))
    else:
        rows = tuple(Row((str(s.number), s.version, str(s.attempt),
                          "–" if s.judgement.rqps is None else f"{s.judgement.rqps:.3f}", _interval(s),
                          s.judgement.verdict + ("" if s.judgement.metric == "wall" else f" ({s.judgement.metric})"),
                          str(s.judgement.rounds), s.judgement.directory or "–")) for s in result.steps)
        block = Block("", "", ("step", "version", "try", "rQPS", "change interval", "verdict", "rounds",
                               "results"), rows, text_columns=0, left=(1, 5, 7))
    sections = [Section(block=block)]
    if result.confirmation:
        title = (f"the step confirmed by the wall clock: {result.first_slower} against {result.last_not_slower} "
                 "(reported, not deciding)")
        rows = tuple(Row((j.metric, "–" if j.rqps is None else f"{j.rqps:.3f}",
                          "–" if j.lower is None or j.upper is None else f"[{j.lower:+.1%}, {j.upper:+.1%}]",
                          j.verdict, str(j.rounds), j.directory or "–")) for j in result.confirmation)
        sections.append(Section(title=title, block=Block("", "", ("measured on", "rQPS", "change interval",
                                                                  "verdict", "rounds", "results"), rows,
                                                         text_columns=0, left=(0, 3, 5))))
    return View("bisect", "bisect path", tuple(sections))


@dataclass
class WallBisect:
    """The default metric of `dbperf bisect`: every step an A/B run decided by the sequential verdicts."""
    settings: StepSettings
    out: Path
    yes: bool = False
    err: Console = PROGRESS
    earlier: Sequence[Step] = ()

    def judge(self) -> Judge:
        return release_judge(self.settings, self.out, self.yes, self.err, self.earlier)

    def finish(self, result: BisectResult, written: Callable[[BisectResult], object]) -> None:
        """Nothing to add: the wall clock decided every step."""
