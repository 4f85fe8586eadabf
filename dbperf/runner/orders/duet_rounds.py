"""Duet runs (`order = "duet"` in `[run]`): the base and one other target run their cells at the same moment, each
pinned to CPUs of its own, each on its own copy of the data, released together and measured over the same window,
so that whatever the host does meanwhile (a neighbour, steal, a frequency change) hits both sides alike and cancels
in their ratio (Bulej et al. 2020, "Duet benchmarking").

A round of one (benchmark, threads) is one duet per target other than the base, in the round's alternating order;
the base therefore runs once per other target in a round, and its records are told apart by their `partner`. Which
side gets which CPUs alternates from round to round and from one target to the next, so that a difference between
the two CPUs cancels too.

The start barrier: each driver gets one end of a socket pair (job.start_fd). It opens the database, sets the
pragmas and prepares its statements, says ready with one byte, and blocks until it reads one byte back; the lab
sends that byte to both once both are ready (driver/src/start.rs). Both then run the same warm-up and time, so their
windows open and close together. A side that is not ready in time (it failed its setup, or hangs) is killed and the
other released alone: its record stands, its partner's is a failure.

Where no duet can be formed (see `why_not`), the run says so in one line and falls back to interleaved rounds in
alternating order."""

from __future__ import annotations

import select
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dbperf.experiment.model import Experiment, Target
from dbperf.host.driver import DriverOutcome, collect_job, kill_job, start_job
from dbperf.records import DriverJob, RunResult
from dbperf.runner.rounds import round_order

READY_TIMEOUT_S = 60.0  # setup (open, pragmas, prepare) that takes longer than this is a hang (the matrix passes
# its own hang grace)


@dataclass(frozen=True)
class DuetPlan:
    """Whether duets are formed, and on which two CPU sets."""
    sides: tuple[frozenset[int], frozenset[int]] | None  # None: no duet anywhere in the run
    why: str | None  # why not, for the whole run (None: duets are formed)

    def why_not_threads(self, threads: int) -> str | None:
        """Why a (benchmark, threads) group runs interleaved although the run forms duets: more client threads
        than one side's CPUs."""
        if self.sides is None:
            return self.why
        if threads > len(self.sides[0]):
            return f"{threads} client threads need more than the {len(self.sides[0])} CPU(s) of one side"
        return None

    def formed(self, threads: int) -> bool:
        return self.why_not_threads(threads) is None

    def describe(self, threads: Sequence[int]) -> dict[str, Any]:
        """meta.json's `duet`: used, why not, the two CPU sets, thread counts that fell back."""
        interleaved = [t for t in threads if not self.formed(t)]
        used = any(self.formed(t) for t in threads)
        why = self.why if self.sides is None else (
            "; ".join(f"threads={t}: {self.why_not_threads(t)}" for t in interleaved) or None)
        return {"used": used, "why": why, "cpus": [sorted(s) for s in self.sides] if self.sides else None,
                "interleaved_threads": interleaved}

    def note(self, threads: Sequence[int]) -> str | None:
        """The one line the run prints where duets fall back (None: every group forms duets)."""
        d = self.describe(threads)
        if d["why"] is None:
            return None
        if not d["used"]:
            return f"order = \"duet\": no duet can be formed ({d['why']}); running interleaved rounds instead"
        return (f"order = \"duet\": {d['why']}; those thread counts run interleaved rounds instead")


def why_not(e: Experiment) -> str | None:
    """Why this experiment can form no duet at all, or None."""
    if e.cpus.client is None or e.cpus.server is None:
        return ("fewer than 2 CPUs the lab may use" if e.cpus.how.startswith("off:") else
                "cpus = \"off\": a duet pins each side to CPUs of its own" if e.cpus.how == "off" else
                "cpus names no second set of CPUs for the other side")
    if e.cpus.client & e.cpus.server or len(e.cpus.client) != len(e.cpus.server):
        return "cpus: client and server must be disjoint and equally many, one set per side of a duet"
    server = next((t for t in e.targets if t.is_server), None)
    if server is not None:
        return f"target {server.name!r} is a server: it needs a CPU of its own besides its client's"
    tool = next((t for t in e.targets if t.tool), None)
    if tool is not None:
        return f"target {tool.name!r} runs {tool.tool}, which cannot wait at the start barrier"
    if len(e.targets) < 2:
        return "one target: nothing to pair with the base"
    if e.writes == "cumulative" and len(e.targets) > 2:
        return ("writes = \"cumulative\" with more than two targets: the base runs once per other target in a "
                "round, so its data would take more writes than theirs")
    return None


def plan_duets(e: Experiment) -> DuetPlan:
    """The duets of an experiment that asks for them (runner/orders/duet.py)."""
    why = why_not(e)
    if why is not None:
        return DuetPlan(None, why)
    assert e.cpus.client is not None and e.cpus.server is not None  # why_not checked
    return DuetPlan((e.cpus.client, e.cpus.server), None)


