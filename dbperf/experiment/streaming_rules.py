"""PostgreSQL's streaming standbys in the `[replication]` section (replication_rules.py). Physical replay is one
process (the startup process): there is no parallel-apply setting, so `workers` is 1 and nothing else, and there is
no binlog to wait on. The modes are the replay's real knob, recovery_prefetch (PG 15+); the durability variants set
the primary's and the standby's settings; PostgreSQL has one storage engine, so no cross-engine study."""

from __future__ import annotations

from typing import Any

from dbperf.errors import UserError
from dbperf.experiment.replication_rules import ApplyKeys, SectionRules, integers, names

WORKERS = (1,)
MODES: dict[str, dict[str, str]] = {
    "physical": {"recovery_prefetch": "off"},
    "physical-prefetch": {"recovery_prefetch": "on"},  # prefetch the blocks the WAL will touch (PG 15+)
}
DEFAULT_MODES = ("physical",)
# Durability variants: (the primary's settings, the standby's). The primary otherwise commits with
# synchronous_commit = off so that it generates the load fast (as the MariaDB primary commits non-durably).
DURABILITY: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "standby-fsync": ({}, {"fsync": "on"}),
    "standby-no-fsync": ({}, {"fsync": "off"}),
    # No full-page images in the WAL: less WAL to ship and replay, no torn-page protection on either side.
    "no-full-page-writes": ({"full_page_writes": "off"}, {"fsync": "on"}),
    # The primary's commits wait for the standby to flush the WAL (synchronous_standby_names lists it).
    "primary-sync-commit": ({"synchronous_commit": "on"}, {"fsync": "on"}),
}
LAB_SETTINGS = frozenset({
    "fsync", "full_page_writes", "synchronous_commit", "synchronous_standby_names", "hot_standby", "wal_level",
    "primary_conninfo", "primary_slot_name", "recovery_prefetch", "max_wal_senders", "max_replication_slots",
    "listen_addresses", "port", "unix_socket_directories", "hot_standby_feedback", "restore_command",
    "recovery_target", "archive_mode"})


def apply_keys(raw: dict[str, Any], values: dict[str, Any], where: str) -> ApplyKeys:
    if "workers" in raw and integers(raw, "workers", WORKERS, where, 256) != WORKERS:
        raise UserError(f"{where}.workers: PostgreSQL replays the WAL in one process (the startup process) and "
                        "has no parallel-apply setting; leave workers out (it is 1)")
    for key in ("binlog_commit_wait_count", "binlog_commit_wait_usec"):
        if key in raw:
            raise UserError(f"{where}.{key}: a MariaDB setting; the PostgreSQL lab has no binlog")
    return ApplyKeys(workers=WORKERS, modes=names(raw, "modes", tuple(MODES), DEFAULT_MODES, where),
                     commit_wait_counts=(0,), commit_wait_usec=0)


RULES = SectionRules(name="streaming", durability=tuple(DURABILITY), apply_keys=apply_keys,
                     lab_settings=LAB_SETTINGS,
                     refused_studies={"cross-engine": "the cross-engine study is MariaDB-only (PostgreSQL has one "
                                                      "storage engine)"})
