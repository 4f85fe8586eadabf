"""Finding and running dbperf-driver: one process per cell, JSON in, JSON out, killed if it hangs."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sysconfig
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Generic, TypeVar

from dbperf.errors import UserError
from dbperf.host.cpus import pinned
from dbperf.records import (
    DriverJob,
    ExecResult,
    LibraryInfo,
    LoadResult,
    RecordError,
    RunResult,
    SlicesResult,
    decode,
    encode,
)

REPO_DRIVER = Path(__file__).resolve().parents[2] / "driver" / "target" / "release" / "dbperf-driver"
STDERR_TAIL_LINES = 20


@cache
def driver_path() -> str:
    """$DBPERF_DRIVER, else the checkout's release build (development), else the one installed with the package
    (beside the `dbperf` script: pip puts a wheel's binaries in the environment's scripts directory), else
    dbperf-driver on PATH."""
    env = os.environ.get("DBPERF_DRIVER")
    if env:
        if not os.access(env, os.X_OK) or not Path(env).is_file():  # said before a run claims its folder
            raise UserError(f"DBPERF_DRIVER={env}: not an executable file (unset it to use the checkout's or the "
                            "installed dbperf-driver)")
        return env
    installed = Path(sysconfig.get_path("scripts")) / "dbperf-driver"
    for candidate in (REPO_DRIVER, installed):
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("dbperf-driver")
    if found:
        return found
    raise UserError("dbperf-driver not found: run `make setup` in a checkout (builds driver/target/release/"
                    "dbperf-driver), or install dbperf with pip, which builds it")


R = TypeVar("R", RunResult, SlicesResult, LoadResult, ExecResult)


@dataclass
class DriverOutcome(Generic[R]):
    ok: bool
    result: R | None
    error: str | None
    stderr_tail: str


def driver_environ(env: dict[str, str] | None = None) -> dict[str, str]:
    """The driver's environment: the lab's, `env`, and the lab's pid, so that the driver dies with the lab."""
    return {**os.environ, **(env or {}), "DBPERF_PARENT_PID": str(os.getpid())}


def _tail(text: str) -> str:
    return "\n".join(text.strip().splitlines()[-STDERR_TAIL_LINES:])


def run_job(job: DriverJob, result: type[R], timeout_s: float,
            env: dict[str, str] | None = None, cpus: frozenset[int] | None = None,
            pass_fds: tuple[int, ...] = (), prefix: tuple[str, ...] = ()) -> DriverOutcome[R]:
    """Runs `dbperf-driver MODE -` with the job on stdin, `env` added to the environment, pinned to `cpus` (when
    given) from before it starts, and reads its result as `result` (the type of the job's mode). `pass_fds` are
    handed to the driver (a steady-state cell's window pipe, host/window_opens.py) and closed here once it has
    them. `prefix`: a command the driver is started through (`setarch ARCH -R`). A crash, a hang or a result of the
    wrong shape is an outcome, not an exception; Ctrl-C kills the driver's whole process group and propagates."""
    return collect_job(start_job(job, env, cpus, pass_fds, prefix), job, result, timeout_s)


def start_job(job: DriverJob, env: dict[str, str] | None = None, cpus: frozenset[int] | None = None,
              pass_fds: tuple[int, ...] = (), prefix: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    """The first half of run_job: the driver started (in a session of its own), its job not yet sent. Two of these
    run side by side in a duet (orders/duet_rounds.py), each collected by collect_job."""
    try:
        with pinned(cpus):
            return subprocess.Popen([*prefix, driver_path(), job.mode, "-"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                                    env=driver_environ(env), pass_fds=pass_fds)
    finally:
        for fd in pass_fds:
            os.close(fd)


def collect_job(proc: subprocess.Popen[str], job: DriverJob, result: type[R], timeout_s: float) -> DriverOutcome[R]:
    """The second half of run_job: sends the job, waits for the driver's exit (killed after `timeout_s`, or on any
    exception, which propagates) and reads its result."""
    try:
        out, err = proc.communicate(encode(job).decode(), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_job(proc)
        out, err = proc.communicate()
        return DriverOutcome(False, None, f"driver hung past {timeout_s:.0f} s and was killed", _tail(err))
    except BaseException:
        kill_job(proc)
        proc.communicate()
        raise
    if proc.returncode != 0:
        if proc.returncode < 0:
            reason = f"driver died with signal {signal.Signals(-proc.returncode).name}"
        else:
            lines = err.strip().splitlines()
            reason = lines[-1].removeprefix("dbperf-driver: ") if lines else f"driver exited {proc.returncode}"
        return DriverOutcome(False, None, reason, _tail(err))
    if not out.strip():
        return DriverOutcome(False, None, "driver printed no JSON result", _tail(err))
    try:
        return DriverOutcome(True, decode(result, out), None, _tail(err))
    except RecordError as e:
        return DriverOutcome(False, None, f"driver printed an unexpected {job.mode} result: {e}", _tail(err + out))


def kill_job(proc: subprocess.Popen[str]) -> None:
    """SIGKILL to the driver's whole process group."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def library_info(engine: str, library: str) -> LibraryInfo:
    """Engine version of a library, or a UserError if it is not a library of that engine."""
    proc = subprocess.run([driver_path(), "info", engine, library], capture_output=True, text=True, timeout=60,
                          env=driver_environ())
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise UserError(lines[-1].removeprefix("dbperf-driver: ") if lines else f"cannot inspect {library}")
    try:
        return decode(LibraryInfo, proc.stdout)
    except RecordError as e:
        raise UserError(f"{library}: dbperf-driver info printed an unexpected result: {e}") from None


def driver_version() -> str:
    proc = subprocess.run([driver_path(), "--version"], capture_output=True, text=True, timeout=60,
                          env=driver_environ())
    return proc.stdout.strip()
