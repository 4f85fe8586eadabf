"""The report's side of MariaDB's and MySQL's binlog replicas (replication_kind_view.py): the apply rate as
[Nielsen 2014-03-13]'s chart in table form (trx/s applied per worker count, mode, durability and commit wait, with the
speed-up over the single SQL thread), stale reads against the engine's GTID wait (MASTER_GTID_WAIT,
WAIT_FOR_EXECUTED_GTID_SET) and the cross-engine commits of [Nielsen 2017-05-12]."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from dbperf.records import ApplyRecord
from dbperf.replication.binlog import DIALECTS
from dbperf.replication.binlog_dialect import BinlogDialect
from dbperf.replication.mariadb_binlog import GROUP_CLOSED
from dbperf.report.charts import colour
from dbperf.report.html_page import Figure, label
from dbperf.report.replication_kind_view import OVER_CORES, KindView, StudyTable, chart_layout, num, spread

APPLY_COLUMNS = ("durability", "commit wait", "primary load", "workers", "mode", "trx", "trx/s", "min–max", "n",
                 "vs 0 workers", "primary trx/s", "commits / group")
STALE_COLUMNS = ("probe", "reads", "stale", "stale fraction", "wait p50 µs", "p95 µs", "p99 µs", "max µs", "timeouts",
                 "background trx/s")
CROSS_COLUMNS = ("durability", "tables", "GTID state", "primary load", "trx", "trx/s", "min–max", "n", "apply s",
                 "vs state in rocksdb")
CROSS_NOTE = ("cross-engine: GTID state innodb = mysql.gtid_slave_pos in InnoDB while the tables are MyRocks "
              "(every replicated commit spans two engines); auto = gtid_pos_auto_engines = innodb,rocksdb "
              "(a state table per engine); rocksdb = mysql.gtid_slave_pos in MyRocks. fsync: sync_binlog = 1 "
              "and both engines' flush_log_at_trx_commit = 1; no-fsync: 0 and 2.")


def row_fields(runs: list[ApplyRecord], workers: int, cpus: int) -> dict[str, Any]:
    """Whether the workers exceed the CPUs; the primary's mean binlog group over each run's load and what closed
    its groups, where every run counted them (runs from before they were kept, and MySQL: none)."""
    fields: dict[str, Any] = {"workers_exceed_cpus": bool(cpus) and workers > cpus}
    groups = [g for r in runs if (g := r.commits_per_group) is not None]
    if groups and len(groups) == len(runs):
        fields.update(spread("commits_per_group", groups))
        fields["groups_closed_by"] = {why: sum((r.primary_group_commit or {}).get(name, 0) for r in runs)
                                      for why, name in GROUP_CLOSED.items()}
    return fields


def speedups(rows: list[dict[str, Any]]) -> None:
    """vs_serial: over the one SQL thread's rate (workers = 0) of the same durability, commit wait and load."""
    serial = {(r["durability"], r["commit_wait_count"], r["benchmark"], r["client_threads"]): r["trx_per_s"]
              for r in rows if r["workers"] == 0}
    for row in rows:
        base = serial.get((row["durability"], row["commit_wait_count"], row["benchmark"], row["client_threads"]))
        row["vs_serial"] = round(row["trx_per_s"] / base, 3) if base else None


def stale_fields(stale: dict[str, Any], engine: str) -> dict[str, Any]:
    return {"wait": DIALECTS[engine].wait_name}


def _dialect(wait: str) -> BinlogDialect:
    """The engine whose wait the summary names (each engine's wait has its own name)."""
    return next(d for d in DIALECTS.values() if d.wait_name == wait)


def cores_note(cpus: int) -> str | None:
    if not cpus:
        return None
    return (f"This host has {cpus} CPUs (primary, replica and client share them): parallel apply cannot run more "
            f"than {cpus} transactions on CPU at once, so a gain past {cpus} workers ({OVER_CORES}) can only come "
            "from overlapping commit waits (fsync, group commit), never from more CPU. The 10x at 12+ workers of "
            "[Nielsen 2014-03-13] was measured on a many-core server; this table does not and cannot show that here.")


def commit_wait(r: dict[str, Any]) -> str:
    """The primary's group-commit wait of a row, as what it is: none, or up to `usec` for `count` commits."""
    if not r["commit_wait_count"]:
        return "none"
    return f"{r['commit_wait_count']} commits or {r['commit_wait_usec']:,} µs"


def primary_load(r: dict[str, Any]) -> str:
    """The primary's write load of a row: its workload and its client threads, said as such."""
    clients = r["client_threads"]
    return f"{r['benchmark']}, {clients} client{'' if clients == 1 else 's'}"


