"""MariaDB's binlog replicas in the `[replication]` section (replication_rules.py): parallel apply with
`workers` SQL threads in one of four `modes`, the primary's group-commit wait swept, the replica's four durability
settings of [Nielsen 2014-03-13], and the cross-engine study's two of [Nielsen 2017-05-12]. MySQL's binlog replicas
(MYSQL_RULES, the kind's rules on a MySQL target): the same durability variants and commit wait, its own modes
(whether the workers commit in the primary's order), and no cross-engine study."""

from __future__ import annotations

from typing import Any

from dbperf.engines.mariadb import MARIADB
from dbperf.engines.mysql import MYSQL
from dbperf.errors import UserError
from dbperf.experiment.replication_rules import ApplyKeys, SectionRules, integers, names

MODES = ("conservative", "optimistic", "aggressive", "minimal")
DEFAULT_WORKERS = (0, 2, 4)
DEFAULT_MODES = ("conservative",)
DEFAULT_COMMIT_WAIT_USEC = 10_000
# [Nielsen 2014-03-13]: the replica's four durability settings, the binary log on or off × InnoDB's flush at commit
# with sync_binlog to match, at the post's values (flush 1 where durable; 2 without a binary log; 0 with one that is
# not crash-safe); no-binlog-durable is MDEV-5802's case (a replica without a binary
# log). Each is the my.cnf of the replica; its values are read back with SHOW VARIABLES after every start.
DURABILITY: dict[str, dict[str, str]] = {
    "binlog-crash-safe": {"log_bin": "replica-bin", "log_slave_updates": "ON", "sync_binlog": "1",
                          "innodb_flush_log_at_trx_commit": "1"},
    "no-binlog-durable": {"innodb_flush_log_at_trx_commit": "1"},
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
# Settings the lab sets on the primary or the replicas itself: refused in the target's config of a replication run.
LAB_SETTINGS = frozenset({
    "server_id", "log_bin", "log_slave_updates", "sync_binlog", "innodb_flush_log_at_trx_commit",
    "slave_parallel_threads", "slave_parallel_mode", "binlog_commit_wait_count", "binlog_commit_wait_usec",
    "skip_slave_start", "gtid_domain_id", "read_only", "relay_log", "log_basename", "gtid_strict_mode"})


def apply_keys(raw: dict[str, Any], values: dict[str, Any], where: str) -> ApplyKeys:
    return ApplyKeys(workers=integers(raw, "workers", DEFAULT_WORKERS, where, 256),
                     modes=names(raw, "modes", MODES, DEFAULT_MODES, where),
                     commit_wait_counts=integers(raw, "binlog_commit_wait_count", (0,), where, 1024),
                     commit_wait_usec=values.get("binlog_commit_wait_usec", DEFAULT_COMMIT_WAIT_USEC))


MYSQL_MAX_SYNC_DELAY_USEC = 1_000_000
# MySQL: replica_preserve_commit_order ON (its default: the workers commit in the primary's order) or OFF.
MYSQL_MODES = ("commit-order", "any-order")
MYSQL_LAB_SETTINGS = LAB_SETTINGS | frozenset({
    "gtid_mode", "enforce_gtid_consistency", "log_replica_updates", "skip_replica_start", "skip_log_bin",
    "disable_log_bin", "replica_parallel_workers", "slave_parallel_workers", "replica_parallel_type",
    "slave_parallel_type", "replica_preserve_commit_order", "slave_preserve_commit_order",
    "binlog_group_commit_sync_delay", "binlog_group_commit_sync_no_delay_count", "super_read_only"})


# MySQL 9.7 has no single-threaded applier: replica_parallel_workers is 1 to 1024 (sql/sys_vars.cc's VALID_RANGE), a
# 0 becomes 1 with a warning. Its nearest to MariaDB's one SQL thread is 1: a coordinator and one worker.
MYSQL_DEFAULT_WORKERS = (1, 2, 4)


def mysql_apply_keys(raw: dict[str, Any], values: dict[str, Any], where: str) -> ApplyKeys:
    usec = values.get("binlog_commit_wait_usec", DEFAULT_COMMIT_WAIT_USEC)
    if usec > MYSQL_MAX_SYNC_DELAY_USEC:  # the server would clamp it (binlog_group_commit_sync_delay's maximum)
        raise UserError(f"{where}.binlog_commit_wait_usec: {MYSQL.title}'s group commit waits at most "
                        f"{MYSQL_MAX_SYNC_DELAY_USEC} µs, got {usec}")
    workers = integers(raw, "workers", MYSQL_DEFAULT_WORKERS, where, 1024)
    if 0 in workers:
        raise UserError(f"{where}.workers: {MYSQL.title} has no single-threaded applier (replica_parallel_workers "
                        "is 1 to 1024; 0 would run as 1): ask 1 for a coordinator and one worker")
    return ApplyKeys(workers=workers,
                     modes=names(raw, "modes", MYSQL_MODES, MYSQL_MODES[:1], where),
                     commit_wait_counts=integers(raw, "binlog_commit_wait_count", (0,), where, 1024),
                     commit_wait_usec=usec)


MYSQL_RULES = SectionRules(
    name="binlog", durability=tuple(DURABILITY), apply_keys=mysql_apply_keys, lab_settings=MYSQL_LAB_SETTINGS,
    refused_studies={"cross-engine": f"the cross-engine study is {MARIADB.title}'s (MyRocks with {MARIADB.title}'s "
                                     f"GTID state tables); {MYSQL.title} runs apply and stale-reads"})
RULES = SectionRules(name="binlog", durability=tuple(DURABILITY), apply_keys=apply_keys, lab_settings=LAB_SETTINGS,
                     by_engine={MYSQL.name: MYSQL_RULES})
