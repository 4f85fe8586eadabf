"""What a published figure may need of the host it is measured on, and whether this host has it: vCPUs for its
threads, each of them on a core of its own, hardware counters (a PMU), the server release its code comes from.

A figure measured where its conditions do not hold would be a number that cannot mean the published one: it is
recorded as `not reproducible here` with the measured reason instead (studies/figures.py). Which vCPUs share a core
is the kernel's thread_siblings_list of each; whether there is a PMU is the caller's counter detection
(explain/mode.py, which sits above this layer)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dbperf.errors import UserError

SYS_CPU = Path("/sys/devices/system/cpu")


@dataclass(frozen=True)
class HostShape:
    """The host's conditions, as measured (or as a host description gives them, in tests and in records)."""
    vcpus: int
    cores: int  # distinct physical cores among the vCPUs (thread_siblings_list)
    shared: tuple[str, ...] = ()  # sibling lists of more than one vCPU, e.g. ("0-1",)
    pmu: bool | None = None  # None: not detected
    pmu_reason: str = ""
    unserved: dict[str, str] = field(default_factory=dict)  # engine -> why no registry serves its release

    def to_json(self) -> dict[str, Any]:
        return {"vcpus": self.vcpus, "cores": self.cores, "shared": list(self.shared), "pmu": self.pmu,
                "pmu_reason": self.pmu_reason, "unserved": dict(self.unserved)}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> HostShape:
        try:
            return cls(int(doc["vcpus"]), int(doc["cores"]), tuple(str(s) for s in doc.get("shared", ())),
                       doc.get("pmu"), str(doc.get("pmu_reason", "")), dict(doc.get("unserved") or {}))
        except (KeyError, TypeError, ValueError) as e:
            raise UserError(f"host description: needs vcpus and cores as whole numbers ({e})") from None


def sibling_lists(sys_cpu: Path = SYS_CPU) -> dict[int, str]:
    """vCPU -> its thread_siblings_list ("0-1", "2,6"), for the online vCPUs the kernel lists."""
    out = {}
    for topo in sys_cpu.glob("cpu[0-9]*/topology/thread_siblings_list"):
        cpu = int(re.sub(r"\D", "", topo.parent.parent.name))
        try:
            out[cpu] = topo.read_text().strip()
        except OSError:
            continue
    return out


def _count(siblings: str) -> int:
    n = 0
    for part in siblings.split(","):
        lo, _, hi = part.partition("-")
        n += int(hi) - int(lo) + 1 if hi else 1
    return n


def this_host(pmu: bool | None = None, pmu_reason: str = "", sys_cpu: Path = SYS_CPU) -> HostShape:
    """This host's shape; `pmu` and its reason from the caller's counter detection."""
    lists = sibling_lists(sys_cpu)
    vcpus = len(lists) or os.cpu_count() or 1
    groups = set(lists.values())
    shared = tuple(sorted(g for g in groups if _count(g) > 1))
    return HostShape(vcpus, len(groups) or vcpus, shared, pmu, pmu_reason)


@dataclass(frozen=True)
class HostRequirement:
    """What a figure needs (`requires = { threads = 8, own_cores = true, pmu = true, release = "mysql" }`)."""
    threads: int = 1  # vCPUs it runs threads on, one each
    own_cores: bool = False  # each of those threads on a core no other of them shares
    pmu: bool = False
    release: str = ""  # the engine whose Debian source release it times

    def describe(self) -> str:
        parts = [f"{self.threads} vCPUs" if self.threads > 1 else ""]
        parts += ["a core per thread" if self.own_cores else "", "a PMU" if self.pmu else "",
                  f"a {self.release} release served" if self.release else ""]
        return ", ".join(p for p in parts if p)

    def unmet(self, host: HostShape) -> str | None:
        """Why `host` does not meet it, as measured; None when it does."""
        if self.threads > host.vcpus:
            return f"{self.threads} threads need {self.threads} vCPUs; this host has {host.vcpus}"
        if self.own_cores and self.threads > host.cores:
            return (f"{self.threads} threads on cores of their own need {self.threads} cores; this host's "
                    f"{host.vcpus} vCPUs are {host.cores} cores (siblings {', '.join(host.shared)})")
        if self.pmu and host.pmu is not True:
            return f"no PMU: {host.pmu_reason or 'hardware counters not detected'}"
        if self.release and self.release in host.unserved:
            return f"no registry serves the {self.release} release: {host.unserved[self.release]}"
        return None


REQUIREMENT_KEYS = ("threads", "own_cores", "pmu", "release")


def parse_requirement(raw: Any, where: str) -> HostRequirement:
    """A `requires` table, or one clear line saying what is wrong with it."""
    if not isinstance(raw, dict) or not raw or not set(raw) <= set(REQUIREMENT_KEYS):
        raise UserError(f"{where}: requires must be a table of {', '.join(REQUIREMENT_KEYS)}")
    threads = raw.get("threads", 1)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise UserError(f"{where}: requires.threads must be a whole number of 1 or more")
    if any(not isinstance(raw.get(k, False), bool) for k in ("own_cores", "pmu")):
        raise UserError(f"{where}: requires.own_cores and requires.pmu must be true or false")
    if not isinstance(raw.get("release", ""), str):
        raise UserError(f"{where}: requires.release must name an engine")
    return HostRequirement(threads, raw.get("own_cores", False), raw.get("pmu", False), raw.get("release", ""))
