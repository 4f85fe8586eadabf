"""The replication lab's HTML report (`dbperf report DIR --format html`): the same summary and tables as the terminal
(replication_view.py), on the self-contained page of html_page.py, with [Nielsen 2014-03-13]'s chart (trx/s applied
against the worker count, one line per durability and mode; on PostgreSQL one bar per durability and mode, since there
are no workers to vary) and, on PostgreSQL, the replay lag over time of each measurement."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from dbperf import engines
from dbperf.records import ResultsRecord
from dbperf.report.charts import colour
from dbperf.report.html_page import Figure, Page, label, table, text
from dbperf.report.replication_view import MB, replication_summary, study_tables
from dbperf.run_meta import RunMeta


def _layout(title: str, x: str, y: str) -> dict[str, Any]:
    return {"title": {"text": label(title)}, "xaxis": {"title": {"text": label(x)}},
            "yaxis": {"title": {"text": label(y)}, "rangemode": "tozero"}, "margin": {"t": 50, "b": 60},
            "height": 380}


def apply_figure(s: dict[str, Any]) -> Figure:
    """trx/s applied (median, min–max as error bars): against workers per (durability, mode) on MariaDB
    ([Nielsen 2014-03-13]'s chart), one bar per (durability, mode) on PostgreSQL."""
    rows = s["apply"]
    if engines.streaming_replication(s.get("engine")):
        data = []
        for i, mode in enumerate(sorted({r["mode"] for r in rows})):
            mine = sorted((r for r in rows if r["mode"] == mode), key=lambda r: r["durability"])
            data.append({"type": "bar", "name": label(mode), "marker": {"color": colour(i)},
                         "x": [label(r["durability"]) for r in mine], "y": [r["trx_per_s"] for r in mine],
                         "error_y": {"type": "data", "symmetric": False,
                                     "array": [r["trx_per_s_max"] - r["trx_per_s"] for r in mine],
                                     "arrayminus": [r["trx_per_s"] - r["trx_per_s_min"] for r in mine]}})
        return {"data": data, "layout": {**_layout("standby replay rate (one replay process)", "durability",
                                                   "trx/s replayed"), "barmode": "group"}}
    lines: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        mode = "parallel" if r["workers"] else r["mode"]
        key = (r["durability"], r["commit_wait_count"], r["benchmark"], r["client_threads"])
        lines[key].append({**r, "line_mode": mode})
    data = []
    for i, (key, points) in enumerate(sorted(lines.items())):
        points.sort(key=lambda r: r["workers"])
        durability, wait, benchmark, threads = key
        name = f"{durability}" + (f" wait={wait}" if wait else "") + f" {benchmark} t={threads}"
        data.append({"type": "scatter", "mode": "lines+markers", "name": label(name), "marker": {"color": colour(i)},
                     "x": [p["workers"] for p in points], "y": [p["trx_per_s"] for p in points],
                     "text": [label(p["mode"]) for p in points]})
    return {"data": data, "layout": _layout("replica apply rate against parallel workers", "workers",
                                            "trx/s applied")}


def lag_figure(s: dict[str, Any]) -> Figure | None:
    """PostgreSQL: WAL bytes not yet replayed over each measurement (replay paused during the load)."""
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
    return {"data": data, "layout": _layout("WAL not yet replayed (load: replay paused; then resumed)",
                                            "seconds since the load started", "MB behind the primary")}


def replication_html(meta: RunMeta, records: list[ResultsRecord]) -> str:
    s = replication_summary(meta, records)
    sections, notes = study_tables(s)
    streaming = engines.streaming_replication(s.get("engine"))
    engine = engines.engine(s.get("engine") or engines.MARIADB.name).title
    page = Page(f"dbperf replication lab ({engine}): {meta.experiment or ''}")
    page.add(f'<p class="note">status {text(meta.status)}</p>')
    if s["apply"]:
        page.section("apply-chart", "apply rate")
        page.add(page.figure(apply_figure(s)))
        lag = lag_figure(s) if streaming else None
        if lag is not None:
            page.add(page.figure(lag))
    for i, sec in enumerate(sections):
        page.section(f"table{i + 1}", sec.title)
        page.add(table(sec.header, sec.rows, sec.text_columns))
    if notes:
        page.section("notes", "notes")
        page.add("".join(f'<p class="note">{text(n)}</p>'.replace("\n", "<br>") for n in notes))
    if not sections and not notes:
        page.add('<p class="note">no replication results yet</p>')
    return page.render()
