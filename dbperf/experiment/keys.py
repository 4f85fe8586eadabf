"""Every key of an experiment's `[run]` and `[[target]]` and of a workload file, declared once: type, unit, default,
one line of documentation and, for a value that stands alone, its check. `checked()` validates a section in one
loop (unknown keys, then each key present), with errors of one line naming the file and the key; values whose check
needs other keys (benchmarks resolved against the catalog, build variants, settings of an engine) are checked by
their section's parser right after. `dbperf keys` prints this table (pyperf's _metadata.py is the model)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dbperf import engines
from dbperf.errors import UserError
from dbperf.experiment.auto_time import AUTO, check_auto_time
from dbperf.experiment.build_variants import PGO_SCOPES, WHOLE_PROGRAM
from dbperf.experiment.durations import parse_duration
from dbperf.experiment.load_model import ARRIVALS
from dbperf.experiment.load_model import percentiles as load_percentiles
from dbperf.experiment.load_model import rate as load_rate
from dbperf.experiment.steady import check_steady
from dbperf.host.cpus import check_cpus
from dbperf.host.process_variants import ALLOCATORS, HUGEPAGES
from dbperf.host.remedies import NAMES as REMEDY_NAMES
from dbperf.host.remedies import check_remedies
from dbperf.names import check_name

Check = Callable[[Any, str], Any]
ORDERS = ("alternate", "random")  # of the targets within a round (runner/rounds.py)
# Clean rounds a side before `repeats = "auto"` may stop, even on its budget: the sequential verdict
# (stats/sequential.py) cannot call a cell before its 9th round (a round multiplies its wealth by less than
# 1 + LAMBDA, and a call needs 1 / alpha), so a budget stop any sooner would decide nothing at all
# (tests/test_sequential.py checks the two agree).
MIN_ROUNDS = 9
DEFAULT_MIN_EFFECT = 0.02  # the smallest change a verdict calls faster or slower (`min_effect`)
AGGREGATES = ("median", "trimmed")
WRITE_MODES = ("restore", "cumulative")
RUN_ORDERS = (*ORDERS, "duet", "slices")  # duet: orders/duet_rounds.py; slices: orders/slice_rounds.py
EXPLAIN = ("disagreements", "none")  # after the run: usecases/explain_run.py


def integer(minimum: int, maximum: int | None = None) -> Check:
    def check(value: Any, where: str) -> int:
        if (isinstance(value, bool) or not isinstance(value, int) or value < minimum
                or (maximum is not None and value > maximum)):
            bound = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
            raise UserError(f"{where}: expected an integer {bound}, got {value!r}")
        return value
    return check


def integer_or_auto(minimum: int, maximum: int) -> Check:
    counted = integer(minimum, maximum)

    def check(value: Any, where: str) -> int | str:
        if value == "auto":
            return value
        try:
            return counted(value, where)
        except UserError:
            raise UserError(f"{where}: expected an integer from {minimum} to {maximum} or \"auto\", got {value!r}"
                            ) from None
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


def cell_duration(value: Any, where: str) -> float:
    """A cell's time or warm-up: its limit is per cell."""
    return parse_duration(value, where, per="per cell")


MIN_CELL_TIME_S = 0.01  # below it a cell measures mostly its own start and stop (a few queries, the timer's tick)


def cell_time(value: Any, where: str) -> float | str:
    """A cell's measured time, or "auto": sized to the noise by pilot rounds (experiment/auto_time.py). Refused below
    MIN_CELL_TIME_S, where the run would claim its folder and then fail every cell."""
    if value == AUTO:
        return AUTO
    time_s = cell_duration(value, where)
    if 0 < time_s < MIN_CELL_TIME_S:
        raise UserError(f"{where}: {value!r} is shorter than the {MIN_CELL_TIME_S * 1000:g} ms a cell needs to measure "
                        "queries rather than its own start and stop")
    return time_s


def post_write_wait(value: Any, where: str) -> float | str:
    return "harness" if value == "harness" else parse_duration(value, where)


