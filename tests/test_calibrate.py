"""`dbperf calibrate` (issue 47): the fit on synthetic cells with known weights (stats/cost_fit.py), its
leave-one-build-out validation on builds the fit did not see, the models stored per host and versioned
(storage/cost_models.py), the runner's one `cost_model` record per run (runner/simulated_tier.py), the command's bad
input in one line (unit), and a tiny calibration interrupted and resumed (e2e)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.host.facts import host_metadata
from dbperf.records import CostModelRecord, encode, results_line, to_builtins
from dbperf.runner.simulated_tier import measure_simulated, record_cost_model, recorded_models
from dbperf.stats import cost_fit
from dbperf.stats.cost_fit import (
    MISPREDICTS,
    CalibrationCell,
    Candidate,
    TooFewCells,
    calibrate,
    fit,
    held_out,
    in_sample,
    quantile,
)
from dbperf.stats.cost_model import FEATURES, MODEL_VERSION, predict_ns, predicted_change, usable
from dbperf.storage import cost_models
from dbperf.storage.results import RESULTS, ResultsWriter
from dbperf.usecases import calibrate as calibrate_usecase
from tests.conftest import DBPERF, REPO, run_cli
from tests.test_run_out_and_signals import one_error_line

unit = pytest.mark.unit
e2e = pytest.mark.e2e

TRUE = {"instructions": 0.3, MISPREDICTS: 4.0, "ll_misses": 20.0}  # ns per event
BUILDS = ("O2", "O0", "O1", "Os", "O3", "O2-pgo", "O2-fp")


def synthetic(weights: dict[str, float] = TRUE, intercept_ns: float = 0.0, builds: tuple[str, ...] = BUILDS,
              benchmarks: int = 10, seed: int = 3, skew: dict[str, float] | None = None) -> list[CalibrationCell]:
    """Cells whose user CPU is exactly `weights` · counters (+ intercept); `skew` multiplies a build's CPU (a build
    the law does not hold for)."""
    rng = random.Random(seed)
    cells = []
    for k in range(benchmarks):
        base = {"instructions": rng.uniform(5e3, 5e5)}
        base["branches"] = base["instructions"] * 0.2
        base[MISPREDICTS] = base["branches"] * rng.uniform(0.005, 0.05)
        base["i1_misses"] = rng.uniform(1, 100)
        base["d1_misses"] = rng.uniform(10, 5000)
        base["ll_misses"] = rng.uniform(1, 300)
        for b in builds:
            counters = {f: v * rng.uniform(0.7, 1.6) for f, v in base.items()}
            ns = intercept_ns + sum(w * counters[f] for f, w in weights.items())
            cells.append(CalibrationCell(b, f"bench-{k}", ns / 1000 * (skew or {}).get(b, 1.0), counters))
    return cells


# --- the fit ------------------------------------------------------------------------------------------------------

@unit
@pytest.mark.parametrize("weighting", ["level", "relative", "change"])
def test_each_weighting_recovers_known_weights(weighting):
    cells = synthetic(intercept_ns=150.0)
    got = fit(cells, Candidate(FEATURES, weighting, True), "O2")
    for f in FEATURES:
        assert got.weights_ns[f] == pytest.approx(TRUE.get(f, 0.0), rel=1e-6, abs=1e-6), f
    assert got.intercept_ns == pytest.approx(150.0, rel=1e-6)


@unit
def test_calibration_recovers_known_weights_and_says_it_fits_exactly():
    cal = calibrate(synthetic(), "O2")
    chosen = cal.chosen
    # the smallest feature set holding the three true features, no intercept: the simpler of the exact candidates
    assert set(chosen.candidate.features) >= set(TRUE)
    assert not chosen.candidate.intercept
    for f, w in TRUE.items():
        assert chosen.weights.weights_ns[f] == pytest.approx(w, rel=1e-6)
    assert chosen.r2 == pytest.approx(1.0)
    assert chosen.figures.change_median == pytest.approx(0, abs=1e-9)
    assert chosen.figures.changes == (len(BUILDS) - 1) * 10  # the base's change is never scored
    assert chosen.figures.levels == len(BUILDS) * 10
    assert cal.nested is not None and cal.nested.figures.change_p90 == pytest.approx(0, abs=1e-9)


@unit
def test_a_feature_the_data_needs_is_chosen_over_one_it_does_not():
    # instructions alone cannot explain a CPU time driven by mispredicts too: the chosen set includes them
    cal = calibrate(synthetic({"instructions": 0.25, MISPREDICTS: 6.0}), "O2")
    assert MISPREDICTS in cal.chosen.candidate.features
    only_instr = next(e for e in cal.evaluations if e.candidate.features == ("instructions",))
    assert only_instr.figures.change_median > 0.001 > cal.chosen.figures.change_median


@unit
def test_each_build_is_predicted_by_a_fit_that_never_saw_its_cells(monkeypatch):
    seen: list[set[str]] = []
    real = cost_fit.fit

    def spy(cells, candidate, base):
        seen.append({c.build for c in cells})
        return real(cells, candidate, base)

    monkeypatch.setattr(cost_fit, "fit", spy)
    cells = synthetic()
    predicted = held_out(cells, Candidate(("instructions",), "level", False), "O2")
    assert len(seen) == len(BUILDS)
    for trained, left_out in zip(seen, BUILDS, strict=True):
        assert trained == set(BUILDS) - {left_out}
    assert {p.build for p in predicted} == set(BUILDS)


@unit
def test_an_inconsistent_build_raises_its_held_out_error_not_its_in_sample_one():
    """O3's user CPU is 30% above what the law of the other builds says, and only O3 has D1 misses that could explain
    it: a fit that sees O3 gives D1 misses the weight that explains it exactly (in sample: no error), a fit that
    never saw O3 has no D1 miss to weigh and predicts the law (held out: the 30%). Proof that the held-out figure is
    computed on cells the fit did not see."""
    cells = []
    for c in synthetic():
        law_ns = sum(w * c.counters[f] for f, w in TRUE.items())
        extra = 0.3 * law_ns if c.build == "O3" else 0.0
        cells.append(replace(c, user_us=(law_ns + extra) / 1000,
                             counters={**c.counters, "d1_misses": extra / 10.0}))  # 10 ns a miss explains it
    candidate = Candidate((*TRUE, "d1_misses"), "level", False)

    def median_change_error(predicted):
        return quantile([e for p in predicted if p.build == "O3" and (e := p.change_error) is not None], 0.5)

    held, inside = held_out(cells, candidate, "O2"), in_sample(cells, candidate, "O2")
    assert median_change_error(inside) == pytest.approx(0, abs=1e-9)
    assert median_change_error(held) > 0.2  # 0.3 × its level against the base
    # the other builds follow the law: their held-out error is nil
    others = [e for p in held if p.build not in ("O3", "O2") and (e := p.change_error) is not None]
    assert max(others) == pytest.approx(0, abs=1e-6)
    cal = calibrate(cells, "O2")  # and the calibration's figures are the held-out ones, not the in-sample ones
    assert cal.chosen.figures.change_p90 is not None and cal.chosen.figures.change_p90 > 0.1
    assert cal.chosen.r2 is not None and cal.chosen.r2 > 0.999


@unit
def test_a_total_cpu_model_cancels_the_kernels_work_and_wins_over_a_noisy_user_split():
    """Each benchmark's kernel work (its system calls: the same for every build) is large and unknown to the counts,
    and user CPU is the law times a split noise (the kernel samples the user/system split at its tick): the
    user + system candidate fits differences, so the kernel term cancels, recovers the weights and is chosen."""
    rng = random.Random(5)
    cells = []
    for c in synthetic():
        law_us = sum(w * c.counters[f] for f, w in TRUE.items()) / 1000
        kernel_us = 40.0 + 10 * int(c.benchmark.split("-")[1])  # per benchmark, the same for every build
        cells.append(replace(c, user_us=law_us * rng.uniform(0.85, 1.15), total_us=law_us + kernel_us))
    cal = calibrate(cells, "O2")
    assert cal.chosen.candidate.measure == "total"
    for f, w in TRUE.items():
        assert cal.chosen.weights.weights_ns[f] == pytest.approx(w, rel=1e-6)
    assert cal.chosen.figures.change_median == pytest.approx(0, abs=1e-9)
    assert cal.chosen.r2 is None  # its levels are anchored on the measured base: no R² of its own
    best_user = next(e for e in cal.evaluations if e.candidate.measure == "user")
    assert best_user.figures.change_median > 0.02
    model = cal.record({"cpu_model": "x", "microcode": "y", "kernel": "z"}, "2026-11-27T00:00:00+00:00")
    assert model.measure == "total"
    # the prediction: the counts' difference over the base's measured user + system CPU (ns per query)
    base, target = cells[0], next(c for c in cells if c.benchmark == cells[0].benchmark and c.build == "O3")
    assert base.total_us is not None and target.total_us is not None
    got = predicted_change(model, target.counters, base.counters, 0.02, base.total_us * 1000)
    assert got is not None and got.delta == pytest.approx(target.total_us / base.total_us - 1, rel=1e-6)
    assert predicted_change(model, target.counters, base.counters, 0.02) is None  # no measured base level: none


@unit
def test_the_base_is_left_out_for_its_level_only():
    cal = calibrate(synthetic(), "O2")
    base_predictions = [p for p in cal.chosen.held_out if p.build == "O2"]
    assert base_predictions and all(p.change_error is None and p.measured_change is None for p in base_predictions)
    rows = {r.build: r for r in cal.per_build()}
    assert rows["O2"].is_base and rows["O2"].held_out.changes == 0 and rows["O2"].held_out.levels == 10


@unit
def test_too_few_builds_for_the_nested_validation_says_so_and_two_builds_still_fit():
    cells = synthetic(builds=("O2", "O0"), benchmarks=3)
    cal = calibrate(cells, "O2")
    assert cal.nested is None
    assert cal.band().change_p90 == cal.chosen.figures.change_p90
    assert len(cal.chosen.held_out) == 6


@unit
def test_too_few_cells_to_fit():
    with pytest.raises(TooFewCells, match="base build O2 has no measured cell"):
        calibrate(synthetic(builds=("O0", "O1")), "O2")
    with pytest.raises(TooFewCells, match="no build other than the base"):
        calibrate(synthetic(builds=("O2",)), "O2")


@unit
def test_the_record_predicts_as_the_fit_does_and_reads_back_from_results_jsonl():
    cal = calibrate(synthetic(skew={"O3": 1.05}), "O2")
    host = {"cpu_model": "Test CPU", "microcode": "0x1", "kernel": "6.1"}
    model = cal.record(host, "2026-11-27T00:00:00+00:00", quick=True, source="/runs/x")
    assert model.version == MODEL_VERSION and model.type == "cost_model" and model.quick
    assert all(w >= 0 for w in model.weights_ns.values()) and model.intercept_ns >= 0
    assert model.cells == len(cal.cells) and model.builds == list(BUILDS) and model.base == "O2"
    assert model.change_error_p90 is not None and model.change_error_p90 >= (model.change_error_median or 0)
    again = results_line(encode(model).decode())
    assert again == model
    cell = cal.cells[0]
    assert predict_ns(model, cell.counters) == pytest.approx(cal.chosen.weights.predict_ns(cell.counters), rel=1e-5)
    assert usable(model, host) is None


# --- storage ------------------------------------------------------------------------------------------------------

def _model(host: dict[str, str], created: str = "2026-11-27T00:00:00+00:00", w: float = 0.3) -> CostModelRecord:
    return CostModelRecord(type="cost_model", version=MODEL_VERSION, host=host, created=created,
                           weights_ns={"instructions": w}, change_error_median=0.01, change_error_p90=0.03, cells=4,
                           builds=["O2", "O0"], benchmarks=["point-query", "insert"], base="O2")


HOST_A = {"cpu_model": "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "microcode": "0xd0003a5", "kernel": "6.1.0"}
HOST_B = {**HOST_A, "microcode": "0xd0003b9"}


@unit
def test_models_are_stored_per_host_and_versioned(tmp_path, monkeypatch):
    monkeypatch.setenv("DBPERF_DATA", str(tmp_path / "models"))
    assert cost_models.load_current(HOST_A) is None and cost_models.versions(HOST_A) == []
    first = cost_models.save(_model(HOST_A, w=0.1))
    cost_models.save(_model(HOST_A, w=0.2))
    cost_models.save(_model(HOST_A, w=0.3))
    cost_models.save(_model(HOST_B, w=9.0))
    current = cost_models.load_current(HOST_A)
    assert current is not None and current.weights_ns == {"instructions": 0.3}
    found = cost_models.versions(HOST_A)
    assert [p.name for p in found] == [f"{first.stem}.1.json", f"{first.stem}.2.json", first.name]
    assert [cost_models.read_model(p).weights_ns["instructions"] for p in found] == [0.1, 0.2, 0.3]
    # another microcode is another host: its model is not this one's
    other = cost_models.load_current(HOST_B)
    assert other is not None and other.weights_ns == {"instructions": 9.0}
    assert cost_models.host_key(HOST_A) != cost_models.host_key(HOST_B)
    assert "xeon" in cost_models.host_key(HOST_A) and "/" not in cost_models.host_key(HOST_A)
    assert not list((tmp_path / "models").glob("*.tmp")) and not list((tmp_path / "models").glob(".*"))


@unit
def test_where_models_live(tmp_path, monkeypatch):
    monkeypatch.delenv("DBPERF_DATA", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert cost_models.models_dir() == tmp_path / "xdg" / "dbperf" / "cost-models"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert cost_models.models_dir() == Path.home() / ".local" / "share" / "dbperf" / "cost-models"
    monkeypatch.setenv("DBPERF_DATA", str(tmp_path / "d"))
    assert cost_models.models_dir() == tmp_path / "d"
    assert cost_models.runs_dir(HOST_A).parent == tmp_path / "d" / "runs"


@unit
def test_a_damaged_model_file_is_one_line_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("DBPERF_DATA", str(tmp_path))
    cost_models.current_path(HOST_A).write_text('{"type": "cost_model", "version": "x"}')
    with pytest.raises(UserError, match=r"\.json: not a cost model"):
        cost_models.load_current(HOST_A)


# --- the runner records the model once ----------------------------------------------------------------------------

def _this_host_model() -> CostModelRecord:
    return _model(cost_models.host_identity(host_metadata()))


@unit
def test_the_runner_records_the_hosts_model_once_even_resumed(tmp_path, monkeypatch, write_experiment):
    monkeypatch.setenv("DBPERF_DATA", str(tmp_path / "models"))
    model = _this_host_model()
    cost_models.save(model)
    e = parse_experiment(write_experiment('[run]\nbenchmarks = ["point-query"]\n\n[[target]]\nname = "a"\n'))
    e = replace(e, benchmarks=[])  # nothing to profile: what is tested is the record before the first profile
    out = tmp_path / "run"
    writer = ResultsWriter(out)
    measure_simulated(e, tmp_path / "work", {}, writer.append, results=out)
    writer.close()
    writer = ResultsWriter.reopen(out)  # a resumed run's second sitting
    measure_simulated(e, tmp_path / "work", {}, writer.append, results=out)
    writer.close()
    lines = (out / RESULTS).read_text().splitlines()
    assert len(lines) == 1 and results_line(lines[0]) == model
    assert recorded_models(out) == 1


@unit
def test_the_runner_records_nothing_without_a_model_and_goes_on_past_a_damaged_one(tmp_path, monkeypatch):
    monkeypatch.setenv("DBPERF_DATA", str(tmp_path / "models"))
    written: list[object] = []
    assert record_cost_model(written.append, None) is None and written == []
    (tmp_path / "models").mkdir()
    cost_models.current_path(host_metadata()).write_text("not json")
    assert record_cost_model(written.append, None) is None and written == []


# --- the command's bad input (one line each, nothing written) ------------------------------------------------------

def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    return {"DBPERF_DATA": str(tmp_path / "models"), **more}


@unit
def test_show_without_a_model_is_one_line_and_exit_1(tmp_path):
    proc = run_cli("calibrate", "--show", env=_env(tmp_path))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert "no cost model calibrated on this host" in line and "`dbperf calibrate`" in line


@unit
def test_show_prints_the_hosts_current_model(tmp_path, monkeypatch):
    monkeypatch.setenv("DBPERF_DATA", str(tmp_path / "models"))
    cost_models.save(_this_host_model())
    proc = run_cli("calibrate", "--show", env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "0.3 ns per instruction" in proc.stdout and "p90 3.0%" in proc.stdout and "version 1" in proc.stdout


@unit
def test_show_format_json_prints_the_model_as_stored(tmp_path, monkeypatch):
    monkeypatch.setenv("DBPERF_DATA", str(tmp_path / "models"))
    stored = cost_models.save(_this_host_model())
    proc = run_cli("calibrate", "--show", "--format", "json", env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == json.loads(stored.read_text())
    assert json.loads(proc.stdout)["weights_ns"] == {"instructions": 0.3}


@unit
def test_the_calibrations_view_is_its_story_as_text_and_the_model_as_json(tmp_path):
    from dbperf.report import formats
    from dbperf.report.calibration_view import calibration_lines, calibration_view
    c = calibrate(synthetic(), "O2")
    model = c.record(HOST_A, "2026-11-27T00:00:00+00:00", False, str(tmp_path))
    view = calibration_view(c, model, tmp_path / "model.json", 2)
    assert json.loads(formats.render(view, "json")) == to_builtins(model)
    text = formats.render(view, "markdown")
    assert "stored as this host's current model: " in text and "(version 2)" in text and "chosen:" in text
    assert view.sections[0].lines == tuple(calibration_lines(c, model, tmp_path / "model.json", 2))


@unit
def test_an_unknown_format_is_refused_before_anything_is_measured(tmp_path):
    out = tmp_path / "out"
    line = one_error_line(run_cli("calibrate", "--out", str(out), "--format", "yaml", env=_env(tmp_path)))
    assert "--format: expected one of" in line and not out.exists()


@unit
def test_no_c_compiler_is_one_line_and_nothing_is_written(tmp_path):
    out = tmp_path / "out"
    line = one_error_line(run_cli("calibrate", "--out", str(out), env=_env(tmp_path, CC="no-such-cc")))
    assert "no C compiler" in line and "apt install gcc" in line
    assert not out.exists()


@unit
def test_valgrind_missing_is_one_line_before_anything_is_built(tmp_path):
    bin_dir = tmp_path / "bin"  # the compiler and setarch, no valgrind
    bin_dir.mkdir()
    for tool in ("cc", "setarch"):
        (bin_dir / tool).symlink_to(f"/usr/bin/{tool}")
    out = tmp_path / "out"
    line = one_error_line(run_cli("calibrate", "--out", str(out), env=_env(tmp_path, PATH=str(bin_dir), CC="cc")))
    assert "valgrind not found on PATH" in line and "apt install valgrind" in line, line
    assert not out.exists()


@unit
@pytest.mark.parametrize("what", ["files", "run"])
def test_an_out_that_is_not_empty_and_not_a_calibration_is_refused(tmp_path, what):
    out = tmp_path / "out"
    out.mkdir()
    held = out / ("meta.json" if what == "run" else "notes.txt")
    held.write_text("{}" if what == "run" else "mine")
    line = one_error_line(run_cli("calibrate", "--out", str(out), env=_env(tmp_path)))
    assert "not empty and not a calibration run" in line
    assert ("a dbperf run's results" if what == "run" else "notes.txt") in line
    assert sorted(p.name for p in out.iterdir()) == [held.name]


@unit
def test_resume_needs_a_calibration_run_and_takes_its_plan(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    line = one_error_line(run_cli("calibrate", "--resume", "--out", str(empty), env=_env(tmp_path)))
    assert "no calibration run to resume" in line
    line = one_error_line(run_cli("calibrate", "--resume", "--quick", "--out", str(empty), env=_env(tmp_path)))
    assert "drop --quick and --budget" in line
    line = one_error_line(run_cli("calibrate", "--resume", env=_env(tmp_path)))
    assert "no calibration run of this host" in line


@unit
def test_a_calibration_run_in_out_without_resume_points_to_it(tmp_path):
    from tests.synthetic import write_run
    out = write_run(tmp_path / "out", ["O2"], ["point-query"], 2)  # a run's folder, its meta.json as a run writes it
    (out / "experiment.toml").write_text(calibrate_usecase.plan(True, None).experiment())
    meta = json.loads((out / "meta.json").read_text())
    (out / "meta.json").write_text(json.dumps({**meta, "status": "interrupted"}))
    line = one_error_line(run_cli("calibrate", "--out", str(out), env=_env(tmp_path)))
    assert "holds a calibration run (interrupted); --resume goes on with it" in line


@unit
def test_the_plan_spans_the_builds_the_issue_asks_for_and_quick_is_smaller():
    full, quick = calibrate_usecase.plan(False, None), calibrate_usecase.plan(True, None)
    names = [b.name for b in full.builds]
    assert names[0] == "O2" and {"O0", "Os", "O2", "O3", "O2-pgo", "O1", "O2-threadsafe0"} <= set(names)
    assert len(full.builds) * len(full.benchmarks) > 2 * len(quick.builds) * len(quick.benchmarks)
    assert quick.budget_s < full.budget_s and calibrate_usecase.plan(True, 60).budget_s == 60
    text = full.experiment()
    doc = tomllib.loads(text)
    assert text.startswith(calibrate_usecase.MARKER) and doc["run"]["simulated"] is True
    assert ["-O0"] in [t.get("cflags") for t in doc["target"]]


# --- end to end: a tiny calibration, interrupted and resumed -----------------------------------------------------

TINY = json.dumps({"builds": ["O2", "O0"], "benchmarks": ["point-query", "update-index"], "time": "0.2s",
                   "warmup": "0.1s", "table_size": 2000, "budget": "10s"})


@e2e
def test_a_tiny_calibration_interrupted_resumes_fits_and_stores(tmp_path):
    out = tmp_path / "cal"
    env = {**os.environ, **_env(tmp_path), calibrate_usecase.TEST_PLAN: TINY}
    proc = subprocess.Popen([*DBPERF, "calibrate", "--out", str(out)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    results = out / RESULTS
    deadline = time.monotonic() + 600  # the -O0 build first, when it is not cached
    while time.monotonic() < deadline and not (results.is_file() and results.read_text().count("\n") >= 2):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and f"dbperf calibrate --resume --out {out}" in stderr
    before = results.read_text().splitlines()
    assert len(before) >= 2

    resumed = run_cli("calibrate", "--resume", "--out", str(out), env={**_env(tmp_path),
                                                                       calibrate_usecase.TEST_PLAN: TINY},
                      timeout=900)
    assert resumed.returncode == 0, resumed.stderr
    assert "Traceback" not in resumed.stderr and "resuming the run" in resumed.stderr
    after = results.read_text().splitlines()
    assert after[:len(before)] == before  # nothing measured before is lost
    kinds = [json.loads(x).get("type", "cell") for x in after]
    assert kinds.count("simulated") == 4 and "cost_model" not in kinds  # no model yet on this host
    for text in ("chosen:", "R² of the level", "builds left out one at a time: O2, O0", "per build", "O0"):
        assert text in resumed.stdout, resumed.stdout
    stored = json.loads(next((tmp_path / "models").glob("*.json")).read_text())
    assert stored["type"] == "cost_model" and stored["builds"] == ["O2", "O0"] and stored["cells"] == 4
    assert stored["source"] == str(out)

    shown = run_cli("calibrate", "--show", env=_env(tmp_path))
    assert shown.returncode == 0 and "ns per" in shown.stdout and "version 1" in shown.stdout

    again = run_cli("calibrate", "--resume", "--out", str(out), env=_env(tmp_path), timeout=300)
    assert again.returncode == 0 and "fitting it again, nothing measured" in again.stderr
    assert results.read_text().splitlines() == after
    assert "version 2" in again.stdout and len(list((tmp_path / "models").glob("*.json"))) == 2
    assert to_builtins(cost_models.read_model(next(p for p in (tmp_path / "models").glob("*.1.json"))))["cells"] == 4

    as_json = run_cli("calibrate", "--resume", "--out", str(out), "--format", "json", env=_env(tmp_path), timeout=300)
    assert as_json.returncode == 0 and "fitting it again, nothing measured" in as_json.stderr, as_json.stderr
    model = json.loads(as_json.stdout)
    assert model["type"] == "cost_model" and model["cells"] == 4 and model["source"] == str(out)
    assert (out / "calibration.json").is_file()  # the folder's kind, typed, written once the run held it


@pytest.mark.unit
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a read-only file system needs root")
def test_calibrate_on_a_read_only_mount_says_so_before_the_estimate(tmp_path):
    """It said "more data than the free disk; add --yes" (a read-only mount has none free)."""
    from tests.refusal import assert_refused
    from tests.test_bisect_folders import read_only

    with read_only(tmp_path / "ro") as ro:
        out = ro / "calibration"
        proc = run_cli("calibrate", "--out", str(out), env={"DBPERF_DATA": str(tmp_path / "data")}, timeout=120)
        line = assert_refused(proc, 2, f"{ro} is on a read-only file system", out)
        assert "--yes" not in line and "free disk" not in line
