"""The simulated tier (issue 25): its verdict (stats/simulated.py), the report's columns and the verdict-quality
legend on records built here (unit), and a one-benchmark run on the real system SQLite under cachegrind (e2e)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

import pytest
from rich.console import Console

from dbperf.experiment.model import Target
from dbperf.experiment.spec import parse_experiment
from dbperf.explain.profile import Profiler
from dbperf.metrics import CPU, WALL, Metric
from dbperf.records import SimulatedRecord, encode, results_record
from dbperf.report.html import to_html
from dbperf.runner.simulated_tier import (
    MIN_QUERIES,
    MODE,
    QUERIES,
    estimated_seconds,
    identity,
    queries_for,
    rows_per_query,
)
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.stats.simulated import SAME_WITHIN, TIER, WORK_WORDS, simulated_delta, simulated_verdict
from dbperf.stats.tiers import tiers_of
from dbperf.stats.verdict import CellVerdict, View
from tests.conftest import run_cli
from tests.report_formats import render_table, to_csv, to_json, to_markdown
from tests.synthetic import meta_of

unit = pytest.mark.unit
e2e = pytest.mark.e2e

META = {
    "base": "old", "aggregate": "median", "threads": [1], "status": "complete", "aa_target": "old-aa",
    "targets": [{"name": "old", "engine": "sqlite"}, {"name": "old-aa", "engine": "sqlite"},
                {"name": "new", "engine": "sqlite"}],
    "benchmarks": [{"name": "point-query", "group": "point"}, {"name": "update-index", "group": "write"}],
}


def sim(target: str, benchmark: str, cycles: float, instructions: float, reused_from: str | None = None,
        error: str | None = None) -> SimulatedRecord:
    per_query = {} if error else {"instructions": instructions, "estimated_cycles": cycles}
    return SimulatedRecord(type="simulated", target=target, benchmark=benchmark, tier=TIER, per_query=per_query,
                           queries=3000, reused_from=reused_from, error=error)


def cell(target: str, benchmark: str, repeat: int, qps: float):
    return results_record({"target": target, "benchmark": benchmark, "threads": 1, "repeat": repeat, "status": "ok",
                           "result": {"qps": qps, "eps": qps, "queries": int(qps * 10), "errors": 0,
                                      "latency": {"p50_us": 10.0, "p99_us": 40.0, "max_us": 90.0},
                                      "client_usage": {"user_us": qps * 30, "system_us": qps * 10,
                                                       "voluntary_cs": 0, "involuntary_cs": 0}}})


def records(with_sim: bool = True) -> list:
    out = []
    for r in range(1, 4):
        for b in ("point-query", "update-index"):
            out += [cell("old", b, r, 1000 + r), cell("old-aa", b, r, 1001 + r), cell("new", b, r, 1100 + r)]
    if with_sim:
        out += [sim("old", "point-query", 10_000, 6_000), sim("old-aa", "point-query", 10_000, 6_000, "old"),
                sim("new", "point-query", 9_900, 5_800),
                sim("old", "update-index", 40_000, 26_000), sim("old-aa", "update-index", 40_000, 26_000, "old"),
                sim("new", "update-index", 0, 0, error="new update-index: the profiled run did 3 events")]
    return out


def verdict(v: str, threshold: float, mde_view_can_decide: bool = True, diff: float = 0.03,
            metric: Metric = WALL) -> CellVerdict:
    view = View("unpaired", diff, threshold, 8, mde_view_can_decide)
    return CellVerdict(v, "unpaired", diff, threshold, 0.02, view, None, metric)  # type: ignore[arg-type]


def retier(m):
    """The tiers of every compared cell again, after a test set its verdicts by hand (build_matrix computed them from
    the records' own)."""
    for (target, _, _), c in m.cells.items():
        if target != m.base and c.sim is not None:
            c.tiers = tiers_of(c.deciding_verdict, c.sim, c.predicted, c.user_cpu_change,
                               aa_copy=target == META["aa_target"])
    return m


def matrix_with_cpu():
    """The matrix of records(), with CPU-time verdicts and a level shift as helper h25a's build_matrix sets them."""
    m = build_matrix(meta_of(META), records())
    new_pq, new_upd = m.cell("new", "point-query", 1), m.cell("new", "update-index", 1)
    aa_pq, aa_upd = m.cell("old-aa", "point-query", 1), m.cell("old-aa", "update-index", 1)
    assert new_pq and new_upd and aa_pq and aa_upd
    new_pq.verdict_detail = verdict("undecided", 0.06)  # the wall clock could still hide 6%
    new_pq.cpu_verdict_detail = verdict("faster", 0.012, diff=0.05, metric=CPU)  # ... the CPU time decided
    new_upd.verdict_detail = verdict("slower", 0.04, diff=-0.08)
    new_upd.cpu_verdict_detail = verdict("undecided", 0.07, metric=CPU)
    new_upd.level_shift = "per-round ratios step from 0.95 to 1.10 after round 2"
    aa_pq.verdict_detail = verdict("same", 0.015)
    aa_pq.cpu_verdict_detail = verdict("slower", 0.01, diff=-0.03, metric=CPU)
    aa_upd.verdict_detail, aa_upd.cpu_verdict_detail = verdict("same", 0.018), verdict("same", 0.011, metric=CPU)
    return retier(m)


@unit
def test_verdict_at_the_half_percent_threshold():
    assert SAME_WITHIN == 0.005
    assert simulated_verdict(-0.005) == "fewer" and simulated_verdict(0.005) == "more"  # work, never speed
    assert simulated_verdict(-0.00499) == "same" and simulated_verdict(0.00499) == "same"
    assert simulated_verdict(0.0) == "same"


@unit
def test_delta_against_the_base():
    d = simulated_delta(sim("new", "b", 9_900, 5_800), sim("old", "b", 10_000, 6_000), is_base=False)
    assert d.verdict == "fewer" and d.estimated_cycles_delta == pytest.approx(-0.01)
    assert d.instructions_delta == pytest.approx(5_800 / 6_000 - 1)
    assert (d.estimated_cycles, d.base_estimated_cycles, d.instructions, d.base_instructions) == (
        9_900, 10_000, 5_800, 6_000)
    assert d.tier == TIER and d.reused_from is None and d.error is None
    base = simulated_delta(sim("old", "b", 10_000, 6_000), None, is_base=True)
    assert base.verdict == "base" and base.estimated_cycles == 10_000 and base.estimated_cycles_delta == 0.0


@unit
def test_an_aa_copy_reusing_the_base_is_exactly_zero():
    d = simulated_delta(sim("old-aa", "b", 10_123.4, 6_001.7, reused_from="old"), sim("old", "b", 10_123.4, 6_001.7),
                        is_base=False)
    assert d.estimated_cycles_delta == 0.0 and d.instructions_delta == 0.0
    assert d.verdict == "same" and d.reused_from == "old"


@unit
def test_a_missing_figure_is_never_a_number():
    d = simulated_delta(sim("new", "b", 0, 0, error="cachegrind failed"), sim("old", "b", 10_000, 6_000), False)
    assert d.verdict == "missing" and d.estimated_cycles_delta is None and d.instructions_delta is None
    assert d.error == "new: cachegrind failed"
    d = simulated_delta(sim("new", "b", 9_000, 5_000), sim("old", "b", 0, 0, error="timed out"), False)
    assert d.verdict == "missing" and d.estimated_cycles_delta is None and "base b: timed out" in str(d.error)
    d = simulated_delta(sim("new", "b", 9_000, 5_000), None, False)
    assert d.verdict == "missing" and d.error == "base b: not measured"


@unit
def test_record_round_trips_through_results_jsonl():
    rec = sim("old-aa", "point-query", 10_000, 6_000, reused_from="old")
    back = results_record(json.loads(encode(rec)))
    assert isinstance(back, SimulatedRecord) and back == rec
    assert back.estimated_cycles == 10_000 and back.instructions == 6_000


@unit
def test_identity_ignores_the_name_only():
    """The A/A copy is replace(base, name=...) (experiment/aa.py): the same identity, so its profile is reused."""
    a = Target(name="a", engine="sqlite", library="/nonexistent/libsqlite3.so", config={"journal_mode": "WAL"})
    assert identity(replace(a, name="a-aa")) == identity(a)
    assert identity(replace(a, config={"journal_mode": "DELETE"})) != identity(a)
    assert identity(replace(a, library="/other/libsqlite3.so")) != identity(a)


@unit
def test_query_count_follows_the_rows_a_query_touches(write_experiment):
    e = parse_experiment(write_experiment('[run]\nbenchmarks = ["point-query", "random-points-100", "read-only-100", '
                                          '"scan"]\ntable_size = 100000\nsimulated = true\n[[target]]\nname = "a"\n'))
    assert e.simulated
    point, points, read_only, scan = e.benchmarks
    assert rows_per_query(point, e.table_size) == 1 and rows_per_query(points, e.table_size) == 100
    assert rows_per_query(read_only, e.table_size) == (10 + 4 * 100) / 16  # BEGIN and COMMIT count as queries
    assert rows_per_query(scan, e.table_size) == 100_000
    queries = queries_for(e.table_size)
    assert [queries(w) for w in e.benchmarks] == [QUERIES, 300, round(30_000 / 25.625), MIN_QUERIES]
    assert estimated_seconds(e) > 0
    # a study's diff step: its 20,000 queries are a point query's; a full scan gets the fewest, not 2 billion rows
    diff = queries_for(e.table_size, row_budget=20_000, most=20_000)
    assert [diff(w) for w in e.benchmarks] == [20_000, 200, round(20_000 / 25.625), MIN_QUERIES]


@unit
def test_the_key_defaults_to_off(write_experiment):
    e = parse_experiment(write_experiment('[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\n'))
    assert e.simulated is False
    bad = write_experiment('[run]\nbenchmarks = ["point-query"]\nsimulated = "yes"\n[[target]]\nname = "a"\n')
    proc = run_cli("run", str(bad))
    assert proc.returncode == 2 and "simulated: expected true or false" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@unit
def test_markdown_shows_simulated_and_cpu_columns_apart():
    md = to_markdown(matrix_with_cpu(), meta_of(META))
    header = next(line for line in md.splitlines() if line.startswith("| benchmark"))
    assert header == ("| benchmark | col-1 | col-1 simulated Δcyc | col-2 | col-2 cpu | col-2 simulated Δcyc | col-3 "
                      "| col-3 cpu | col-3 simulated Δcyc |")
    point = next(line for line in md.splitlines() if line.startswith("| point-query"))
    cells = [c.strip() for c in point.strip("|").split("|")]
    assert cells[2] == "10,000 cyc/q"  # the base: its estimated cycles per query
    assert cells[5] == "+0.00% same r"  # the A/A copy: reused, exactly 0
    assert cells[6].startswith("1.10 ?±6.0%") and "*" not in cells[6]  # wall clock undecided ...
    assert cells[7] == "+5.0% faster*"  # ... the CPU time decided the cell
    assert cells[8] == "-1.00% fewer"  # CPU time faster, fewer est. cycles: the tiers agree, no mark
    update = next(line for line in md.splitlines() if line.startswith("| update-index"))
    cells = [c.strip() for c in update.strip("|").split("|")]
    assert cells[6].startswith("1.10 slower*") and cells[7] == "?±7.0%" and cells[8] == "missing"
    assert f"col-N simulated Δcyc : Δ est. cycles, {TIER}" in md and "0.5% or more" in md
    assert "fewer/more when they differ" in md and "a count of work, not of speed" in md
    assert "faster/slower when they differ" not in md
    assert "simulated figures missing: new: new update-index: the profiled run did 3 events" in md
    assert "col-N cpu : the CPU-time verdict" in md


@unit
def test_legend_states_verdict_quality_per_metric():
    md = to_markdown(matrix_with_cpu(), meta_of(META))
    wall = next(line for line in md.splitlines() if "verdict quality, wall clock:" in line)
    assert "3 of 4 compared cells decided" in wall and "noise thresholds 1.5%–6.0% (median 2.9%)" in wall
    assert "could hide a change up to: point-query new ±6.0%" in wall
    cpu = next(line for line in md.splitlines() if "verdict quality, CPU time:" in line)
    assert "3 of 4 compared cells decided" in cpu and "update-index new ±7.0%" in cpu
    assert ("level shifts within repeats (not decided or stopped on, unless called at both levels): update-index "
            "new: per-round ratios step") in md
    aa = next(line for line in md.splitlines() if "A/A: old-aa is old run against itself" in line)
    assert "wall clock 0 of 2 cells called changed" in aa
    assert "CPU time 1 of 2 cells called changed (point-query t=1: slower)" in aa


@unit
def test_json_and_csv_add_fields_and_keep_the_old_ones():
    m = matrix_with_cpu()
    doc = json.loads(to_json(m, meta_of(META)))
    cells = {(c["target"], c["benchmark"]): c for c in doc["cells"]}
    new = cells[("new", "point-query")]
    for key in ("rqps", "verdict", "decided_by", "noise_threshold", "min_detectable_effect", "cpu_us_per_query"):
        assert key in new  # the contract's fields stay
    assert new["sim_verdict"] == "fewer" and new["sim_estimated_cycles_delta"] == pytest.approx(-0.01)
    assert new["tiers"] == "agree" and "CPU time +5.0% QPS (faster)" in new["tiers_why"]
    assert new["predicted_cpu_delta"] is None and new["predicted_verdict"] is None  # no cost model in this run
    assert new["sim_tier"] == TIER and new["sim_estimated_cycles_per_query"] == 9_900
    assert new["cpu_verdict"] == "faster" and new["decided_metric"] == "cpu" and new["verdict"] == "undecided"
    aa = cells[("old-aa", "point-query")]
    assert aa["sim_estimated_cycles_delta"] == 0.0 and aa["sim_reused_from"] == "old"
    assert aa["tiers"] == "agree" and "by construction" in aa["tiers_why"]
    failed = cells[("new", "update-index")]
    assert failed["sim_verdict"] == "missing" and failed["sim_estimated_cycles_delta"] is None and failed["sim_error"]
    assert failed["level_shift"].startswith("per-round") and failed["decided_metric"] == "wall"
    assert failed["tiers"] == "open" and "no simulated figure" in failed["tiers_why"]
    assert cells[("old", "point-query")]["tiers"] is None  # the base is not compared
    assert doc["simulated"]["verdicts"] == ["fewer", "more", "same"]
    assert "dbperf calibrate" in doc["simulated"]["cost_model"]["note"]
    assert doc["verdict_quality"]["tiers"]["agree"] == 1 and doc["verdict_quality"]["tiers"]["open"] == 1
    assert doc["simulated"]["tier"] == TIER and doc["simulated"]["same_within"] == 0.005
    q = doc["verdict_quality"]
    assert q["wall"]["noise_threshold_max"] == 0.06 and q["cpu"]["noise_threshold_min"] == 0.01
    assert q["aa"]["cpu"]["changed"] == 1 and doc["aa"]["cpu"]["changed"] == 1 and doc["aa"]["changed"] == 0
    rows = list(csv.DictReader(io.StringIO(to_csv(m, meta_of(META)))))
    row = next(r for r in rows if r["target"] == "new" and r["benchmark"] == "point-query")
    assert row["sim_verdict"] == "fewer" and row["cpu_verdict"] == "faster" and row["decided_metric"] == "cpu"
    assert row["tiers"] == "agree" and row["tiers_why"]
    assert float(row["sim_estimated_cycles_delta"]) == pytest.approx(-0.01)


@unit
def test_terminal_and_html_show_the_simulated_column():
    m = matrix_with_cpu()
    console = Console(record=True, width=300)
    render_table(m, meta_of(META), console)
    out = console.export_text()  # the glance: one cell per target, the simulated work in it
    assert "col-3 simulated Δcyc" not in out and "col-3 cpu" not in out
    assert "1.10 faster·cpu, sim -1.00% fewer" in out and "sim +0.00% same r" in out
    console = Console(record=True, width=300)
    render_table(m, meta_of(META), console, verbose=True)
    out = console.export_text()
    assert "col-3 simulated Δcyc" in out and "-1.00% fewer" in out and "+0.00% same r" in out
    page = to_html(m, meta_of(META))
    assert "col-3 simulated Δcyc" in page and "simulated Δ est. cycles (work): -1.00% fewer" in page


@unit
def test_a_run_without_the_tier_keeps_its_columns():
    m = build_matrix(meta_of({**META, "aa_target": None}), records(with_sim=False))
    md = to_markdown(m, meta_of(META))
    # No simulated column; the CPU-time verdict's columns are there because these records measured CPU.
    assert md.count("| benchmark | col-1 | col-2 | col-3 |") == 0 and "simulated" not in md
    assert "| benchmark | col-1 | col-2 | col-2 cpu | col-3 | col-3 cpu |" in md
    doc = json.loads(to_json(m, meta_of(META)))
    assert doc["simulated"] is None and all(c["sim_verdict"] is None for c in doc["cells"])


SIMULATED_RUN = """
[run]
benchmarks = ["point-query"]
table_size = 1000
time = "0.3s"
warmup = "0.1s"
repeats = 2
simulated = true

[[target]]
name = "wal"
config = { journal_mode = "WAL", synchronous = "NORMAL" }

[[target]]
name = "delete"
config = { journal_mode = "DELETE", synchronous = "OFF" }
"""


@e2e
def test_one_benchmark_run_with_the_simulated_tier(write_experiment, tmp_path):
    out = tmp_path / "out"
    proc = run_cli("run", str(write_experiment(SIMULATED_RUN)), "--out", str(out), "--aa")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    simulated = {x["target"]: x for x in lines if x.get("type") == "simulated"}
    assert set(simulated) == {"wal", "wal-aa", "delete"}
    for name in ("wal", "delete"):
        s = simulated[name]
        assert s["tier"] == TIER and s["benchmark"] == "point-query" and s["queries"] >= QUERIES
        assert s["per_query"]["instructions"] > 1000 and s["per_query"]["estimated_cycles"] > 1000
        assert "reused_from" not in s and "error" not in s and s["seconds"] > 0
    assert simulated["wal-aa"]["reused_from"] == "wal"
    assert simulated["wal-aa"]["per_query"] == simulated["wal"]["per_query"]
    assert "sim +0.00% same r" in proc.stdout  # the glance: the simulated work in each target's one cell
    assert "dbperf calibrate" in proc.stdout  # no cost model on this host: how to make one

    md = run_cli("report", str(out), "--format", "markdown").stdout
    header = ("| benchmark | col-1 | col-1 simulated Δcyc | col-2 | col-2 cpu | col-2 simulated Δcyc | col-3 "
              "| col-3 cpu | col-3 simulated Δcyc |")  # the CPU-time verdict beside each target's wall clock
    assert header in md and TIER in md
    doc = json.loads(run_cli("report", str(out), "--format", "json").stdout)
    cells = {c["target"]: c for c in doc["cells"]}
    assert cells["wal-aa"]["sim_estimated_cycles_delta"] == 0.0 and cells["wal-aa"]["sim_reused_from"] == "wal"
    d = cells["delete"]["sim_estimated_cycles_delta"]
    expected = simulated["delete"]["per_query"]["estimated_cycles"] / simulated["wal"]["per_query"][
        "estimated_cycles"] - 1
    assert d == pytest.approx(expected) and cells["delete"]["sim_verdict"] == simulated_verdict(d)
    assert cells["delete"]["sim_verdict"] in WORK_WORDS and cells["wal"]["sim_verdict"] == "base"
    assert cells["delete"]["tiers"] in ("agree", "disagree", "open") and cells["wal"]["tiers"] is None
    assert cells["wal-aa"]["tiers"] == "agree" and "by construction" in cells["wal-aa"]["tiers_why"]


@e2e
def test_a_repeated_profile_gives_the_same_instructions(write_experiment, tmp_path):
    e = parse_experiment(write_experiment(SIMULATED_RUN))
    profiler = Profiler(e, tmp_path / "work", queries=QUERIES, mode=MODE, native_timing=False)
    try:
        first, second = (profiler.profile(e.targets[0], e.benchmarks[0]) for _ in range(2))
    finally:
        profiler.close()
    assert first.slowdown and first.slowdown.native_s is None  # the native timing run was skipped
    a, b = first.per_query["instructions"], second.per_query["instructions"]
    assert a > 1000 and abs(a - b) / a < 1e-4  # at least 4 digits
    assert first.per_query["estimated_cycles"] == pytest.approx(second.per_query["estimated_cycles"], rel=1e-4)


@e2e
def test_the_count_does_not_follow_the_work_folders_path(write_experiment, tmp_path):
    """The database's path sits on the heap: its length moved memcpy's alignments and the count with them (0.13%
    between a run and `dbperf explain` on CI); cachegrind's runs read a copy at a path of one length."""
    e = parse_experiment(write_experiment(SIMULATED_RUN))
    counts = []
    for work in (tmp_path / "w", tmp_path / ("a-much-longer-work-folder-" * 3)):
        profiler = Profiler(e, work, queries=QUERIES, mode=MODE, native_timing=False)
        try:
            counts.append(profiler.profile(e.targets[0], e.benchmarks[0]).per_query["instructions"])
        finally:
            profiler.close()
        assert not any(path.exists() for path in profiler.counted.values())  # removed on the way out
    assert counts[0] == pytest.approx(counts[1], rel=1e-7), counts
