"""An experiment's `[replication]` section, checked (the keys are declared in dbperf/experiment/keys.py). The
primary's write load is the experiment's `[run]` benchmarks (write workloads) at its `threads`; the lab's one
target says which MariaDB or PostgreSQL and its settings, which the primary and every replica share. What
`workers`, `modes` and `durability` may name depends on the engine (PostgreSQL's are PG_* below)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbperf import engines
from dbperf.engines.mariadb import MARIADB
from dbperf.errors import UserError
from dbperf.experiment import keys

STUDIES = ("apply", "stale-reads", "cross-engine")
DEFAULT_STUDIES = ("apply", "stale-reads")
MODES = ("conservative", "optimistic", "aggressive", "minimal")
# [Nielsen 2014-03-13]: the replica's four durability settings. Each is the my.cnf of the replica.
DURABILITY: dict[str, dict[str, str]] = {
    "binlog-crash-safe": {"log_bin": "replica-bin", "log_slave_updates": "ON", "sync_binlog": "1",
                          "innodb_flush_log_at_trx_commit": "1"},
    "no-binlog-durable": {"log_bin": "replica-bin", "log_slave_updates": "OFF", "sync_binlog": "1",
                          "innodb_flush_log_at_trx_commit": "1"},
    "no-binlog-nondurable": {"innodb_flush_log_at_trx_commit": "2"},
    "binlog-non-crash-safe": {"log_bin": "replica-bin", "log_slave_updates": "ON", "sync_binlog": "0",
                              "innodb_flush_log_at_trx_commit": "0"},
}
# [Nielsen 2017-05-12]: the cross-engine study's replica, with and without fsync on commit (binlog, InnoDB, MyRocks).
CROSS_ENGINE_DURABILITY: dict[str, dict[str, str]] = {
    "fsync": {"log_bin": "replica-bin", "log_slave_updates": "ON", "sync_binlog": "1",
              "innodb_flush_log_at_trx_commit": "1", "rocksdb_flush_log_at_trx_commit": "1"},
    "no-fsync": {"log_bin": "replica-bin", "log_slave_updates": "ON", "sync_binlog": "0",
                 "innodb_flush_log_at_trx_commit": "2", "rocksdb_flush_log_at_trx_commit": "2"},
}
# PostgreSQL streaming replication. Physical replay is one process (the startup process): there is no parallel-apply
# setting, so `workers` is 1 and nothing else. The modes are the replay's real knob, recovery_prefetch (PG 15+).
PG_WORKERS = (1,)
PG_MODES: dict[str, dict[str, str]] = {
    "physical": {"recovery_prefetch": "off"},
    "physical-prefetch": {"recovery_prefetch": "on"},  # prefetch the blocks the WAL will touch (PG 15+)
}
# Durability variants: (the primary's settings, the standby's). The primary otherwise commits with
# synchronous_commit = off so that it generates the load fast (as the MariaDB primary commits non-durably).
PG_DURABILITY: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "standby-fsync": ({}, {"fsync": "on"}),
    "standby-no-fsync": ({}, {"fsync": "off"}),
    # No full-page images in the WAL: less WAL to ship and replay, no torn-page protection on either side.
    "no-full-page-writes": ({"full_page_writes": "off"}, {"fsync": "on"}),
    # The primary's commits wait for the standby to flush the WAL (synchronous_standby_names lists it).
    "primary-sync-commit": ({"synchronous_commit": "on"}, {"fsync": "on"}),
}
PG_LAB_SETTINGS = {"fsync", "full_page_writes", "synchronous_commit", "synchronous_standby_names", "hot_standby",
                   "wal_level", "primary_conninfo", "primary_slot_name", "recovery_prefetch", "max_wal_senders",
                   "max_replication_slots", "listen_addresses", "port", "unix_socket_directories",
                   "hot_standby_feedback", "restore_command", "recovery_target", "archive_mode"}
# Settings the lab sets on the primary or the replicas itself: refused in the target's config of a replication run.
LAB_SETTINGS = {"server_id", "log_bin", "log_slave_updates", "sync_binlog", "innodb_flush_log_at_trx_commit",
                "slave_parallel_threads", "slave_parallel_mode", "binlog_commit_wait_count",
                "binlog_commit_wait_usec", "skip_slave_start", "gtid_domain_id", "read_only", "relay_log",
                "log_basename", "gtid_strict_mode"}


@dataclass(frozen=True)
class ReplicationSpec:
    studies: tuple[str, ...] = DEFAULT_STUDIES
    replicas: int = 1
    transactions: int = 20_000
    workers: tuple[int, ...] = (0, 2, 4)
    modes: tuple[str, ...] = ("conservative",)
    durability: tuple[str, ...] = tuple(DURABILITY)
    commit_wait_counts: tuple[int, ...] = (0,)
    commit_wait_usec: int = 10_000
    repeats: int = 1
    stale_reads: int = 2000
    background_threads: int = 1
    background_rate: float = 200.0
    stale_durability: str = "binlog-crash-safe"
    wait_timeout_s: float = 10.0

    def apply_measurements(self, benchmarks: int, thread_counts: int) -> int:
        return (self.repeats * len(self.durability) * len(self.commit_wait_counts) * benchmarks * thread_counts
                * sum(1 if w == 0 else len(self.modes) for w in self.workers))


def _names(raw: dict[str, Any], key: str, choices: tuple[str, ...], default: tuple[str, ...],
           where: str) -> tuple[str, ...]:
    value = raw.get(key, list(default))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise UserError(f"{where}.{key}: expected a non-empty list of {', '.join(choices)}")
    for v in value:
        if v not in choices:
            raise UserError(f"{where}.{key}: unknown {v!r} (known: {', '.join(choices)})")
    if len(set(value)) != len(value):
        raise UserError(f"{where}.{key}: {next(v for v in value if value.count(v) > 1)!r} is listed twice")
    return tuple(value)


def _integers(raw: dict[str, Any], key: str, default: tuple[int, ...], where: str, maximum: int) -> tuple[int, ...]:
    value = raw.get(key, list(default))
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if (not isinstance(value, list) or not value
            or any(isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= maximum for v in value)):
        raise UserError(f"{where}.{key}: expected an integer from 0 to {maximum} or a non-empty list of them, "
                        f"got {value!r}")
    if len(set(value)) != len(value):
        raise UserError(f"{where}.{key}: {next(v for v in value if value.count(v) > 1)} is listed twice")
    return tuple(value)


def parse_replication(raw: Any, where: str, engine: str = MARIADB.name) -> ReplicationSpec:
    """The section for `engine`. PostgreSQL's: workers is 1 (physical replay has no parallel apply), modes are
    recovery_prefetch, durability names PG_DURABILITY; MariaDB's group-commit wait and cross-engine study refused."""
    where = f"{where} [replication]"
    if not isinstance(raw, dict):
        raise UserError(f"{where}: expected a table")
    values = keys.checked(raw, keys.REPLICATION, where)
    streaming = engines.streaming_replication(engine)  # PostgreSQL's WAL stream, not a binlog
    if streaming:
        if "workers" in raw and _integers(raw, "workers", PG_WORKERS, where, 256) != PG_WORKERS:
            raise UserError(f"{where}.workers: PostgreSQL replays the WAL in one process (the startup process) and "
                            "has no parallel-apply setting; leave workers out (it is 1)")
        for key in ("binlog_commit_wait_count", "binlog_commit_wait_usec"):
            if key in raw:
                raise UserError(f"{where}.{key}: a MariaDB setting; the PostgreSQL lab has no binlog")
    studies = _names(raw, "studies", STUDIES, DEFAULT_STUDIES, where)
    if streaming and "cross-engine" in studies:
        raise UserError(f"{where}.studies: the cross-engine study is MariaDB-only (PostgreSQL has one storage engine)")
    rate = raw.get("background_rate", 200.0)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1e6:
        raise UserError(f"{where}.background_rate: expected transactions per second from 0 to 1000000, got {rate!r}")
    known = tuple(PG_DURABILITY if streaming else DURABILITY)
    durability = _names(raw, "durability", known, known, where)
    stale_durability = raw.get("stale_durability", durability[0])
    if stale_durability not in known:
        raise UserError(f"{where}.stale_durability: unknown {stale_durability!r} (known: {', '.join(known)})")
    return ReplicationSpec(
        studies=studies,
        replicas=values.get("replicas", 1),
        transactions=values.get("transactions", 20_000),
        workers=PG_WORKERS if streaming else _integers(raw, "workers", (0, 2, 4), where, 256),
        modes=(_names(raw, "modes", tuple(PG_MODES), ("physical",), where) if streaming
               else _names(raw, "modes", MODES, ("conservative",), where)),
        durability=durability,
        commit_wait_counts=(0,) if streaming else _integers(raw, "binlog_commit_wait_count", (0,), where, 1024),
        commit_wait_usec=0 if streaming else values.get("binlog_commit_wait_usec", 10_000),
        repeats=values.get("repeats", 1),
        stale_reads=values.get("stale_reads", 2000),
        background_threads=values.get("background_threads", 1),
        background_rate=float(rate),
        stale_durability=stale_durability,
        wait_timeout_s=values.get("wait_timeout", 10.0),
    )


