"""Do the tiers agree (issue 47, stats/tiers.py): the agreement of every measured verdict with every simulated one,
the A/A copy, a missing figure, the calibrated check, the paired change of user CPU; and the report's side on
synthetic runs (tests/synthetic.py, no engine run): JSON and CSV carry `tiers` and a work word in `sim_verdict`, the
terminal report reads at a glance (one cell per target, at most five legend lines before the table) and
`--verbose` shows every tier's column."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest
from scipy import stats as scipy_stats

from dbperf.metrics import CPU, WALL, Metric
from dbperf.records import CostModelRecord, SimulatedRecord
from dbperf.report.glance_view import glance_text
from dbperf.stats.cost_model import MODEL_VERSION, PredictedChange
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.stats.simulated import TIER, WORK_WORDS, SimulatedDelta, simulated_delta
from dbperf.stats.tiers import AA_REASON, Interval, paired_change, tiers_of
from dbperf.stats.verdict import CellVerdict, View
from dbperf.storage.results import ResultsWriter, read_results
from tests.conftest import run_cli
from tests.synthetic import write_run

pytestmark = pytest.mark.unit

BASE_CYCLES = 10_000.0
SIM_CYCLES = {"fewer": 9_900.0, "more": 10_100.0, "same": BASE_CYCLES}  # ±1%: beyond the tier's 0.5%
DIFFS = {"faster": 0.05, "slower": -0.05, "same": 0.001, "undecided": 0.01}
SHARED = {"faster": "fewer", "slower": "more"}


def sim_record(target: str, cycles: float, instructions: float = 6_000.0, benchmark: str = "b",
               error: str | None = None, reused_from: str | None = None) -> SimulatedRecord:
    per_query = {} if error else {"instructions": instructions, "estimated_cycles": cycles}
    return SimulatedRecord(type="simulated", target=target, benchmark=benchmark, tier=TIER, per_query=per_query,
                           queries=3000, error=error, reused_from=reused_from)


def sim(word: str) -> SimulatedDelta:
    base = sim_record("old", BASE_CYCLES)
    if word == "missing":
        return simulated_delta(sim_record("new", 0, error="cachegrind failed"), base, is_base=False)
    return simulated_delta(sim_record("new", SIM_CYCLES[word]), base, is_base=False)


def measured(word: str, metric: Metric) -> CellVerdict:
    diff = DIFFS[word]
    view = View("paired", diff, 0.01, 12, True)
    return CellVerdict(word, "paired", diff, 0.01, 0.02, None, view, metric, "sequential",  # type: ignore[arg-type]
                       lower=diff - 0.01, upper=diff + 0.01)


@pytest.mark.parametrize("metric", [WALL, CPU])
@pytest.mark.parametrize("work", ["fewer", "more", "same", "missing"])
@pytest.mark.parametrize("verdict", ["faster", "slower", "same", "undecided"])
def test_every_measured_verdict_against_every_simulated_one(verdict, work, metric):
    assert sim(work).verdict == work
    t = tiers_of(measured(verdict, metric), sim(work))
    assert t is not None
    if work == "missing":
        assert t.tiers == "open" and "no simulated figure" in t.why and "cachegrind failed" in t.why
    elif verdict == "undecided":
        assert t.tiers == "open" and t.why == "nothing measured decided"
    elif verdict == "same" or SHARED[verdict] == work:
        assert t.tiers == "agree"
    else:  # a decided faster/slower the work does not share: both figures named
        tier = metric.label
        assert t.tiers == "disagree"
        assert f"{tier} {DIFFS[verdict]:+.1%} QPS ({verdict})" in t.why
        assert f"simulated {SIM_CYCLES[work] / BASE_CYCLES - 1:+.2%} est. cycles ({work})" in t.why
    if t.tiers != "open":
        assert "faster" not in t.why.split("simulated", 1)[1].split(":")[0]  # the work is never said as speed
        assert "slower" not in t.why.split("simulated", 1)[1].split(":")[0]


def test_nothing_measured_is_open_and_no_tier_is_none():
    assert tiers_of(None, sim("fewer")).tiers == "open"  # type: ignore[union-attr]
    assert tiers_of(measured("faster", WALL), None) is None  # the run has no simulated tier
    base = simulated_delta(sim_record("old", BASE_CYCLES), None, is_base=True)
    assert base.verdict == "base" and tiers_of(measured("faster", WALL), base) is None


def test_a_missing_base_record_is_open():
    d = simulated_delta(sim_record("new", 9_000), None, is_base=False)
    t = tiers_of(measured("faster", WALL), d)
    assert d.verdict == "missing" and t is not None and t.tiers == "open" and "base b: not measured" in t.why


def test_the_aa_copy_agrees_by_construction():
    reused = simulated_delta(sim_record("old-aa", BASE_CYCLES, reused_from="old"), sim_record("old", BASE_CYCLES),
                             is_base=False)
    assert reused.estimated_cycles_delta == 0.0 and reused.instructions_delta == 0.0
    for verdict in ("faster", "slower", "undecided"):  # whatever the host's noise called it
        t = tiers_of(measured(verdict, "wall"), reused, aa_copy=True)
        assert t is not None and t.tiers == "agree" and t.why == AA_REASON and "by construction" in t.why


def test_the_calibrated_check():
    faster, fewer = measured("faster", WALL), sim("fewer")
    user = Interval(-0.05, -0.07, -0.03)  # measured user CPU per query: 5% less, ±2%
    outside = PredictedChange(-0.12, 0.02, "faster")  # |gap| 7% > band 2% + CI 2%
    t = tiers_of(faster, fewer, outside, user)
    assert t is not None and t.tiers == "disagree"
    assert "calibrated prediction -12.0% CPU/q (±2.0%)" in t.why and "measured -5.0% (±2.0%)" in t.why
    inside = PredictedChange(-0.08, 0.02, "faster")  # gap 3% <= 4%
    assert tiers_of(faster, fewer, inside, user).tiers == "agree"  # type: ignore[union-attr]
    # Without the measured change (too few rounds) the prediction is not checked.
    assert tiers_of(faster, fewer, outside, None).tiers == "agree"  # type: ignore[union-attr]
    # The work's own disagreement comes first, whatever the prediction.
    assert "the work does not share" in tiers_of(faster, sim("more"), inside, user).why  # type: ignore[union-attr]


def test_paired_change_on_known_pairs():
    exact = paired_change([(1.1, 1.0), (2.2, 2.0), (5.5, 5.0)])
    assert exact is not None and exact.estimate == pytest.approx(0.1)
    assert exact.low == pytest.approx(0.1) and exact.high == pytest.approx(0.1)
    logs = [0.09, 0.10, 0.11]
    change = paired_change([(math.exp(x) * 3.0, 3.0) for x in logs])
    half = scipy_stats.t.ppf(0.975, 2) * 0.01 / math.sqrt(3)
    assert change is not None and change.estimate == pytest.approx(math.exp(0.10) - 1)
    assert change.low == pytest.approx(math.exp(0.10 - half) - 1) and change.high == pytest.approx(
        math.exp(0.10 + half) - 1)
    assert change.half_width == pytest.approx((change.high - change.low) / 2)
    assert paired_change([(1.1, 1.0), (1.2, 1.0)]) is None  # fewer than three rounds
    assert paired_change([(1.1, 1.0), (0.0, 1.0), (1.2, 0.0), (1.3, 1.0)]) is None  # a zero is not a round


# --- The report's side, on a synthetic run ------------------------------------------------------------------------

TARGETS = ["old", "old-aa", "new", "slow", "tuned"]
BENCHMARKS = ["point-query", "scan", "update-index"]
HOST = {"hostname": "synthetic-host", "cpu_model": "synthetic CPU", "microcode": "0x1", "kernel": "6.1.0"}
# Per target: (est. cycles, instructions) per query against the base's 10,000 and 6,000.
WORK = {"old": (10_000, 6_000), "new": (10_300, 6_300),  # 10% faster, 3% more work: the tiers disagree
        "slow": (10_500, 6_660),  # 10% slower, more work, and a model on instructions predicts +11% user CPU: agree
        "tuned": (9_000, 6_600)}  # 10% faster, fewer cycles, but 10% more instructions: a model on instructions
#                                   predicts +10% user CPU against the measured -9%: the calibrated check disagrees


def synthetic_run(tmp_path: Path, model: bool = False, targets: tuple[str, ...] = tuple(TARGETS)) -> Path:
    aa = "old-aa" if "old-aa" in targets else None
    directory = write_run(tmp_path / "run", list(targets), BENCHMARKS, 12, noise=0.02,
                          speed={"new": 1.1, "slow": 0.9, "tuned": 1.1}, meta_extra={"aa_target": aa, "host": HOST})
    writer = ResultsWriter.reopen(directory)
    for benchmark in BENCHMARKS:
        for target, (cycles, instructions) in WORK.items():
            if target in targets:
                writer.append(sim_record(target, cycles, instructions, benchmark))
        if aa:
            writer.append(sim_record(aa, *WORK["old"], benchmark, reused_from="old"))
    if model:
        writer.append(CostModelRecord(type="cost_model", version=MODEL_VERSION, host={
            k: HOST[k] for k in ("cpu_model", "microcode", "kernel")}, created="2026-11-27T00:00:00+00:00",
            weights_ns={"instructions": 1.0}, change_error_median=0.01, change_error_p90=0.02, r2=0.9, cells=24))
    writer.close()
    return directory


def report(directory: Path, *args: str) -> str:
    proc = run_cli("report", str(directory), *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_json_and_csv_carry_the_tiers_and_work_words(tmp_path):
    directory = synthetic_run(tmp_path)
    doc = json.loads(report(directory, "--format", "json"))
    cells = {(c["target"], c["benchmark"]): c for c in doc["cells"]}
    for (target, _), c in cells.items():
        if target == "old":
            assert c["sim_verdict"] == "base" and c["tiers"] is None
        else:
            assert c["sim_verdict"] in WORK_WORDS and c["tiers"] in ("agree", "disagree", "open")
    new, slow, aa = cells[("new", "scan")], cells[("slow", "scan")], cells[("old-aa", "scan")]
    assert new["sim_verdict"] == "more" and new["verdict"] == "faster" and new["tiers"] == "disagree"
    assert "wall clock" in new["tiers_why"] and "+3.00% est. cycles (more)" in new["tiers_why"]
    assert slow["tiers"] == "agree" and aa["tiers"] == "agree" and aa["tiers_why"] == AA_REASON
    assert new["user_cpu_delta"] == pytest.approx(1 / 1.1 - 1, abs=0.02)  # the synthetic CPU follows the QPS
    assert new["user_cpu_delta_low"] < new["user_cpu_delta"] < new["user_cpu_delta_high"]
    assert new["predicted_cpu_delta"] is None and new["predicted_verdict"] is None  # no cost model
    assert "dbperf calibrate" in doc["simulated"]["cost_model"]["note"]
    assert doc["simulated"]["tiers"]["aa_copy"] == AA_REASON
    quality = doc["verdict_quality"]["tiers"]
    # new disagrees on each benchmark; slow and tuned agree (tuned's instructions count only with a cost model)
    assert (quality["agree"], quality["disagree"], quality["open"], quality["aa_agree_by_construction"]) == (
        6, 3, 0, 3)
    assert {d["cell"] for d in quality["disagreements"]} == {f"{b} new" for b in BENCHMARKS}
    rows = list(csv.DictReader(io.StringIO(report(directory, "--format", "csv"))))
    assert {r["sim_verdict"] for r in rows if r["target"] != "old"} <= set(WORK_WORDS)
    row = next(r for r in rows if r["target"] == "new" and r["benchmark"] == "scan")
    assert row["tiers"] == "disagree" and "est. cycles (more)" in row["tiers_why"] and row["predicted_verdict"] == ""
    for name in ("tiers", "tiers_why", "predicted_cpu_delta", "predicted_cpu_band", "predicted_verdict",
                 "user_cpu_delta", "user_cpu_delta_low", "user_cpu_delta_high"):
        assert name in row


def test_a_cost_model_adds_the_prediction(tmp_path):
    directory = synthetic_run(tmp_path, model=True)
    doc = json.loads(report(directory, "--format", "json"))
    cells = {(c["target"], c["benchmark"]): c for c in doc["cells"]}
    slow, tuned = cells[("slow", "scan")], cells[("tuned", "scan")]
    assert slow["predicted_cpu_delta"] == pytest.approx(6_660 / 6_000 - 1) and slow["predicted_cpu_band"] == 0.02
    assert slow["predicted_verdict"] == "slower"  # the band (±2%) excludes ±min_effect (2%): a speed word earned
    assert slow["tiers"] == "agree"  # the prediction lies within its band and the CI of the measured change
    assert tuned["sim_verdict"] == "fewer" and tuned["tiers"] == "disagree"
    assert "calibrated prediction +10.0% CPU/q" in tuned["tiers_why"]
    model = doc["simulated"]["cost_model"]
    assert model["weights_ns"] == {"instructions": 1.0} and model["host"]["cpu_model"] == "synthetic CPU"
    assert model["change_error_p90"] == 0.02 and model["created"].startswith("2026-11-27") and model["note"] is None
    verbose = report(directory, "--verbose")
    assert "col-N predicted CPU Δ : the host's calibrated cost model" in verbose
    assert "cost model: calibrated 2026-11-27 on synthetic CPU" in verbose and "dbperf calibrate" not in verbose
    md = report(directory, "--format", "markdown")
    header = next(line for line in md.splitlines() if line.startswith("| benchmark"))
    assert "| col-4 simulated Δcyc | col-4 predicted CPU Δ |" in header and "col-1 predicted" not in header
    scan = [c.strip() for c in next(line for line in md.splitlines() if line.startswith("| scan")).split("|")]
    assert scan[header.split("|").index(" col-4 predicted CPU Δ ")] == "+11.0% ±2.0% slower"
    assert "≠ scan tuned: calibrated prediction +10.0%" in md and "≠ scan slow" not in md
    glance = report(directory)
    assert "cost model: calibrated 2026-11-27" in glance and "predicted" not in "\n".join(_before_table(glance))
    # the glance carries the prediction too, with its band and its verdict where the band decides
    meta, records, _ = read_results(directory)
    m = build_matrix(meta, records)
    assert glance_text(m, m.cell("slow", "scan", 1)).endswith(", pred CPU +11.0% ±2.0% slower")
    assert "pred CPU Δ ±band" in "\n".join(_before_table(glance))


def _matrix_part(text: str) -> str:
    """The glance's last part, the verdict table with its heading and legend (each target's table comes before it)."""
    return text[text.index("rQPS relative"):]


def _before_table(text: str) -> list[str]:
    lines = _matrix_part(text).splitlines()
    return lines[:next(i for i, line in enumerate(lines) if line.startswith("benchmark"))]


def test_the_terminal_report_reads_at_a_glance(tmp_path):
    directory = synthetic_run(tmp_path)
    out = _matrix_part(report(directory))
    legend = _before_table(out)[1:]  # after the heading
    assert 1 <= len(legend) <= 5, legend
    assert legend[0].startswith("col-1 : old  (base) · col-2 : old-aa · col-3 : new")
    assert any(line.startswith("verdict quality: wall clock") and "tiers 6 agree, 3 disagree" in line
               for line in legend)
    assert any(line.startswith("A/A: old-aa is old run against itself:") for line in legend)
    assert any("dbperf calibrate" in line for line in legend)  # no cost model: how to make one
    header = next(line for line in out.splitlines() if line.startswith("benchmark"))
    assert [h.strip() for h in header.split("┃")] == ["benchmark", "col-1", "col-2", "col-3", "col-4", "col-5"]
    scan = next(line for line in out.splitlines() if line.startswith("scan "))
    cells = [c.strip() for c in scan.split("│")]
    assert cells[3].startswith("1.10 faster·wall") and cells[3].endswith("sim +3.00% more ≠")
    assert cells[4].endswith("sim +5.00% more") and "≠" not in cells[4]
    assert cells[2].endswith("sim +0.00% same r")
    assert "≠ scan new: wall clock +9.7% QPS (faster) but simulated +3.00% est. cycles (more)" in out
    for word in ("Verdicts (anytime-valid", "QPS: queries / measured", "col-N simulated Δcyc", "col-3 cpu"):
        assert word not in out  # the long explanations and the other tiers' columns: --verbose, docs/reports.md
    assert "--verbose" in out and "docs/reports.md" in out


def test_verbose_shows_every_tier(tmp_path):
    directory = synthetic_run(tmp_path, targets=("old", "slow", "new"))  # three targets: the full table fits in 200
    out = report(directory, "--verbose")
    header = next(line for line in out.splitlines() if line.startswith("benchmark"))
    for column in ("col-3 cpu", "col-3 simulated Δcyc", "col-1 simulated Δcyc"):
        assert column in header
    assert "predicted CPU Δ" not in header  # no cost model, no prediction column
    assert "+3.00% more ≠" in out and "10,000 cyc/q" in out
    for line in ("Verdicts (anytime-valid", "QPS: queries / measured", "≠ : the tiers disagree",
                 "fewer/more when they differ by 0.5% or more", "≠ scan new: wall clock"):
        assert line in out
    assert len(_before_table(out)) > 6
