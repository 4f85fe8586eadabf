"""`dbperf series` and `dbperf regressions` as Views (any format draws them). The series is the layout of
[Callaghan 2024-10-23]'s rQPS tables turned sideways in time: a legend `col-N : version`, one row per benchmark, rQPS
against the first column with a verdict mark; HTML adds a line chart per benchmark with its change points marked."""

from __future__ import annotations

from typing import Any

from dbperf.history.series import Point, Series
from dbperf.history.series import Row as SeriesRow
from dbperf.records import to_builtins
from dbperf.report.html_page import label
from dbperf.report.model import Block, ChartPage, Row, Section, Swatch, View
from dbperf.stats.cell_verdict import MANN_WHITNEY, VERDICT_COLOURS
from dbperf.stats.simulated import SAME_WITHIN, TIER

MARKS = {"faster": "+", "slower": "-", "same": "~", "undecided": "?", "unstable": "!"}
STEPS_NOTE = ("Steps: E-divisive means (Apache Otava), permutation test at --pvalue (default 0.01); size = median "
              "after / median before − 1; p = Mann-Whitney U of the two segments.")
MARKS_NOTE = (f"rQPS against the first column (center QPS of each); + faster, - slower, ~ same ({MANN_WHITNEY} of "
              "the stored repeats against the first column's), ? too few repeats to test. " + STEPS_NOTE)
WORK_MARKS = {"more": "more", "fewer": "fewer", "same": "~"}
WORK_NOTE = (f"Simulated instructions per query (the runs' simulated tier, {TIER}; one thread) against the first "
             f"column's: work, not speed. more / fewer: a change of {SAME_WITHIN:.1%} or more (the counts are "
             "deterministic: no test, no noise threshold), ~ same; - not counted in that run. " + STEPS_NOTE
             + " A step up in work is a regression.")


def _note(s: Series) -> str:
    return WORK_NOTE if s.metric.work else MARKS_NOTE


def _cell_text(p: Point | None) -> str:
    if p is None:
        return "-"
    if p.work is not None:
        mark = WORK_MARKS.get(p.verdict.word, "")
        return f"{p.work:.3f}{(' ' + mark) if mark else ''}"
    if p.rqps is None:
        return "failed"
    mark = MARKS.get(p.verdict.word, "")
    return f"{p.rqps:.2f}{(' ' + mark) if mark else ''}"


def _title(s: Series) -> str:
    what = "work per query (simulated instructions)" if s.metric.work else "rQPS"
    return f"{what} against {s.columns[0].label}, by {s.by}"


def _regression(s: Series, size: float) -> bool:
    """A step that is a regression: down in QPS, or up in work per query."""
    return s.metric.regression(size)


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
            if regressions_only and not _regression(s, st.size):
                continue
            before, after = _step_between(s, st.index)
            out.append({"benchmark": row.benchmark, "threads": row.threads, "before": before, "after": after,
                        "size": st.size, "median_before": st.before, "median_after": st.after, "p_value": st.p_value,
                        "kind": "regression" if _regression(s, st.size) else "improvement"})
    return out


def _steps_text(row: SeriesRow) -> str:
    return ", ".join(f"col-{st.index}→{st.index + 1} {st.size:+.1%}" for st in row.steps)


def series_view(s: Series) -> View:
    """Rows benchmarks, columns col-N (the legend says which version or run), rQPS with its mark, the steps found;
    CSV one line per (benchmark, column); HTML draws a line chart per benchmark (series_page)."""
    block = Block("", "", ("benchmark", *[f"col-{i}" for i in range(1, len(s.columns) + 1)], "steps"),
                  tuple(Row((_row_label(s, row), *[_cell_text(p) for p in row.points], _steps_text(row)))
                        for row in s.rows), left=(len(s.columns) + 1,))
    return View("series", _title(s),
                (Section(lines=(*(f"col-{i} : {c.label}" for i, c in enumerate(s.columns, 1)), *_clash_lines(s)),
                         block=block),),
                subtitle=_identity_text(s), rows=tuple(_csv_rows(s)), columns=SERIES_COLUMNS, notes=(_note(s),),
                document=series_document(s), page=lambda: series_page(s))


CONTRADICTED = ("contradicted: stored runs decided these cells against their own base (of one name) one way in one "
                "run and the other way in another; each verdict holds of its own run's processes, not of the builds")


