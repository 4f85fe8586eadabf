"""Report formats on a results set built by hand (the e2e test checks them on a real run)."""

import csv
import io
import json

import pytest
from rich.console import Console

from dbperf.records import results_record
from dbperf.stats.rqps_matrix import build_matrix
from tests.report_formats import render_table, to_csv, to_json, to_markdown
from tests.synthetic import meta_of

pytestmark = pytest.mark.unit

META = {
    "base": "old", "aggregate": "median", "threads": [1], "status": "complete",
    "targets": [{"name": "old", "engine": "sqlite"}, {"name": "new", "engine": "sqlite"}],
    "benchmarks": [{"name": "point-query", "group": "point"}, {"name": "scan", "group": "range"},
                   {"name": "update-index", "group": "write"}],
}


def record(target, benchmark, repeat, qps, status="ok", rows_per_event=None):
    """A results.jsonl line as the reader parses it."""
    return results_record(_line(target, benchmark, repeat, qps, status, rows_per_event))


def _line(target, benchmark, repeat, qps, status, rows_per_event):
    rec = {"target": target, "benchmark": benchmark, "threads": 1, "repeat": repeat, "status": status,
           "rows_per_event": rows_per_event}
    if status != "ok":
        return {**rec, "error": "driver died with signal SIGSEGV"}
    return {**rec, "result": {
        "qps": qps, "eps": qps, "queries": int(qps * 10), "errors": 0,
        "latency": {"p50_us": 10.0, "p99_us": 40.0, "max_us": 90.0},
        "client_usage": {"user_us": qps * 30, "system_us": qps * 10, "voluntary_cs": qps // 10,
                         "involuntary_cs": 0},
    }}


def records():
    out = []
    for r, (a, b) in enumerate([(1000, 560), (1010, 570), (990, 555), (1005, 565)], 1):
        out += [record("old", "update-index", r, a), record("new", "update-index", r, b)]
    for r, (a, b) in enumerate([(5000, 5100), (5100, 4950), (4900, 5050), (5050, 5000)], 1):
        out += [record("old", "point-query", r, a), record("new", "point-query", r, b)]
    out += [record("old", "scan", 1, 40, rows_per_event=100_000), record("new", "scan", 1, status="failed", qps=0)]
    return out


def test_json_has_the_keys_a_check_reads():
    doc = json.loads(to_json(build_matrix(meta_of(META), records()), meta_of(META)))
    assert doc["base"] == "old" and doc["targets"] == ["old", "new"]
    cells = {(c["target"], c["benchmark"]): c for c in doc["cells"]}
    for key in ("target", "benchmark", "threads", "qps_median", "qps_runs", "rqps", "significant",
                "cpu_us_per_query", "cs_per_query", "p99_us"):
        assert all(key in c for c in doc["cells"]), key
    upd = cells[("new", "update-index")]
    assert upd["rqps"] == (562.5 / 1002.5) and upd["significant"] is True
    assert upd["qps_runs"] == [560, 570, 555, 565]
    assert upd["cpu_us_per_query"] == 4.0 and upd["p99_us"] == 40.0
    assert upd["cs_per_query"] == pytest.approx(0.01, rel=0.01)
    assert cells[("new", "point-query")]["significant"] is False
    assert cells[("old", "point-query")]["rqps"] == 1.0 and cells[("old", "point-query")]["significant"] is None
    assert cells[("old", "scan")]["rows_per_s_median"] == 4_000_000
    assert cells[("new", "scan")]["status"] == "failed" and cells[("new", "scan")]["rqps"] is None


def test_markdown_lays_out_legend_and_groups():
    md = to_markdown(build_matrix(meta_of(META), records()), meta_of(META))
    assert "    col-1 : old  (base)" in md and "    col-2 : new" in md
    assert md.index("**point**") < md.index("**range**") < md.index("**write**")
    assert "| update-index | 1.00 | 0.56 ? |" in md  # 4 repeats a side: no test at 1% can call anything
    assert "| point-query | 1.00 | 1.00 ? |" in md
    assert "failed: driver died with signal SIGSEGV" in md


