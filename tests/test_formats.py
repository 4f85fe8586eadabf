"""The format registry (dbperf/report/formats/) and the views that return a View (issue 24): every view renders in
every format it claims, a format registered once makes every view available in it, and a format a view cannot draw
is refused in one line."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from dbperf.errors import UserError
from dbperf.explain.diff import FunctionDelta
from dbperf.history.series import build_series
from dbperf.history.store import Store
from dbperf.records import Profile, Slowdown, TopFunction
from dbperf.report import formats
from dbperf.report.compare_view import compare_view
from dbperf.report.formats.format import Format
from dbperf.report.history_view import runs_view, stored_run_view
from dbperf.report.model import Block, Row, Section, View
from dbperf.report.probe_hosts import probe_hosts_view
from dbperf.report.probe_view import probe_compare_view, probe_view
from dbperf.report.profile_view import diff_view, gate_view, profile_view
from dbperf.report.replication_report import replication_view
from dbperf.report.series_view import regressions_view, series_view
from dbperf.report.tables_view import tables_view
from dbperf.stats.compare import load_side, pair_matrices, side_labels
from dbperf.usecases.report import report_view
from tests.conftest import run_cli
from tests.synthetic import replication_meta, write_run

pytestmark = pytest.mark.unit

DOCUMENTS = ("markdown", "csv", "json", "html")
EVIL = "<script>x</script>|`y`"


def _stat(median: float) -> dict[str, float]:
    return {"median": median, "min": median * 0.9, "max": median * 1.1}


def _probe_result() -> dict:
    return {"host": {"model": "synthetic CPU", "cores": 2, "microcode": "0x1", "virtualised": True,
                     "kernel": "6.1", "compiler": "cc 12", "tsc": {"invariant": True}, "caches": []},
            "tsc_ghz": _stat(2.5), "repeats": 5,
            "families": {"timers": {"figures": [{"group": "timer", "name": "rdtsc", "ns_per_op": _stat(9.7),
                                                 "ticks_per_op": _stat(25.0)}]},
                         "spin": {"skipped": "not on this CPU"}}}


def _profile() -> Profile:
    return Profile(mode="simulated", mode_reason="asked for", tool="cachegrind", target=EVIL, benchmark="point-query",
                   events=100, queries=100, method="whole process",
                   per_query={"instructions": 12_000.0, "i1_miss_pct_of_instructions": 0.5},
                   top_by_instructions=[TopFunction("sqlite3VdbeExec", 3_000.0, 0.25)],
                   slowdown=Slowdown(1.0, 40.0, 40.0, "driver"))


@pytest.fixture(scope="module")
def views(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Callable[[], View]]:
    """Every kind of view, built from synthetic results (no engine)."""
    tmp = tmp_path_factory.mktemp("views")
    a = write_run(tmp / "a", ["base", EVIL], ["point-query", "range"], 4, seed=1)
    b = write_run(tmp / "b", ["base", EVIL], ["point-query", "range"], 4, seed=2, speed={EVIL: 0.8})
    store = Store(tmp / "h.sqlite")
    for i, speed in enumerate((1.0, 1.0, 0.7)):
        store.add_run(write_run(tmp / f"v{i}", ["t"], ["point-query"], 5, seed=i, speed={"t": speed},
                                engine_version=f"3.{9 + i}.0", started_at=f"2026-10-{i + 1:02d}T00:00:00"))
    series = build_series(store.results())
    runs, results, meta = store.runs(), store.results(1), store.meta(1)
    store.close()
    label_a, label_b = side_labels(a, b)
    side_a, side_b = load_side(a, label_a), load_side(b, label_b)
    probe = _probe_result()
    return {
        "run": lambda: report_view(a).view(),
        "ladder": lambda: report_view(a, "ladder").view(),
        "resources": lambda: report_view(a, "resources").view(),
        "intervals": lambda: report_view(a, "intervals").view(),
        "replication": lambda: replication_view(replication_meta({"status": "complete", "replication": {"cpus": 2}}),
                                                [], []),
        "series": lambda: series_view(series),
        "regressions": lambda: regressions_view(series, show_all=True),
        "compare": lambda: compare_view(side_a, side_b, pair_matrices(side_a, side_b, None)),
        "probe": lambda: probe_view(probe),
        "probe-compare": lambda: probe_compare_view(probe, probe, "A", "B"),
        "probe-hosts": lambda: probe_hosts_view({"h1": probe, "h2": {"error": "unreachable"}}),
        "profile": lambda: profile_view(_profile()),
        "diff": lambda: diff_view("a", "b", "instructions", [FunctionDelta(EVIL, 10.0, 12.0)], 10.0, 12.0,
                                  "simulated", 25),
        "gate": lambda: gate_view(0.01, "a", [("point-query", "a", 100.0, None, False),
                                              ("", "b", 120.0, 0.2, True)]),
        "history-list": lambda: runs_view(tmp / "h.sqlite", runs),
        "history-show": lambda: stored_run_view(1, meta, results),
        "tables": lambda: tables_view("keys", [("run", ("key", "meaning"), [("time", "measured time")])]),
    }


VIEW_NAMES = ("run", "ladder", "resources", "intervals", "replication", "series", "regressions", "compare", "probe",
              "probe-compare", "probe-hosts", "profile", "diff", "gate", "history-list", "history-show", "tables")


def _claimed(view: View) -> tuple[str, ...]:
    return view.formats or tuple(formats.FORMATS)


@pytest.mark.parametrize("name", VIEW_NAMES)
@pytest.mark.parametrize("fmt", ["table", *DOCUMENTS])
def test_every_view_renders_in_every_format_it_claims(views, name, fmt):
    view = views[name]()
    assert fmt in _claimed(view)
    if fmt == "table":
        out = io.StringIO()
        formats.draw(view, Console(file=out, width=200))
        assert out.getvalue().strip()
        return
    document = formats.render(view, fmt)
    assert document.endswith("\n") or fmt == "html"
    if fmt == "json":
        assert json.loads(document) is not None
    elif fmt == "csv":
        header = next(csv.reader(io.StringIO(document)), [])
        assert header or (not view.rows and not view.columns)
    elif fmt == "html":
        assert document.startswith("<!DOCTYPE html>") and "</html>" in document
        assert "<script>x</script>" not in document  # what users named is escaped
    else:
        assert document.strip()
        table_lines = [line for line in document.splitlines() if line.startswith("|")]
        assert not any("<script>" in line for line in table_lines)


def _plain(view: View) -> str:
    """A format of the test's own: every section title and every table cell, one a line."""
    out = [view.title]
    for s in view.sections:
        out.append(s.title)
        if s.block is not None:
            out += [" / ".join(s.block.header), *[" / ".join(r.cells) for r in s.block.rows]]
    return "\n".join(out) + "\n"


