"""`dbperf fleet local --workers N`: a scheduler and N workers on 127.0.0.1 as separate processes (hosts local-1 ...
local-N, each with a cache directory of its own, so each builds as a separate host would), the experiment run on
them, and every process stopped on the way out. A way to try the fleet on one machine, and what the tests use."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from dbperf.buildlab.paths import cache_root
from dbperf.errors import UserError
from dbperf.fleet.certs import make_certs

START_TIMEOUT_S = 120.0  # per process, from its start: a loaded host imports Dask slowly
STOP_GRACE_S = 20.0  # after SIGTERM, before SIGKILL
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
WORKERS_PER_CPU = 4
# One `dbperf worker`'s resident size once joined, idle: VmRSS 158,072 kB (154 MiB), measured once (Python 3.11.7,
# distributed 2026.8.0, x86-64 Debian 12), rounded up. A cell's own process (hostrun.py, the driver, the engine)
# comes on top while it runs: hence only half of MemAvailable is counted on.
WORKER_RSS_BYTES = 160 << 20


@dataclass(frozen=True)
class WorkerCap:
    workers: int
    reason: str  # how it was derived, for the refusal


def _usable_cpus() -> int:
    return len(os.sched_getaffinity(0))


def _mem_available() -> int | None:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def worker_cap(cpus: int | None = None, mem_available: int | None = None) -> WorkerCap:
    """How many local workers this host takes: at most WORKERS_PER_CPU per CPU the lab may use (its affinity), and
    as many as fit, at WORKER_RSS_BYTES each, in half of MemAvailable."""
    cpus = _usable_cpus() if cpus is None else cpus
    mem = _mem_available() if mem_available is None else mem_available
    by_cpu = WORKERS_PER_CPU * cpus
    reason = f"{WORKERS_PER_CPU} × {cpus} CPU(s) the lab may use = {by_cpu}"
    if mem is None:
        return WorkerCap(by_cpu, reason + "; memory: MemAvailable unknown, not counted")
    by_memory = mem // 2 // WORKER_RSS_BYTES
    reason += (f"; memory: half of MemAvailable ({mem / 2**30:.1f} GiB) / {WORKER_RSS_BYTES >> 20} MiB per worker "
               f"= {by_memory}")
    return WorkerCap(min(by_cpu, by_memory), reason)


def check_workers(workers: int) -> None:
    """`--workers N` within the cap, or one line saying what the cap is and where it comes from."""
    if workers < 1:
        raise UserError(f"--workers: at least 1, got {workers}")
    cap = worker_cap()
    if workers > cap.workers:
        raise UserError(f"--workers {workers}: at most {cap.workers} on this host ({cap.reason})")


@contextlib.contextmanager
def _signals_held(redeliver: bool = True) -> Iterator[None]:
    """SIGINT/SIGTERM/SIGHUP held while a process is started and recorded (a signal in between would leave it
    running, unknown to stop()) and while the fleet is stopped (a second Ctrl-C must not cut that short); then
    delivered to the handlers in place before, unless `redeliver` is false (already on the way out)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # handlers can only be set in the main thread; there, a signal does not interrupt this one
        return
    pending: list[int] = []
    previous = {s: signal.signal(s, lambda signum, _frame: pending.append(signum)) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
        if pending and redeliver:
            signal.raise_signal(pending[0])


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][-300:] if lines else "(nothing logged)"


def local_names(n: int) -> list[str]:
    return [f"local-{i}" for i in range(1, n + 1)]


def _dbperf(*args: str) -> list[str]:
    return [sys.executable, "-m", "dbperf.cli", *args]


def _env() -> dict[str, str]:
    package_root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}


def _progress(line: str) -> None:
    print(f"dbperf: {line}", file=sys.stderr, flush=True)


