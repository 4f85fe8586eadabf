"""The step orders of the sysbench-based harness ([Callaghan, mytools]: mdcallag/mytools
`bench/sysbench.lua/all_small.sh`; [Callaghan 2023-03-27]; docs/sources.md) as catalog groups, and its warm-up cells.

`all` is the classic run: `point-query.warm`; 15 reads; 8 writes; (the post-write step, see
runner/post_write.py); 17 reads again on the written data; delete; insert. `all-2025` is the newer order: `scan.warm`
and scan first, the 8 writes, then 23 reads (the read-only-* range-1000 parts among them), delete, insert: its 32
reported steps. Reads listed after a write are named `NAME@after-writes` by the registry, as everywhere else.
"""

from __future__ import annotations

from dataclasses import replace

from dbperf.catalog.workload import Workload

WARM = ".warm"
# Warm-up cells: the same event as the named benchmark, run (and reported) under a name of their own.
WARM_CELLS = ("point-query" + WARM, "scan" + WARM)

WRITES = ("update-inlist", "update-index", "update-nonindex", "update-one", "update-zipf", "write-only",
          "read-write-10", "read-write-100")
POINTS_AND_RANGES = ("points-covered-pk", "points-notcovered-pk", "points-covered-si", "points-notcovered-si",
                     "range-covered-pk", "range-notcovered-pk", "range-covered-si", "range-notcovered-si")
RANDOM_POINTS = ("random-points-10", "random-points-100", "random-points-1000")
READ_ONLY = ("read-only-10", "read-only-100", "read-only-10000")
READ_ONLY_PARTS = ("read-only-simple", "read-only-sum", "read-only-order", "read-only-distinct", "read-only-count")
FINAL = ("delete", "insert")

CLASSIC = (
    "point-query.warm",
    "point-query", *RANDOM_POINTS, *READ_ONLY, *POINTS_AND_RANGES,
    *WRITES,
    *READ_ONLY, "point-query", *RANDOM_POINTS, "hot-points", *POINTS_AND_RANGES, "scan",
    *FINAL,
)
NEWER = (
    "scan.warm", "scan",
    *WRITES,
    *READ_ONLY, *READ_ONLY_PARTS, "point-query", *RANDOM_POINTS, "hot-points", *POINTS_AND_RANGES,
    *FINAL,
)
ORDERS = {"all": CLASSIC, "all-2025": NEWER}
DESCRIPTIONS = {
    "all": "the harness's classic run ([Callaghan, mytools]): point-query.warm, 15 reads, 8 writes, the post-write "
           "step (with post_write), 17 reads again as NAME@after-writes, delete, insert",
    "all-2025": "the harness's newer run: scan.warm, scan, 8 writes, the post-write step (with post_write), 23 "
                "reads as NAME@after-writes (read-only-simple/-sum/-order/-distinct/-count at range 1000 among them), "
                "delete, insert: 32 reported steps",
}


def warm_cell(name: str, catalog: dict[str, Workload]) -> Workload | None:
    """`point-query.warm` or `scan.warm` as a workload of its own, or None for any other name."""
    if name not in WARM_CELLS:
        return None
    base = catalog[name.removesuffix(WARM)]
    return replace(base, name=name, description=f"warm-up: {base.name}, run before the measured steps")


def harness_order(group: str, catalog: dict[str, Workload]) -> list[Workload]:
    """The group's workloads in the harness's order (duplicates renamed by the registry's resolve)."""
    out = []
    for name in ORDERS[group]:
        warm = warm_cell(name, catalog)
        out.append(warm if warm is not None else catalog[name])
    return out
