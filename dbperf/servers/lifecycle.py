"""Server targets. `LabServer`: a private data directory (in the lab's runtime directory, see runtime.py, never
under the user's --out), initialised and configured by the lab, a free port on 127.0.0.1, start, readiness, the
sbtest data (a pristine copy that write cells restore from), and stop on every exit path; one subclass per engine
(postgres.py, mariadb.py) supplies what differs. `ExternalServer` (`dsn`) has no lifecycle: its tables are reloaded
before each write cell.

Every value the lab writes into postgresql.conf, my.cnf or MariaDB's init file is quoted for that format, or
refused. The password of the lab's servers is generated per run (or DBPERF_SERVER_PASSWORD) and reaches the driver
through its environment only; it is never written to a result, report or log, nor passed on to a server.
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import stat
import subprocess
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from dbperf import engines
from dbperf.catalog.schema import sbtest
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.host.driver import run_job
from dbperf.records import DriverJob, ExecResult, LoadResult
from dbperf.servers.process import (
    SECRET_ENV,
    ServerProcess,
    check_port_free,
    free_port,
    last_error_line,
    log_tail,
    server_environ,
)

READY_TIMEOUT_S = 120.0
LOAD_TIMEOUT_S = 3600.0
PASSWORD_ENV = "DBPERF_PASSWORD"
# my.cnf has its own escapes (\\, \s, ...) and comments (#): only values made of these characters are written there.
CNF_VALUE = re.compile(r"^[A-Za-z0-9_.+:/,-]+$")


def _no_control_characters(value: str, what: str) -> str:
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise UserError(f"{what} holds a control character (newline, tab, ...); refused")
    return value


def pg_conf_value(value: str, what: str) -> str:
    """A quoted postgresql.conf string: quotes doubled, backslashes escaped, no line breaks."""
    _no_control_characters(value, what)
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def cnf_value(value: str, what: str) -> str:
    if not CNF_VALUE.match(value):
        raise UserError(f"{what}: {value!r} cannot be written to my.cnf safely (letters, digits and _ . + : / , - "
                        "only)")
    return value


def sql_string(value: str, what: str, backslash_escapes: bool = True) -> str:
    """A MariaDB string literal, one line; backslashes are escapes unless sql_mode has NO_BACKSLASH_ESCAPES."""
    _no_control_characters(value, what)
    if backslash_escapes:
        value = value.replace("\\", "\\\\")
    return "'" + value.replace("'", "''") + "'"


def lab_password() -> str:
    """DBPERF_SERVER_PASSWORD if set, else a fresh random one for this run."""
    value = os.environ.get("DBPERF_SERVER_PASSWORD")
    if value is None:
        return secrets.token_urlsafe(24)
    if not value:
        raise UserError("DBPERF_SERVER_PASSWORD is set but empty")
    return _no_control_characters(value, "DBPERF_SERVER_PASSWORD")


def _reachable_by(path: Path, uid: int, gid: int) -> bool:
    """Whether a user can traverse every directory above `path`."""
    for parent in reversed(path.parents):
        st = parent.stat()
        if st.st_uid == uid:
            need = stat.S_IXUSR
        elif st.st_gid == gid:
            need = stat.S_IXGRP
        else:
            need = stat.S_IXOTH
        if not st.st_mode & need and os.geteuid() != uid:
            return False
    return True


def _private_dir(path: Path, owner: pwd.struct_passwd) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        os.chown(path, owner.pw_uid, owner.pw_gid)
        path.chmod(0o700)
    except OSError as e:
        raise UserError(f"cannot create data directory {path}: {e.strerror}") from None


def run_setup(argv: list[str], log: Path, user: str | None, what: str, tmpdir: Path | None = None) -> None:
    """A server's set-up program (its data directory's initialisation) run as `user`, its output in `log`; with
    `tmpdir`, its temporary files there (TMPDIR) instead of the shared /tmp."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as f:
        proc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, user=user, cwd="/", timeout=600,
                              env=server_environ({"TMPDIR": str(tmpdir)} if tmpdir else None))
    if proc.returncode != 0:
        raise UserError(f"{what} failed: {last_error_line(log)}")


LOGIN_ATTEMPT_S = 60.0  # one login's limit while a server comes up natively


