"""`dbperf series` and `dbperf regressions` as Views (any format draws them). The series is the layout of
[Callaghan 2024-10-23]'s rQPS tables turned sideways in time: a legend `col-N : version`, one row per benchmark, rQPS
against the first column with a verdict mark; HTML adds a line chart per benchmark with its change points marked."""

from __future__ import annotations

from typing import Any

from dbperf.history.series import Point, Series
from dbperf.history.series import Row as SeriesRow
from dbperf.report.html_page import Page, label, legend_swatches, table, text
from dbperf.report.model import Block, Row, Section, View
from dbperf.stats.cell_verdict import MANN_WHITNEY, VERDICT_COLOURS

MARKS = {"faster": "+", "slower": "-", "same": "~", "undecided": "?", "unstable": "!"}
MARKS_NOTE = (f"rQPS against the first column (center QPS of each); + faster, - slower, ~ same ({MANN_WHITNEY} of "
              "the stored repeats against the first column's), ? too few repeats to test. Steps: E-divisive means "
              "(Apache Otava), permutation test at --pvalue (default 0.01); size = median after / "
              "median before − 1; p = Mann-Whitney U of the two segments.")


def _cell_text(p: Point | None) -> str:
    if p is None:
        return "-"
    if p.rqps is None:
        return "failed"
    mark = MARKS.get(p.verdict.word, "")
    return f"{p.rqps:.2f}{(' ' + mark) if mark else ''}"


def _row_label(s: Series, row: SeriesRow) -> str:
    multi = len({r.threads for r in s.rows}) > 1
    return f"{row.benchmark} t={row.threads}" if multi else row.benchmark


def _identity_text(s: Series) -> str:
    return "  ".join(f"{k}: {v}" for k, v in s.identity.items())


def _step_between(s: Series, index: int) -> tuple[str, str]:
    earlier = index - 1
    return s.columns[earlier].label, s.columns[index].label


def step_rows(s: Series, regressions_only: bool = False) -> list[dict[str, Any]]:
    out = []
    for row in s.rows:
        for st in row.steps:
            if regressions_only and st.size >= 0:
                continue
            before, after = _step_between(s, st.index)
            out.append({"benchmark": row.benchmark, "threads": row.threads, "before": before, "after": after,
                        "size": st.size, "median_before": st.before, "median_after": st.after, "p_value": st.p_value,
                        "kind": "regression" if st.size < 0 else "improvement"})
    return out


def _steps_text(row: SeriesRow) -> str:
    return ", ".join(f"col-{st.index}→{st.index + 1} {st.size:+.1%}" for st in row.steps)


def series_view(s: Series) -> View:
    """Rows benchmarks, columns col-N (the legend says which version or run), rQPS with its mark, the steps found;
    CSV one line per (benchmark, column); HTML draws a line chart per benchmark (series_html)."""
    block = Block("", "", ("benchmark", *[f"col-{i}" for i in range(1, len(s.columns) + 1)], "steps"),
                  tuple(Row((_row_label(s, row), *[_cell_text(p) for p in row.points], _steps_text(row)))
                        for row in s.rows), left=(len(s.columns) + 1,))
    return View("series", f"rQPS against {s.columns[0].label}, by {s.by}",
                (Section(lines=tuple(f"col-{i} : {c.label}" for i, c in enumerate(s.columns, 1)), block=block),),
                subtitle=_identity_text(s), rows=tuple(_csv_rows(s)), columns=SERIES_COLUMNS, notes=(MARKS_NOTE,),
                document=series_document(s), own={"html": lambda: series_html(s)})