def apply_tables(s: dict[str, Any]) -> list[StudyTable]:
    rows: list[tuple[str, ...]] = []
    order = sorted(s["apply"], key=lambda r: (r["durability"], r["commit_wait_count"], r["benchmark"],
                                              r["client_threads"], r["workers"], r["mode"]))
    for r in order:
        workers = f"{r['workers']}{OVER_CORES if r['workers_exceed_cpus'] else ''}"
        rows.append((r["durability"], commit_wait(r), primary_load(r), workers, r["mode"],
                     num(r["transactions"]), num(r["trx_per_s"]),
                     f"{num(r['trx_per_s_min'])}–{num(r['trx_per_s_max'])}", str(r["n"]),
                     "-" if r["vs_serial"] is None else f"{r['vs_serial']:.2f}x", num(r["primary_trx_per_s"]),
                     _groups(r)))
    return [StudyTable("replica apply rate (trx/s applied, median of n)", APPLY_COLUMNS, rows, 5)]


def _groups(r: dict[str, Any]) -> str:
    """The primary's mean binlog group, median of the runs with their range; "-" where not counted."""
    if "commits_per_group" not in r:
        return "-"
    return f"{r['commits_per_group']:.1f} ({r['commits_per_group_min']:.1f}–{r['commits_per_group_max']:.1f})"


def stale_table(st: dict[str, Any]) -> tuple[StudyTable, str]:
    rows: list[tuple[str, ...]] = []
    d = _dialect(st["wait"])
    for label_, key in (("without wait", "without_wait"), (d.wait_name, "with_wait")):
        if st[key] is None:
            continue
        lat = st.get("wait_latency_us") if key == "with_wait" else None
        rows.append((label_, num(st.get(f"reads_{key}")), num(st.get(f"stale_{key}")), f"{st[key]:.2%}",
                     *(num(lat[p], 1) if lat else "-" for p in ("p50_us", "p95_us", "p99_us", "max_us")),
                     num(st.get("wait_timeouts")) if key == "with_wait" else "-",
                     num(st.get(f"background_trx_per_s_{key}"))))
    rate = st.get("background_rate")
    runs = st.get("runs_with_wait") or 1
    repeated = (f"{runs} runs each, the reads pooled, each latency the median of the runs' (the wait's p50 "
                f"{num(st.get('wait_p50_us_min'), 1)}–{num(st.get('wait_p50_us_max'), 1)} µs, p99 "
                f"{num(st.get('wait_p99_us_min'), 1)}–{num(st.get('wait_p99_us_max'), 1)} µs over them); "
                if runs > 1 else "")
    note = (f"stale reads: {repeated}{st.get('background_threads')} background writer thread(s) on the primary "
            f"({f'{rate:,.0f} trx/s target' if rate else 'unthrottled'}); "
            f"replicas {st.get('durability')}, {st.get('workers')} workers ({st.get('mode')}); the probe "
            "loop is native (dbperf-driver stale-reads); the wait's latency is the round trip of SELECT "
            f"{d.wait_name} on the replica (fetching {d.stale_position} on the primary is a further p50 "
            f"{num((st.get('gtid_fetch_latency_us') or {}).get('p50_us'), 1)} µs).")
    return StudyTable("stale reads (write on the primary, read the row on a replica at once)", STALE_COLUMNS, rows,
                      1), note


def cross_engine_tables(s: dict[str, Any]) -> tuple[list[StudyTable], list[str]]:
    if not s.get("cross_engine"):
        return [], []
    rows: list[tuple[str, ...]] = [
        (c["durability"], c["table_engine"], c["state_engine"], primary_load(c),
         num(c["transactions"]), num(c["trx_per_s"]), f"{num(c['trx_per_s_min'])}–{num(c['trx_per_s_max'])}",
         str(c["n"]), f"{c['apply_s']:.2f}",
         "-" if c["vs_single_engine"] is None else f"{c['vs_single_engine']:.2f}x") for c in s["cross_engine"]]
    return [StudyTable("cross-engine commits (replica apply, one SQL thread)", CROSS_COLUMNS, rows, 4)], [CROSS_NOTE]


def apply_figure(s: dict[str, Any]) -> Figure:
    """[Nielsen 2014-03-13]'s chart: trx/s applied (median) against workers, a line per durability, commit wait
    and load."""
    lines: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in s["apply"]:
        mode = "parallel" if r["workers"] else r["mode"]
        key = (r["durability"], r["commit_wait_count"], r["benchmark"], r["client_threads"])
        lines[key].append({**r, "line_mode": mode})
    data = []
    for i, (_, points) in enumerate(sorted(lines.items())):
        points.sort(key=lambda r: r["workers"])
        r = points[0]
        name = f"{r['durability']}, commit wait {commit_wait(r)}, {primary_load(r)}"
        data.append({"type": "scatter", "mode": "lines+markers", "name": label(name), "marker": {"color": colour(i)},
                     "x": [p["workers"] for p in points], "y": [p["trx_per_s"] for p in points],
                     "text": [label(p["mode"]) for p in points]})
    return {"data": data, "layout": chart_layout("replica apply rate against parallel workers", "workers",
                                                 "trx/s applied")}


VIEW = KindView(name="binlog", row_fields=row_fields, speedups=speedups, stale_fields=stale_fields,
                cores_note=cores_note, apply_tables=apply_tables, stale_table=stale_table,
                figures=lambda s: [apply_figure(s)], other_tables=cross_engine_tables)
