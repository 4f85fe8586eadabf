"""A cell run by sysbench or pgbench against a lab target: the data restored as for the lab's driver (by the
matrix's rules), a warm-up run of the tool (discarded) when the experiment has a warmup, then the measured run:
its output parsed into the same RunResult, its own CPU and context switches from wait4's rusage of the tool's
process (connection set-up included), the server's processes sampled from /proc before and after as the driver
does. The tool never runs through a shell; the password reaches it through a 0600 file (sysbench's
--config-file) or PGPASSWORD, never its command line. A tool that exits non-zero ends the run (one line with its
last output lines, exit 2); a tool that hangs past time + grace is killed and fails its cell, as a hung driver."""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from dbperf.catalog.tool_commands import (
    PGBENCH_BUILTINS,
    Connection,
    builtin_name,
    is_script,
    pgbench_argv,
    pgbench_init_argv,
    pgbench_script,
    sysbench_argv,
)
from dbperf.catalog.workload import Workload
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.host import procfs
from dbperf.host.procfs import process_tree
from dbperf.records import Resources, RunResult, Usage
from dbperf.servers.process import server_environ
from dbperf.servers.sql_query import client_available, query
from dbperf.targets.resources import CellSampler
from dbperf.tooldrivers.parse import ToolOutput, parse_pgbench, parse_sysbench, script_queries
from dbperf.tools import tail

TAIL_LINES = 6