def _clash_lines(s: Series) -> tuple[str, ...]:
    if not s.contradictions:
        return ()
    return (CONTRADICTED, *(f"  {c.line()}" for c in s.contradictions))


def _point_json(p: Point | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {"run_id": p.result.run_id, "target": p.result.target, "version": p.result.version,
            "qps_center": p.result.qps_center, "qps_runs": p.result.qps_runs, "n": p.result.n, "rqps": p.rqps,
            "verdict": p.verdict.word, "decided_by": p.verdict.decided_by, "work": p.work,
            "simulated": p.result.simulated}


def series_document(s: Series) -> dict[str, Any]:
    return {"by": s.by, "metric": s.metric.name, "identity": s.identity,
           "columns": [{"label": c.label, "version": c.version, "run_id": c.run_id, "started_at": c.started_at,
                        "target": c.target} for c in s.columns],
           "rows": [{"benchmark": r.benchmark, "threads": r.threads, "points": [_point_json(p) for p in r.points],
                     "steps": [st for st in step_rows(Series(s.by, s.identity, s.columns, [r], s.metric))]}
                    for r in s.rows],
           "method": _note(s), "contradictions": [to_builtins(c) for c in s.contradictions]}


SERIES_COLUMNS = ("benchmark", "threads", "column", "label", "version", "run_id", "target", "qps_center", "n", "rqps",
                  "verdict", "step_here", "work", "instructions_per_query")


def _csv_rows(s: Series) -> list[dict[str, Any]]:
    out = []
    for row in s.rows:
        starts = {st.index: st.size for st in row.steps}
        for i, (c, p) in enumerate(zip(s.columns, row.points, strict=True), 1):
            out.append(dict(zip(SERIES_COLUMNS, (
                row.benchmark, row.threads, i, c.label, c.version, c.run_id, c.target,
                p.result.qps_center if p else None, p.result.n if p else 0, p.rqps if p else None,
                p.verdict.word if p else None, starts.get(i - 1), p.work if p else None,
                (p.result.simulated or {}).get("instructions") if p else None), strict=True)))
    return out


def series_page(s: Series) -> ChartPage:
    """The series with its columns' labels, the marks' legend, a line chart per benchmark, and the change points."""
    header = ("benchmark", *[c.label for c in s.columns], "steps")
    rows = tuple(Row((_row_label(s, r), *[_cell_text(p) for p in r.points],
                      ", ".join(f"{st.size:+.1%} before {s.columns[st.index].label}" for st in r.steps)))
                 for r in s.rows)
    if s.metric.work:
        swatches = tuple(Swatch(k, VERDICT_COLOURS[w], m) for (k, w), m in zip(
            WORK_COLOURS.items(), ("more work per query", "fewer", f"~ within {SAME_WITHIN:.1%}"), strict=True))
    else:
        swatches = tuple(Swatch(k, VERDICT_COLOURS[k], m) for k, m in (
            ("faster", "+"), ("slower", "-"), ("same", "~"), ("undecided", "?")))
    found = step_rows(s)
    steps = (Section(title="Change points", anchor="steps", block=Block(
        "", "", ("benchmark", "threads", "between", "and", "size", "p (Mann-Whitney)", "kind"),
        tuple(Row((x["benchmark"], str(x["threads"]), x["before"], x["after"], f"{x['size']:+.1%}",
                   "-" if x["p_value"] is None else f"{x['p_value']:.2g}", x["kind"])) for x in found)))
             if found else Section(title="Change points", anchor="steps", text=("No change point found.",)))
    return ChartPage(f"dbperf series: {_title(s)}", (
        Section(notes=(_identity_text(s), *_clash_lines(s))),
        Section(title="Series", anchor="table", block=Block("", "", header, rows), swatches=swatches,
                notes=(_note(s),)),
        Section(title="Per benchmark", anchor="charts", grid=True, figures=tuple(_line_chart(s, r) for r in s.rows)),
        steps))


WORK_COLOURS = {"more": "slower", "fewer": "faster", "same": "same"}  # more work is drawn as a slowdown is


def _colour(p: Point | None) -> str:
    if p is None:
        return "#fff"
    return VERDICT_COLOURS.get(WORK_COLOURS.get(p.verdict.word, p.verdict.word), "#999")


def _value(s: Series, p: Point | None) -> float | None:
    """The figure a point draws: simulated instructions per query, or center QPS."""
    if p is None:
        return None
    return s.metric.stored(p.result)


def _error_bars(row: SeriesRow) -> dict[str, Any]:
    """Min–max of each point's stored repeats around its center."""
    lows: list[float] = []
    highs: list[float] = []
    for p in row.points:
        runs, center = (p.result.qps_runs, p.result.qps_center) if p else ([], None)
        lows.append(center - min(runs) if runs and center else 0)
        highs.append(max(runs) - center if runs and center else 0)
    return {"type": "data", "array": highs, "arrayminus": lows, "color": "#aaa"}


def _step_marks(s: Series, row: SeriesRow) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each change point as a dashed line between its two columns and its size above it."""
    shapes, notes = [], []
    for st in row.steps:
        colour = "#d62728" if _regression(s, st.size) else "#2ca02c"
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": st.index - 0.5, "x1": st.index - 0.5,
                       "y0": 0, "y1": 1, "line": {"color": colour, "dash": "dash"}})
        notes.append({"x": st.index - 0.5, "xref": "x", "y": 1, "yref": "paper", "showarrow": False,
                      "text": f"{st.size:+.1%}", "font": {"color": colour}})
    return shapes, notes


def _line_chart(s: Series, row: SeriesRow) -> dict[str, Any]:
    work = s.metric.work
    trace: dict[str, Any] = {
        "type": "scatter", "mode": "lines+markers", "x": [label(c.label) for c in s.columns],
        "y": [_value(s, p) for p in row.points], "name": "instructions per query" if work else "center QPS",
        "marker": {"color": [_colour(p) for p in row.points], "size": 9, "line": {"color": "#333", "width": 1}},
        "line": {"color": "#555"}, "customdata": [label(_cell_text(p)) for p in row.points],
        "hovertemplate": ("%{x}<br>%{y:,.0f} instructions per query (simulated)<br>work %{customdata}<extra></extra>"
                          if work else
                          "%{x}<br>QPS %{y:,.0f} (bars: min–max of repeats)<br>rQPS %{customdata}<extra></extra>")}
    if not work:
        trace["error_y"] = _error_bars(row)
    shapes, notes = _step_marks(s, row)
    what = ("instructions per query by {by} (simulated: work, not speed)" if work
            else "QPS by {by} (wall clock, center of repeats)").format(by=s.by)
    return {"data": [trace], "layout": {"title": {"text": f"{label(_row_label(s, row))}: {what}", "font": {"size": 13}},
                                        "height": 320, "margin": {"l": 60, "r": 20, "t": 50, "b": 80},
                                        "xaxis": {"type": "category", "automargin": True}, "shapes": shapes,
                                        "annotations": notes,
                                        "yaxis": {"title": {"text": "instructions per query" if work else "QPS"}}}}


STEP_COLUMNS = ("benchmark", "threads", "before", "after", "size", "median_before", "median_after", "p_value", "kind")


def regressions_view(s: Series, show_all: bool) -> View:
    """The steps found (only the steps down unless `show_all`); HTML is the series' page with its change points."""
    found = step_rows(s, regressions_only=not show_all)
    what = "change points" if show_all else ("regressions (steps up in work per query)" if s.metric.work
                                             else "regressions (steps down in QPS)")
    header = ("benchmark", "threads", "between", "and", "size", "p (Mann-Whitney)", "kind")
    values = tuple(Row((x["benchmark"], str(x["threads"]), x["before"], x["after"], f"{x['size']:+.1%}",
                        "-" if x["p_value"] is None else f"{x['p_value']:.2g}", x["kind"])) for x in found)
    section = Section(block=Block("", "", header, values, left=(2, 3, 6))) if values else Section(text=("None found.",))
    return View("regressions", f"{what} over {len(s.columns)} {s.by}s", (section,), subtitle=_identity_text(s),
                rows=tuple(found), columns=STEP_COLUMNS, notes=(_note(s),),
                document={"identity": s.identity, "by": s.by, "metric": s.metric.name, "steps": found,
                          "method": _note(s), "contradictions": [to_builtins(c) for c in s.contradictions]},
                page=lambda: series_page(s))