def engine(value: Any, where: str) -> str:
    if value not in engines.NAMES:
        raise UserError(f"{where.rsplit('.', 1)[0]}: unknown engine {value!r} (known: {', '.join(engines.NAMES)})")
    return str(value)


def port(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise UserError(f"{where}: expected a port number")
    return value


def name(value: Any, where: str) -> str:
    return check_name(value, where.rsplit(".", 1)[0])


def fraction(value: Any, where: str) -> float:
    """A relative effect: 0.02 or "2%", above 0 and below 1."""
    number = value
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            number = float(value.strip()[:-1]) / 100
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 < number < 1:
        raise UserError(f"{where}: expected a fraction such as 0.02 or \"2%\" (above 0, below 100%), got {value!r}")
    return float(number)


MAX_REPEATS = 2 ** 53  # beyond, the plan's counts and estimates (floats) are no longer exact; a huge run below it is
# the estimate's to refuse without --yes (usecases/run.py), and runs planned lazily with it
MAX_THREADS = 4096  # client threads of one driver: beyond, its stacks alone outgrow a host, and no server takes them


def repeats(value: Any, where: str) -> int | str:
    if value == "auto":
        return "auto"
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"{where}: expected an integer >= 1 or \"auto\", got {value!r}")
    if value > MAX_REPEATS:
        raise UserError(f"{where}: {value:.3g} repeats: at most 2^53 ({MAX_REPEATS:,}), the counts the lab plans "
                        "and estimates exactly")
    return value


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
    Key("time", "duration or \"auto\"", "measured time per cell, at most a week; auto: each (benchmark, threads) "
        "first runs pilot rounds (not kept), then its rounds at the length that decides most per minute from their "
        "noise: sqrt(b·c/a), a the per-process and b the per-second variance of a round's ratio, c its overhead, "
        "weighed over the pilot's uncertainty about a, within bounds; with a budget, the pilot is sized to the "
        "group's share and the length to the rounds the share has left at the rule's price there "
        "(stats/round_length.py; meta.json's `auto_time`, one line per group)",
        "10s", "s", cell_time),
    Key("auto_time", "{ pilot, pilot_rounds, shortest, longest }", "time = \"auto\": the pilot rounds' length and "
        "count (the length at most this under a budget), and the bounds of the length chosen",
        "3s, 3, 0.3s, 10s", "", check_auto_time),
    Key("warmup", "duration", "unmeasured time before each cell, at most a week", "2s", "s", cell_duration),
    Key("steady", "true | { tolerance, window, interval, max_warmup }", "steady state: warm up until the last "
        "`window` throughput samples of `interval` agree within `tolerance` ((max - min) / mean), at least `warmup`, "
        "at most `max_warmup`; a cell that never settled is flagged w (experiment/steady.py)",
        "off; true: 0.05, 3, 1s, 30s", "", check_steady),
    Key("repeats", "integer >= 1 or \"auto\"", "repeats (rounds) per (benchmark, threads), interleaved; auto: at "
        f"least {MIN_ROUNDS} clean rounds, then more until every cell is decided or the budget is spent", "3", "",
        repeats),
    Key("budget", "duration", "repeats = \"auto\": time for the measured rounds of the whole run", "10m", "s",
        duration),
    Key("base", "target name", "the target rQPS is relative to", "the first target"),
    Key("seed", "integer >= 0", "seed of the data and of the parameters", "1", "", integer(0)),
    Key("aggregate", " | ".join(AGGREGATES), "center of the repeats", "median", "", one_of(*AGGREGATES)),
    Key("prepared", "boolean", "prepared statements; false sends SQL text every time", "true", "", boolean),
    Key("min_effect", "fraction or \"N%\"", "smallest change a verdict calls faster or slower", "0.02", "", fraction),
    Key("cpus", "{ client = \"0\", server = \"1\" } | \"off\"", "CPUs of the driver and of lab-started servers, "
        "pinned from their start (an in-process engine with several threads gets both)",
        "first two CPUs when there are two or more", "", check_cpus),
    Key("remedies", "list of " + " | ".join(REMEDY_NAMES) + " | \"none\"", "noise remedies applied before every "
        "cell of the SQLite targets (host/remedies/; recorded in each cell's record; benchmarks/verdicts/states.py "
        "--remedies measures them); a target's own `remedies` replaces it", "the lab's defaults (none yet)", "",
        check_remedies),
    Key("processes", "integer from 1 to 32 | \"auto\"", "each lab-started server target is started this many times "
        "over a (benchmark, threads)'s rounds, restarted between equal blocks of them, and the verdict's unit is the "
        "block (stats/process_level.py): it then speaks of the builds, not of one process each; 1: one process a "
        "target for the run. 5 or more to decide changes of a few %; \"auto\": 5 to 32, the count whose interval "
        "is narrowest for the first group's share, round and restart times, chosen after its first round and said",
        "1", "", integer_or_auto(1, 32)),
    Key("aa", "boolean", "also run the base against itself (target BASE-aa): the report counts the A/A cells called "
        "changed", "false", "", boolean),
    Key("simulated", "boolean", "after the timed rounds, instructions and estimated cycles per query of every (target, "
        "benchmark) under cachegrind, one thread: the report's deterministic work per query beside each rQPS (fewer, "
        "more or same estimated cycles: work, not speed; with the host's `dbperf calibrate` model, a predicted CPU "
        "change too) (runner/simulated_tier.py)", "false", "", boolean),
    Key("explain", " | ".join(EXPLAIN), "disagreements: after a run with the simulated tier, each cell whose measured "
        "and simulated tiers disagree is explained on its own (`dbperf explain DIR`: the per-function diff of every "
        "simulated counter and its leads, on stderr and in DIR/explain.json)", "none", "", one_of(*EXPLAIN)),
    Key("order", " | ".join(RUN_ORDERS), "order of the targets within a round: reversed every other round, drawn "
        "at random from the seed (recorded), or duet: the base and each other target run at the same moment, "
        "pinned to a CPU each, released together (orders/duet_rounds.py; SQLite targets on 2+ CPUs, else interleaved "
        "rounds, said once), or slices: a round is one driver process in which every target takes turns every "
        "`slice`, each measured for `time` of its own slices (orders/slice_rounds.py; all SQLite targets or all "
        "servers run by the lab's driver, the same process settings for all, closed loop, fixed warm-up)",
        "alternate", "",
        one_of(*RUN_ORDERS)),
    Key("slice", "duration", "order = \"slices\": how long each target runs before the next takes its turn (at least "
        "1 ms and shorter than `time`; its time series is one interval per slice)", "0.02s", "s", duration),
    Key("turn_checkpoint", "boolean", "order = \"slices\", SQLite targets, cells whose benchmark writes: each "
        "target's WAL is checkpointed (PASSIVE, as SQLite's own: synced, copied, the database synced) at the start of "
        "each of its turns, inside its own slice, instead of in whichever commit passes wal_autocheckpoint (off on its "
        "connections), so that its writes' "
        "syncs are its own time, not a stall in another target's turn (driver/src/turn_checkpoint.rs; each side's "
        "`turns` says its checkpoints and the time its events ran into the next target's slice)", "false", "",
        boolean),
    # Harness fidelity (runner/post_write.py): how writes carry over, and the step between writes and reads.
    Key("writes", " | ".join(WRITE_MODES), "restore: every write cell starts from the loaded data; cumulative: "
        "writes accumulate across the run, as the harness ([Callaghan, mytools])", "restore", "", one_of(*WRITE_MODES)),
    Key("post_write", "boolean", "before the first read after writes: VACUUM ANALYZE + CHECKPOINT (PostgreSQL), "
        "flush dirty pages (InnoDB), wal_checkpoint(TRUNCATE) (SQLite), then wait", "true with cumulative writes",
        "", boolean),
    Key("post_write_wait", "duration or \"harness\"", "the wait after the post-write step; harness: 60 s + 1 s per "
        "million rows, at most 1200 s", "harness", "s", post_write_wait),
    Key("resources", "boolean", "I/O per query (driver and server /proc/PID/io, the data's device), engine counters "
        "per query and database sizes (targets/resources.py)", "true", "", boolean),
    # The load model (dbperf/experiment/load_model.py).
    Key("interval", "duration", "time series: events, queries, errors and latency per interval; 0 for none",
        "1s", "s", duration),
    Key("percentiles", "list of numbers in (0, 100]", "latency percentiles reported per cell",
        "[50, 95, 99, 99.9]", "%", load_percentiles),
    Key("rate", "0 < number <= 1e8", "open loop: events per second of a cell (all threads), at least one event in "
        "`time`; latency counts from each event's scheduled start", "closed loop", "events/s", load_rate),
    Key("arrivals", " | ".join(ARRIVALS), "open loop: evenly spaced or Poisson arrivals", "uniform", "",
        one_of(*ARRIVALS)),
    Key("latency_limit", "duration", "open loop: events already this late when due are skipped and counted, "
        "completed ones slower than this counted as late (pgbench -L)", "none", "s", duration),
)
TARGET = (
    Key("name", "name", "the target's name in reports", "required", "", name),
    Key("engine", " | ".join(engines.NAMES), "the engine", engines.DEFAULT.name, "", engine),
    Key("library", "path", "SQLite: the libsqlite3.so to dlopen", "the system's libsqlite3.so.0"),
    Key("config", "table", "SQLite PRAGMAs (read back after setting) or server settings", "{}", "", table),
    Key("source", "\"sqlite@X.Y.Z\" | \"postgres@V\" | \"mariadb@V\" | \"postgres@debian-src\"",
        "SQLite built from that version's amalgamation; a server's released binaries, or built from Debian's "
        "source package (the engine follows)"),
    Key("tree", "path", "instead of source: for SQLite a folder of yours holding the amalgamation (sqlite3.c, "
        "sqlite3.h) or a source tree that makes it (./configure && make sqlite3.c, run in the lab's own copy); for a "
        "server (engine = \"postgres\", \"mariadb\" or \"mysql\") a checkout of its source, built with its recipe "
        "in a kept build tree (buildlab/sources/tree.py); relative to the experiment file; without rev, the tree as "
        "it is, uncommitted and untracked (not ignored) files included, keyed by their content "
        "(buildlab/user_tree.py)", "", "", string),
    Key("rev", "git revision", "with tree: that commit of the checkout (verified as a commit, exported by git "
        "archive into the build cache: the checkout itself is never touched), keyed by its tree", "the tree as it is",
        "", string),
    Key("patches", "list of patch files", "applied in order with patch -p1 (no fuzz) on the lab's copy of the source "
        "(sqlite@X.Y.Z, a tree, or a server's debian-src after Debian's own), relative to the experiment file; each "
        "file's sha256 is in the build's key and manifest, a hunk that fails is one line (buildlab/patches.py)",
        "[]"),
    Key("build", "list of variants",
        "O2 | O3, native, lto, frame-pointers, pgo (with source); bolt (servers from source)", "[\"O2\"]"),
    Key("cflags", "list of options", "compiler options appended last (with source)", "[]"),
    Key("ldflags", "list of -Wl,... options", "linker options alone (with source): the build is the same build "
        "without them linked again, its objects the same (SQLite's kept object; a server's kept build tree); "
        "`dbperf layout --fix` relinks with its fragment this way", "[]"),
    Key("compiler", "\"clang-16\"", "servers built from source: Debian's clang-16 instead of the user's CC",
        "CC (gcc)"),
    Key("lean", "boolean", "servers built from source: the engine's leaner recipe (MySQL: system ICU, zstd, lz4, "
        "zlib and protobuf, no NDB engine, no X plugin; docs/build-lab.md), in its build key and manifest", "false",
        "", boolean),
    Key("pgo_train", "list of workloads", "PGO training set (with build = [..., \"pgo\"])", "[\"train-mix\"]"),
    Key("pgo_partial_training", "boolean", "-fprofile-partial-training in the build that uses the profile (with "
        "pgo; SQLite or a server from source): code the training never ran keeps its optimisation level", "false", "",
        boolean),
    Key("pgo_train_seconds", "seconds", "how long each PGO training workload runs (with pgo; half prepared, half as "
        "SQL text, and a server's per connection count)", "3"),
    Key("pgo_scope", " | ".join(PGO_SCOPES), "servers from source with pgo (MySQL, MariaDB): what is instrumented "
        "and re-optimised; whole: every object; query-path: the recipe's directories only (sql/, storage/innobase/, "
        "mysys/, strings/, vio/); hot-path: the sources of those directories a first training profile showed hot (the "
        "recipe's list, MySQL 9.7.2's); every other object the build without PGO's, from ccache (not with bolt; "
        "docs/build-lab.md); in the build key and manifest", WHOLE_PROGRAM, "", one_of(*PGO_SCOPES)),
    Key("allocator", " | ".join(ALLOCATORS), "preloaded into the process that runs the engine", "", "",
        one_of(*ALLOCATORS)),
    Key("hugepages", " | ".join(HUGEPAGES), "huge pages for the process that runs the engine", "", "",
        one_of(*HUGEPAGES)),
    Key("remedies", "list of remedies | \"none\"", "this target's noise remedies, instead of [run]'s",
        "[run]'s", "", check_remedies),
    Key("binaries", "path", "servers: where the server's binaries are", "Debian's", "", string),
    Key("dsn", "URL", "servers: an external server (no lifecycle); never with a password"),
    Key("password_env", "variable name", "external servers: the password's environment variable", "", "", string),
    Key("password_file", "path", "external servers: a file holding the password", "", "", string),
    Key("port", "1..65535", "lab servers: a fixed port on 127.0.0.1", "a free port", "", port),
    Key("host", "host name", "`dbperf fleet`: the one host this target runs on", "every host of [fleet] hosts", "",
        name),
    Key("driver", "dbperf | sysbench | pgbench", "servers: what runs the cells (tooldrivers/): the lab's driver, "
        "sysbench 1.0 (bundled oltp_* scripts or .lua benchmarks) or pgbench (scripts from the catalog or .sql "
        "benchmarks)", "dbperf", "", one_of("dbperf", "sysbench", "pgbench")),
    Key("driver_options", "list of options", "sysbench/pgbench: options added to the tool's command line (not "
        "connection, password, time or threads)", "[]"),
    Key("socket", "boolean", "lab servers: the driver connects over the server's Unix socket instead of TCP",
        "false", "", boolean),
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
    Key("event", "list of tables", "a weighted mix instead of one event: each [[event]] has a name, a weight > 0 "
        "(pgbench -f file@weight), its transaction and [[event.statement]]s; drawn per event"),
)
STATEMENT = (
    Key("sql", "string", "SQL with {name} placeholders; {table} is a random table", "required"),
    Key("repeat", "integer >= 1", "executions per event, fresh parameters each time", "1", "", integer(1)),
    Key("params", "table", "a generator per placeholder: uniform, zipf, hot, range, digits", "{}"),
    Key("dialect", "table", "SQL per engine where it differs", "{}"),
)

