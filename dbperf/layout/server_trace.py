"""The dynamic count of a server the lab starts, driven by a catalog benchmark: for a server of one process whose
connections are threads (MariaDB's mariadbd). The data is loaded by the server running natively; then it is started
again under lackey, its trace written into a FIFO read by the trace filter, which learns the server's pid from
valgrind's first line. Once the server takes logins the filter zeroes its counts (the start-up's accesses are left
out: under lackey a mariadbd start is about 1.5 minutes and 2.5 GB of trace); the driver runs the cell natively
outside valgrind for the budget's seconds; then the filter is stopped and prints what it counted in that window,
before the server is stopped (its shutdown is not counted either). PostgreSQL, a process per connection, is refused:
its backends would write one interleaved trace."""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from rich.console import Console

from dbperf import engines
from dbperf.catalog.workload import Workload, compile_statements
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.explain.server_profile import profiled_server
from dbperf.explain.unhandled import unhandled_instruction
from dbperf.host.driver import run_job
from dbperf.layout.build import trace_filter
from dbperf.layout.dynamic import (
    FILTER_DRAIN_S,
    LACKEY_TUNABLES,
    DynamicCounts,
    TraceBudget,
    TraceExtent,
    lackey_options,
    parse_filter_output,
    valgrind_version,
)
from dbperf.layout.static_map import StaticMap
from dbperf.records import RunResult
from dbperf.servers.lifecycle import LabServer
from dbperf.servers.registry import LAB_SERVERS
from dbperf.servers.runtime import RuntimeDir
from dbperf.tools import tail

# The driver's connections to a server under lackey: each login and statement is a hundred times slower.
DRIVER_GRACE_S = 600.0
# A server's start-up under lackey, the trace filter beside it: mariadbd's about 1.5 minutes, mysqld 9.7.2's 15.4
# (2026-11-28)
TRACED_READY_TIMEOUT_S = 2400.0
# A server that died under valgrind has closed the trace: the filter reads its end within this.
VALGRIND_GONE_S = 10.0


def traced_binary(target: Target) -> Path:
    """The one binary a threaded server's process runs: the server program of its target's `binaries` (MariaDB's
    names mariadbd itself, MySQL's a basedir with bin/mysqld, or mysqld), else of its engine's default; lab_target
    has refused the others."""
    server = LAB_SERVERS[target.engine]
    return server.program_files(Path(target.binaries or server.default_binaries))[-1]


def valgrind_lines(filter_stderr: str) -> str:
    """valgrind's own lines, which the trace filter passes on from the log it shares with the trace (prefixed V)."""
    return "".join(line[2:] + "\n" for line in filter_stderr.splitlines() if line.startswith("V "))


def _valgrind_refused(flt: subprocess.Popen[bytes]) -> str | None:
    """Why the server died under valgrind, when valgrind could not decode one of its instructions (the filter has
    read the trace's end, or is stopped here, and its stderr holds valgrind's lines); None otherwise."""
    try:
        _, said = flt.communicate(timeout=VALGRIND_GONE_S)
    except subprocess.TimeoutExpired:  # valgrind still runs (the server was too slow to start): stop the filter
        flt.send_signal(signal.SIGTERM)
        try:
            _, said = flt.communicate(timeout=FILTER_DRAIN_S)
        except subprocess.TimeoutExpired:
            return None
    return unhandled_instruction(valgrind_lines(said.decode(errors="replace")))


def refuse_untraceable(target: Target) -> None:
    kind = target.descriptor
    if target.dsn is not None:
        raise UserError(f"target {target.name!r} is an external server: its process is not the lab's to run under "
                        "valgrind")
    if not kind.process_model.one_process:
        threaded = " and ".join(e.title for e in engines.ENGINES.values() if e.process_model.one_process)
        raise UserError(f"target {target.name!r}: the dynamic count of a server needs one process whose connections "
                        f"are threads ({threaded}); {kind.title} runs {kind.process_model.said}")


def _filter_said(flt: subprocess.Popen[bytes]) -> bytes:
    """Stops the trace filter, which prints the window's counts (the shutdown is not counted); what it said on
    stderr (valgrind's own lines among them)."""
    flt.send_signal(signal.SIGTERM)
    try:
        _, said = flt.communicate(timeout=FILTER_DRAIN_S)
    except subprocess.TimeoutExpired:
        flt.kill()
        raise UserError("the trace filter did not print its counts") from None
    if flt.returncode != 0:
        raise UserError(f"the trace filter failed (exit {flt.returncode}): "
                        f"{tail(said.decode(errors='replace')) or 'no output'}")
    return said


