"""Findings: cache lines where a hot-written object shares the line with read-mostly objects that other threads load
(the pattern of [MySQL bug #97777]), ranked by estimated cost, with the remedy."""

from __future__ import annotations

from dataclasses import dataclass, field

from dbperf.layout.dynamic import Access, DynamicCounts
from dbperf.layout.static_map import GlobalObject, StaticMap

# Fewer stores than this in the whole traced run is "written once at start-up" (or rarely), not hot-written; low,
# because a run under lackey is about a hundred times slower, so a 1-second cell makes few queries.
MIN_HOT_STORES = 100
# A read-mostly object loaded fewer times than this in the whole run cannot cost anything worth a layout change.
MIN_LOADS = 10
# The same thresholds for sampled counts (perf mem), which see a small fraction of the accesses.
SAMPLED_MIN_HOT_STORES, SAMPLED_MIN_LOADS = 5, 2
READ_MOSTLY_SECTION = ".data.read_mostly"


@dataclass
class Finding:
    line: str  # hex address of the cache line (link-time)
    objects: list[str]  # every symbol on the line
    cost: int  # Σ over reader threads r: loads of the read-mostly objects by r × stores to the line by threads ≠ r
    remedy: str
    read_mostly: list[dict] = field(default_factory=list)
    hot_written: list[dict] = field(default_factory=list)
    line_size: int = 64
    binary: str = ""


def _where(o: GlobalObject) -> str:
    return f"{o.name} ({o.source})" if o.source else o.name


def _total(per_thread: dict[int, Access]) -> Access:
    return Access(sum(a.loads for a in per_thread.values()), sum(a.stores for a in per_thread.values()))


def remedy_text(read_mostly: list[GlobalObject], hot: list[GlobalObject], line: int) -> str:
    names = ", ".join(_where(o) for o in read_mostly)
    hot_names = ", ".join(_where(o) for o in hot)
    return (f"move {names} to a section of read-mostly data: __attribute__((section(\"{READ_MOSTLY_SECTION}\"))) "
            f"on the definition, or build with -fdata-sections and link with the fragment `dbperf layout --fix` "
            f"writes (-Wl,-T,read_mostly.ld); or give {hot_names} a line of its own "
            f"(__attribute__((aligned({line}))) and pad it to {line} bytes), or make it thread-local if each "
            "thread may keep its own copy")


def hot_stores(counts: DynamicCounts) -> int:
    return SAMPLED_MIN_HOT_STORES if counts.mode == "sampled" else MIN_HOT_STORES


def findings(static: StaticMap, counts: DynamicCounts, min_hot_stores: int = MIN_HOT_STORES) -> list[Finding]:
    min_loads = MIN_LOADS
    if counts.mode == "sampled":
        min_hot_stores, min_loads = SAMPLED_MIN_HOT_STORES, SAMPLED_MIN_LOADS
    out = []
    for address, objs in static.by_line().items():
        per = {o.name: counts.per_object.get(o.name, {}) for o in objs}
        hot = [o for o in objs if _total(per[o.name]).stores >= min_hot_stores]
        if not hot:
            continue
        stores_by_thread: dict[int, int] = {}
        for o in hot:
            for tid, a in per[o.name].items():
                stores_by_thread[tid] = stores_by_thread.get(tid, 0) + a.stores
        all_stores = sum(stores_by_thread.values())
        read_mostly = []
        cost = 0
        for o in objs:
            if o in hot:
                continue
            if _total(per[o.name]).loads < min_loads:
                continue
            o_cost = sum(a.loads * (all_stores - stores_by_thread.get(tid, 0)) for tid, a in per[o.name].items())
            if o_cost > 0:
                read_mostly.append(o)
                cost += o_cost
        if not read_mostly:
            continue
        out.append(Finding(
            line=hex(address), objects=[o.name for o in objs], cost=cost,
            remedy=remedy_text(read_mostly, hot, static.line),
            read_mostly=[{"name": o.name, "address": hex(o.address), "size": o.size, "source": o.source,
                          "loads_by_thread": {str(t): a.loads for t, a in sorted(per[o.name].items())}}
                         for o in read_mostly],
            hot_written=[{"name": o.name, "address": hex(o.address), "size": o.size, "source": o.source,
                          "stores_by_thread": {str(t): a.stores for t, a in sorted(per[o.name].items())}}
                         for o in hot],
            line_size=static.line, binary=static.path))
    return sorted(out, key=lambda f: -f.cost)


def linker_script(names: list[str], line: int) -> str:
    """A GNU ld fragment (used with -fdata-sections, which gives each object a section named after it) that
    gathers the named objects in their own line-aligned output section after .data, padded to a whole line. After,
    not before: with -z now (MariaDB's hardened build, Debian's hardening flags) the end of the read-only-after-
    relocation segment is right before .data, so a section inserted before it is made read-only at start-up and the
    first write to a moved object (its initialisation) faults. The fragment's patterns still match first."""
    patterns = " ".join(f"*(.data.{n} .data.rel.local.{n} .data.rel.{n} .bss.{n})" for n in names)
    return (f"/* generated by dbperf layout: read-mostly globals apart from written ones */\n"
            f"SECTIONS\n{{\n  {READ_MOSTLY_SECTION} : ALIGN({line})\n  {{\n    {patterns}\n"
            f"    . = ALIGN({line});\n  }}\n}}\nINSERT AFTER .data;\n")
