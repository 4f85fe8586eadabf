"""The HTML report: what it holds and escapes (unit), and that a real browser draws it (e2e: Debian's chromium)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from dbperf.report import charts
from dbperf.report.html import to_html
from dbperf.stats.cell_verdict import cell_verdict, verdict_of
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage.results import read_results
from tests.conftest import run_cli
from tests.report_formats import to_csv, to_json, to_markdown
from tests.synthetic import write_run

EVIL_TARGET = "<script>window.__xss=1</script>"
EVIL_BENCH = '<img src=x onerror="window.__xss=2">'


def _figures(document: str) -> dict:
    raw = re.search(r'<script id="dbperf-figures" type="application/json">(.*?)</script>', document, re.S)
    assert raw
    return json.loads(raw.group(1))


def _evil_run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "evil", ["base", EVIL_TARGET], ["point-query", EVIL_BENCH], 6,
                     speed={EVIL_TARGET: 0.8})


@pytest.mark.unit
def test_user_strings_are_escaped_everywhere(tmp_path):
    document = to_html(*_matrix(_evil_run(tmp_path)))
    # Only the page's own three script elements; the names show as text.
    assert len(re.findall(r"<script", document)) == 3
    assert "<img" not in document
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in document
    figures_json = re.search(r'type="application/json">(.*?)</script>', document, re.S).group(1)
    assert "<" not in figures_json and ">" not in figures_json
    # Inside figures the names are entity-escaped for Plotly, which shows them as text.
    assert "&lt;script&gt;" in json.dumps(_figures(document))


def _matrix(directory: Path):
    meta, records, _ = read_results(directory)
    return build_matrix(meta, records), meta


@pytest.mark.unit
def test_heat_map_colours_by_significance_and_by_a_verdict_when_cells_carry_one(tmp_path):
    m, _ = _matrix(write_run(tmp_path / "r", ["a", "b", "c"], ["point-query", "update-index"], 10,
                                speed={"b": 0.8, "c": 1.0}, noise=0.005))
    assert cell_verdict(m, m.cell("a", "point-query", 1)).word == "base"
    assert cell_verdict(m, m.cell("b", "point-query", 1)).word == "slower"
    slower = cell_verdict(m, m.cell("b", "update-index", 1))
    assert "wall anytime-valid sequential test" in slower.decided_by  # the rule and its metric are named
    # Without the verdict rule's result (a cell of a series or a compare), Mann-Whitney's significance speaks.
    assert "Mann-Whitney" in verdict_of(0.8, True, False, False).decided_by
    cell = m.cell("c", "update-index", 1)
    cell.verdict_detail = replace(cell.verdict_detail, verdict="unstable", noise_threshold=0.12)
    v = cell_verdict(m, cell)
    assert (v.word, v.noise_threshold) == ("unstable", 0.12)
    heat = charts.rqps_heatmap(m)["data"][0]
    from dbperf.stats.cell_verdict import VERDICTS
    assert heat["z"][1][1] == VERDICTS.index("slower") and heat["z"][1][2] == VERDICTS.index("unstable")
    assert "noise threshold 12.0%" in heat["customdata"][1][2]


@pytest.mark.unit
def test_report_holds_every_view_and_the_metadata(tmp_path):
    m, meta = _matrix(write_run(tmp_path / "r", ["a", "b"], ["point-query", "update-index", "scan"], 3,
                                server=True, host="box-1"))
    document = to_html(m, meta)
    figures = _figures(document)
    titles = [f["layout"]["title"]["text"] for f in figures.values()]
    assert titles[0].startswith("rQPS against a")
    assert sum("QPS of each repeat" in t for t in titles) == 3
    assert any(t.startswith("CPU µs per query") for t in titles) and any(t.startswith("Latency") for t in titles)
    cpu = next(f for f in figures.values() if f["layout"]["title"]["text"].startswith("CPU"))
    assert [t["name"] for t in cpu["data"]] == ["client user", "client system", "server user", "server system"]
    assert "Throughput per interval" not in document  # no series in these results: the view is left out
    for text in ("box-1", "Run metadata", "journal_mode=WAL", "col-1 : a  (base)"):
        assert text in document
    # the legend is prose, in the page's font and wrapping at its width, not a wall of preformatted lines
    legend = re.search(r'<ul class="legend">(.*?)</ul>', document, re.S)
    assert legend and legend.group(1).count("<li>") >= 3 and "col-1 : a  (base)" in legend.group(1)
    assert not re.search(r"<pre>[^<]*col-1 : a", document)
    # titles wrapped at words, the top margin grown to hold their lines
    for f in figures.values():
        lines = f["layout"]["title"]["text"].split("<br>")
        assert all(len(line) <= charts.TITLE_CHARS for line in lines), lines
        assert f["layout"]["margin"]["t"] >= 34 + 17 * len(lines)
    assert any("<br>" in t for t in titles)
    assert len(document.encode()) < 1e6, "the cartesian bundle (make setup keeps it)"
    assert "plotly.js-cartesian-dist-min: the chart types drawn here" in document


@pytest.mark.unit
def test_setup_keeps_the_cartesian_bundle_and_a_page_without_it_says_so(tmp_path, monkeypatch):
    """make setup fetches npm's cartesian bundle (every trace type the report draws is in it); without it the page
    embeds the plotly package's full bundle and says why, never silently."""
    from dbperf.report import html_page, plotly_bundle
    chosen = plotly_bundle.bundle()
    assert plotly_bundle.kept_path(chosen.version).is_file(), "make setup fetches it"
    drawn = {t["type"] for f in _figures(to_html(*_matrix(write_run(tmp_path / "r", ["a", "b"], ["point-query"], 3))
                                                 )).values() for t in f["data"]}
    assert drawn <= plotly_bundle.DRAWN
    monkeypatch.setenv("DBPERF_PLOTLY_DIR", str(tmp_path / "none"))
    plotly_bundle.bundle.cache_clear()
    html_page.plotly_payload.cache_clear()
    try:
        said, payload = html_page.plotly_payload()
        assert said.startswith(f"plotly.js {chosen.version}, the full bundle: the smaller cartesian one is not kept "
                               f"in {tmp_path / 'none'}") and len(payload) > 1.5e6
    finally:
        plotly_bundle.bundle.cache_clear()
        html_page.plotly_payload.cache_clear()


