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
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from dbperf.buildlab.paths import cache_root
from dbperf.errors import UserError
from dbperf.fleet.certs import make_certs

START_TIMEOUT_S = 60.0


def local_names(n: int) -> list[str]:
    return [f"local-{i}" for i in range(1, n + 1)]


def _dbperf(*args: str) -> list[str]:
    return [sys.executable, "-m", "dbperf.cli", *args]


def _env() -> dict[str, str]:
    package_root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}


@dataclass
class LocalFleet:
    """Handles to the processes of a local fleet."""
    scheduler: str
    certs: Path | None
    state: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def worker_pid(self, name: str) -> int:
        return self.processes[name].pid

    def start_worker(self, name: str, cache: Path | None = None) -> subprocess.Popen[bytes]:
        cache = cache or cache_root() / "fleet-local" / name
        args = ["worker", "--scheduler", self.scheduler, "--name", name, "--cache", str(cache),
                "--listen", "127.0.0.1"]
        if self.certs:
            args += ["--certs", str(self.certs)]
        log = open(self.state / f"{name}.log", "ab")  # noqa: SIM115 (the child holds it)
        proc = subprocess.Popen(_dbperf(*args), stdout=log, stderr=log, env=_env(), start_new_session=True)
        log.close()
        self.processes[name] = proc
        return proc

    def stop(self) -> None:
        for proc in reversed(list(self.processes.values())):  # workers first, the scheduler last
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
        for proc in reversed(list(self.processes.values())):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def log_tail(self, name: str) -> str:
        with contextlib.suppress(OSError):
            return (self.state / f"{name}.log").read_text(errors="replace")[-2000:]
        return ""


@contextlib.contextmanager
def local_fleet(workers: int, tls: bool = False, state: Path | None = None) -> Iterator[LocalFleet]:
    """A scheduler and `workers` workers on 127.0.0.1, stopped on the way out (however it goes)."""
    if workers < 1:
        raise UserError("--workers: at least 1")
    own_state = state is None
    state = state or Path(tempfile.mkdtemp(prefix="dbperf-fleet-"))
    certs = None
    if tls:
        certs = state / "certs"
        make_certs(certs)
    address_file = state / "scheduler.address"
    args = ["scheduler", "--host", "127.0.0.1", "--port", "0", "--address-file", str(address_file)]
    if certs:
        args += ["--certs", str(certs)]
    log = open(state / "scheduler.log", "ab")  # noqa: SIM115
    scheduler = subprocess.Popen(_dbperf(*args), stdout=log, stderr=log, env=_env(), start_new_session=True)
    log.close()
    fleet = LocalFleet("", certs, state, {"scheduler": scheduler})
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not address_file.is_file():
            if scheduler.poll() is not None or time.monotonic() > deadline:
                raise UserError(f"the local scheduler did not start: {fleet.log_tail('scheduler').strip()[-500:]}")
            time.sleep(0.05)
        fleet.scheduler = address_file.read_text().strip()
        for name in local_names(workers):
            fleet.start_worker(name)
        yield fleet
    finally:
        fleet.stop()
        if own_state:
            shutil.rmtree(state, ignore_errors=True)
