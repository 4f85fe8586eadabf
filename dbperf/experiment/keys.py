"""Every key of an experiment's `[run]` and `[[target]]` and of a workload file, declared once: type, unit, default,
one line of documentation and, for a value that stands alone, its check. `checked()` validates a section in one
loop (unknown keys, then each key present), with errors of one line naming the file and the key; values whose check
needs other keys (benchmarks resolved against the catalog, build variants, settings of an engine) are checked by
their section's parser right after. `dbperf keys` prints this table (pyperf's _metadata.py is the model)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dbperf.errors import UserError
from dbperf.experiment.durations import parse_duration
from dbperf.names import check_name
from dbperf.runner.process_variants import ALLOCATORS, HUGEPAGES

Check = Callable[[Any, str], Any]
ENGINES = ("sqlite", "postgres", "mariadb")
AGGREGATES = ("median", "trimmed")


def integer(minimum: int, maximum: int | None = None) -> Check:
    def check(value: Any, where: str) -> int:
        if (isinstance(value, bool) or not isinstance(value, int) or value < minimum
                or (maximum is not None and value > maximum)):
            bound = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
            raise UserError(f"{where}: expected an integer {bound}, got {value!r}")
        return value
    return check


def one_of(*choices: str) -> Check:
    def check(value: Any, where: str) -> str:
        if value not in choices:
            raise UserError(f"{where}: expected one of {', '.join(choices)}, got {value!r}")
        return str(value)
    return check


def boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise UserError(f"{where}: expected true or false")
    return value


def string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise UserError(f"{where}: expected a non-empty string")
    return value


def table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise UserError(f"{where}: expected a table")
    return value


def duration(value: Any, where: str) -> float:
    return parse_duration(value, where)


def engine(value: Any, where: str) -> str:
    if value not in ENGINES:
        raise UserError(f"{where.rsplit('.', 1)[0]}: unknown engine {value!r} (known: {', '.join(ENGINES)})")
    return str(value)


def port(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise UserError(f"{where}: expected a port number")
    return value


def name(value: Any, where: str) -> str:
    return check_name(value, where.rsplit(".", 1)[0])


@dataclass(frozen=True)
class Key:
    name: str
    kind: str  # what a value looks like, for `dbperf keys`
    doc: str
    default: str = ""
    unit: str = ""
    check: Check | None = None  # None: checked by the section's parser, with the keys it depends on


RUN = (
    Key("benchmarks", "list of names, groups or workload files", "what to run, in order (`dbperf list`)", "required"),
    Key("tables", "integer >= 1", "sbtest tables per target", "1", "tables", integer(1)),
    Key("table_size", "integer >= 1", "rows per table", "100000", "rows", integer(1)),
    Key("threads", "integer or list", "client threads; a list sweeps, each count once", "[1]", "threads"),
    Key("time", "duration", "measured time per cell, at most a week", "10s", "s", duration),
    Key("warmup", "duration", "unmeasured time before each cell, at most a week", "2s", "s", duration),
    Key("repeats", "integer >= 1", "repeats per (benchmark, threads, target), interleaved", "3", "", integer(1)),
    Key("base", "target name", "the target rQPS is relative to", "the first target"),
    Key("seed", "integer >= 0", "seed of the data and of the parameters", "1", "", integer(0)),
    Key("aggregate", " | ".join(AGGREGATES), "center of the repeats", "median", "", one_of(*AGGREGATES)),
    Key("prepared", "boolean", "prepared statements; false sends SQL text every time", "true", "", boolean),
)
TARGET = (
    Key("name", "name", "the target's name in reports", "required", "", name),
    Key("engine", " | ".join(ENGINES), "the engine", "sqlite", "", engine),
    Key("library", "path", "SQLite: the libsqlite3.so to dlopen", "the system's libsqlite3.so.0"),
    Key("config", "table", "SQLite PRAGMAs (read back after setting) or server settings", "{}", "", table),
    Key("source", "\"sqlite@X.Y.Z\" | \"postgres@V\" | \"mariadb@V\" | \"postgres@debian-src\"",
        "SQLite built from that version's amalgamation; a server's released binaries, or built from Debian's "
        "source package (the engine follows)"),
    Key("build", "list of variants", "O2 | O3, native, lto, frame-pointers, pgo (with source)", "[\"O2\"]"),
    Key("cflags", "list of options", "compiler options appended last (with source)", "[]"),
    Key("pgo_train", "list of workloads", "PGO training set (with build = [..., \"pgo\"])", "[\"train-mix\"]"),
    Key("pgo_partial_training", "boolean", "-fprofile-partial-training", "false", "", boolean),
    Key("allocator", " | ".join(ALLOCATORS), "preloaded into the process that runs the engine", "", "",
        one_of(*ALLOCATORS)),
    Key("hugepages", " | ".join(HUGEPAGES), "huge pages for the process that runs the engine", "", "",
        one_of(*HUGEPAGES)),
    Key("binaries", "path", "servers: where the server's binaries are", "Debian's", "", string),
    Key("dsn", "URL", "servers: an external server (no lifecycle); never with a password"),
    Key("password_env", "variable name", "external servers: the password's environment variable", "", "", string),
    Key("password_file", "path", "external servers: a file holding the password", "", "", string),
    Key("port", "1..65535", "lab servers: a fixed port on 127.0.0.1", "a free port", "", port),
)
WORKLOAD = (
    Key("name", "name", "the catalog name", "the file's name", "", name),
    Key("description", "string", "one line for `dbperf list`", "\"\""),
    Key("group", "point | range | write", "report section", "point"),
    Key("phase", "read | write | final", "write: data restored before each repeat; final: run last", "read"),
    Key("order", "integer >= 1", "position in the catalog", "1000", "", integer(1)),
    Key("transaction", "boolean", "BEGIN ... COMMIT around the event (both count as queries)", "false", "", boolean),
    Key("rows_per_event", "\"table_size\"", "report rows/s = events/s × table_size"),
    Key("vars", "table", "values for ${var} anywhere in the file", "{}"),
    Key("variants", "list of tables", "several entries from one file: name, vars, description"),
    Key("statement", "list of tables", "the event's statements: sql, repeat, params, dialect", "required"),
)
STATEMENT = (
    Key("sql", "string", "SQL with {name} placeholders; {table} is a random table", "required"),
    Key("repeat", "integer >= 1", "executions per event, fresh parameters each time", "1", "", integer(1)),
    Key("params", "table", "a generator per placeholder: uniform, zipf, hot, range, digits", "{}"),
    Key("dialect", "table", "SQL per engine where it differs", "{}"),
)
# The replication lab's section (dbperf/replication/config.py checks the lists and their combinations).
REPLICATION = (
    Key("studies", "list of apply | stale-reads", "which studies to run, in this order",
        "[\"apply\", \"stale-reads\"]"),
    Key("replicas", "integer from 1 to 4", "replicas of the primary (studies measure the first; stale reads go "
        "round robin)", "1", "", integer(1, 4)),
    Key("transactions", "integer >= 1", "apply: transactions the primary writes per measurement ([run] "
        "benchmarks and threads are the load)", "20000", "transactions", integer(1)),
    Key("workers", "list of integers >= 0", "apply: slave_parallel_threads of the replica (0: one SQL thread)",
        "[0, 2, 4]", "threads"),
    Key("modes", "list of conservative | optimistic | aggressive | minimal", "apply: slave_parallel_mode",
        "[\"conservative\"]"),
    Key("durability", "list of binlog-crash-safe | no-binlog-durable | no-binlog-nondurable | binlog-non-crash-safe",
        "apply: the replica's durability (seed 000's four settings)", "all four"),
    Key("binlog_commit_wait_count", "integer >= 0 or list", "apply: the primary's binlog_commit_wait_count; a list "
        "sweeps", "[0]"),
    Key("binlog_commit_wait_usec", "integer >= 0", "apply: the primary's binlog_commit_wait_usec", "10000", "µs",
        integer(0)),
    Key("repeats", "integer >= 1", "apply: measurements per combination", "1", "", integer(1)),
    Key("stale_reads", "integer >= 1", "stale reads: probes (write, then read on a replica) per run", "2000", "",
        integer(1)),
    Key("background_threads", "integer >= 0", "stale reads: writers on the primary meanwhile", "1", "threads",
        integer(0, 64)),
    Key("background_rate", "number >= 0", "stale reads: their total rate, open loop (0: as fast as they go)", "200",
        "trx/s"),
    Key("stale_durability", "a durability name", "stale reads: the replicas' durability", "the first of durability"),
    Key("wait_timeout", "duration", "stale reads: MASTER_GTID_WAIT's timeout", "10s", "s", duration),
)
SECTIONS = {"[run]": RUN, "[[target]]": TARGET, "workload file": WORKLOAD, "[[statement]]": STATEMENT,
            "[replication]": REPLICATION}


def names(keys: tuple[Key, ...]) -> set[str]:
    return {k.name for k in keys}


def checked(doc: dict[str, Any], keys: tuple[Key, ...], where: str) -> dict[str, Any]:
    """The section's keys that have a check, checked; a UserError for an unknown key or a bad value."""
    known = names(keys)
    unknown = sorted(set(doc) - known)
    if unknown:
        raise UserError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
    return {k.name: k.check(doc[k.name], f"{where}.{k.name}") for k in keys if k.check and k.name in doc}
