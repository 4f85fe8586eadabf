"""`dbperf explain DIR` and `explain = "disagreements"` (issue 47): the lead ranking on made-up per-function diffs,
the cells chosen, the view and the key (unit); bad input in one line (unit: hand-made runs, nothing built); and a
small run of two real SQLite builds that differ in work, with the simulated tier and the explanation after it (e2e)."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.explain.cachegrind import CachegrindProfile
from dbperf.explain.diff import FunctionCounters, counters_diff
from dbperf.explain.explanation import CellExplanation, Explanation
from dbperf.explain.leads import ASSUMED, MISPREDICTS, STALL_COUNTERS, calibrated_costs, find_leads, moved_against
from dbperf.explain.mode import CounterMode
from dbperf.explain.profile import simulated_counters, simulated_per_query
from dbperf.records import Profile, SimulatedRecord, encode
from dbperf.report import formats
from dbperf.report.explain_view import LEADS_NOTE, explain_view
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.stats.simulated import TIER
from dbperf.stats.tiers import TierAgreement
from dbperf.storage.results import read_results
from dbperf.usecases.explain_run import chosen_cells, explain_after_run
from tests.conftest import run_cli
from tests.synthetic import write_run

unit = pytest.mark.unit
e2e = pytest.mark.e2e

EVENTS = ("Ir", "I1mr", "ILmr", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw", "Bc", "Bcm", "Bi", "Bim")
NO_PMU = CounterMode("simulated", "perf cannot count cycles and instructions here")


def counters(instructions: float, mispredicts: float = 0.0, i1: float = 0.0, d1: float = 0.0,
             ll: float = 0.0) -> dict[str, float]:
    return {"instructions": instructions, "branches": instructions / 5, MISPREDICTS: mispredicts, "i1_misses": i1,
            "d1_misses": d1, "ll_misses": ll, "estimated_cycles": instructions}


def totals(rows: list[FunctionCounters], side: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in rows:
        for k, v in getattr(r, side).items():
            out[k] = out.get(k, 0.0) + v
    return out


# --- the leads -------------------------------------------------------------------------------------------------


@unit
def test_fewer_instructions_and_more_mispredicts_is_a_lead_both_falling_is_not():
    rows = [FunctionCounters("lookup", counters(1000, mispredicts=10), counters(900, mispredicts=14)),
            FunctionCounters("shrunk", counters(500, mispredicts=8), counters(400, mispredicts=5)),
            FunctionCounters("grown", counters(300, i1=6), counters(360, i1=2)),
            FunctionCounters("steady", counters(200, d1=1), counters(200, d1=1.005))]  # below one event per 100 q
    leads = find_leads(rows, totals(rows, "a"), totals(rows, "b"))
    assert [(lead.function, lead.counter) for lead in leads] == [("lookup", MISPREDICTS), ("grown", "i1_misses")]
    first, second = leads
    assert first.delta == pytest.approx(4) and first.instructions_delta == pytest.approx(-100)
    assert first.stall_cost == pytest.approx(4 * ASSUMED.weights[MISPREDICTS])  # costs the target more
    assert first.share == pytest.approx(4 / (14 + 5 - 10 - 8))  # of the cell's total change of mispredicts
    assert second.stall_cost < 0 and second.share == pytest.approx(1.0)  # more instructions, fewer misses


@unit
def test_leads_rank_by_estimated_stall_cost_either_way():
    rows = [FunctionCounters("small", counters(100, d1=1), counters(90, d1=3)),  # +2 x 5 cycles
            FunctionCounters("big", counters(100, ll=0), counters(95, ll=1)),  # +1 x 30 cycles
            FunctionCounters("back", counters(100, mispredicts=3), counters(120, mispredicts=1))]  # -2 x 15
    leads = find_leads(rows, totals(rows, "a"), totals(rows, "b"))
    assert [lead.function for lead in leads] == ["back", "big", "small"]  # |-30| = |+30| > 10: then by name
    assert leads[0].stall_cost == pytest.approx(-30) and leads[1].stall_cost == pytest.approx(30)


@unit
def test_leads_that_push_the_measured_way_come_first():
    rows = [FunctionCounters("toward-faster", counters(100, mispredicts=5), counters(120, mispredicts=1)),  # -60
            FunctionCounters("toward-slower", counters(100, d1=1), counters(90, d1=3))]  # +10
    leads = find_leads(rows, totals(rows, "a"), totals(rows, "b"), measured="slower")
    assert [(lead.function, lead.toward) for lead in leads] == [("toward-slower", "slower"),
                                                                 ("toward-faster", "faster")]
    undecided = find_leads(rows, totals(rows, "a"), totals(rows, "b"), measured="undecided")
    assert [lead.function for lead in undecided] == ["toward-faster", "toward-slower"]


@unit
def test_unchanged_instructions_with_a_stall_change_is_a_lead():
    assert moved_against(0.0, 1.0) and moved_against(0.0, -1.0)
    assert not moved_against(-5.0, -1.0) and not moved_against(5.0, 1.0) and not moved_against(-5.0, 0.001)


@unit
def test_a_counter_not_measured_is_never_a_lead():
    a, b = {"instructions": 100.0, "i1_misses": 1.0}, {"instructions": 90.0, "i1_misses": 3.0}
    rows = [FunctionCounters("f", a, b)]
    leads = find_leads(rows, a, b)
    assert [lead.counter for lead in leads] == ["i1_misses"]  # no mispredict, D1 or LL figure: not looked at


@unit
def test_a_calibrated_model_ranks_in_ns_when_it_weighs_every_stall_counter():
    weights = {"instructions": 0.1, **{c: 2.0 for c in STALL_COUNTERS}}
    costs = calibrated_costs(weights)
    assert costs is not None and costs.unit == "ns" and costs.weights[MISPREDICTS] == 2.0
    assert calibrated_costs({"instructions": 0.1, MISPREDICTS: 3.0}) is None


@unit
def test_per_function_counters_add_up_to_the_per_query_totals():
    functions = {f"f{i}": {e: (i + 1) * (j + 1) * 10 for j, e in enumerate(EVENTS)} for i in range(3)}
    per_query = simulated_per_query(CachegrindProfile(EVENTS, functions), 10)
    summed: dict[str, float] = {}
    for events in functions.values():
        for k, v in simulated_counters(events).items():
            summed[k] = summed.get(k, 0.0) + v / 10
    for k, v in summed.items():
        assert per_query[k] == pytest.approx(v), k


def profile(target: str, functions: dict[str, dict[str, float]], mode: str = "simulated",
            per_query: dict[str, float] | None = None) -> Profile:
    return Profile(mode=mode, mode_reason="test", tool="cachegrind" if mode == "simulated" else "perf stat",  # type: ignore[arg-type]
                   target=target, benchmark="point-query", events=100, queries=100, method="made up",
                   per_query=per_query if per_query is not None else totals(
                       [FunctionCounters(n, f, f) for n, f in functions.items()], "a"),
                   functions=functions)


@unit
def test_counters_diff_gives_zeros_to_a_function_one_build_never_ran():
    a = profile("a", {"f": counters(100, 1), "gone": counters(50, 2)})
    b = profile("b", {"f": counters(90, 2), "new": counters(30, 1)})
    rows, kept = counters_diff(a, b)
    by_name = {r.function: r for r in rows}
    assert set(kept) == set(counters(1))
    assert by_name["gone"].b["instructions"] == 0 and by_name["new"].a[MISPREDICTS] == 0
    assert rows[0].function == "gone"  # the largest change of instructions first
    with pytest.raises(UserError, match="two simulated profiles"):
        counters_diff(a, profile("h", {"f": {"cycles": 3.0}}, mode="hardware"))


# --- the cells chosen, the view ----------------------------------------------------------------------------------


def simulated_line(target: str, instructions: float) -> bytes:
    return encode(SimulatedRecord(type="simulated", target=target, benchmark="point-query", tier=TIER,
                                  per_query={"instructions": instructions, "estimated_cycles": instructions * 1.6},
                                  queries=3000)) + b"\n"


def synthetic_run(directory: Path, simulated: bool = True) -> Path:
    write_run(directory, ["old", "new"], ["point-query", "update-index"], 3, speed={"new": 1.01})
    if simulated:
        with (directory / "results.jsonl").open("ab") as f:
            f.write(simulated_line("old", 6000) + simulated_line("new", 5800))
    return directory


@unit
def test_disagreeing_cells_are_chosen_once_per_target_and_benchmark(tmp_path):
    meta, records, _ = read_results(synthetic_run(tmp_path / "run"))
    m = build_matrix(meta, records)
    assert chosen_cells(m, None, tmp_path) == []  # nothing decided: every tier open
    cell = m.cell("new", "point-query", 1)
    assert cell is not None and cell.tiers is not None and cell.tiers.tiers == "open"
    cell.tiers = TierAgreement("disagree", "wall clock -5.0% QPS (slower) but simulated -3.33% est. cycles (fewer)")
    (chosen,) = chosen_cells(m, None, tmp_path)
    assert (chosen.target, chosen.benchmark, chosen.threads, chosen.asked) == ("new", "point-query", (1,), False)
    named = chosen_cells(m, "new:point-query", tmp_path)[0]
    assert named.asked and named.tiers == "disagree"
    for bad, words in (("nope:point-query", "no such cell"), ("old:point-query", "is the base"),
                       ("new", "expected TARGET:BENCHMARK"), ("new:update-index", "no simulated figure")):
        with pytest.raises(UserError, match=words):
            chosen_cells(m, bad, tmp_path)


def explanation(hardware: tuple[Profile, Profile] | None = None) -> Explanation:
    a = profile("old", {"lookup": counters(1000, mispredicts=10), "shrunk": counters(500, mispredicts=8)})
    b = profile("new", {"lookup": counters(900, mispredicts=14), "shrunk": counters(400, mispredicts=5)})
    functions, kept = counters_diff(a, b)
    leads = find_leads(functions, a.per_query, b.per_query)
    cell = CellExplanation("new", "point-query", (1,), "disagree", "wall clock -5.0% QPS (slower) but simulated "
                           "-3.33% est. cycles (fewer)", "slower", False, a, b, functions, kept, leads,
                           hardware=hardware)
    return Explanation("/runs/r1", "/runs/exp.toml", "old", NO_PMU if hardware is None else
                       CounterMode("hardware", "perf counts cycles"), ASSUMED, [cell])


@unit
def test_the_view_says_leads_are_leads_and_what_this_host_cannot_show():
    view = explain_view(explanation())
    text = "\n".join(s for sec in view.sections for s in (sec.title, *sec.text, *sec.notes)) + "\n".join(view.notes)
    assert LEADS_NOTE in view.notes and "leads, not proof" in LEADS_NOTE
    assert "tiers disagree: wall clock -5.0% QPS (slower)" in text
    assert "no PMU" in text and "cycles, branch-misses and front-end counters" in text
    assert "dbperf diff /runs/exp.toml old new --benchmark point-query --mode hardware" in text
    leads = next(s for s in view.sections if s.title == "leads")
    assert leads.block is not None and [r.cells[0] for r in leads.block.rows] == ["lookup"]
    assert leads.block.rows[0].cells[-1] == "slower (as measured)"
    counters_block = view.sections[0].block
    assert counters_block is not None and [r.cells[0] for r in counters_block.rows] == [
        "instructions", "branches", "branch mispredicts (simulated predictor)", "I1 misses", "D1 misses",
        "LL misses", "est. cycles"]
    doc = json.loads(formats.render(view, "json"))
    (c,) = doc["cells"]
    assert c["tiers"] == "disagree" and c["hardware"] is None and "no PMU" in c["hardware_not_measured"]
    assert c["leads"][0]["function"] == "lookup" and c["leads"][0]["as_measured"] is True
    assert c["counters"][MISPREDICTS]["delta"] == pytest.approx(1.0)
    assert c["stall_cost"]["leads"] == {MISPREDICTS: pytest.approx(4 * 15)}
    assert c["stall_cost"]["whole_cell"][MISPREDICTS] == pytest.approx(1 * 15)
    assert "whole cell +15.0 (mispredicts +15.0" in text
    assert "the whole cell's simulated stalls push toward slower, as measured" in text
    assert "lookup" in formats.render(view, "csv")


@unit
def test_with_a_pmu_the_hardware_diff_is_shown_measured():
    hw = (profile("old", {"lookup": {"cycles": 900.0}}, "hardware", {"cycles": 2000.0, "branch_misses": 3.0}),
          profile("new", {"lookup": {"cycles": 1100.0}}, "hardware", {"cycles": 2100.0, "branch_misses": 5.0}))
    view = explain_view(explanation(hw))
    section = next(s for s in view.sections if s.title == "hardware tier")
    assert section.block is not None and [r.cells[0] for r in section.block.rows] == ["cycles", "branch misses"]
    assert "lookup +200.0" in section.notes[0] and not any("no PMU" in t for t in section.text)
    doc = json.loads(formats.render(view, "json"))
    assert doc["cells"][0]["hardware"]["target"]["branch_misses"] == 5.0
    assert doc["cells"][0]["hardware_not_measured"] is None


@unit
def test_nothing_to_explain_is_one_line():
    e = Explanation("/runs/r1", "/runs/exp.toml", "old", NO_PMU, ASSUMED, nothing="/runs/r1: no cell where ...")
    view = explain_view(e)
    assert view.title == "/runs/r1: no cell where ..." and not view.sections
    assert json.loads(formats.render(view, "json"))["cells"] == []


# --- the key ---------------------------------------------------------------------------------------------------

KEYED = """
[run]
benchmarks = ["point-query"]
simulated = true
{line}
[[target]]
name = "a"
"""


@unit
def test_the_explain_key(write_experiment):
    assert parse_experiment(write_experiment(KEYED.format(line=""))).explain == "none"
    assert parse_experiment(write_experiment(KEYED.format(line='explain = "disagreements"'))).explain == \
        "disagreements"
    with pytest.raises(UserError, match=r"\[run\]\.explain: expected one of disagreements, none, got 'always'"):
        parse_experiment(write_experiment(KEYED.format(line='explain = "always"')))


# --- bad input, in one line ------------------------------------------------------------------------------------


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


@unit
def test_a_directory_that_is_not_a_run(tmp_path):
    proc = run_cli("explain", str(tmp_path))
    assert proc.returncode == 2 and "not a dbperf results directory" in one_line(proc)


@unit
def test_a_run_without_the_simulated_tier(tmp_path):
    proc = run_cli("explain", str(synthetic_run(tmp_path / "run", simulated=False)))
    assert proc.returncode == 2 and "the run has no simulated tier" in one_line(proc)


@unit
def test_an_unknown_cell(tmp_path):
    proc = run_cli("explain", str(synthetic_run(tmp_path / "run")), "--cell", "nope:point-query")
    assert proc.returncode == 2
    assert "--cell nope:point-query: no such cell" in one_line(proc) and "new:point-query" in proc.stderr


@unit
def test_a_run_with_no_disagreement_is_one_line_and_exit_0(tmp_path):
    run = synthetic_run(tmp_path / "run")
    proc = run_cli("explain", str(run))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines() == [
        f"{run}: no cell where the measured and simulated tiers disagree: nothing to explain (--cell "
        "TARGET:BENCHMARK explains one anyway)"]
    assert json.loads((run / "explain.json").read_text())["cells"] == []


@unit
def test_after_a_run_a_failure_is_one_warning_and_nothing_to_explain_one_line(tmp_path):
    said = io.StringIO()
    assert explain_after_run(synthetic_run(tmp_path / "plain", simulated=False), Console(file=said)) is None
    assert said.getvalue().startswith('dbperf: warning: explain = "disagreements": ') and \
        len(said.getvalue().strip().splitlines()) == 1
    said = io.StringIO()
    assert explain_after_run(synthetic_run(tmp_path / "sim"), Console(file=said, width=300)) is None
    assert said.getvalue().strip().splitlines() == [
        f"dbperf: explain: {tmp_path / 'sim'}: no cell where the measured and simulated tiers disagree: nothing to "
        "explain (--cell TARGET:BENCHMARK explains one anyway)"]


# --- end to end: two SQLite builds that differ in work ---------------------------------------------------------

TWO_BUILDS = """
[run]
benchmarks = ["point-query"]
table_size = 5000
time = "0.3s"
warmup = "0.1s"
repeats = 2
simulated = true
explain = "disagreements"

