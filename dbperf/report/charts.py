"""The figures of the HTML report of one run, as Plotly figure dicts built from the Matrix (no plotly Python objects:
plain dicts are what the page embeds, and building them directly is fast). Every figure's title says what was
measured and how (wall clock, getrusage, HdrHistogram, simulated or hardware counters), and its noise where it has
one (every repeat drawn, CI or min–max)."""

from __future__ import annotations

import textwrap
from typing import Any

from dbperf.records import CellRecord
from dbperf.report.html_page import Figure, label
from dbperf.report.matrix_layout import cpu_text, rqps_text
from dbperf.report.simulated_view import sim_text
from dbperf.report.tiers_view import mark, predicted_text
from dbperf.stats.cell_verdict import VERDICT_COLOURS, VERDICTS, cell_verdict
from dbperf.stats.rqps_matrix import Matrix

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
FONT = {"size": 11}


def row_label(m: Matrix, benchmark: str, threads: int) -> str:
    return benchmark if len(m.threads) == 1 else f"{benchmark} t={threads}"


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


TITLE_CHARS = 58  # a title's line in a chart as narrow as the page's grid puts them (440 px at 13 px type)


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    """A figure's layout; its title wrapped at words (plotly clips a title wider than its figure), the top margin
    grown to hold its lines."""
    lines = textwrap.wrap(title, TITLE_CHARS, break_long_words=False) or [""]
    return {"title": {"text": "<br>".join(lines), "font": {"size": 13}}, "font": FONT,
            "margin": {"l": 60, "r": 20, "t": 34 + 17 * len(lines), "b": 60}, **extra}


def rqps_heatmap(m: Matrix) -> Figure:
    """The rQPS matrix, each cell coloured by its verdict and labelled with its rQPS and marks."""
    rows = m.rows()
    ys = [label(row_label(m, b, t)) for _, b, t in rows]
    xs = [label(f"col-{i} {t}") for i, t in enumerate(m.targets, 1)]
    z, texts, hover = [], [], []
    for _, b, t in rows:
        zr, tr, hr = [], [], []
        for target in m.targets:
            cell = m.cell(target, b, t)
            v = cell_verdict(m, cell)
            zr.append(VERDICTS.index(v.word))
            tr.append(label(rqps_text(m, cell) + mark(cell)))
            p = f", p={cell.p_value:.3g}" if cell is not None and cell.p_value is not None else ""
            noise = f", noise threshold {v.noise_threshold:.1%}" if v.noise_threshold is not None else ""
            extra = ""
            if cell is not None and cell.cpu_verdict_detail is not None:
                extra += f"<br>CPU time: {label(cpu_text(m, cell))}"
            if cell is not None and cell.sim is not None:
                extra += f"<br>simulated Δ est. cycles (work): {label(sim_text(cell) + mark(cell))}"
            if cell is not None and cell.predicted is not None:
                extra += f"<br>predicted CPU Δ (cost model): {label(predicted_text(cell))}"
            if cell is not None and cell.tiers is not None:
                extra += f"<br>tiers: {label(cell.tiers.tiers)}: {label(cell.tiers.why)}"
            hr.append(label(f"{v.word} ({v.decided_by}{p}{noise})") + extra)
        z.append(zr)
        texts.append(tr)
        hover.append(hr)
    n = len(VERDICTS)
    scale = []
    for i, word in enumerate(VERDICTS):
        scale += [[i / n, VERDICT_COLOURS[word]], [(i + 1) / n, VERDICT_COLOURS[word]]]
    return {"data": [{"type": "heatmap", "x": xs, "y": ys, "z": z, "text": texts, "customdata": hover,
                      "texttemplate": "%{text}", "zmin": -0.5, "zmax": n - 0.5, "colorscale": scale,
                      "showscale": False, "xgap": 2, "ygap": 2, "textfont": {"color": "#111"},
                      "hovertemplate": "%{y} / %{x}<br>rQPS %{text}<br>%{customdata}<extra></extra>"}],
            "layout": _layout(f"rQPS against {label(m.base)} (QPS: wall clock), coloured by verdict",
                              height=max(260, 26 * len(rows) + 140),
                              yaxis={"autorange": "reversed", "type": "category", "automargin": True},
                              xaxis={"type": "category", "side": "top", "automargin": True})}