@dataclass(frozen=True)
class Pairing:
    """One duet of a round: the base and `target`, on these CPUs."""
    target: Target
    position: int  # 1 = the round's first duet
    base_cpus: frozenset[int]
    target_cpus: frozenset[int]


def round_duets(e: Experiment, plan: DuetPlan, benchmark: str, threads: int, round_: int) -> list[Pairing]:
    """The round's duets: one per target other than the base, in alternating order; the base's side alternates
    with the round and with the target's place in the experiment, so that each target meets the base on both CPU
    sets in consecutive rounds and consecutive duets of a round swap sides."""
    assert plan.sides is not None
    index = {t.name: i for i, t in enumerate(e.targets)}
    others = [t for t in e.targets if t.name != e.base]
    out = []
    for position, t in enumerate(round_order(others, "alternate", e.seed, benchmark, threads, round_), 1):
        swap = (round_ + index[t.name]) % 2
        out.append(Pairing(t, position, plan.sides[swap], plan.sides[1 - swap]))
    return out


@dataclass
class Side:
    """One side of a duet: its job (start_fd is set here), environment and CPUs."""
    job: DriverJob
    env: dict[str, str]
    cpus: frozenset[int]
    timeout_s: float
    prefix: tuple[str, ...] = ()  # the command the driver starts through (host/remedies/: aslr-off)


def run_together(sides: Sequence[Side], on_release: Callable[[list[int | None]], None],
                 ready_timeout_s: float = READY_TIMEOUT_S) -> list[DriverOutcome[RunResult]]:
    """Runs every side's driver at once (host/driver.py's start_job and collect_job: the same timeouts, kill and
    outcomes as run_job), releases them together once all are ready, and returns their outcomes in order.
    `on_release` is called right after the release with each side's pid (None: not released: it failed or hung
    before it was ready), so that the caller's samplers start with the window. Ctrl-C kills every driver and
    propagates."""
    pairs = [socket.socketpair() for _ in sides]
    drivers = _Drivers(sides)
    try:
        drivers.start([driver for _, driver in pairs])
        ready = _wait_ready([lab for lab, _ in pairs], ready_timeout_s)
        for (lab, _), ok in zip(pairs, ready, strict=True):
            if ok:
                lab.sendall(b"s")
        on_release(drivers.pids(ready))
        drivers.kill([not ok for ok in ready])  # hung in its setup, or already gone
        drivers.join()
    except BaseException:
        drivers.kill([True] * len(drivers.procs))
        drivers.join()
        raise
    finally:
        for lab, driver in pairs:
            lab.close()
            driver.close()
    return drivers.outcomes()


class _Drivers:
    """A duet's drivers: started, each collected by a thread of its own (so that both are read while they run)."""

    def __init__(self, sides: Sequence[Side]) -> None:
        self.sides = sides
        self.procs: list[tuple[subprocess.Popen[str], DriverJob]] = []
        self.collected: list[DriverOutcome[RunResult] | None] = [None] * len(sides)
        self.errors: list[BaseException] = []
        self.threads: list[threading.Thread] = []

    def start(self, ends: list[socket.socket]) -> None:
        for side, driver in zip(self.sides, ends, strict=True):
            job = side.job.replace(start_fd=driver.fileno())
            proc = start_job(job, side.env, side.cpus, pass_fds=(driver.detach(),), prefix=side.prefix)
            self.procs.append((proc, job))
        self.threads = [threading.Thread(target=self._collect, args=(i,), daemon=True, name=f"duet-{i}")
                        for i in range(len(self.procs))]
        for t in self.threads:
            t.start()

    def _collect(self, i: int) -> None:
        proc, job = self.procs[i]
        try:
            self.collected[i] = collect_job(proc, job, RunResult, self.sides[i].timeout_s)
        except BaseException as err:
            self.errors.append(err)

    def pids(self, ready: list[bool]) -> list[int | None]:
        return [proc.pid if ok else None for (proc, _), ok in zip(self.procs, ready, strict=True)]

    def kill(self, which: list[bool]) -> None:
        for (proc, _), kill in zip(self.procs, which, strict=False):
            if kill:
                kill_job(proc)

    def join(self) -> None:
        for t in self.threads:
            t.join()

    def outcomes(self) -> list[DriverOutcome[RunResult]]:
        if self.errors:
            raise self.errors[0]
        assert all(o is not None for o in self.collected)
        return [o for o in self.collected if o is not None]


def _wait_ready(labs: list[socket.socket], timeout_s: float) -> list[bool]:
    """Which sides said ready (one byte) before `timeout_s`; end of file (the driver exited) is not ready."""
    ready = [False] * len(labs)
    pending = dict(enumerate(labs))
    deadline = time.monotonic() + timeout_s
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        readable, _, _ = select.select(list(pending.values()), [], [], left)
        for sock in readable:
            i = next(k for k, s in pending.items() if s is sock)
            ready[i] = sock.recv(1) == b"r"
            del pending[i]
    return ready
