"""A study's `counters` step: the counters per query of every target of an earlier experiment step on one benchmark
(dbperf profile, simulated by default), written as DIR/<step>.json with each target against the base; its parse-time
checks (one-line errors), the figure read back from it (`before → measured`, the claim checked on their ratio), and
a real run on two SQLite targets under cachegrind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dbperf.errors import UserError
from dbperf.records import Profile
from dbperf.studies import study_run
from dbperf.studies.figures import rows
from dbperf.studies.model import parse_study
from dbperf.studies.steps import counters

EXPERIMENT = """[run]
benchmarks = ["point-query"]
table_size = 1000
time = "0.5s"
warmup = "0.2s"
repeats = 2
base = "a"

[[target]]
name = "a"

[[target]]
name = "b"
"""

STUDY = """name = "mine"
title = "t"
duration = "a minute"
description = "d"

[[step]]
name = "run"
kind = "experiment"
experiment = "e.toml"

[[step]]
name = "counters"
kind = "counters"
of = "run"
benchmark = "point-query"
queries = 300
mode = "simulated"

[[figure]]
what = "I1 misses per instruction, a → b"
section = "§2"
published = "10.3% → 8.2%"
measure = { from = "json", step = "counters", path = "targets[target=b].i1_miss_pct_of_instructions" }
before = { from = "json", step = "counters", path = "targets[target=a].i1_miss_pct_of_instructions" }
unit = "%"
expect = { max = 0.99 }
claim = "b lowers I1 misses per instruction"

