"""Simulated counters of a server's processes, counted as its engine's process model says (engines/process_model.py;
the counting is chosen once, by counting_of, and asked for its launch, its windows and its method's words).

A process per connection (PostgreSQL): the server started under cachegrind (ASLR off, the pinned geometry; valgrind
follows the backends the postmaster forks, each writing its own file when it exits), the driver natively outside it.
The data is loaded by the server running natively; then it is started again under cachegrind. Per benchmark, the
data is restored, the server left to settle, and the driver runs N events and then (after another restore) 0 events
on one connection; the files of the processes that exited in each window (the connection's backend, and any parallel
worker it started) are summed, and the 0-event window subtracted from the N-event one: connection start-up,
statement preparation and backend exit cancel out. Autovacuum is off on the profiled server so that no other process
exits inside a window; it is said in the profile's method.

One process whose threads serve every connection (MariaDB's mariadbd, MySQL's mysqld), which cachegrind would
report only at exit: it runs under callgrind with the same cache geometry (explain/callgrind.py). Per window, the
counters are zeroed (`callgrind_control --zero`), the driver runs N events (then, after a restore, 0 events), and the
counters dumped (`--dump`), one file per thread: the threads that served the driver's connection (the engine's
`connection_functions`) are counted, the background threads (InnoDB's master thread, page cleaner, purge) are not,
as PostgreSQL's background processes are not: their work grows with the window's wall time, which valgrind and the
host's load stretch differently from one count to the next (the whole process varied by 1% between two counts of one
cell on a loaded host). Connection start-up and statement preparation cancel out with the 0-event window.
"""

from __future__ import annotations

import os
import platform
import pwd
import shutil
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from pathlib import Path

from dbperf import engines
from dbperf.catalog.workload import Workload, compile_statements
from dbperf.engines.descriptor import Engine
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.explain.cachegrind import GEOMETRY, CachegrindProfile, parse_cachegrind_out, valgrind_available
from dbperf.explain.callgrind import CALLGRIND_OPTIONS, callgrind_control, connection_threads, dump_files
from dbperf.explain.perfstat import STAT_EVENTS, PerfStat, perf_stat_pids
from dbperf.explain.unhandled import unhandled_instruction
from dbperf.host.driver import run_job
from dbperf.records import RunResult
from dbperf.servers.lifecycle import LabServer
from dbperf.servers.registry import server_target
from dbperf.servers.runtime import RuntimeDir

SETTLE_S = 3.0  # no new profile file for this long: every process that was going to exit has
WINDOW_TIMEOUT_S = 300.0
PROFILED_READY_TIMEOUT_S = 900.0
REQUEST_PAUSE_US = 2000  # long beside the server's post-reply work under valgrind (~0.1 ms), see docs/explain.md


def _complete(path: Path) -> bool:
    try:
        return "\nsummary:" in path.read_text(errors="replace")[-4096:]
    except OSError:
        return False


def profiled_server(directory: Path, target: Target, e: Experiment) -> LabServer:
    """The target's lab server in DIRECTORY with the settings it needs under valgrind (the engine's
    profiled_settings), not started."""
    settings = dict(target.descriptor.profiled_settings(target.config))
    server = server_target(directory, directory.parent / "logs", replace(target, config={**target.config, **settings}),
                           e)
    assert isinstance(server, LabServer)
    return server


def _refused(server: LabServer, error: UserError) -> UserError:
    """`error`, or valgrind's refusal of an instruction of the server when its log holds one (a process died of
    it: the start-up or the query failed, and neither says why)."""
    try:
        said = unhandled_instruction(server.log.read_text(errors="replace"))
    except OSError:
        return error
    return UserError(f"target {server.target.name!r}: its server under valgrind died: {said}") if said else error


