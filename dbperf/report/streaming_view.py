"""The report's side of PostgreSQL's streaming standbys (replication_kind_view.py): the replay rate per durability
and mode (workers is 1 and not a setting: physical replay is one process), the WAL shipped and the replay lag over
time, and stale reads against synchronous_commit = remote_apply, whose wait is part of the commit."""

from __future__ import annotations

import statistics
from typing import Any

from dbperf.records import ApplyRecord, to_builtins
from dbperf.report.charts import colour
from dbperf.report.html_page import Figure, label
from dbperf.report.replication_kind_view import MB, KindView, StudyTable, chart_layout, num

LAG_POINTS = 8  # samples shown per measurement in the lag-over-time table
WORKERS_NOTE = ("not applicable: PostgreSQL replays physical WAL in one process (the startup process) and has "
                "no parallel-apply setting for it; the mode is recovery_prefetch")
WAIT = "synchronous_commit = remote_apply"
APPLY_COLUMNS = ("durability", "primary load", "workers", "mode", "trx", "trx/s", "min–max", "n", "replay s",
                 "resume delay s", "WAL MB", "peak behind MB", "peak replay_lag s", "primary trx/s")
LAG_COLUMNS = ("measurement", "t s", "phase", "not replayed MB", "not received MB", "replay_lag s")
STALE_COLUMNS = ("probe", "reads", "stale", "stale fraction", "commit p50 µs", "p95 µs", "p99 µs", "max µs",
                 "background trx/s")