def repeats_figure(m: Matrix, benchmark: str, threads: int) -> Figure:
    """Every repeat of every target as a point, with the median and its 95% CI (n ≥ 6) or min–max (fewer)."""
    data: list[dict[str, Any]] = []
    med_x, med_y, hi, lo, kinds = [], [], [], [], []
    for i, target in enumerate(m.targets):
        cell = m.cell(target, benchmark, threads)
        x = label(target)
        if cell is None or cell.qps is None:
            continue
        qps = cell.per_run("qps")
        data.append({"type": "scatter", "mode": "markers", "x": [x] * len(qps), "y": qps, "name": x,
                     "legendgroup": x, "showlegend": False, "marker": {"color": colour(i), "opacity": 0.55,
                                                                      "size": 7},
                     "hovertemplate": f"{x}<br>repeat QPS %{{y:,.0f}}<extra></extra>"})
        q = cell.qps
        top, bottom = (q.ci_high, q.ci_low) if q.ci_low is not None and q.ci_high is not None else (q.maximum,
                                                                                                    q.minimum)
        med_x.append(x)
        med_y.append(q.center)
        hi.append(top - q.center)
        lo.append(q.center - bottom)
        kinds.append("95% CI" if q.ci_low is not None else f"min–max (n={q.n}, too few for a 95% CI)")
    data.append({"type": "scatter", "mode": "markers", "x": med_x, "y": med_y, "name": "center",
                 "customdata": kinds, "marker": {"symbol": "line-ew-open", "size": 26, "color": "#000",
                                                  "line": {"width": 2}},
                 "error_y": {"type": "data", "array": hi, "arrayminus": lo, "color": "#000", "width": 6},
                 "hovertemplate": "%{x}<br>" + ("median" if m.aggregate == "median" else "trimmed mean")
                                  + " %{y:,.0f}<br>bars: %{customdata}<extra></extra>", "showlegend": False})
    return {"data": data, "layout": _layout(f"{label(row_label(m, benchmark, threads))}: QPS of each repeat "
                                            "(wall clock), center and 95% CI or min–max", height=320,
                                            xaxis={"type": "category", "automargin": True},
                                            yaxis={"title": {"text": "QPS"}})}


def _pairs(m: Matrix) -> list[tuple[str, str, str, int]]:
    """(row label, target, benchmark, threads) of every measured cell, in report order."""
    return [(row_label(m, b, t), target, b, t) for _, b, t in m.rows() for target in m.targets
            if (c := m.cell(target, b, t)) is not None and c.qps is not None]


def _multicategory(pairs: list[tuple[str, str, str, int]]) -> list[list[str]]:
    return [[label(r) for r, *_ in pairs], [label(t) for _, t, *_ in pairs]]


def cpu_figure(m: Matrix) -> Figure:
    """CPU µs per query, stacked: client user + system, server user + system (servers the lab started)."""
    pairs = _pairs(m)
    cells = [m.cell(t, b, th) for _, t, b, th in pairs]
    has_server = any(c is not None and c.median_of("server_cpu_us_per_query") is not None for c in cells)
    parts = [("cpu_user_us_per_query", "client user" if has_server else "user (driver + in-process engine)",
              "#1f77b4"),
             ("cpu_system_us_per_query", "client system" if has_server else "system (driver + in-process engine)",
              "#aec7e8")]
    if has_server:
        parts += [("server_cpu_user_us_per_query", "server user", "#ff7f0e"),
                  ("server_cpu_system_us_per_query", "server system", "#ffbb78")]
    x = _multicategory(pairs)
    data = [{"type": "bar", "x": x, "y": [c.median_of(key) if c else None for c in cells], "name": name,
             "marker": {"color": col}, "hovertemplate": f"{name}: %{{y:.2f}} µs/query<extra></extra>"}
            for key, name, col in parts]
    source = ("client: getrusage of dbperf-driver; server: /proc of the server's processes"
              if has_server else "getrusage of dbperf-driver (the engine runs in it)")
    return {"data": data, "layout": _layout(f"CPU µs per query, median of repeats ({source})", barmode="stack",
                                            height=460, xaxis={"automargin": True, "tickangle": -45},
                                            yaxis={"title": {"text": "µs per query"}},
                                            legend={"orientation": "h", "y": 1.08})}