class ServerProfiling:
    """One server per profiled target, started under cachegrind once its data is loaded; stopped by close()."""

    def __init__(self, e: Experiment) -> None:
        self.e = e
        self.runtime: RuntimeDir | None = None
        self.servers: dict[str, tuple[LabServer, Path]] = {}

    def _server(self, target: Target) -> tuple[LabServer, Path]:
        if target.name in self.servers:
            return self.servers[target.name]
        if not target.is_server or target.dsn is not None:
            raise UserError(f"target {target.name!r}: counters of server processes are measured for the "
                            f"{engines.SERVER_TITLES} servers the lab starts, not for an external server (its "
                            "processes are not the lab's to run under valgrind)")
        valgrind_available()
        self.runtime = self.runtime or RuntimeDir()
        directory = self.runtime.target_dir(len(self.servers) + 1)
        server = profiled_server(directory, target, self.e)
        self.servers[target.name] = (server, directory / "cachegrind")  # stopped by close() from here on
        server.start()
        server.load()
        server.stop()
        out = directory / "cachegrind"
        out.mkdir()
        user = pwd.getpwnam(server.service_user)
        os.chown(out, user.pw_uid, user.pw_gid)
        aslr_off = [shutil.which("setarch") or "setarch", platform.machine(), "-R"]
        valgrind = shutil.which("valgrind") or "valgrind"
        counting_of(target.descriptor).launch(server, out, [*aslr_off, valgrind])
        try:
            server.start()
        except UserError as e:
            raise _refused(server, e) from None
        return server, out

    def _settle(self, out: Path, before: set[Path], need_new: bool) -> set[Path]:
        """Waits until no process writes a new profile for SETTLE_S (and, if asked, one has); the new files."""
        deadline = time.monotonic() + WINDOW_TIMEOUT_S
        seen: set[Path] = set()
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            now = set(out.glob("cachegrind.out.*")) - before
            if now != seen:
                seen, quiet_since = now, time.monotonic()
            elif (seen or not need_new) and all(_complete(p) for p in seen) and \
                    time.monotonic() - quiet_since >= SETTLE_S:
                return seen
            time.sleep(0.2)
        raise UserError(f"profiling the server: its processes did not finish writing their profiles within "
                        f"{WINDOW_TIMEOUT_S:.0f} s")

    def _run_driver(self, server: LabServer, target: Target, benchmark: Workload, events: int,
                    request_pause_us: int = REQUEST_PAUSE_US) -> RunResult:
        """The driver's `events` events against the server; `request_pause_us`: see REQUEST_PAUSE_US (0 for
        perf's windows, whose server runs natively and whose background work would grow with the pauses)."""
        job = server.working_job().replace(
            mode="run", threads=1, time_s=1.0, warmup_s=0.0, seed=self.e.seed, events=events, deterministic=True,
            request_pause_us=request_pause_us, workload=compile_statements(benchmark, self.e.table_size, target.engine))
        outcome = run_job(job, RunResult, WINDOW_TIMEOUT_S, env=server.env())
        if not outcome.ok or outcome.result is None:
            raise _refused(server, UserError(f"{target.name} {benchmark.name}: the driver against the profiled "
                                             f"server failed: {outcome.error}"))
        return outcome.result

    def callgrind_window(self, target: Target, benchmark: Workload, events: int,
                         hold_s: float = 0.0) -> tuple[CachegrindProfile, RunResult, float]:
        """One process for every connection: the counts of the threads that served the driver's connection, from
        zeroing to dumping around its `events` events, the window held open for at least `hold_s`; the profile, the
        driver's result and the window's length."""
        server, out = self._server(target)
        assert server.server is not None
        pid = server.server.pid
        server.restore()
        callgrind_control(pid, "zero", server.service_user)
        started = time.monotonic()
        result = self._run_driver(server, target, benchmark, events)
        time.sleep(max(0.0, hold_s - (time.monotonic() - started)))
        before = set(out.glob("callgrind.out.*"))
        callgrind_control(pid, "dump", server.service_user)
        held = time.monotonic() - started
        functions = target.descriptor.connection_functions
        profile, counted, threads = connection_threads(dump_files(out, before, WINDOW_TIMEOUT_S), functions)
        if counted == 0:
            raise _refused(server, UserError(
                f"{target.name} {benchmark.name}: none of the server's {threads} threads in callgrind's dump ran "
                f"{' or '.join(functions) or 'a connection function'}: the connection's work was not counted"))
        return profile, result, held

    def window(self, target: Target, benchmark: Workload, events: int) -> tuple[CachegrindProfile, RunResult]:
        """The summed profile of the server processes that exited while the driver ran `events` events."""
        server, out = self._server(target)
        server.restore()
        before = set(out.glob("cachegrind.out.*"))
        before |= self._settle(out, before, need_new=False)  # the restore's own backend
        result = self._run_driver(server, target, benchmark, events)
        files = self._settle(out, before, need_new=True)
        total = CachegrindProfile(())
        for path in files:
            total = total.plus(parse_cachegrind_out(path.read_text(errors="replace")))
        return total, result

    def native(self, target: Target) -> LabServer:
        """The target's server running natively (for perf on a host with a PMU), its data loaded."""
        key = f"native:{target.name}"
        if key in self.servers:
            return self.servers[key][0]
        if not target.is_server or target.dsn is not None:
            raise UserError(f"target {target.name!r}: counters of server processes are measured for the "
                            f"{engines.SERVER_TITLES} servers the lab starts, not for an external server")
        self.runtime = self.runtime or RuntimeDir()
        directory = self.runtime.target_dir(len(self.servers) + 1)
        server = server_target(directory, directory.parent / "logs", target, self.e)
        assert isinstance(server, LabServer)
        self.servers[key] = (server, directory)
        server.start()
        server.load()
        return server

    def hardware_window(self, target: Target, benchmark: Workload, events: int) -> tuple[PerfStat, RunResult]:
        """perf stat attached to the native server's process (PostgreSQL's postmaster, whose backends forked in the
        window are inherited; mariadbd's or mysqld's, every thread) while the driver runs `events` events."""
        server = self.native(target)
        assert server.server is not None
        server.restore()
        return perf_stat_pids([server.server.pid], list(STAT_EVENTS),
                              lambda: self._run_driver(server, target, benchmark, events, 0))

    def close(self) -> None:
        for server, _ in self.servers.values():
            server.stop()
        if self.runtime:
            self.runtime.remove()