class ServerTarget(ABC):
    """What lab-started and external servers share: the driver's jobs against a DSN, and the password."""

    engine: str  # a class attribute of each engine's LabServer; the target's own for an ExternalServer
    work_db = "sbtest"  # cells run here; sbtest_pristine is what it is restored from

    def __init__(self, target: Target, e: Experiment, logs: Path) -> None:
        self.target = target
        self.e = e
        self.log = logs / f"{target.name}.log"
        self.settings = list(target.config.items())
        self.server: ServerProcess | None = None
        self.restarts = 0
        self.processes = 1  # started as (planned: new_process), the first included
        self.pids: list[int] = []  # each planned process's, in order, once there is more than one
        if target.password_env:
            SECRET_ENV.add(target.password_env)  # no server the lab starts inherits another target's password
        self.password: str | None = None

    @abstractmethod
    def dsn(self, database: str | None) -> str:
        """A connection string without the password."""

    # The rest of runner.target_lifecycle.TargetLifecycle, which lab and external servers implement apart.
    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def load(self) -> LoadResult: ...

    @abstractmethod
    def restore(self) -> None: ...

    @abstractmethod
    def ensure_running(self) -> bool: ...

    @abstractmethod
    def new_process(self) -> bool: ...

    @abstractmethod
    def restart(self) -> bool: ...

    @abstractmethod
    def died(self) -> bool: ...

    @abstractmethod
    def describe(self) -> dict[str, Any]: ...

    @abstractmethod
    def stop(self) -> None: ...

    def env(self) -> dict[str, str]:
        return {PASSWORD_ENV: self.password} if self.password else {}

    def job(self, database: str | None = None) -> DriverJob:
        e = self.e
        return DriverJob(mode="run", engine=self.engine, dsn=self.dsn(database), tables=e.tables,
                         table_size=e.table_size, seed=e.seed, prepared=e.prepared,
                         server_pid=self.server.pid if self.server is not None else None)

    def _exec_job(self, database: str | None, statements: list[str]) -> DriverJob:
        return self.job(database).replace(mode="exec", statements=statements)

    def _exec(self, database: str | None, statements: list[str], what: str) -> ExecResult:
        outcome = run_job(self._exec_job(database, statements), ExecResult, 600, env=self.env())
        if not outcome.ok or outcome.result is None:
            raise UserError(f"target {self.target.name!r}: {what}: {outcome.error}")
        return outcome.result

    def _load_into(self, database: str | None, what: str) -> LoadResult:
        job = self.job(database).replace(mode="load", schema=sbtest(self.engine))
        outcome = run_job(job, LoadResult, LOAD_TIMEOUT_S, env=self.env())
        if not outcome.ok or outcome.result is None:
            raise UserError(f"target {self.target.name!r}: {what} failed: {outcome.error}")
        return outcome.result

    def log_tail(self) -> str:
        return log_tail(self.log)

    def execute(self, statements: list[str], what: str) -> None:
        self._exec(self.work_db, statements, what)

    def working_job(self) -> DriverJob:
        return self.job(self.work_db)


class ExternalServer(ServerTarget):
    """A server the user runs (`dsn`): connected to, loaded, reloaded before write cells; never started or stopped."""

    def __init__(self, target: Target, e: Experiment, logs: Path) -> None:
        super().__init__(target, e, logs)
        assert target.dsn is not None
        self.engine = target.engine
        self.password = target.password()
        self._loaded_once = False  # the first restore follows the load itself

    def dsn(self, database: str | None) -> str:
        assert self.target.dsn is not None
        return self.target.dsn  # it names its own database

    def start(self) -> None:
        self._exec(None, [], "connecting")

    def stop(self) -> None:
        """Not the lab's to stop."""

    def ensure_running(self) -> bool:
        return False

    def new_process(self) -> bool:
        return False  # not the lab's to restart

    def restart(self) -> bool:
        return False

    def died(self) -> bool:
        return False

    def load(self) -> LoadResult:
        result = self._load_into(None, "loading the tables")
        self.restore()
        return result

    def restore(self) -> None:
        if self._loaded_once:
            self._load_into(None, "reloading")
        self._loaded_once = True

    def describe(self) -> dict[str, Any]:
        return {"dsn": _without_password(self.target.dsn or ""), "external": True, "port": None, "server_pid": None,
                "log": str(self.log), "data_dir": None, "restarts": 0}