[[target]]
name = "single"
source = "sqlite@3.54.1"
cflags = ["-O0", "-DSQLITE_THREADSAFE=0"]

[[target]]
name = "serialized"
source = "sqlite@3.54.1"
cflags = ["-O0", "-DSQLITE_THREADSAFE=1"]
"""


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory: pytest.TempPathFactory):
    """One run of two -O0 builds, the second with SQLite's mutexes (more work per query), and what it said."""
    base = tmp_path_factory.mktemp("explain-run")
    env = {"DBPERF_CACHE": str(base / "cache")}
    experiment = base / "exp.toml"
    experiment.write_text(TWO_BUILDS)
    out = base / "out"
    proc = run_cli("run", str(experiment), "--out", str(out), env=env, timeout=1200)
    assert proc.returncode == 0, proc.stderr
    return out, proc, env


@e2e
def test_the_run_reports_work_words_and_explains_what_disagrees(two_builds):
    out, proc, _ = two_builds
    doc = json.loads(run_cli("report", str(out), "--format", "json").stdout)
    cells = {c["target"]: c for c in doc["cells"]}
    assert cells["single"]["sim_verdict"] == "base"
    assert cells["serialized"]["sim_verdict"] in {"fewer", "more", "same"}
    assert cells["serialized"]["sim_verdict"] == "more"  # mutex enter/leave on every call
    assert cells["serialized"]["tiers"] in {"agree", "disagree", "open"} and cells["single"]["tiers"] is None
    meta, records, _ = read_results(out)
    disagree = [c for c in build_matrix(meta, records).cells.values() if c.tiers and c.tiers.tiers == "disagree"]
    explained = json.loads((out / "explain.json").read_text())
    assert len(explained["cells"]) == len(disagree)
    if disagree:  # the measured tier said faster: the leads follow the run, on stderr
        assert "leads, not proof" in proc.stderr and "hardware tier" in proc.stderr
    else:
        assert "dbperf: explain: " in proc.stderr and "no cell where the measured and simulated tiers disagree" \
            in proc.stderr
        again = run_cli("explain", str(out))
        assert again.returncode == 0 and len(again.stdout.strip().splitlines()) == 1, again.stdout