def test_trimmed_aggregate_changes_the_center():
    m = build_matrix(meta_of(META), records(), aggregate="trimmed")
    assert m.cell("old", "update-index", 1).qps.center == (1000 + 1005) / 2


def test_csv_one_row_per_cell():
    rows = list(csv.DictReader(io.StringIO(to_csv(build_matrix(meta_of(META), records()), meta_of(META)))))
    assert len(rows) == 6
    assert {r["benchmark"] for r in rows} == {"point-query", "scan", "update-index"}


def test_table_renders_legend_and_absolute_figures():
    console = Console(record=True, width=200)
    render_table(build_matrix(meta_of(META), records()), meta_of(META), console)
    text = console.export_text()
    assert "col-1 : old  (base)" in text and "0.56" in text and "1,002" in text and "failed" in text


def test_ladder_flags_a_losing_step():
    from dbperf.stats.ladder import ladder

    meta = meta_of({**META, "targets": [{"name": "old"}, {"name": "new"}, {"name": "newer"}],
            "benchmarks": [{"name": "update-index", "group": "write"}]})
    recs = []
    for r, (a, b, c) in enumerate([(100, 110, 105), (101, 111, 104), (99, 109, 106), (100, 110, 104)], 1):
        recs += [record("old", "update-index", r, a), record("new", "update-index", r, b),
                 record("newer", "update-index", r, c)]
    steps = ladder(build_matrix(meta, recs))
    assert [s.target for s in steps] == ["old", "new", "newer"]
    assert steps[1].geomean_vs_previous == pytest.approx(110 / 100) and not steps[1].loses
    assert steps[2].loses and steps[2].geomean_vs_base == pytest.approx(104.5 / 100)
    assert [b.benchmark for b in steps[2].losing_benchmarks()] == ["update-index"]


def test_trained_benchmarks_are_marked():
    meta = meta_of({**META, "targets": [{"name": "old"}, {"name": "new", "trained_on": ["point-query"]}]})
    m = build_matrix(meta, records())
    md = to_markdown(m, meta)
    assert "col-2 : new  (PGO trained on: point-query)" in md
    assert "| point-query | 1.00 | 1.00 ? T |" in md
    cells = {(c["target"], c["benchmark"]): c for c in json.loads(to_json(m, meta))["cells"]}
    assert cells[("new", "point-query")]["trained_on_this"] is True
    assert cells[("new", "update-index")]["trained_on_this"] is False


def test_verdict_beside_rqps_and_in_json():
    """10 interleaved rounds (the sequential rule decides from 9 on): update-index clearly slower, point-query
    within 2% with a tight noise threshold."""
    recs = []
    for r in range(1, 11):
        drift = 1 + 0.15 * (r % 3)  # a slow round is slow for both targets
        recs += [record("old", "update-index", r, round(1000 * drift)),
                 record("new", "update-index", r, round(940 * drift) + r),
                 record("old", "point-query", r, 5000 + r), record("new", "point-query", r, 5005 + r)]
    meta = meta_of({**META, "benchmarks": META["benchmarks"][:1] + META["benchmarks"][2:]})
    m = build_matrix(meta, recs)
    md = to_markdown(m, meta)
    assert "| update-index | 1.00 ! | 0.94 slower* ! |" in md  # drift cancels in the ratios; *: wall decided
    assert "| point-query | 1.00 | 1.00 same* |" in md
    assert "min_effect 2.0%" in md
    cells = {(c["target"], c["benchmark"]): c for c in json.loads(to_json(m, meta))["cells"]}
    upd = cells[("new", "update-index")]
    assert upd["verdict"] == "slower" and upd["decided_by"] == "paired" and 0 < upd["noise_threshold"] < 0.06
    assert upd["verdict_views"]["unpaired"]["n"] == 10 and upd["significant"] is not None  # Mann-Whitney kept
    assert cells[("old", "update-index")]["verdict"] is None
    row = next(r for r in csv.DictReader(io.StringIO(to_csv(m, meta))) if r["target"] == "new")
    assert row["verdict"] in ("slower", "same") and "noise_threshold" in row
