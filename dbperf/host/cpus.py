"""Quiet cells: the driver (client) and a lab-started server on different CPUs, so that they do not take turns on
one core. `cpus = { client = "0", server = "1" }` in `[run]`; by default, on a host where the lab may use two or more
CPUs, the first for the client and the second for the server; `cpus = "off"` leaves scheduling to the kernel.

A process is pinned by setting the affinity of the thread that forks it just around the fork: the child inherits it
at fork, keeps it across exec, and so do the backends and threads a server creates later. (No preexec_fn: it is not
safe in a process with threads, and the noise sensors run one.)"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from dbperf.errors import UserError


@dataclass(frozen=True)
class CpuPlan:
    client: frozenset[int] | None  # None: not pinned
    server: frozenset[int] | None
    how: str  # "auto", "experiment", "off", or why not ("one CPU")

    def for_driver(self, in_process_engine: bool, threads: int) -> frozenset[int] | None:
        """The driver's CPUs. An in-process engine (SQLite) runs in the driver: one thread stays on the client's
        CPU; several threads get the client's and the server's, which no server is using."""
        if self.client is None:
            return None
        if in_process_engine and threads > 1 and self.server:
            return self.client | self.server
        return self.client

    def describe(self) -> dict[str, object]:
        return {"client": sorted(self.client) if self.client else None,
                "server": sorted(self.server) if self.server else None, "how": self.how}


NOT_PINNED = CpuPlan(None, None, "off")
# A fleet's experiment as the controller reads it: each host plans `cpus` with the CPUs it may use (fleet/plan.py),
# so the controller's own CPUs bound nothing.
PLANNED_ON_EACH_HOST = CpuPlan(None, None, "planned on each host")


def cpu_set(text: object, where: str) -> frozenset[int]:
    """"0", "0,2", "2-3" as a set of CPU numbers, whichever host they are for."""
    if not isinstance(text, str) or not text.strip():
        raise UserError(f"{where}: expected CPUs such as \"0\", \"0,2\" or \"2-3\", got {text!r}")
    cpus: set[int] = set()
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise UserError(f"{where}: expected CPUs such as \"0\", \"0,2\" or \"2-3\", got {text!r}")
        cpus.update(range(int(low), int(high or low) + 1))
    return frozenset(cpus)


def parse_cpu_list(text: object, where: str, allowed: frozenset[int] | None = None) -> frozenset[int]:
    """The CPUs of a list the lab may use. `allowed`: the CPUs of the host it is planned for (a fleet host's, asked
    there); None: this process's affinity."""
    cpus = cpu_set(text, where)
    if allowed is None:
        allowed = frozenset(os.sched_getaffinity(0))
    missing = sorted(cpus - allowed)
    if missing:
        raise UserError(f"{where}: CPU {missing[0]} is not one this process may use "
                        f"(allowed: {','.join(map(str, sorted(allowed)))})")
    return cpus


def check_cpus(value: object, where: str) -> object:
    """The `cpus` key: "off" or a table with client and server, CPU lists as written. Whether the CPUs exist is
    the plan's question (`plan_cpus`), asked on the host that runs the cells."""
    if value == "off":
        return value
    if not isinstance(value, dict) or set(value) - {"client", "server"} or not value:
        raise UserError(f"{where}: expected {{ client = \"0\", server = \"1\" }} or \"off\"")
    for key, text in value.items():
        cpu_set(text, f"{where}.{key}")
    return value


def plan_cpus(value: object, where: str = "[run].cpus", allowed: frozenset[int] | None = None) -> CpuPlan:
    """The plan of the `cpus` setting (None: auto) on a host that may use the CPUs `allowed` (None: those of this
    process). A fleet plans it once per host, with that host's CPUs (fleet/plan.py)."""
    if allowed is None:
        allowed = frozenset(os.sched_getaffinity(0))
    if value == "off":
        return CpuPlan(None, None, "off")
    if isinstance(value, dict):
        client = parse_cpu_list(value["client"], f"{where}.client", allowed) if "client" in value else None
        server = parse_cpu_list(value["server"], f"{where}.server", allowed) if "server" in value else None
        return CpuPlan(client, server, "experiment")
    in_order = sorted(allowed)
    if len(in_order) < 2:
        return CpuPlan(None, None, "off: one CPU")
    return CpuPlan(frozenset({in_order[0]}), frozenset({in_order[1]}), "auto")


@contextlib.contextmanager
def pinned(cpus: frozenset[int] | None) -> Iterator[None]:
    """Processes forked inside this block run on `cpus` (this thread's affinity is restored afterwards)."""
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