def latency_figure(m: Matrix) -> Figure:
    """Latency percentiles per cell, log scale: p50, p95 (where the driver reported it), p99, max."""
    pairs = _pairs(m)
    x = _multicategory(pairs)
    data = []
    for key, name, symbol in (("p50_us", "p50", "circle"), ("p95_us", "p95", "diamond"), ("p99_us", "p99", "square"),
                              ("max_us", "max", "x")):
        ys = []
        for _, t, b, th in pairs:
            cell = m.cell(t, b, th)
            if key == "p95_us":
                values = [r.result.latency.p95_us for r in (cell.runs if cell else []) if r.result
                          and r.result.latency.p95_us > 0]  # 0 = an older driver that did not report it
                ys.append(sorted(values)[len(values) // 2] if values else None)
            else:
                ys.append(cell.median_of(key) if cell else None)
        if any(y is not None for y in ys):
            data.append({"type": "scatter", "mode": "markers", "x": x, "y": ys, "name": name,
                         "marker": {"symbol": symbol, "size": 8},
                         "hovertemplate": f"{name}: %{{y:,.1f}} µs<extra></extra>"})
    return {"data": data, "layout": _layout("Latency per event, µs (HdrHistogram in the driver, closed loop, "
                                            "median of repeats)", height=460,
                                            xaxis={"automargin": True, "tickangle": -45},
                                            yaxis={"type": "log", "title": {"text": "µs"}},
                                            legend={"orientation": "h", "y": 1.08})}


def intervals_of(record: CellRecord) -> list[tuple[float, float]] | None:
    """(seconds since the measured phase began, QPS) per interval, where the driver reported a time series (the load
    model issue adds it to the driver's result); None where it did not. Read by name so that results written
    before that field existed, and after, both work."""
    series = getattr(record.result, "intervals", None) if record.result is not None else None
    if not series:
        return None
    points = []
    for i, item in enumerate(series):
        get = item.get if isinstance(item, dict) else (lambda k, _it=item: getattr(_it, k, None))
        t = next((v for k in ("t_s", "t", "second", "elapsed_s", "end_s") if (v := get(k)) is not None), i + 1)
        qps, queries = get("qps"), get("queries")
        if qps is None and queries is not None:
            qps = queries / (get("interval_s") or get("duration_s") or 1.0)
        if qps is not None:
            points.append((float(t), float(qps)))
    return points or None


def intervals_figure(m: Matrix, benchmark: str, threads: int) -> Figure | None:
    data = []
    for i, target in enumerate(m.targets):
        cell = m.cell(target, benchmark, threads)
        for j, run in enumerate(cell.runs if cell else []):
            points = intervals_of(run)
            if not points:
                continue
            name = label(target)
            data.append({"type": "scatter", "mode": "lines", "x": [p[0] for p in points],
                         "y": [p[1] for p in points], "name": name, "legendgroup": name, "showlegend": j == 0,
                         "line": {"color": colour(i), "width": 1},
                         "hovertemplate": f"{name} repeat {run.repeat}<br>%{{x}} s: %{{y:,.0f}} QPS<extra></extra>"})
    if not data:
        return None
    return {"data": data, "layout": _layout(f"{label(row_label(m, benchmark, threads))}: QPS per interval "
                                            "(wall clock, every repeat)", height=300,
                                            xaxis={"title": {"text": "s into the measured phase"}},
                                            yaxis={"title": {"text": "QPS"}, "rangemode": "tozero"})}


def counters_figure(m: Matrix) -> Figure | None:
    """Instructions (simulated) or cycles (hardware) per query where profiled, one bar per (benchmark, target)."""
    profiles = [(b, t, r.counters) for (t, b), r in m.counters.items() if r.counters is not None]
    if not profiles:
        return None
    modes = sorted({p.mode for _, _, p in profiles})
    data = []
    for mode in modes:
        key, what = (("instructions", "instructions per query (simulated: cachegrind)") if mode == "simulated"
                     else ("cycles", "cycles per query (hardware: perf stat)"))
        chosen = [(b, t, p) for b, t, p in profiles if p.mode == mode and key in p.per_query]
        data.append({"type": "bar", "x": [[label(b) for b, _, _ in chosen], [label(t) for _, t, _ in chosen]],
                     "y": [p.per_query[key] for _, _, p in chosen], "name": label(what),
                     "hovertemplate": f"{label(what)}: %{{y:,.1f}}<extra></extra>"})
    return {"data": data, "layout": _layout(f"Counters per query, mode: {', '.join(modes)} (1 thread)", height=420,
                                            xaxis={"automargin": True, "tickangle": -45},
                                            legend={"orientation": "h", "y": 1.08})}
