"""pagecache-buffer: SQLite's page cache from one buffer the driver maps, advises for transparent huge pages and
touches before the run (SQLITE_CONFIG_PAGECACHE, driver/src/engine/page_cache.rs), instead of a malloc per page: the
cached pages sit in the same few 2 MB pages in every process. SQLite then takes its pages from that buffer (and
only the overflow from malloc): a different engine configuration, so an option a user names, never a default. The
cell's record keeps the slots configured, the high-water mark of those used, the bytes that overflowed to malloc
and the huge pages the kernel gave the buffer."""

from __future__ import annotations

from typing import Any

from dbperf.host.remedies import CellPlace, Remedy
from dbperf.records import RunResult

DEFAULT_CACHE_KIB = 2000  # SQLite's default cache_size = -2000
SLACK_SLOTS = 16  # the schema's pages and a statement's scratch pages beside the cache proper


def cache_pages(settings: tuple[tuple[str, str], ...]) -> int:
    """Pages one connection's cache holds: cache_size in pages, or in KiB when negative (SQLite's rule)."""
    values = dict(settings)
    page = int(values.get("page_size", "4096"))
    size = int(values.get("cache_size", str(-DEFAULT_CACHE_KIB)))
    return size if size >= 0 else -size * 1024 // page


def _fields(place: CellPlace) -> dict[str, Any]:
    return {"page_cache_slots": (cache_pages(place.settings) + SLACK_SLOTS) * place.threads,
            "page_cache_huge": True}


def _observe(result: RunResult) -> dict[str, Any]:
    facts = result.page_cache
    return {} if facts is None else {"slots": facts.slots, "slot_bytes": facts.slot_bytes, "huge_kb": facts.huge_kb,
                                     "used_slots_high": facts.used_slots_high,
                                     "overflow_bytes_high": facts.overflow_bytes_high}


def _verify(result: RunResult) -> str | None:
    return None if result.page_cache else "the driver reported no page cache buffer (an older driver?)"


# per_process: its size is a field of the driver's job, which the sides of a slices run share (each side's library
# gets a buffer of that size).
REMEDY = Remedy(name="pagecache-buffer", what="SQLite's page cache from one prefaulted huge-page buffer "
                "(SQLITE_CONFIG_PAGECACHE; an engine option)", changes_engine=True, job_fields=_fields,
                observe=_observe, verify=_verify, per_process=True)