@dataclass
class LocalFleet:
    """Handles to the processes of a local fleet. Each is the leader of a process group of its own (a session:
    the terminal's Ctrl-C reaches the controller only), and its command line names the fleet's state directory."""
    scheduler: str
    certs: Path | None
    state: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def worker_pid(self, name: str) -> int:
        return self.processes[name].pid

    def ready_file(self, name: str) -> Path:
        return self.state / f"{name}.ready"

    def spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        """A process of the fleet, recorded before any signal can end the controller."""
        log = open(self.state / f"{name}.log", "ab")  # noqa: SIM115 (the child holds it)
        try:
            with _signals_held():
                proc = subprocess.Popen(_dbperf(*args), stdout=log, stderr=log, env=_env(), start_new_session=True)
                self.processes[name] = proc
        finally:
            log.close()
        return proc

    def start_worker(self, name: str, cache: Path | None = None) -> subprocess.Popen[bytes]:
        cache = cache or cache_root() / "fleet-local" / name
        self.ready_file(name).unlink(missing_ok=True)
        args = ["worker", "--scheduler", self.scheduler, "--name", name, "--cache", str(cache),
                "--listen", "127.0.0.1", "--ready-file", str(self.ready_file(name))]
        if self.certs:
            args += ["--certs", str(self.certs)]
        return self.spawn(name, args)

    def start_workers(self, names: list[str], progress: Callable[[str], None] = _progress) -> None:
        """Starts the workers, at most one per usable CPU (at least two) starting at a time, and returns once all
        joined the scheduler; says how many joined as they do."""
        window = max(2, _usable_cpus())
        waiting = list(names)
        starting: dict[str, float] = {}  # name -> deadline to join
        joined = 0
        progress(f"starting workers 0/{len(names)}")
        while waiting or starting:
            while waiting and len(starting) < window:
                name = waiting.pop(0)
                self.start_worker(name)
                starting[name] = time.monotonic() + START_TIMEOUT_S
            for name, deadline in list(starting.items()):
                proc = self.processes[name]
                if self.ready_file(name).is_file():
                    del starting[name]
                    joined += 1
                    progress(f"starting workers {joined}/{len(names)}")
                elif proc.poll() is not None:
                    raise UserError(f"local worker {name} ended while starting (exit {proc.returncode}): "
                                    f"{_last_line(self.log_tail(name))}")
                elif time.monotonic() > deadline:
                    raise UserError(f"local worker {name} did not join the scheduler within {START_TIMEOUT_S:.0f} s: "
                                    f"{_last_line(self.log_tail(name))}")
            time.sleep(0.05)

    def stop(self, redeliver: bool = True) -> None:
        """SIGTERM to every process group (workers first, the scheduler last), SIGKILL to those still there after
        STOP_GRACE_S: nothing of the fleet outlives it."""
        with _signals_held(redeliver):
            procs = list(reversed(list(self.processes.values())))
            for proc in procs:
                if proc.poll() is None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGTERM)
            deadline = time.monotonic() + STOP_GRACE_S
            for proc in procs:
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()

    def log_tail(self, name: str) -> str:
        with contextlib.suppress(OSError):
            return (self.state / f"{name}.log").read_text(errors="replace")[-2000:]
        return ""


@contextlib.contextmanager
def local_fleet(workers: int, tls: bool = False, state: Path | None = None,
                progress: Callable[[str], None] = _progress) -> Iterator[LocalFleet]:
    """A scheduler and `workers` workers on 127.0.0.1 (within the host's cap), all joined when it yields, stopped on
    the way out (however it goes, a signal during start-up included)."""
    check_workers(workers)
    own_state = state is None
    state = state or Path(tempfile.mkdtemp(prefix="dbperf-fleet-"))
    fleet = LocalFleet("", None, state)
    unwinding = False
    try:
        if tls:
            fleet.certs = state / "certs"
            make_certs(fleet.certs)
        address_file = state / "scheduler.address"
        args = ["scheduler", "--host", "127.0.0.1", "--port", "0", "--address-file", str(address_file)]
        if fleet.certs:
            args += ["--certs", str(fleet.certs)]
        scheduler = fleet.spawn("scheduler", args)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not address_file.is_file():
            if scheduler.poll() is not None or time.monotonic() > deadline:
                raise UserError(f"the local scheduler did not start: {_last_line(fleet.log_tail('scheduler'))}")
            time.sleep(0.05)
        fleet.scheduler = address_file.read_text().strip()
        fleet.start_workers(local_names(workers), progress)
        yield fleet
    except BaseException:
        unwinding = True
        raise
    finally:
        fleet.stop(redeliver=not unwinding)
        if own_state:
            shutil.rmtree(state, ignore_errors=True)