def host_names(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise UserError(f"{where}: expected a non-empty list of host names")
    checked = tuple(check_name(v, where) for v in value)
    duplicate = next((h for h in checked if checked.count(h) > 1), None)
    if duplicate:
        raise UserError(f"{where}: host {duplicate!r} is listed twice")
    return checked


def scheduler_address(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.startswith(("tls://", "tcp://")) or ":" not in value[6:]:
        raise UserError(f"{where}: expected tls://HOST:PORT (or tcp://HOST:PORT), got {value!r}")
    return value


FLEET = (
    Key("scheduler", "tls://HOST:PORT", "`dbperf fleet run`: the Dask scheduler the hosts' workers joined", "", "",
        scheduler_address),
    Key("hosts", "list of host names", "run the whole matrix on each (hosts become a dimension); targets with "
        "`host` run there only", "", "", host_names),
    Key("certs", "directory", "TLS certificates (`dbperf fleet certs`), relative to the experiment file", "", "",
        string),
)

# The replication lab's section (dbperf/experiment/replication_section.py checks the lists and their combinations).
REPLICATION = (
    Key("studies", "list of apply | stale-reads | cross-engine (MariaDB only)", "which studies to run, in this order",
        "[\"apply\", \"stale-reads\"]"),
    Key("replicas", "integer from 1 to 4", "replicas of the primary (studies measure the first; stale reads go "
        "round robin)", "1", "", integer(1, 4)),
    Key("transactions", "integer >= 1", "apply: transactions the primary writes per measurement ([run] "
        "benchmarks and threads are the load)", "20000", "transactions", integer(1)),
    Key("workers", "list of integers >= 0", "apply: slave_parallel_threads of the replica (0: one SQL thread; MySQL: "
        "replica_parallel_workers); PostgreSQL: 1 only (physical replay is one process, there is no parallel-apply "
        "setting)",
        "[0, 2, 4]; PostgreSQL [1]", "threads"),
    Key("modes", "list of conservative | optimistic | aggressive | minimal; MySQL: commit-order | any-order; "
        "PostgreSQL: physical | physical-prefetch", "apply: slave_parallel_mode; MySQL: replica_preserve_commit_order "
        "ON / OFF; PostgreSQL: recovery_prefetch off / on (PG 15+)",
        "[\"conservative\"]; MySQL [\"commit-order\"]; PostgreSQL [\"physical\"]"),
    Key("durability", "list of binlog-crash-safe | no-binlog-durable | no-binlog-nondurable | binlog-non-crash-safe; "
        "PostgreSQL: standby-fsync | standby-no-fsync | no-full-page-writes | primary-sync-commit",
        "apply: the replica's durability ([Nielsen 2014-03-13]'s four settings; PostgreSQL's: the standby's fsync, the "
        "primary's full_page_writes or synchronous_commit)", "all four"),
    Key("binlog_commit_wait_count", "integer >= 0 or list", "apply: the primary's binlog_commit_wait_count (MySQL: "
        "binlog_group_commit_sync_no_delay_count); a list sweeps", "[0]"),
    Key("binlog_commit_wait_usec", "integer >= 0", "apply: the primary's binlog_commit_wait_usec (MySQL: "
        "binlog_group_commit_sync_delay, at most 1000000, 0 at a count of 0)", "10000", "µs",
        integer(0)),
    Key("repeats", "integer >= 1", "runs of every measurement (apply, stale reads, cross-engine, the fdatasync rate): "
        "each figure is their median with their range", "3", "", integer(1)),
    Key("stale_reads", "integer >= 1", "stale reads: probes (write, then read on a replica) per run", "2000", "",
        integer(1)),
    Key("background_threads", "integer >= 0", "stale reads: writers on the primary meanwhile", "1", "threads",
        integer(0, 64)),
    Key("background_rate", "number >= 0", "stale reads: their total rate, open loop (0: as fast as they go)", "200",
        "trx/s"),
    Key("stale_durability", "a durability name", "stale reads: the replicas' durability", "the first of durability"),
    Key("wait_timeout", "duration", "stale reads: MASTER_GTID_WAIT's timeout (MySQL: WAIT_FOR_EXECUTED_GTID_SET's; "
        "PostgreSQL's remote_apply has none)",
        "10s", "s", duration),
)
SECTIONS = {"[run]": RUN, "[[target]]": TARGET, "[fleet]": FLEET, "workload file": WORKLOAD,
            "[[statement]]": STATEMENT, "[replication]": REPLICATION}


def names(keys: tuple[Key, ...]) -> set[str]:
    return {k.name for k in keys}


def checked(doc: dict[str, Any], keys: tuple[Key, ...], where: str) -> dict[str, Any]:
    """The section's keys that have a check, checked; a UserError for an unknown key or a bad value."""
    known = names(keys)
    unknown = sorted(set(doc) - known)
    if unknown:
        raise UserError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
    return {k.name: k.check(doc[k.name], f"{where}.{k.name}") for k in keys if k.check and k.name in doc}