@dataclass(frozen=True)
class Windows:
    """A server's N-event and 0-event windows, counted; the driver's result of the N-event one."""
    full: CachegrindProfile
    empty: CachegrindProfile
    result: RunResult
    held_s: float = 0.0  # how long each window was held open (callgrind's: the 0-event one as long as the other)


class ServerCounting(ABC):
    """How the simulated tier counts a server's work: valgrind in front of it, its windows, and the words of its
    method. One per process model (counting_of)."""

    @abstractmethod
    def launch(self, server: LabServer, out: Path, prefix: list[str]) -> None:
        """Sets the server's launch under valgrind (`prefix`: ASLR off, valgrind), its profiles written to `out`."""

    @abstractmethod
    def windows(self, servers: ServerProfiling, target: Target, benchmark: Workload, events: int) -> Windows: ...

    @abstractmethod
    def method(self, program: str, events: int, queries: int, counted: Windows) -> str:
        """The profile's method line; `program` the engine's server_program."""

    @abstractmethod
    def slowdown(self, program: str) -> str:
        """What the profile's simulated time is the wall time of."""

    def tool(self, valgrind: str) -> str | None:
        """The profile's tool line (`valgrind`: its version); None: the profiler's cachegrind line."""
        return None


# Both countings' last words: the driver's side of the window (REQUEST_PAUSE_US).
PACED = (f"the driver ran natively, pausing {REQUEST_PAUSE_US / 1000:g} ms before each request so that the server was "
         "always waiting for it")


class ExitedProcesses(ServerCounting):
    """A process per connection: cachegrind of every server process, each writing its file when it exits; a window
    sums the files of the processes that exited in it."""

    def launch(self, server: LabServer, out: Path, prefix: list[str]) -> None:
        server.launch_prefix = [*prefix, "--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes", *GEOMETRY,
                                f"--cachegrind-out-file={out}/cachegrind.out.%p"]

    def windows(self, servers: ServerProfiling, target: Target, benchmark: Workload, events: int) -> Windows:
        full, result = servers.window(target, benchmark, events)
        empty, _ = servers.window(target, benchmark, 0)
        return Windows(full, empty, result)

    def method(self, program: str, events: int, queries: int, counted: Windows) -> str:
        return (f"cachegrind of the server processes that exited during {events} events (the connection's backend and "
                f"any worker it started) minus the same for 0 events, divided by {queries} queries; autovacuum off on "
                f"the profiled server; {PACED}")

    def slowdown(self, program: str) -> str:
        return "wall time of both server windows under cachegrind; not timed natively"


class ConnectionThreads(ServerCounting):
    """One process whose threads serve every connection: callgrind, zeroed and dumped around each window, the
    threads that served the driver's connection counted (the engine's connection_functions)."""

    def launch(self, server: LabServer, out: Path, prefix: list[str]) -> None:
        if shutil.which("callgrind_control") is None:
            title = server.target.descriptor.title
            raise UserError(f"callgrind_control not found: {title}'s counters need it (apt install valgrind)")
        server.launch_prefix = [*prefix, *CALLGRIND_OPTIONS, f"--callgrind-out-file={out}/callgrind.out.%p"]
        server.ready_timeout_s = PROFILED_READY_TIMEOUT_S  # InnoDB's start-up under callgrind is slow
        server.run_as_service_user = True

    def windows(self, servers: ServerProfiling, target: Target, benchmark: Workload, events: int) -> Windows:
        full, result, held = servers.callgrind_window(target, benchmark, events)
        empty, _, _ = servers.callgrind_window(target, benchmark, 0, hold_s=held)
        return Windows(full, empty, result, held)

    def method(self, program: str, events: int, queries: int, counted: Windows) -> str:
        return (f"callgrind (cache and branch simulation) of {program}, the threads that served the driver's "
                f"connection (background threads left out), counters zeroed before and dumped after {events} "
                f"events, minus the same for 0 events (window held open as long, {counted.held_s:.0f} s), divided by "
                f"{queries} queries; {PACED}")

    def slowdown(self, program: str) -> str:
        return f"wall time of both windows of {program} under callgrind; not timed natively"

    def tool(self, valgrind: str) -> str | None:
        return f"{valgrind} callgrind --cache-sim=yes --branch-sim=yes, {' '.join(GEOMETRY)}, ASLR off (setarch -R)"


def counting_of(kind: Engine) -> ServerCounting:
    """The counting of a server of this engine, as its process model says: the one place it is chosen."""
    return ConnectionThreads() if kind.process_model.one_process else ExitedProcesses()