# The tries of a lab-chosen port (free_port) taken by someone else before the server bound it.
PORT_TRIES = 3
ADDRESS_IN_USE = "Address already in use"  # both servers' words for EADDRINUSE


def _log_says(log: Path, start: int, words: str) -> bool:
    """Whether the server's log, from byte `start` on, holds `words`."""
    try:
        with open(log, "rb") as f:
            f.seek(start)
            return words.encode() in f.read()
    except OSError:
        return False


class LabServer(ServerTarget):
    """A server the lab starts in `directory` (its own, in the runtime directory) and stops. Subclasses say how the
    engine is initialised, configured and started, and how the working database is restored."""

    scheme: ClassVar[str]  # of the DSNs the lab writes
    service_user: ClassVar[str]
    apt_package: ClassVar[str]
    default_binaries: ClassVar[str]
    admin_database: ClassVar[str | None]  # where the lab's own statements run
    # said when a target names no binaries and the engine has no default place ("": it has one)
    binaries_needed: ClassVar[str] = ""

    def __init__(self, directory: Path, logs: Path, target: Target, e: Experiment) -> None:
        super().__init__(target, e, logs)
        self.dir = directory
        self.port: int | None = None
        # A fresh random password per run unless the user sets one (DBPERF_SERVER_PASSWORD).
        self.password = lab_password()
        self._databases_created = False
        # What the server's command runs under (a profiler: valgrind); empty for a measured run.
        self.launch_prefix: list[str] = []
        # glibc tunables the profiler needs (lackey: memset without `rep stosb`), added to the target's own
        self.launch_tunables: tuple[str, ...] = ()
        self.ready_timeout_s = READY_TIMEOUT_S  # longer under a profiler
        # Started as the service user rather than as root that drops to it, set-up tools included: a profiler's
        # files and control pipes, or an instrumented build's profile files, then belong to the user the server
        # runs as.
        self.run_as_service_user = False

    def process_environment(self) -> dict[str, str]:
        """The server process's environment: the target's process variant (allocator, huge pages), with
        launch_tunables appended to its GLIBC_TUNABLES (glibc reads one list, colon-separated)."""
        env = dict(self.target.process.environment())
        if self.launch_tunables:
            env["GLIBC_TUNABLES"] = ":".join(filter(None, (env.get("GLIBC_TUNABLES"), *self.launch_tunables)))
        return env

    @classmethod
    def program_files(cls, binaries: Path) -> list[Path]:
        """The files a launch needs from `binaries` (a target's `binaries`), the server program last."""
        return [binaries]

    @classmethod
    def missing_programs(cls, binaries: Path) -> str | None:
        """One line naming what `binaries` lacks, None when nothing: installing Debian's package is advised only
        for Debian's own place (a `binaries = PATH` of the user's is theirs to fix)."""
        missing = [str(f) for f in cls.program_files(binaries) if not f.is_file()]
        if not missing:
            return None
        remedy = (f"apt install {cls.apt_package}" if binaries == Path(cls.default_binaries)
                  else "check the target's binaries")
        title = engines.engine(cls.engine).title
        return f"{title} server not found: no {', '.join(missing)} ({remedy})"

    @classmethod
    def install_problem(cls, binaries: Path) -> str | None:
        """Why `binaries` is not an install of this engine the lab can start, in one line, or None: looked at by a
        run before it claims its results folder, by its dry run (runner/preflight.py), and at the launch."""
        return cls.missing_programs(binaries)

    def dsn(self, database: str | None) -> str:
        if self.target.socket:
            return self.socket_dsn(database)
        return f"{self.scheme}://dbperf@127.0.0.1:{self.port}/{database or ''}"

    def socket_dsn(self, database: str | None) -> str:
        """`socket = true`: the DSN of the server's Unix socket (in its private directory)."""
        raise UserError(f"target {self.target.name!r}: socket = true is not supported for {self.engine}")

    def start(self) -> None:
        binaries = Path(self.target.binaries or self.default_binaries)
        try:
            user = pwd.getpwnam(self.service_user)
        except KeyError:
            raise UserError(f"user {self.service_user} not found (apt install {self.apt_package})") from None
        if self.target.port:
            check_port_free(self.target.port, self.service_user)
        password = self.password
        assert password is not None  # lab_password() always gives one
        first = not self.dir.exists()
        if not _reachable_by(self.dir, user.pw_uid, user.pw_gid):
            raise UserError(f"the server runs as user {self.service_user}, who cannot reach {self.dir} (a parent "
                            "directory is not searchable)")
        _private_dir(self.dir, user)
        for attempt in range(1, PORT_TRIES + 1):
            port = self.port = self.target.port or free_port()
            log_start = self.log.stat().st_size if self.log.exists() else 0
            try:
                self.launch(binaries, user, first, port, password)
                break
            except UserError:
                # A port the lab chose was free when it looked, but another process (a client's connection) can
                # take it before the server binds it: the server says so and exits; another port is tried.
                if self.target.port or attempt == PORT_TRIES or not _log_says(self.log, log_start, ADDRESS_IN_USE):
                    raise
                self.stop()
                first = False  # launch() initialises the data directory again only if it is not
        self._wait_sql(self.admin_database)
        if not self._databases_created:
            self._exec(self.admin_database, self.create_pristine_sql(), "creating the database")
            self._databases_created = True

    @abstractmethod
    def launch(self, binaries: Path, user: pwd.struct_passwd, first: bool, port: int, password: str) -> None:
        """Initialise the data directory if `first`, write the configuration, start `self.server` and wait until
        it accepts connections on 127.0.0.1:`port`."""

    @abstractmethod
    def create_pristine_sql(self) -> list[str]:
        """Statements that create an empty sbtest_pristine."""

    @abstractmethod
    def restore_sql(self) -> list[str]:
        """Statements that recreate the working database from sbtest_pristine."""

    def _wait_sql(self, database: str | None) -> None:
        """The port opens before the server takes logins (PostgreSQL recovery, MariaDB's init-file)."""
        deadline = time.monotonic() + self.ready_timeout_s
        while True:
            # Under a profiler a first login can take minutes: MySQL's caching_sha2_password verifies it with 5,000
            # rounds of SHA-256 (then caches it), and a login cut off at 60 s was tried again from the start.
            attempt_s = max(LOGIN_ATTEMPT_S, deadline - time.monotonic()) if self.launch_prefix else LOGIN_ATTEMPT_S
            outcome = run_job(self._exec_job(database, []), ExecResult, attempt_s, env=self.env())
            if outcome.ok:
                return
            if time.monotonic() > deadline or not (self.server and self.server.alive()):
                raise UserError(f"target {self.target.name!r}: server not ready: {outcome.error}")
            time.sleep(0.3)

    def ensure_running(self) -> bool:
        """Starts the server again if it died; True when it had to."""
        if self.server and self.server.alive():
            return False
        self.restarts += 1
        self.start()
        return True

    def new_process(self) -> bool:
        """A planned restart on the same data directory (the databases stay; the caches, the shared memory and the
        process's placement are drawn again); counted apart from the restarts of a server that died."""
        if not self.pids and self.server:
            self.pids.append(self.server.pid)
        self.restart()
        self.processes += 1
        if self.server:
            self.pids.append(self.server.pid)
        return True

    def restart(self) -> bool:
        self.stop()
        self.start()
        return True

    def died(self) -> bool:
        return not (self.server and self.server.alive())

    def stop(self) -> None:
        if self.server:
            self.server.stop()

    def load(self) -> LoadResult:
        result = self._load_into("sbtest_pristine", "loading the tables")
        self.restore()
        return result

    def restore(self) -> None:
        """Write cells start from the loaded data: a copy of the pristine database."""
        self._exec(self.admin_database, self.restore_sql(), "restoring the data")

    def describe(self) -> dict[str, Any]:
        return {"dsn": self.dsn(self.work_db), "external": False, "port": self.port,
                "server_pid": self.server.pid if self.server else None, "log": str(self.log),
                "data_dir": str(self.dir), "restarts": self.restarts,
                **({"processes": self.processes, "server_pids": self.pids} if self.processes > 1 else {})}


def _without_password(dsn: str) -> str:
    parts = urlsplit(dsn)
    if parts.password:
        return dsn.replace(f":{parts.password}@", "@")
    return dsn
