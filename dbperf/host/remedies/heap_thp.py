"""heap-thp: glibc's malloc asks for transparent huge pages for its heap (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, which
madvises it; the kernel's THP setting must allow madvise). SQLite's page cache and its statements live on that heap:
in 2 MB pages their physical placement, which sets the physically indexed caches' set conflicts, no longer differs
from one process to the next at 4 kB granularity, and the TLB covers them. The engine does the same work."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dbperf.host.process_variants import kernel_thp_setting
from dbperf.host.remedies import Remedy
from dbperf.records import RunResult


def _observe(result: RunResult) -> dict[str, Any]:
    return {"anon_huge_kb": result.process.anon_huge_kb, "kernel_thp": kernel_thp_setting()}


def _conflict(facts: Mapping[str, Any]) -> str | None:
    return "the target sets its own hugepages" if facts.get("hugepages") else None


REMEDY = Remedy(
    name="heap-thp", what="the driver's heap on transparent huge pages (glibc.malloc.hugetlb=1)",
    environment={"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}, observe=_observe, conflict=_conflict, per_process=True)
