"""Run-time variants of the process that runs the engine: a preloaded allocator and the huge-page policy.

allocator = "jemalloc" | "tcmalloc" | "mimalloc": LD_PRELOAD of the Debian package's library; every run checks in
  /proc/PID/maps (reported by the driver) that it really is mapped, and fails the cell if not.
hugepages = "thp": glibc's malloc asks for transparent huge pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, which
  madvises its heap); "off": the process opts out of THP (prctl PR_SET_THP_DISABLE) and glibc does not ask.
  What the kernel allowed (/sys/kernel/mm/transparent_hugepage/enabled) and the AnonHugePages the process ended
  with are recorded.
"""

from __future__ import annotations

import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbperf.errors import UserError
from dbperf.records import DriverJob

ALLOCATORS = {
    "jemalloc": ("libjemalloc.so.2", "libjemalloc2"),
    "tcmalloc": ("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"),
    "mimalloc": ("libmimalloc.so.2", "libmimalloc2.0"),
}
HUGEPAGES = ("thp", "off")
THP_SETTING = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def allocator_library(name: str) -> str:
    so, package = ALLOCATORS[name]
    multiarch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
    path = Path("/usr/lib") / multiarch / so
    if not path.is_file():
        raise UserError(f"allocator {name}: {path} not found (apt install {package})")
    return str(path)


def kernel_thp_setting() -> str | None:
    """The bracketed choice of /sys/kernel/mm/transparent_hugepage/enabled, e.g. "madvise"."""
    try:
        text = THP_SETTING.read_text()
    except OSError:
        return None
    start, end = text.find("["), text.find("]")
    return text[start + 1:end] if 0 <= start < end else text.strip()


@dataclass(frozen=True)
class ProcessVariant:
    allocator: str | None = None
    hugepages: str | None = None

    def environment(self) -> dict[str, str]:
        env = {}
        if self.allocator:
            env["LD_PRELOAD"] = allocator_library(self.allocator)
        if self.hugepages == "thp":
            env["GLIBC_TUNABLES"] = "glibc.malloc.hugetlb=1"
        elif self.hugepages == "off":
            env["GLIBC_TUNABLES"] = "glibc.malloc.hugetlb=0"
        return env

    def apply(self, job: DriverJob) -> DriverJob:
        """The job as this variant runs it (in-process engines)."""
        return job.replace(thp_disable=self.hugepages == "off")

    def describe(self) -> dict[str, Any]:
        return {"allocator": self.allocator,
                "allocator_library": allocator_library(self.allocator) if self.allocator else None,
                "hugepages": self.hugepages, "kernel_thp": kernel_thp_setting(),
                "environment": self.environment()}

    def check(self, allocators_mapped: list[str]) -> str | None:
        """Why a run whose engine process mapped these allocator libraries does not satisfy this variant, or None."""
        if self.allocator:
            expected = ALLOCATORS[self.allocator][0]
            if not any(expected in p for p in allocators_mapped):
                return f"allocator {self.allocator} was preloaded but {expected} is not mapped in the driver process"
        return None


def mapped_allocators(pid: int) -> list[str]:
    """Which allocator libraries a process has mapped (/proc/PID/maps), as the driver reports its own."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return []
    paths = {line.split()[-1] for line in maps.splitlines() if len(line.split()) >= 6}
    return sorted(p for p in paths if any(name in p for name in ALLOCATORS))