@e2e
def test_a_named_cell_is_explained_with_every_counter_and_its_leads(two_builds):
    out, _, env = two_builds
    proc = run_cli("explain", str(out), "--cell", "serialized:point-query", env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    print(proc.stdout)  # the printed leads, for the record (pytest -s)
    assert "cached" in proc.stderr and "built " not in proc.stderr  # the run's builds, not new ones
    assert "point-query: serialized vs single" in proc.stdout and "leads, not proof" in proc.stdout
    for counter in ("instructions", "branches", "branch mispredicts (simulated predictor)", "I1 misses",
                    "D1 misses", "LL misses", "est. cycles"):
        assert f"\n{counter} " in proc.stdout, counter
    doc = json.loads((out / "explain.json").read_text())
    (cell,) = doc["cells"]
    assert cell["asked"] and cell["notes"] == []  # the counts are the run's own
    assert cell["counters"]["instructions"]["delta"] > 0
    simulated = {r.target: r for r in read_results(out)[1] if isinstance(r, SimulatedRecord)}
    assert cell["counters"]["instructions"]["target"] == pytest.approx(simulated["serialized"].instructions,
                                                                       rel=1e-3)
    for lead in cell["leads"]:
        assert lead["counter"] in STALL_COUNTERS and lead["delta"] * lead["instructions_delta"] <= 0
    costs = [abs(lead["stall_cost"]) for lead in cell["leads"]]
    assert costs == sorted(costs, reverse=True)
    if doc["host_counters"]["mode"] == "simulated":
        assert "not measured: this host has no PMU" in proc.stdout and "--mode hardware" in proc.stdout
    else:
        assert cell["hardware"] is not None or cell["hardware_not_measured"]


@e2e
def test_a_disagreement_is_explained_after_the_run_with_the_leads_on_stderr(two_builds, tmp_path, monkeypatch):
    """The run's own builds and simulated figures, with measured rounds made up so that the wall clock decides the
    serialized build faster while its simulated work is more: the tiers disagree, deterministically."""
    out, _, env = two_builds
    run = write_run(tmp_path / "run", ["single", "serialized"], ["point-query"], 12, speed={"serialized": 1.3},
                    noise=0.01)
    (run / "experiment.toml").write_text((out / "experiment.toml").read_text())
    with (run / "results.jsonl").open("ab") as f:
        for r in read_results(out)[1]:
            if isinstance(r, SimulatedRecord):
                f.write(encode(r) + b"\n")
    meta, records, _ = read_results(run)
    cell = build_matrix(meta, records).cell("serialized", "point-query", 1)
    assert cell is not None and cell.tiers is not None and cell.tiers.tiers == "disagree", cell.tiers
    monkeypatch.setenv("DBPERF_CACHE", env["DBPERF_CACHE"])
    stderr = io.StringIO()
    assert explain_after_run(run, Console(file=stderr, width=200)) is None
    said = stderr.getvalue()
    print(said)  # the leads as a run prints them (pytest -s)
    assert "tiers disagree: wall clock +30" in said and "(faster)" in said and "leads, not proof" in said
    assert "those pushing toward the measured faster first" in said
    assert "push toward slower too, against the measured faster: nothing the simulated tier counts" in said
    assert f"dbperf: explain: written to {run / 'explain.json'}" in said
    (explained,) = json.loads((run / "explain.json").read_text())["cells"]
    assert explained["tiers"] == "disagree" and not explained["asked"] and explained["measured"] == "faster"
    leads = explained["leads"]
    assert leads and all(lead["as_measured"] for lead in leads[:1])  # the measured way first, when there is one
    firsts = [lead["as_measured"] for lead in leads]
    assert firsts == sorted(firsts, reverse=True)


@unit
def test_an_earlier_explanation_is_kept_per_cell_and_a_damaged_one_set_aside(tmp_path):
    """A later "nothing to explain" does not lose an earlier --cell explanation (minutes of simulation); a damaged
    explain.json is set aside and said, never replaced silently."""
    run = synthetic_run(tmp_path / "run")
    earlier = {"target": "new", "benchmark": "point-query", "threads": [1], "leads": [{"function": "f"}]}
    (run / "explain.json").write_text(json.dumps({"explain": 1, "cells": [earlier]}))
    proc = run_cli("explain", str(run))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((run / "explain.json").read_text())
    assert doc["cells"] == [earlier] and doc["kept_from_earlier"] == 1
    (run / "explain.json").write_text("{not json")
    proc = run_cli("explain", str(run))
    assert proc.returncode == 0 and "was not an explanation this dbperf reads (unreadable" in proc.stderr
    aside = list(run.glob("explain.json.damaged-*"))
    assert len(aside) == 1 and aside[0].read_text() == "{not json"
    assert json.loads((run / "explain.json").read_text())["cells"] == []