def test_registering_a_format_makes_every_view_available_in_it(views, monkeypatch):
    monkeypatch.setitem(formats.FORMATS, "plain", Format("plain", "txt", render=_plain))
    for name in VIEW_NAMES:
        view = views[name]()
        document = formats.render(view, "plain")
        headers = [" / ".join(s.block.header) for s in view.sections if s.block is not None]
        assert all(h in document for h in headers), name
        assert headers or any(s.text or s.lines or s.notes for s in view.sections) or view.notes, name
    formats.format_named("plain")  # the CLI's check knows it too


def test_a_format_no_module_has_is_refused_in_one_line():
    with pytest.raises(UserError, match=r"--format: expected one of table, markdown, csv, json, html, got 'xml'"):
        formats.format_named("xml")


def test_a_format_a_view_cannot_draw_is_refused_in_one_line():
    view = View("only-json", "t", (Section(block=Block("", "", ("a",), (Row(("1",)),))),), formats=("json",))
    assert json.loads(formats.render(view, "json"))["view"] == "only-json"
    with pytest.raises(UserError) as refused:
        formats.render(view, "markdown")
    assert "\n" not in str(refused.value) and "json only" in str(refused.value)


def test_html_draws_a_views_chart_page_where_it_has_one_and_the_other_formats_its_sections():
    from dbperf.report.model import ChartPage, Swatch
    figure = {"data": [{"type": "bar", "x": ["<b>a</b>"], "y": [1]}], "layout": {}}
    page = ChartPage("a <page>", (Section(title="charts", anchor="c", figures=(figure, figure), grid=True,
                                          swatches=(Swatch("more", "#f00", "more <work>"),), text=("x",)),
                                  Section(title="caption", rank="caption", block=Block("", "", ("a",),
                                                                                       (Row(("1",)),)))))
    view = View("v", "t", (Section(text=("x",)),), page=lambda: page)
    html = formats.render(view, "html")
    assert "<title>a &lt;page&gt;</title>" in html and '<h2 id="c">charts</h2>' in html and "<h3>caption</h3>" in html
    assert html.count('data-figure="1"') == 2 and '<div class="grid">' in html and "more &lt;work&gt;" in html
    assert "<b>a</b>" not in html.split('id="dbperf-figures"')[1].split("</script>")[0]  # escaped in the JSON
    assert formats.render(view, "markdown") == "## t\n\nx\n"


def test_the_cli_refuses_a_format_and_a_terminal_file_in_one_line(tmp_path):
    a = write_run(tmp_path / "a", ["x"], ["point-query"], 3)
    for args in (("compare", str(a), str(a), "--format", "xml"), ("keys", "--format", "xml"),
                 ("compare", str(a), str(a), "-o", str(tmp_path / "c.txt"))):
        done = run_cli(*args)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("dbperf: error:"), done.stderr


def test_every_view_writes_through_the_output_file_rules(tmp_path):
    a = write_run(tmp_path / "a", ["x"], ["point-query"], 3)
    written = run_cli("compare", str(a), str(a), "--format", "csv", "-o", str(tmp_path) + "/")
    assert written.returncode == 0 and (tmp_path / "compare.csv").read_text().startswith("target,"), written.stderr
    again = run_cli("compare", str(a), str(a), "--format", "csv", "-o", str(tmp_path / "compare.csv"))
    assert again.returncode == 2 and "add --force" in again.stderr
    keys = run_cli("keys", "--format", "markdown")
    assert keys.returncode == 0 and "| key | type | default | unit | meaning |" in keys.stdout


def test_one_place_builds_a_rich_table():
    package = Path(__file__).resolve().parents[1] / "dbperf"
    builders = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                      if re.search(r"(?<![\w.])Table\(|rich\.table", p.read_text()))
    assert builders == ["report/formats/terminal.py"], builders