@pytest.mark.unit
def test_per_interval_throughput_is_drawn_when_the_driver_reports_it(tmp_path):
    m, _ = _matrix(write_run(tmp_path / "r", ["a"], ["point-query"], 2))
    cell = m.cell("a", "point-query", 1)
    assert charts.intervals_figure(m, "point-query", 1) is None
    cell.runs = [SimpleNamespace(repeat=1, result=SimpleNamespace(intervals=[{"t_s": 1, "qps": 10.0},
                                                                            {"t_s": 2, "qps": 12.0}])),
                 SimpleNamespace(repeat=2, result=SimpleNamespace(intervals=[{"second": 1, "queries": 30,
                                                                              "interval_s": 2.0}]))]
    assert charts.intervals_of(cell.runs[1]) == [(1.0, 15.0)]
    fig = charts.intervals_figure(m, "point-query", 1)
    assert fig is not None and fig["data"][0]["y"] == [10.0, 12.0]


OLD_META = {"dbperf_results": 1, "status": "complete", "base": "old", "aggregate": "median", "threads": [1],
            "targets": [{"name": "old", "engine": "sqlite"}, {"name": "new", "engine": "sqlite"}],
            "benchmarks": [{"name": "point-query", "group": "point"}]}


def write_old_results(directory: Path) -> Path:
    """A results directory as the lab wrote it before this issue (and before p95 and server usage existed)."""
    directory.mkdir()
    (directory / "meta.json").write_text(json.dumps(OLD_META))
    lines = []
    for r in range(1, 4):
        for t, qps in (("old", 1000 + r), ("new", 900 + r)):
            lines.append({"target": t, "benchmark": "point-query", "threads": 1, "repeat": r, "status": "ok",
                          "result": {"qps": qps, "eps": qps, "queries": qps * 10, "errors": 0,
                                     "latency": {"p50_us": 10.0, "p99_us": 40.0, "max_us": 90.0},
                                     "client_usage": {"user_us": 5e3, "system_us": 1e3, "voluntary_cs": 1,
                                                      "involuntary_cs": 0}}})
    (directory / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return directory


@pytest.mark.unit
def test_cli_writes_the_file_and_an_older_results_directory_still_reports(tmp_path):
    old = write_old_results(tmp_path / "old-run")
    out = tmp_path / "report.html"
    done = run_cli("report", str(old), "--format", "html", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert out.is_file() and "point-query" in out.read_text() and "wrote" in done.stderr
    latency = next(f for f in _figures(out.read_text()).values() if f["layout"]["title"]["text"].startswith("Lat"))
    assert [t["name"] for t in latency["data"]] == ["p50", "p99", "max"]  # no p95 in old results: not drawn
    m, meta = _matrix(old)
    assert "0.90" in to_markdown(m, meta) and to_csv(m, meta).count("\n") == 3 and json.loads(to_json(m, meta))
    csv_out = run_cli("report", str(old), "--format", "csv", "-o", str(tmp_path / "x.csv"))  # every format: -o
    assert csv_out.returncode == 0 and (tmp_path / "x.csv").read_text() == to_csv(m, meta), csv_out.stderr
    gone = run_cli("report", str(tmp_path / "nope"), "--format", "html", "-o", str(out))
    assert gone.returncode == 2 and "Traceback" not in gone.stderr


@pytest.mark.e2e
def test_chromium_draws_every_chart_without_a_script_error_and_shows_names_as_text(tmp_path):
    """The run report (with hostile names), a compare page and a series page, in one browser."""
    from tests.browser import browser, render
    evil = _evil_run(tmp_path)
    pages = {name: tmp_path / f"{name}.html" for name in ("report", "compare", "series")}
    history = {"DBPERF_HISTORY": str(tmp_path / "h.sqlite")}
    # 8 runs before the step and 8 after: E-divisive's permutation test at p 0.01 finds a step between two halves of
    # 5 only by the luck of its permutations (the exact p of that split is 2/252), of 8 always (2/12870).
    runs = [write_run(tmp_path / f"v{i}", ["t"], ["point-query", "update-index"], 4, seed=i,
                      engine_version=f"2.{i}", speed={"t": 0.85 if i >= 8 else 1.0},
                      started_at=f"2026-10-{i + 1:02d}") for i in range(16)]
    for args in (("report", str(evil), "--format", "html", "-o", str(pages["report"])),
                 ("compare", str(evil), str(evil), "--format", "html", "-o", str(pages["compare"])),
                 ("history", "add", *map(str, runs)),
                 ("series", "--format", "html", "-o", str(pages["series"]))):
        done = run_cli(*args, env=history)
        assert done.returncode == 0, done.stderr
    with browser() as context:
        for name, path in pages.items():
            shown = render(context, path, f"{name}.png")
            assert shown.state == "rendered", (name, shown.state)
            assert shown.errors == [], name
            assert shown.page.evaluate("window.__xss") is None
            assert len(shown.charts) == len(_figures(path.read_text())) >= 2, name
            for chart in shown.charts:
                assert chart["svg"] >= 1 and chart["marks"] >= 1, (name, chart)
            if name == "report":
                headers = shown.page.evaluate("[...document.querySelectorAll('h3')].map(h => h.textContent)")
                assert EVIL_TARGET in headers
                ticks = shown.page.evaluate("[...document.querySelectorAll('.xtick text')].map(t => t.textContent)")
                assert EVIL_TARGET in ticks  # Plotly drew the name as text
                clipped = shown.page.evaluate(
                    "[...document.querySelectorAll('.gtitle')].filter(t => { const b = t.getBoundingClientRect(), "
                    "c = t.ownerSVGElement.getBoundingClientRect(); return b.left < c.left - 1 || "
                    "b.right > c.right + 1; }).map(t => t.textContent)")
                assert clipped == []  # every chart's title within its chart
            if name == "series":  # the change point is marked on the charts
                marks = shown.page.evaluate("[...document.querySelectorAll('.annotation-text')].map(t => "
                                            "t.textContent)")
                assert any(m.startswith("-") and m.endswith("%") for m in marks), marks
