"""meta.json, typed: what a results directory says of its run (host, driver, targets, benchmarks, settings, status),
decoded and checked once where it is read (storage/results.py) and written from the same types by every writer (the
matrix run, the replication lab, `dbperf import`, the fleet's controller).

Versions. `dbperf_results` is the format's version. A directory of an older version is read by upgrading its JSON
one version at a time (asv's `update_to_N`: UPGRADES[N] turns version N-1 into N) before it is decoded; a directory
of a newer version than this dbperf knows is refused in one line. Fields added within a version carry defaults, so
that directories written before them still read (the spine's first meta.json had no `noise_thresholds`,
`load_model`, `rounds`...). Every field a writer writes is declared here: nothing is dropped by a read and a rewrite
(`dbperf fleet run --resume` rewrites the meta.json it read).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import msgspec

FORMAT_VERSION = 1  # meta.json's "dbperf_results"; bump it with an update_to_N in UPGRADES
VERSION_KEY = "dbperf_results"
# Read back, not stored: meta.json says `running` but no process holds the run's lock (storage/results.py).
DIED = "died"
LAB_DIED = "the lab died while running (killed?)"


class HostMeta(msgspec.Struct, kw_only=True):
    """host/facts.py `host_metadata()`: the machine a run (or a fleet host's part) ran on."""
    hostname: str | None = None
    cpu_model: str | None = None
    cpu_id: str | None = None  # family, model, stepping (x86): the generation a model name may hide
    microcode: str | None = None
    virtualised: bool | None = None
    cores: int | None = None
    kernel: str | None = None
    governor: str | None = None
    clocksource: str | None = None
    compiler: str | None = None
    python: str | None = None
    dbperf_version: str | None = None
    dbperf_commit: str | None = None


class BenchmarkMeta(msgspec.Struct, kw_only=True):
    """A workload of the run as it was measured (catalog/workload.py)."""
    name: str
    group: str
    phase: str | None = None
    source: str | None = None
    queries_per_event: int | float | None = None  # as the workload gives it (an int, mostly)
    sql: list[str] = []


class TargetMeta(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A target as declared (experiment/model.py `Target`), then as built, inspected, started and loaded. Fields
    appear as the run gets to them (`load` once the tables are loaded): absent until then, not null."""
    name: str
    engine: str | None = None  # None: SQLite (engines.DEFAULT), in hand-made and the oldest directories
    # As declared (experiment/model.py Target)
    library: str | None = None
    config: dict[str, str] = {}
    build: dict[str, Any] | None = None  # the build lab's manifest (or the build spec, until it is built)
    process: dict[str, Any] | None = None
    remedies: list[str] = []  # noise remedies applied before each cell (host/remedies/)
    remedies_not_applied: dict[str, str] = {}  # [run]'s remedies this target cannot take, and why
    binaries: str | None = None
    release: str | None = None
    server_build: dict[str, Any] | None = None
    dsn: str | None = None
    password_env: str | None = None
    password_file: str | None = None
    port: int | None = None
    host: str | None = None  # dbperf fleet: the one host this target runs on
    tool: str | None = None
    tool_options: list[str] | None = None
    socket: bool | None = None
    # As applied, inspected and built (runner/targets.py, runner/matrix.py)
    settings: list[tuple[str, str]] | None = None
    engine_version: str | None = None
    library_sha256: str | None = None
    threadsafe: bool | None = None
    trained_on: list[str] = []  # a PGO build's training set: its gains on these benchmarks are not fair ones
    process_variant: dict[str, Any] | None = None
    # Started and loaded (targets/lifecycle.py describe(), the load)
    external: bool | None = None
    server_pid: int | None = None
    log: str | None = None
    data_dir: str | None = None
    restarts: int | None = None
    # `processes` above 1: the planned processes it was started as over the run (new_process), each one's pid
    processes: int | None = None
    server_pids: list[int] | None = None
    load: dict[str, Any] | None = None
    db_bytes_after_load: int | None = None
    db_bytes_at_end: int | None = None
    post_write: list[dict[str, Any]] = []
    error: str | None = None  # its load failed: its cells are recorded as failed


class RoundsMeta(msgspec.Struct, kw_only=True):
    """How many rounds a (benchmark, threads) group ran, and why it stopped (`repeats = "auto"`, runner/rounds.py)."""
    benchmark: str
    threads: int
    rounds: int
    stopped: str | None = None
    planned: int | None = None  # the rounds its budget afforded when it started: the verdict's looks (stats/planned.py)


class RoundLengthMeta(msgspec.Struct, kw_only=True):
    """The length a (benchmark, threads) group's rounds ran at under `time = "auto"`, chosen from its pilot rounds
    (not kept: every round the verdict reads has this length), and the inputs (stats/round_length.py)."""
    benchmark: str
    threads: int
    time_s: float  # each cell's measured time in the group's rounds
    per_process: float | None = None  # a: a round ratio's relative variance that does not fall with the length
    per_second: float | None = None  # b: the part that falls like b / time (relative variance × seconds)
    overhead_s: float  # c: a round's fixed time (start, warm-up, data restored) per second it measures
    reason: str
    # The choice over the pilot's uncertainty about a (stats/round_length.py choose_from_pilot; None: not made so):
    per_process_low: float | None = None  # a's 10% quantile
    per_process_high: float | None = None  # a's 90% quantile
    freedom: int | None = None  # the between-round variance's degrees of freedom
    expected_cost: float | None = None  # the length's cost over a's range, relative to the best length's (1: as good)
    pilot_s: float | None = None  # the pilot's cell length (None: written before a budget could shorten it)
    budget_left_s: float | None = None  # what the group's budget share had left after its pilot (None: no budget)


class AutoTimeMeta(msgspec.Struct, kw_only=True):
    """`time = "auto"` (experiment/auto_time.py, runner/pilot.py): the pilot, the bounds, and each group's length as
    it was chosen (recorded before the group's rounds run: a resumed run goes on at it)."""
    pilot_rounds: int
    pilot_s: float
    shortest_s: float
    longest_s: float
    lengths: list[RoundLengthMeta] = []

    def length(self, benchmark: str, threads: int) -> RoundLengthMeta | None:
        return next((r for r in self.lengths if (r.benchmark, r.threads) == (benchmark, threads)), None)

    def chose(self, chosen: RoundLengthMeta) -> None:
        """A group's length chosen, in place of an earlier one of the same group."""
        key = (chosen.benchmark, chosen.threads)
        self.lengths = [*(r for r in self.lengths if (r.benchmark, r.threads) != key), chosen]


class Extension(msgspec.Struct, kw_only=True):
    """A sitting that `--extend` gave more budget (runner/resume.py): when it began and how much it added."""
    at: str
    budget_s: float


class ReplicationMeta(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A replication lab's section (replication/lab.py): its spec, how apply is timed, its servers and studies."""
    engine: str | None = None
    studies: list[str] = []
    replicas: int | None = None
    transactions: int | None = None
    workers: list[int] = []
    modes: list[str] = []
    durability: list[str] = []
    commit_wait_counts: list[int] = []
    commit_wait_usec: int | None = None
    repeats: int | None = None
    stale_reads: int | None = None
    background_threads: int | None = None
    background_rate: float | None = None
    stale_durability: str | None = None
    wait_timeout_s: float | None = None
    apply_method: str | None = None
    cpus: int | None = None  # the CPUs the lab could use
    fdatasync_per_s: float | None = None  # the median of fdatasync_runs (one run before they were kept)
    fdatasync_runs: list[float] = []  # the fdatasync rate measured `repeats` times at the start
    servers: list[dict[str, Any]] = []
    study_seconds: dict[str, float] = {}


class ImportedMeta(msgspec.Struct, kw_only=True):
    """`dbperf import`: another tool's output files read as a run."""
    tool: str
    files: list[str] = []
    note: str | None = None


class FleetHostMeta(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One host of a fleet run (fleet/controller.py): its status, its part, and what its own run recorded."""
    status: str | None = None  # pending, running, complete, interrupted, failed, lost
    targets: list[str | TargetMeta] = []  # names until the host's run reports them as built and loaded there
    cells: int | None = None
    cpus: dict[str, Any] | None = None  # `[run].cpus` as planned for this host's CPUs (CpuPlan.describe)
    not_run: int | None = None
    reason: str | None = None
    host: HostMeta | None = None
    worker: str | None = None
    driver: str | None = None
    runtime_dir: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    work_dir: str | None = None


class FleetMeta(msgspec.Struct, kw_only=True):
    scheduler: str | None = None
    run_id: str | None = None
    note: str | None = None
    hosts: dict[str, FleetHostMeta] = {}


class RunMeta(msgspec.Struct, kw_only=True):
    """meta.json. Every writer sets the first block; the others are each writer's own (None: not this kind of run,
    or a directory written before the field existed)."""
    dbperf_results: int = FORMAT_VERSION
    status: str | None = None  # running, complete, interrupted, failed; a fleet run: incomplete; read back: died
    base: str
    targets: list[TargetMeta]
    benchmarks: list[BenchmarkMeta] = []
    threads: list[int] = []
    aggregate: str = "median"
    started_at: str | None = None
    finished_at: str | None = None
    experiment: str | None = None
    host: HostMeta | None = None
    driver: str | None = None
    # The matrix run's settings (runner/matrix.py)
    tables: int | None = None
    table_size: int | None = None
    time_s: float | None = None
    warmup_s: float | None = None
    repeats: int | Literal["auto"] | None = None
    seed: int | None = None
    prepared: bool | None = None
    min_effect: float | None = None
    order: str | None = None
    duet: dict[str, Any] | None = None
    slices: dict[str, Any] | None = None  # order = "slices": the slice and the library copies (orders/slice_rounds.py)
    order_seed: int | None = None
    budget_s: float | None = None
    cpus: dict[str, Any] | None = None
    aa_target: str | None = None
    # `processes = P`: each lab-started server target was started P times over a group's rounds, in blocks; the
    # verdicts' unit is the block (stats/process_level.py). None or 1: one process a target for the run
    processes: int | None = None
    # `processes = "auto"`: why the count above was chosen (None: it was set, or not yet chosen)
    processes_chosen: str | None = None
    noise_thresholds: dict[str, float] | None = None
    steady: dict[str, Any] | None = None
    load_model: dict[str, Any] | None = None
    data_restore: str | None = None
    writes: str | None = None
    post_write: bool | None = None  # the experiment's switch; a target's `post_write` lists the steps it ran
    post_write_wait_s: float | None = None
    runtime_dir: str | None = None
    rounds: list[RoundsMeta] | None = None
    auto_time: AutoTimeMeta | None = None  # time = "auto": the pilot, the bounds, the lengths (`time_s` is then None)
    # Other kinds of run
    replication: ReplicationMeta | None = None
    imported: ImportedMeta | None = None
    fleet: FleetMeta | None = None
    resumed_at: list[str] | None = None
    extended: list[Extension] | None = None
    # False: a run the lab composed for its own question (a layout --fix A/B), kept out of the history, also when it
    # is resumed or extended
    in_history: bool | None = None

    @property
    def status_note(self) -> str | None:
        """Why the status is what it is, when it was read back rather than recorded (a lab that died)."""
        return LAB_DIED if self.status == DIED else None

    @property
    def hostname(self) -> str:
        return (self.host.hostname if self.host else None) or "unknown"

    def target(self, name: str) -> TargetMeta | None:
        return next((t for t in self.targets if t.name == name), None)

    @property
    def target_names(self) -> list[str]:
        return [t.name for t in self.targets]

    def replace(self, **changes: Any) -> RunMeta:
        return msgspec.structs.replace(self, **changes)

    def set_target(self, name: str, **changes: Any) -> TargetMeta:
        """A target's part with fields set from a writer's dict (a lifecycle's describe(), the load), in place."""
        i = self.target_names.index(name)
        self.targets[i] = part = updated(self.targets[i], **changes)
        return part

    def start_rounds(self, keep: bool) -> None:
        """The groups' rounds begin: those of an earlier sitting kept (`keep`: a resumed automatic run), or none."""
        self.rounds = list(self.rounds or []) if keep else []

    def end_rounds(self, ended: RoundsMeta, order: dict[tuple[str, int], int]) -> None:
        """A group's rounds ended: recorded in place of an earlier sitting's, the groups in the order they run."""
        rounds = [r for r in self.rounds or [] if (r.benchmark, r.threads) != (ended.benchmark, ended.threads)]
        self.rounds = sorted([*rounds, ended], key=lambda r: order.get((r.benchmark, r.threads), len(order)))


# UPGRADES[n] turns a version n-1 meta.json (as a JSON object) into version n. Version 1 is the first: dbperf has
# written `"dbperf_results": 1` since its first commit, and fields added since carry defaults.
Upgrade = Callable[[dict[str, Any]], dict[str, Any]]
UPGRADES: dict[int, Upgrade] = {}


class MetaError(ValueError):
    """Why a meta.json cannot be read, in one line (the caller names the file)."""


def upgraded(raw: dict[str, Any], current: int = FORMAT_VERSION, upgrades: dict[int, Upgrade] | None = None,
             key: str = VERSION_KEY, what: str = "results format") -> dict[str, Any]:
    """`raw` brought to version `current` (its version under `key`), one update_to_N after another; a newer
    version, or one older than the oldest this dbperf can upgrade, is a MetaError. The build manifest
    (build_manifest.py) is upgraded by the same rule."""
    steps = UPGRADES if upgrades is None else upgrades
    version = raw.get(key)
    oldest = min(steps, default=current + 1) - 1
    if not isinstance(version, int) or isinstance(version, bool) or version < min(oldest, current):
        raise MetaError(f"{what} version {version!r} is not one this dbperf reads (it reads {current})")
    if version > current:
        raise MetaError(f"{what} version {version} is newer than this dbperf reads ({current}): "
                        "read it with a newer dbperf")
    for n in range(version + 1, current + 1):
        raw = {**steps[n](raw), key: n}
    return raw


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# The run's settings every figure derives from, each with what it must be when set: a NaN or a negative one read
# back would go into the report's rates and budgets without a word.
_SETTINGS: dict[str, tuple[Callable[[float], bool], str]] = {
    "time_s": (lambda x: x > 0, "a positive number of seconds"),
    "warmup_s": (lambda x: x >= 0, "a number of seconds, 0 or more"),
    "budget_s": (lambda x: x > 0, "a positive number of seconds"),
    "post_write_wait_s": (lambda x: x >= 0, "a number of seconds, 0 or more"),
    "tables": (lambda x: x >= 1, "a count of 1 or more"),
    "table_size": (lambda x: x >= 1, "a count of 1 or more"),
    "min_effect": (lambda x: 0 < x < 1, "a share between 0 and 1"),
}


def _settings_problem(meta: dict[str, Any]) -> str | None:
    """The first setting (or thread count) that is no value a run writes, naming the field."""
    for name, (fits, what) in _SETTINGS.items():
        value: Any = meta.get(name)
        if _number(value) and not (math.isfinite(value) and fits(value)):
            return f"'{name}' must be {what}, not {value!r}"
    for t in meta.get("threads", []):
        if _number(t) and not (math.isfinite(t) and t >= 1):
            return f"'threads' must be thread counts of 1 or more, not {t!r}"
    return None


def _shape_problem(meta: dict[str, Any]) -> str | None:
    """The fields every report reads, said in words rather than as a decoder's path."""
    targets, benchmarks = meta.get("targets"), meta.get("benchmarks")
    if not isinstance(targets, list) or not targets or not all(
            isinstance(t, dict) and isinstance(t.get("name"), str) for t in targets):
        return "'targets' must be a non-empty list of objects with a 'name'"
    if not isinstance(benchmarks, list) or not all(
            isinstance(b, dict) and isinstance(b.get("name"), str) and isinstance(b.get("group"), str)
            for b in benchmarks):
        return "'benchmarks' must be a list of objects with a 'name' and a 'group'"
    if meta.get("base") not in [t["name"] for t in targets]:
        return f"'base' {meta.get('base')!r} is not one of the targets"
    if not isinstance(meta.get("threads", []), list) or not all(_number(t) for t in meta.get("threads", [])):
        return "'threads' must be a list of numbers"
    if not all(isinstance(t.get("trained_on", []), list) for t in targets):
        return "a target's 'trained_on' must be a list"
    return _settings_problem(meta)


S = TypeVar("S", bound=msgspec.Struct)


def run_meta(raw: Any) -> RunMeta:
    """A meta.json's JSON value, upgraded to the current version and decoded; a MetaError says what is wrong."""
    return decode_versioned(raw, RunMeta, upgraded, _shape_problem)


def decode_versioned(raw: Any, kind: type[S], upgrade: Callable[[dict[str, Any]], dict[str, Any]],
                     shape: Callable[[dict[str, Any]], str | None] = lambda _: None) -> S:
    """A versioned file's JSON value (meta.json, a build manifest): upgraded, its shape checked in words, decoded;
    a MetaError says what is wrong."""
    if not isinstance(raw, dict):
        raise MetaError("expected a JSON object")
    raw = upgrade(raw)
    problem = shape(raw)
    if problem:
        raise MetaError(problem)
    try:
        return msgspec.convert(raw, kind)
    except msgspec.ValidationError as e:
        raise MetaError(str(e)) from None


def encode_file(value: msgspec.Struct) -> bytes:
    """A versioned file's bytes: indented, as meta.json has always been written, with a newline at the end."""
    return msgspec.json.format(msgspec.json.encode(value), indent=2) + b"\n"


def meta_dict(meta: RunMeta) -> dict[str, Any]:
    """meta as JSON builtins, where a JSON report embeds it whole (the run report's and the replication lab's
    "meta")."""
    out: dict[str, Any] = msgspec.to_builtins(meta)
    if meta.status_note:  # read back, never stored: the JSON report says it with the status
        out["status_note"] = meta.status_note
    return out


def meta_part(kind: type[S], fields: dict[str, Any]) -> S:
    """A part of meta.json (a target, the host) from the dict a writer's source gives (asdict, describe())."""
    return msgspec.convert(fields, kind, strict=False)


def updated(part: S, **changes: Any) -> S:
    """`part` with fields set from a writer's dict (a lifecycle's describe(), a host's report)."""
    return msgspec.convert({**msgspec.to_builtins(part), **changes}, type(part), strict=False)