def _point_json(p: Point | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {"run_id": p.result.run_id, "target": p.result.target, "version": p.result.version,
            "qps_center": p.result.qps_center, "qps_runs": p.result.qps_runs, "n": p.result.n, "rqps": p.rqps,
            "verdict": p.verdict.word, "decided_by": p.verdict.decided_by}


def series_document(s: Series) -> dict[str, Any]:
    return {"by": s.by, "identity": s.identity,
           "columns": [{"label": c.label, "version": c.version, "run_id": c.run_id, "started_at": c.started_at,
                        "target": c.target} for c in s.columns],
           "rows": [{"benchmark": r.benchmark, "threads": r.threads, "points": [_point_json(p) for p in r.points],
                     "steps": [st for st in step_rows(Series(s.by, s.identity, s.columns, [r]))]} for r in s.rows],
           "method": MARKS_NOTE}


SERIES_COLUMNS = ("benchmark", "threads", "column", "label", "version", "run_id", "target", "qps_center", "n", "rqps",
                  "verdict", "step_here")


def _csv_rows(s: Series) -> list[dict[str, Any]]:
    out = []
    for row in s.rows:
        starts = {st.index: st.size for st in row.steps}
        for i, (c, p) in enumerate(zip(s.columns, row.points, strict=True), 1):
            out.append(dict(zip(SERIES_COLUMNS, (
                row.benchmark, row.threads, i, c.label, c.version, c.run_id, c.target,
                p.result.qps_center if p else None, p.result.n if p else 0, p.rqps if p else None,
                p.verdict.word if p else None, starts.get(i - 1)), strict=True)))
    return out


def series_html(s: Series) -> str:
    page = Page(f"dbperf series by {s.by}: rQPS against {s.columns[0].label}")
    page.add(f'<p class="note">{text(_identity_text(s))}</p>')
    page.section("table", "Series")
    header = ("benchmark", *[c.label for c in s.columns], "steps")
    page.add(table(header, [(_row_label(s, r), *[_cell_text(p) for p in r.points],
                             ", ".join(f"{st.size:+.1%} before {s.columns[st.index].label}" for st in r.steps))
                            for r in s.rows]))
    page.add(legend_swatches({k: VERDICT_COLOURS[k] for k in ("faster", "slower", "same", "undecided")},
                             {"faster": "+", "slower": "-", "same": "~", "undecided": "?"}))
    page.add(f'<p class="note">{text(MARKS_NOTE)}</p>')
    page.section("charts", "Per benchmark")
    figs = "".join(page.figure(_line_chart(s, r)) for r in s.rows)
    page.add(f'<div class="grid">{figs}</div>')
    found = step_rows(s)
    page.section("steps", "Change points")
    page.add(table(("benchmark", "threads", "between", "and", "size", "p (Mann-Whitney)", "kind"),
                   [(x["benchmark"], x["threads"], x["before"], x["after"], f"{x['size']:+.1%}",
                     "-" if x["p_value"] is None else f"{x['p_value']:.2g}", x["kind"]) for x in found])
             if found else "<p>No change point found.</p>")
    return page.render()


def _line_chart(s: Series, row: SeriesRow) -> dict[str, Any]:
    xs = [label(c.label) for c in s.columns]
    ys = [p.result.qps_center if p else None for p in row.points]
    colours = [VERDICT_COLOURS.get(p.verdict.word, "#999") if p else "#fff" for p in row.points]
    lows = [(p.result.qps_center - min(p.result.qps_runs)) if p and p.result.qps_runs and p.result.qps_center
            else 0 for p in row.points]
    highs = [(max(p.result.qps_runs) - p.result.qps_center) if p and p.result.qps_runs and p.result.qps_center
             else 0 for p in row.points]
    data: list[dict[str, Any]] = [{
        "type": "scatter", "mode": "lines+markers", "x": xs, "y": ys, "name": "center QPS",
        "marker": {"color": colours, "size": 9, "line": {"color": "#333", "width": 1}}, "line": {"color": "#555"},
        "error_y": {"type": "data", "array": highs, "arrayminus": lows, "color": "#aaa"},
        "customdata": [label(_cell_text(p)) for p in row.points],
        "hovertemplate": "%{x}<br>QPS %{y:,.0f} (bars: min–max of repeats)<br>rQPS %{customdata}<extra></extra>"}]
    shapes, notes = [], []
    for st in row.steps:
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": st.index - 0.5, "x1": st.index - 0.5,
                       "y0": 0, "y1": 1, "line": {"color": "#d62728" if st.size < 0 else "#2ca02c", "dash": "dash"}})
        notes.append({"x": st.index - 0.5, "xref": "x", "y": 1, "yref": "paper", "showarrow": False,
                      "text": f"{st.size:+.1%}", "font": {"color": "#d62728" if st.size < 0 else "#2ca02c"}})
    name = label(_row_label(s, row))
    return {"data": data, "layout": {"title": {"text": f"{name}: QPS by {s.by} (wall clock, center of repeats)",
                                               "font": {"size": 13}},
                                     "height": 320, "margin": {"l": 60, "r": 20, "t": 50, "b": 80},
                                     "xaxis": {"type": "category", "automargin": True}, "shapes": shapes,
                                     "annotations": notes, "yaxis": {"title": {"text": "QPS"}}}}


STEP_COLUMNS = ("benchmark", "threads", "before", "after", "size", "median_before", "median_after", "p_value", "kind")


def regressions_view(s: Series, show_all: bool) -> View:
    """The steps found (only the steps down unless `show_all`); HTML is the series' page with its change points."""
    found = step_rows(s, regressions_only=not show_all)
    what = "change points" if show_all else "regressions (steps down in QPS)"
    header = ("benchmark", "threads", "between", "and", "size", "p (Mann-Whitney)", "kind")
    values = tuple(Row((x["benchmark"], str(x["threads"]), x["before"], x["after"], f"{x['size']:+.1%}",
                        "-" if x["p_value"] is None else f"{x['p_value']:.2g}", x["kind"])) for x in found)
    section = Section(block=Block("", "", header, values, left=(2, 3, 6))) if values else Section(text=("None found.",))
    return View("regressions", f"{what} over {len(s.columns)} {s.by}s", (section,), subtitle=_identity_text(s),
                rows=tuple(found), columns=STEP_COLUMNS, notes=(MARKS_NOTE,),
                document={"identity": s.identity, "by": s.by, "steps": found, "method": MARKS_NOTE},
                own={"html": lambda: series_html(s)})