def failure_lines(text: str) -> str:
    """The lines that say why a tool failed (its error lines, which pgbench prints before its summary), else its
    last lines; one line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    errors = [line for line in lines if re.search(r"\b(error|fatal|failed)\b", line, re.I)]
    return " | ".join(errors[:3] if errors else lines[-TAIL_LINES:])


class ToolHung(Exception):
    pass


def _rusage_usage(ru: Any) -> Usage:
    return Usage(user_us=ru.ru_utime * 1e6, system_us=ru.ru_stime * 1e6, voluntary_cs=ru.ru_nvcsw,
                 involuntary_cs=ru.ru_nivcsw)


def run_measured(argv: list[str], env: dict[str, str], timeout_s: float, cwd: Path,
                 on_start: Callable[[int], None] | None = None) -> tuple[int, str, Usage]:
    """(exit status, output, rusage) of one tool process; ToolHung when it outlives `timeout_s` (then its process
    group is killed). Output goes to a file, so that a chatty tool never blocks on a pipe."""
    out_path = cwd / "tool.out"
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                cwd=cwd, start_new_session=True)
    if on_start:
        on_start(proc.pid)
    hung = threading.Event()

    def kill() -> None:
        hung.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    timer = threading.Timer(timeout_s, kill)
    timer.start()
    try:
        _, status, ru = os.wait4(proc.pid, 0)
    except BaseException:
        kill()
        raise
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    text = out_path.read_text(errors="replace")
    if hung.is_set():
        raise ToolHung(tail(text, TAIL_LINES))
    return proc.returncode, text, _rusage_usage(ru)


def _server_sample(root: int) -> tuple[Usage, int]:
    """CPU (with reaped children's) and context switches of the server's process tree, as the driver samples."""
    hz = os.sysconf("SC_CLK_TCK")
    user = system = 0.0
    vol = invol = 0
    members = process_tree(root)
    for pid in members:
        try:
            st = procfs.stat(pid)
            if st is None:
                continue
            user += st.user_ticks / hz * 1e6
            system += st.system_ticks / hz * 1e6
            v, i = procfs.context_switches(pid)
            vol += v
            invol += i
        except (OSError, ValueError, IndexError):
            continue
    return Usage(user, system, vol, invol), len(members)


def _minus(a: Usage, b: Usage) -> Usage:
    return Usage(a.user_us - b.user_us, a.system_us - b.system_us, a.voluntary_cs - b.voluntary_cs,
                 a.involuntary_cs - b.involuntary_cs)


class ToolCell:
    """Runs one (benchmark, threads, repeat) cell of a sysbench or pgbench target."""

    def __init__(self, e: Experiment, target: Target, server: Any, grace_s: float) -> None:
        self.e, self.target, self.server, self.grace_s = e, target, server, grace_s
        assert target.tool is not None
        self.tool: str = target.tool
        self.resources: Resources | None = None

    def connection(self) -> Connection:
        parts = urlsplit(self.server.dsn(self.server.work_db))
        port = parts.port or self.target.descriptor.default_port or 0
        return Connection(parts.hostname or "127.0.0.1", port,
                          unquote(parts.username or "dbperf"), parts.path.lstrip("/") or "sbtest")

    def _pgbench_tables(self, conn: Connection, env: dict[str, str], password: str, work: Path) -> None:
        """pgbench -i into the working database unless its tables are there (a restore drops them with the
        database); scale = rows / 100,000, at least 1, as pgbench's accounts table has 100,000 rows per scale."""

        if query(self.server, "SELECT to_regclass('pgbench_accounts') IS NOT NULL", self.server.work_db) == [["t"]]:
            return
        scale = max(1, round(self.e.tables * self.e.table_size / 100_000))
        status, text, _ = run_measured(pgbench_init_argv(conn, scale), {**env, "PGPASSWORD": password}, 3600, work)
        if status != 0:
            raise UserError(f"target {self.target.name!r}: pgbench -i failed (exit {status}): "
                            f"{failure_lines(text) or 'no output'}")

    def _end_sessions(self) -> None:
        """The killed tool's sessions may still be running its statement (a backend notices a vanished client only
        when it next writes to it): ended, so that the next cell and the server's stop do not wait for them."""
        kind = self.target.descriptor
        with contextlib.suppress(UserError):
            if kind.end_sessions_sql:
                self.server.execute([kind.end_sessions_sql], "ending a hung tool's sessions")
            elif kind.sessions_sql and client_available(kind.name):
                rows = query(self.server, kind.sessions_sql, self.server.work_db)
                if rows:
                    self.server.execute([kind.end_session_sql.format(id=int(r[0])) for r in rows],
                                        "ending a hung tool's sessions")

    def run(self, w: Workload, threads: int, seed: int) -> tuple[RunResult | None, str | None, str | None]:
        """(result, error, output tail) of the measured run; UserError when the tool fails. The measured run's
        resources (targets/resources.py) are left in `self.resources`."""
        with tempfile.TemporaryDirectory(prefix=f"dbperf-{self.tool}-") as tmp:
            work = Path(tmp)  # 0700: the password file and pgbench's logs
            if self.e.warmup_s > 0:
                self._once(w, threads, seed, math.ceil(self.e.warmup_s), work / "warmup")
            return self._once(w, threads, seed, math.ceil(self.e.time_s), work / "measured")

    def _once(self, w: Workload, threads: int, seed: int, seconds: int,
              work: Path) -> tuple[RunResult | None, str | None, str | None]:
        work.mkdir(mode=0o700)
        conn = self.connection()
        password = self.server.password or ""
        env = server_environ()
        queries_per_event = 1
        if self.tool == "sysbench":
            config = work / "sysbench.cfg"
            fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            prefix = self.target.descriptor.sysbench_driver
            os.write(fd, f"{prefix}-password={password}\n".encode())
            os.close(fd)
            argv = sysbench_argv(w, self.target.engine, conn, config, self.e.tables, self.e.table_size, threads,
                                 seconds, seed, self.e.prepared, self.target.tool_options)
        else:
            builtin = builtin_name(w)
            script: Path | str
            if builtin is not None:
                self._pgbench_tables(conn, env, password, work)
                script = builtin
                queries_per_event = PGBENCH_BUILTINS[builtin]
            elif is_script(w, "pgbench"):
                script = Path(w.source)
            else:
                script = work / f"{w.name.split('@', 1)[0]}.sql"
                script.write_text(pgbench_script(w, self.e.table_size, self.e.tables))
            if isinstance(script, Path):
                queries_per_event = script_queries(script.read_text())
            argv = pgbench_argv(script, conn, threads, seconds, seed, self.e.prepared, work / "log",
                                self.target.tool_options)
            env["PGPASSWORD"] = password
        # The server is sampled at launch and `seconds` later, while the tool's backends are still connected (their
        # context switches are gone from /proc once they exit), as the driver samples inside its window.
        pid = self.server.server.pid if getattr(self.server, "server", None) else None
        samples: list[tuple[Usage, int]] = []
        timer = None
        sampler = CellSampler(self.e, self.target, self.server, client=self.tool) if self.e.resources else None
        if pid:
            samples.append(_server_sample(pid))
            timer = threading.Timer(seconds, lambda: samples.append(_server_sample(pid)))
            timer.start()

        def started(pid: int) -> None:
            if sampler:
                sampler.client_pid = pid
                sampler.start(warmup_s=0.0, time_s=seconds)

        result: RunResult | None = None
        try:
            status, text, usage = run_measured(argv, env, seconds + self.grace_s, work, started)
        except ToolHung as hung:
            self._end_sessions()
            return None, f"{self.tool} hung past {seconds + self.grace_s:.0f} s and was killed", str(hung)
        finally:
            if timer:
                timer.cancel()
                timer.join()
            if sampler:
                self.resources = sampler.finish(None)  # stopped; measured below when the run succeeded
        server_usage = processes = None
        if pid:
            if len(samples) < 2:
                samples.append(_server_sample(pid))
            server_usage, processes = _minus(samples[1][0], samples[0][0]), samples[1][1]
        if status != 0:
            raise UserError(f"target {self.target.name!r}: {self.tool} failed on {w.name} (exit {status}): "
                            f"{failure_lines(text) or 'no output'}")
        parsed: ToolOutput
        if self.tool == "sysbench":
            parsed = parse_sysbench(text)
        else:
            parsed = parse_pgbench(text, queries_per_event, sorted(work.glob("log.*")))
        result = parsed.result(usage, threads, server_usage, processes)
        if sampler:
            self.resources = sampler.resources(result)
        return result, None, tail(text, TAIL_LINES)
