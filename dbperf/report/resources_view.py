"""The resources view (`dbperf report DIR --resources`): per target and benchmark, I/O per query of the driver,
the server's processes and the data's device, engine counters per query, and the database's size after the load
and at the end. Per-query figures are the median over the cell's ok repeats; figures never measured are "-"."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from dbperf import engines
from dbperf.records import CellRecord, Resources, ResultsRecord
from dbperf.report.model import Block, Row, Section, View
from dbperf.run_meta import RunMeta


def _per_query(r: Resources) -> dict[str, float]:
    q = r.queries
    out: dict[str, float] = {}
    for prefix, io in (("client", r.client_io), ("server", r.server_io)):
        if io is not None:
            out.update({f"{prefix}_read_bytes": io.read_bytes / q, f"{prefix}_write_bytes": io.write_bytes / q,
                        f"{prefix}_rchar": io.rchar / q, f"{prefix}_wchar": io.wchar / q})
    if r.device is not None:
        out.update({"device_read_bytes": r.device.read_bytes / q, "device_write_bytes": r.device.write_bytes / q,
                    "device_reads": r.device.reads / q, "device_writes": r.device.writes / q})
    out.update({f"engine.{k}": v / q for k, v in r.engine_counters.items()})
    return out


def resource_rows(records: list[ResultsRecord]) -> list[dict[str, Any]]:
    """One row per (target, benchmark, threads) in run order, with the median per-query figures of its repeats."""
    grouped: dict[tuple[str, str, int], list[CellRecord]] = defaultdict(list)
    for rec in records:
        if isinstance(rec, CellRecord) and rec.ok:
            grouped[(rec.target, rec.benchmark, rec.threads)].append(rec)
    rows = []
    for (target, benchmark, threads), cells in grouped.items():
        measured = [c.resources for c in cells if c.resources is not None and c.resources.queries > 0]
        per_query = [_per_query(r) for r in measured]
        keys = sorted({k for p in per_query for k in p})
        unavailable = {k: v for r in measured for k, v in r.unavailable.items()}
        rows.append({"target": target, "benchmark": benchmark, "threads": threads, "repeats": len(measured),
                     "per_query": {k: statistics.median(p[k] for p in per_query if k in p) for k in keys},
                     "unavailable": unavailable})
    return rows


def _sizes(meta: RunMeta) -> dict[str, tuple[int | None, int | None]]:
    return {t.name: (t.db_bytes_after_load, t.db_bytes_at_end) for t in meta.targets}


def resources_document(meta: RunMeta, records: list[ResultsRecord]) -> dict[str, Any]:
    """The JSON document: every target's database sizes and every cell's per-query figures."""
    sizes = _sizes(meta)
    return {"targets": [{"name": n, "db_bytes_after_load": a, "db_bytes_at_end": b} for n, (a, b) in sizes.items()],
            "cells": resource_rows(records)}


def _kb(value: float | None) -> str:
    return "-" if value is None else f"{value / 1024:,.2f}"


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3f}"


def _mb(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.1f} MiB"


def _target_table(engine: str, mine: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """One target's columns and rows (terminal and documents alike)."""
    columns = ["benchmark", "drv rd KB", "drv wr KB", "drv rchar KB", "drv wchar KB"]
    kind = engines.of(engine)
    if kind.server:
        columns += ["srv rd KB", "srv wr KB"]
    columns += ["dev rd KB", "dev wr KB", "dev IOs"]
    shown = kind.shown_counters  # JSON has them all
    columns += [title for _, title in shown]
    rows = []
    for r in mine:
        p = r["per_query"]
        label = r["benchmark"] if r["threads"] == 1 else f"{r['benchmark']} t={r['threads']}"
        cells = [label, _kb(p.get("client_read_bytes")), _kb(p.get("client_write_bytes")),
                 _kb(p.get("client_rchar")), _kb(p.get("client_wchar"))]
        if kind.server:
            cells += [_kb(p.get("server_read_bytes")), _kb(p.get("server_write_bytes"))]
        ios = (p["device_reads"] + p["device_writes"]) if "device_reads" in p else None
        cells += [_kb(p.get("device_read_bytes")), _kb(p.get("device_write_bytes")), _num(ios)]
        cells += [_num(p.get(f"engine.{name}")) for name, _ in shown]
        rows.append(cells)
    return columns, rows


TITLE = "Resources per query"
TITLE_NOTE = "(median of repeats; KB = 1024 bytes)"
HOW = ("How: the lab samples /proc/PID/io (drv: the driver process, the engine too for SQLite; "
       "srv: the server's processes), /proc/diskstats of the data's device (dev: host-wide, every "
       "process on that disk) and the engine's counters by SQL at launch+warmup and launch+warmup+time; "
       "per query = delta / (QPS × that window). rd/wr KB reached storage (read_bytes, write_bytes); "
       "rchar/wchar count read()/write()-family calls (page cache and pipes too; send/recv on sockets "
       "are not counted). PostgreSQL "
       "publishes counters at most once a second: short cells are rough.")


def _targets(meta: RunMeta,
             records: list[ResultsRecord]) -> Iterator[tuple[str, str, str, list[dict[str, Any]]]]:
    """Per target: name, engine, its database sizes as text, its rows."""
    rows = resource_rows(records)
    engine_of = {t.name: t.engine or engines.DEFAULT.name for t in meta.targets}
    for target, (loaded, end) in _sizes(meta).items():
        yield (target, engine_of.get(target, engines.DEFAULT.name),
               f"database {_mb(loaded)} after load, {_mb(end)} at the end",
               [r for r in rows if r["target"] == target])


def _missing(mine: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted({k: v for r in mine for k, v in r["unavailable"].items()}.items())


def resources_view(meta: RunMeta, records: list[ResultsRecord]) -> View:
    """Per target its sizes and table; CSV rows carry every per-query figure, JSON is resources_document."""
    sections = []
    for target, engine, sizes, mine in _targets(meta, records):
        columns, rows = _target_table(engine, mine)
        sections.append(Section(
            title=f"{target} ({engine})", subtitle=sizes,
            lines=tuple([] if mine else ["no measured cell"]) + tuple(f"{what} not measured: {why}"
                                                                      for what, why in _missing(mine)),
            block=Block("", "", tuple(columns), tuple(Row(tuple(r)) for r in rows)) if mine else None))
    flat = tuple({"target": r["target"], "benchmark": r["benchmark"], "threads": r["threads"],
                  "repeats": r["repeats"], **r["per_query"]} for r in resource_rows(records))
    return View("resources", TITLE, tuple(sections), subtitle=TITLE_NOTE, rows=flat, notes=(HOW,),
                document=resources_document(meta, records))