def check_replication_experiment(spec: ReplicationSpec, targets: list[Any], benchmarks: list[Any],
                                 where: str) -> None:
    """A replication run has one MariaDB or PostgreSQL target the lab starts; the apply study's load is write
    workloads."""
    if len(targets) != 1:
        raise UserError(f"{where}: a [replication] experiment has exactly one [[target]] (the primary and its "
                        f"replicas run it), got {len(targets)}")
    (t,) = targets
    kind = engines.engine(t.engine)
    if kind.replication is None:
        replicated = " or ".join(sorted(e.title for e in engines.ENGINES.values() if e.replication))
        raise UserError(f"{where} target {t.name!r}: the replication lab runs {replicated}, not {t.engine}")
    if t.dsn is not None:
        raise UserError(f"{where} target {t.name!r}: the replication lab starts its own servers; a dsn cannot be "
                        "replicated by it")
    owned = PG_LAB_SETTINGS if engines.streaming_replication(t.engine) else LAB_SETTINGS
    for key in t.config:
        if key.replace("-", "_").lower() in owned:
            raise UserError(f"{where} target {t.name!r} config.{key}: the replication lab sets this itself "
                            "(durability, workers and commit wait are [replication] keys)")
    if "apply" in spec.studies or "cross-engine" in spec.studies:
        reads = [b.name for b in benchmarks if b.phase == "read"]
        if reads:
            raise UserError(f"{where} [run].benchmarks: {reads[0]!r} does not write; the apply and cross-engine "
                            "studies replicate write workloads (update-index, write-only, ...)")