def _window_counts(output: bytes, static: StaticMap, engine_title: str, queries: int, command: list[str],
                   seconds: float, budget: TraceBudget) -> DynamicCounts:
    """The counts the filter printed for the measured window, in which the driver ran `queries`."""
    per_object, totals = parse_filter_output(output.decode(errors="replace"), static)
    if totals.mapped == 0:
        raise UserError(f"{static.path} was never mapped by the traced server: it is not the binary it runs")
    extent = TraceExtent(whole_run=True, stopped_by=None, seconds=seconds, accesses=totals.records,
                         budget_seconds=budget.seconds, budget_accesses=budget.accesses)
    return DynamicCounts(
        mode="simulated", tool=f"{valgrind_version()} lackey on the server ({engine_title}), ASLR off, its start-up "
                               f"and shutdown left out; the driver native, {queries:,} queries in the window; "
                               "threads serialised by valgrind",
        command=command, seconds=seconds, per_object=per_object,
        records=totals.records, counted=totals.counted, threads=totals.threads,
        unattributed=totals.unattributed, unattributed_by_section=totals.unattributed_by_section, trace=extent)


def count_server(exp: Experiment, target: Target, bench: Workload, static: StaticMap, threads: int,
                 budget: TraceBudget, err: Console) -> DynamicCounts:
    """The loads and stores of STATIC's objects by the server's threads while the driver runs BENCH natively with
    THREADS connections for the budget's seconds (or until the filter has seen the budget's accesses)."""
    refuse_untraceable(target)
    if shutil.which("valgrind") is None:
        raise UserError("valgrind not found: simulated access counts need it (apt install valgrind)")
    filter_exe = trace_filter()
    kind = target.descriptor
    runtime = RuntimeDir()
    server: LabServer | None = None
    flt: subprocess.Popen[bytes] | None = None
    write_end = -1
    with tempfile.TemporaryFile() as counts:
        try:
            server = profiled_server(runtime.target_dir(1), target, exp)
            err.print(f"dbperf: loading {target.name} natively", markup=False, highlight=False)
            server.start()
            server.load()
            server.stop()
            # The FIFO beside the data (the runtime directory is private); valgrind opens it as root at launch.
            fifo = runtime.path / "lackey.fifo"
            os.mkfifo(fifo, 0o600)
            read_end = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            # Held open until valgrind has opened its end: a FIFO without a writer reads as its end.
            write_end = os.open(fifo, os.O_WRONLY)
            os.set_blocking(read_end, True)
            limit = [] if budget.accesses is None else ["-n", str(budget.accesses)]
            try:
                flt = subprocess.Popen([str(filter_exe), *limit, "0", os.path.realpath(static.path)], stdin=read_end,
                                       stdout=counts, stderr=subprocess.PIPE, start_new_session=True)
            finally:
                os.close(read_end)
            server.launch_prefix = [shutil.which("setarch") or "setarch", platform.machine(), "-R",
                                    shutil.which("valgrind") or "valgrind", *lackey_options(), f"--log-file={fifo}"]
            server.launch_tunables = LACKEY_TUNABLES
            server.ready_timeout_s = TRACED_READY_TIMEOUT_S
            err.print(f"dbperf: starting {target.name} under lackey (minutes: its start-up is traced, then left out)",
                      markup=False, highlight=False)
            try:
                server.start()
            except UserError as e:
                os.close(write_end)  # valgrind gone, the filter reads the trace's end
                write_end = -1
                raise UserError(_valgrind_refused(flt) or str(e)) from None
            os.close(write_end)
            write_end = -1
            os.kill(flt.pid, signal.SIGUSR1)  # the start-up's accesses out
            err.print(f"dbperf: counting {target.name} {bench.name}, {threads} threads, {budget.seconds:g} s, the "
                      "server under lackey, the driver native", markup=False, highlight=False)
            job = server.working_job().replace(mode="run", threads=threads, time_s=budget.seconds, warmup_s=0.0,
                                               seed=exp.seed, workload=compile_statements(bench, exp.table_size,
                                                                                           target.engine))
            began = time.monotonic()
            outcome = run_job(job, RunResult, budget.seconds + DRIVER_GRACE_S, env=server.env())
            seconds = round(time.monotonic() - began, 3)
            said = _filter_said(flt)
            if not outcome.ok or outcome.result is None:
                raise UserError(unhandled_instruction(valgrind_lines(said.decode(errors="replace")))
                                or f"{target.name} {bench.name}: the driver against the server under lackey failed: "
                                f"{outcome.error}")
            counts.seek(0)
            return _window_counts(counts.read(), static, kind.title, outcome.result.queries,
                                  # env: the recorded command stays one that runs, tunables included
                                  ["env", f"GLIBC_TUNABLES={server.process_environment()['GLIBC_TUNABLES']}",
                                   *server.launch_prefix[:-1], str(static.path)], seconds, budget)
        finally:
            if write_end >= 0:
                os.close(write_end)
            if flt is not None and flt.poll() is None:
                flt.kill()
                flt.wait()
            if server is not None:
                server.stop()
            with contextlib.suppress(OSError):
                runtime.remove()