[[figure]]
what = "instructions per query, b / a"
section = "§2"
published = "1"
measure = { from = "json", step = "counters", path = "ratios[target=b].instructions" }
unit = "×"
digits = 3
"""


def _study(tmp_path: Path, body: str = STUDY) -> Path:
    (tmp_path / "e.toml").write_text(EXPERIMENT)
    path = tmp_path / "mine.toml"
    path.write_text(body)
    return path


@pytest.mark.unit
def test_a_counters_step_loads_with_its_defaults(tmp_path):
    study = parse_study(_study(tmp_path, STUDY.replace('benchmark = "point-query"\nqueries = 300\n'
                                                       'mode = "simulated"\n', "smoke = { queries = 200 }\n")))
    step = study.step("counters")
    assert step.kind == "counters" and step.settings == {"of": "run"} and step.effective("smoke")["queries"] == 200


@pytest.mark.unit
@pytest.mark.parametrize(("change", "message"), [
    (('of = "run"', 'of = "counters"'), r"step 'counters': 'of' must name an experiment step before it \(run\)"),
    (('of = "run"', 'of = "nope"'), r"'of' must name an experiment step before it"),
    (('benchmark = "point-query"', 'benchmark = "no-such-bench"'),
     r"step 'counters': benchmark 'no-such-bench' is not in the catalog"),
    (("queries = 300", "queries = 0"), "queries must be a whole number of at least 1"),
    (("queries = 300", 'queries = "many"'), "queries must be a whole number of at least 1"),
    (('mode = "simulated"', 'mode = "guess"'), "mode must be one of auto, simulated, hardware"),
    (('mode = "simulated"', 'top = 3'), "unknown key 'top'"),
    (("queries = 300", "queries = 5000"), r"too long for --smoke \(queries 5000 \(at most 1000\)"),
])
def test_a_bad_counters_step_is_a_one_line_error(tmp_path, change, message):
    old, new = change
    with pytest.raises(UserError, match=message) as e:
        parse_study(_study(tmp_path, STUDY.replace(old, new, 1)))
    assert "\n" not in str(e.value)


@pytest.mark.unit
def test_a_counters_step_before_its_experiment_is_refused(tmp_path):
    body = STUDY.replace('[[step]]\nname = "run"\nkind = "experiment"\nexperiment = "e.toml"\n\n', "")
    body = body.replace("[[figure]]", '[[step]]\nname = "run"\nkind = "experiment"\nexperiment = "e.toml"\n\n'
                        "[[figure]]", 1)
    with pytest.raises(UserError, match=r"'of' must name an experiment step before it \(\)"):
        parse_study(_study(tmp_path, body))


def _profile(target: str, instructions: float, i1_misses: float) -> Profile:
    return Profile(mode="simulated", mode_reason="asked for simulated counters", tool="valgrind cachegrind",
                   target=target, benchmark="point-query", events=300, queries=300, method="cachegrind, minus 0",
                   per_query={"instructions": instructions, "i1_misses": i1_misses,
                              "i1_miss_pct_of_instructions": 100 * i1_misses / instructions,
                              "estimated_cycles": 2 * instructions})


def _fake_profiling(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, str, str, int, str]]:
    """profile_targets replaced by two fixed profiles; what it was asked (experiment, its text, benchmark, queries,
    mode) is recorded."""
    asked = []

    def fake(experiment: Path, benchmark: str, queries: int, mode: str, err: object) -> tuple[str, list[Profile]]:
        asked.append((experiment, experiment.read_text(), benchmark, queries, mode))
        return "a", [_profile("a", 10_000.0, 1_030.0), _profile("b", 9_000.0, 738.0)]

    monkeypatch.setattr(counters, "profile_targets", fake)
    return asked


@pytest.mark.unit
def test_the_counters_json_holds_every_target_and_its_change_and_the_figure_reads_it_back(tmp_path, monkeypatch):
    study = parse_study(_study(tmp_path))
    out = tmp_path / "out"
    out.mkdir()
    asked = _fake_profiling(monkeypatch)
    (out / "run.toml").write_text(EXPERIMENT)
    end = study_run.run_step(study, study.step("counters"), out, "full", yes=True, err=study_run.PROGRESS)
    # the experiment as the study ran it
    assert [(path, *rest) for path, _, *rest in asked] == [(out / "run.toml", "point-query", 300, "simulated")]
    assert "simulated counters of 2 target(s) on point-query" in end.how and "b 10.30% → 8.20%" in end.how
    doc = json.loads((out / "counters.json").read_text())
    assert doc["of"] == "run" and doc["benchmark"] == "point-query" and doc["queries"] == 300
    assert doc["mode"] == "simulated" and doc["mode_asked"] == "simulated" and doc["tool"] == "valgrind cachegrind"
    assert doc["base"] == "a" and [t["target"] for t in doc["targets"]] == ["a", "b"]
    b = doc["targets"][1]
    assert b["instructions"] == 9_000 and b["i1_misses"] == 738 and b["method"] and b["per_query"]["estimated_cycles"]
    (ratio,) = doc["ratios"]
    assert ratio["target"] == "b" and ratio["base"] == "a" and ratio["instructions"] == pytest.approx(0.9)
    assert ratio["i1_miss_pct_before"] == pytest.approx(10.3) and ratio["i1_miss_pct_after"] == pytest.approx(8.2)
    assert ratio["i1_miss_pct_ratio"] == pytest.approx(8.2 / 10.3)

    figure, instructions = rows(study, out)
    assert figure.measured == "10.30% → 8.20%" and figure.value == pytest.approx(8.2)
    # simulated counts are deterministic: the change's interval is the change itself, and it lies in the range
    assert figure.verdict == ("holds: b lowers I1 misses per instruction (exact: simulated counts (valgrind): "
                              "deterministic, the same on every run of the same binaries) (after / before 0.796)")
    assert figure.low == figure.high == pytest.approx(0.796, abs=1e-3)
    assert instructions.measured == "0.900×"


@pytest.mark.unit
def test_a_figure_whose_counters_were_not_written_says_not_measured(tmp_path):
    study = parse_study(_study(tmp_path))
    figure, _ = rows(study, tmp_path)
    assert figure.value is None and figure.measured == "not measured: counters.json was not written (did its step run?)"


@pytest.mark.unit
def test_a_claim_that_does_not_hold_on_the_change_says_so(tmp_path):
    study = parse_study(_study(tmp_path))
    doc = {"targets": [{"target": "a", "i1_miss_pct_of_instructions": 8.0},
                       {"target": "b", "i1_miss_pct_of_instructions": 8.0}], "ratios": []}
    (tmp_path / "counters.json").write_text(json.dumps(doc))
    figure, instructions = rows(study, tmp_path)
    assert figure.measured == "8.00% → 8.00%"
    assert figure.verdict.startswith("does not hold: b lowers") and "(after / before 1.000)" in \
        figure.verdict
    assert instructions.measured.startswith("not measured: no ratios entry with target=b")


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="simulated counters need valgrind (make setup)")
def test_a_study_with_a_counters_step_measures_both_sqlite_targets_under_cachegrind(tmp_path):
    study = parse_study(_study(tmp_path))
    end = study_run.run_study(study, tmp_path / "out", "full", yes=True)
    assert end.exit_code == 0, end.summary
    doc = json.loads((tmp_path / "out" / "counters.json").read_text())
    assert doc["mode"] == "simulated" and "cachegrind" in doc["tool"] and doc["queries"] == 300
    for t in doc["targets"]:
        assert t["instructions"] > 0 and t["i1_misses"] > 0 and 0 < t["i1_miss_pct_of_instructions"] < 100, t
        assert t["queries"] >= 300 and "cachegrind" in t["method"]
    (ratio,) = doc["ratios"]
    assert ratio["target"] == "b" and ratio["instructions"] > 0 and ratio["i1_miss_pct_ratio"] > 0
    figure, instructions = end.rows
    assert figure.value is not None and figure.value > 0 and " → " in figure.measured
    assert f"| {figure.measured} |" in end.summary and instructions.value is not None  # an exact change: no range


@pytest.mark.unit
def test_a_counters_step_run_alone_profiles_the_experiment_the_study_defines(tmp_path, monkeypatch):
    study = parse_study(_study(tmp_path))
    out = tmp_path / "out"
    out.mkdir()
    asked = _fake_profiling(monkeypatch)
    study_run.run_step(study, study.step("counters"), out, "full", yes=True, err=study_run.PROGRESS)
    ((_, written, *_),) = asked  # no run.toml yet: the step wrote the study's own (--step counters runs it alone)
    assert written == (out / "run.toml").read_text() and '"name" = "a"' in written and '"name" = "b"' in written