def _peak(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def row_fields(runs: list[ApplyRecord], workers: int, cpus: int) -> dict[str, Any]:
    """The WAL shipped, the resume delay and the peak lag (medians over the runs; the lag of the first run)."""
    series = [to_builtins(x) for x in (runs[0].lag_series or [])]
    delays = [r.resume_delay_s for r in runs if r.resume_delay_s is not None]
    return {"workers_exceed_cpus": False, "workers_note": WORKERS_NOTE,
            "wal_bytes": statistics.median(r.wal_bytes for r in runs),
            "resume_delay_s": statistics.median(delays) if delays else None,
            "peak_replay_behind_bytes": _peak([x["replay_behind_bytes"] for x in series]),
            "peak_replay_lag_s": _peak([x.get("replay_lag_s") for x in series]), "lag_series": series}


def speedups(rows: list[dict[str, Any]]) -> None:
    for row in rows:  # one replay process: there is no single applier to compare with
        row["vs_serial"] = None


def stale_fields(stale: dict[str, Any], engine: str) -> dict[str, Any]:
    """The wait is in the commit: what it adds is the commit under remote_apply minus the commit under local."""
    with_wait, without = stale.get("wait_latency_us"), stale.get("write_latency_us")
    if not (with_wait and without):
        return {"wait": WAIT}
    return {"wait": WAIT,
            "wait_added_us": {p: round(with_wait[p] - without[p], 1) for p in ("p50_us", "p95_us", "p99_us")}}


def cores_note(cpus: int) -> str:
    return ("PostgreSQL streaming replication: the standby replays the WAL in one process (the startup process); "
            "there is no parallel-apply knob for physical replication, so workers is 1 and 'vs 0 workers' does not "
            "apply (n/a). The real knobs are recovery_prefetch (the mode; PG 15+) and maintenance_io_concurrency "
            "(its depth, in the target's config); logical replication's streaming = parallel "
            "(max_parallel_apply_workers_per_subscription, PG 16+) applies only to large in-progress transactions "
            f"and is not measured here. This host has {cpus} CPUs, shared by primary, standby and client.")


def _lag_rows(r: dict[str, Any]) -> list[tuple[str, ...]]:
    """LAG_POINTS samples of the row's lag series, evenly spread, the first labelled with the measurement."""
    series = r.get("lag_series") or []
    if not series:
        return []
    last = len(series) - 1
    picked = [series[i] for i in sorted({round(k * last / (LAG_POINTS - 1)) for k in range(LAG_POINTS)})]
    rows: list[tuple[str, ...]] = []
    for i, x in enumerate(picked):
        lag = x.get("replay_lag_s")
        rows.append((f"{r['durability']} {r['mode']}" if i == 0 else "", f"{x['t_s']:.1f}", x["phase"],
                     num(x["replay_behind_bytes"] / MB, 2), num(x["receive_behind_bytes"] / MB, 2),
                     "-" if lag is None else f"{lag:.3f}"))
    return rows


def apply_tables(s: dict[str, Any]) -> list[StudyTable]:
    """The apply table (workers 1, not applicable; WAL volume and peak lag) and the lag over time."""
    rows: list[tuple[str, ...]] = []
    lag_rows: list[tuple[str, ...]] = []
    order = sorted(s["apply"], key=lambda r: (r["durability"], r["benchmark"], r["client_threads"], r["mode"]))
    for r in order:
        peak_lag = r.get("peak_replay_lag_s")
        rows.append((r["durability"], f"{r['benchmark']} t={r['client_threads']}", "1 (n/a)", r["mode"],
                     num(r["transactions"]), num(r["trx_per_s"]),
                     f"{num(r['trx_per_s_min'])}–{num(r['trx_per_s_max'])}", str(r["n"]),
                     num(r["apply_s"], 3), num(r.get("resume_delay_s"), 3), num((r.get("wal_bytes") or 0) / MB, 1),
                     num((r.get("peak_replay_behind_bytes") or 0) / MB, 1),
                     "-" if peak_lag is None else f"{peak_lag:.2f}", num(r["primary_trx_per_s"])))
        lag_rows += _lag_rows(r)
    tables = [StudyTable("standby apply rate (trx/s replayed, median of n)", APPLY_COLUMNS, rows, 4)]
    if lag_rows:
        tables.append(StudyTable("replay lag over time (first run of each row; load: replay paused, apply: resumed)",
                                 LAG_COLUMNS, lag_rows, 3))
    return tables


def stale_table(st: dict[str, Any]) -> tuple[StudyTable, str]:
    """Both rows show the commit's latency: the wait is the commit under remote_apply."""
    rows: list[tuple[str, ...]] = []
    for label_, key in (("without wait (commit: local)", "without_wait"), (WAIT, "with_wait")):
        if st[key] is None:
            continue
        lat = st.get("wait_latency_us") if key == "with_wait" else st.get("write_latency_us")
        rows.append((label_, num(st.get(f"reads_{key}")), num(st.get(f"stale_{key}")), f"{st[key]:.2%}",
                     *(num(lat[p], 1) if lat else "-" for p in ("p50_us", "p95_us", "p99_us", "max_us")),
                     num(st.get(f"background_trx_per_s_{key}"))))
    added = st.get("wait_added_us")
    rate = st.get("background_rate")
    note = (f"stale reads: {st.get('background_threads')} background writer thread(s) on the primary "
            f"({f'{rate:,.0f} trx/s target' if rate else 'unthrottled'}, synchronous_commit = local); standbys "
            f"{st.get('durability')}, {st.get('mode')}, all listed in synchronous_standby_names (FIRST n); the "
            "probe loop is native (dbperf-driver stale-reads). The wait is part of the commit: the commit "
            "round trip under remote_apply against the same under local"
            + (f", so the wait adds p50 {num(added['p50_us'], 1)} µs, p95 {num(added['p95_us'], 1)} µs, "
               f"p99 {num(added['p99_us'], 1)} µs (differences of percentiles)." if added else ".")
            + " remote_apply has no timeout: a standby that dies fails the study (the lab ends the waiting "
              "sessions).")
    return StudyTable("stale reads (write on the primary, read the row on a standby at once)", STALE_COLUMNS, rows,
                      1), note


def apply_figure(s: dict[str, Any]) -> Figure:
    """trx/s replayed (median, min–max as error bars): one bar per durability and mode (no workers to vary)."""
    rows = s["apply"]
    data = []
    for i, mode in enumerate(sorted({r["mode"] for r in rows})):
        mine = sorted((r for r in rows if r["mode"] == mode), key=lambda r: r["durability"])
        data.append({"type": "bar", "name": label(mode), "marker": {"color": colour(i)},
                     "x": [label(r["durability"]) for r in mine], "y": [r["trx_per_s"] for r in mine],
                     "error_y": {"type": "data", "symmetric": False,
                                 "array": [r["trx_per_s_max"] - r["trx_per_s"] for r in mine],
                                 "arrayminus": [r["trx_per_s"] - r["trx_per_s_min"] for r in mine]}})
    return {"data": data, "layout": {**chart_layout("standby replay rate (one replay process)", "durability",
                                                    "trx/s replayed"), "barmode": "group"}}


def lag_figure(s: dict[str, Any]) -> Figure | None:
    """WAL bytes not yet replayed over each measurement (replay paused during the load)."""
    data = []
    for i, r in enumerate(sorted(s["apply"], key=lambda r: (r["durability"], r["mode"]))):
        series = r.get("lag_series") or []
        if series:
            data.append({"type": "scatter", "mode": "lines", "name": label(f"{r['durability']} {r['mode']}"),
                         "line": {"color": colour(i)}, "x": [x["t_s"] for x in series],
                         "y": [round(x["replay_behind_bytes"] / MB, 3) for x in series],
                         "text": [label(x["phase"]) for x in series]})
    if not data:
        return None
    return {"data": data, "layout": chart_layout("WAL not yet replayed (load: replay paused; then resumed)",
                                                 "seconds since the load started", "MB behind the primary")}


def figures(s: dict[str, Any]) -> list[Figure]:
    lag = lag_figure(s)
    return [apply_figure(s)] + ([lag] if lag is not None else [])


VIEW = KindView(name="streaming", row_fields=row_fields, speedups=speedups, stale_fields=stale_fields,
                cores_note=cores_note, apply_tables=apply_tables, stale_table=stale_table, figures=figures)
