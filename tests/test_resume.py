"""`dbperf run --resume` and `dbperf study run --resume`: a run cut short (a session that ended, a kill) goes on from
what it measured, in the same directory: the cells measured before are kept and not measured again; with automatic
repeats, a (benchmark, threads) whose rounds had stopped stays as it stopped, the one that was running goes on from
its repeats, decided over the old and the new; the report says the run was resumed. A run that is complete, of
another experiment or of other targets is refused in one line."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment.keys import MIN_ROUNDS
from dbperf.experiment.spec import parse_experiment
from dbperf.records import CellRecord
from dbperf.runner.resume import earlier_run
from dbperf.storage.results import read_results
from dbperf.studies.model import parse_study
from tests.conftest import run_cli
from tests.synthetic import write_run
from tests.test_studies import TWO_STEPS

AUTO = """[run]
benchmarks = ["point-query", "hot-points"]
table_size = 1000
time = "0.2s"
warmup = "0.05s"
repeats = "auto"
budget = "2m"
[[target]]
name = "a"
[[target]]
name = "b"
"""
# Both groups stop on their budget at the minimum rounds, a few seconds of cells: a 1 s budget is spent before the
# minimum has run, and an equal pair at a 0.1% minimum effect is not decided in a few rounds.
STOPPED = AUTO.replace('budget = "2m"', 'budget = "1s"\nmin_effect = "0.1%"')


def _cells(directory: Path) -> list[CellRecord]:
    return [r for r in read_results(directory)[1] if isinstance(r, CellRecord)]


def _cut_short(out: Path, keep: int) -> list[str]:
    """The run in `out` as if killed after its first `keep` results lines: the rest dropped, the second group's
    rounds not stopped, its status interrupted. Returns the lines kept."""
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)[:keep]
    (out / "results.jsonl").write_text("".join(lines))
    meta = json.loads((out / "meta.json").read_text())
    meta["rounds"] = meta["rounds"][:1]
    meta["status"] = "interrupted"
    meta.pop("finished_at", None)
    (out / "meta.json").write_text(json.dumps(meta))
    return lines


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of STOPPED, kept out of the history as the lab keeps a run it composes for its own question
    (a layout --fix A/B): the tests that go on from a finished run each take a copy of it (`_copy`)."""
    from dbperf.usecases.run import run_experiment

    where = tmp_path_factory.mktemp("stopped")
    (where / "exp.toml").write_text(STOPPED)
    assert run_experiment(where / "exp.toml", where / "out", keep_data=False, record=False).exit_code == 0
    return where / "out"


def _copy(run: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of `run` in tmp_path (the results directory), and its experiment file beside it."""
    out = tmp_path / "out"
    shutil.copytree(run, out)
    exp = tmp_path / "exp.toml"
    exp.write_text((run / "experiment.toml").read_text())
    return exp, out


@pytest.mark.e2e
@pytest.mark.parametrize("order", [None, "slices"])
def test_a_run_cut_short_goes_on_from_its_cells_and_decides_over_the_old_rounds_and_the_new(tmp_path, order,
                                                                                            stopped_run,
                                                                                            run_cli_here):
    """The same for a run whose targets take turns in one driver (slices): its rounds go on as rounds of slices.
    The group cut short is decided by the same rule over its earlier rounds and the new ones: its minimum rounds
    count the earlier ones, so it stops at the minimum in all."""
    if order is None:
        exp, out = _copy(stopped_run, tmp_path)
    else:
        exp, out = tmp_path / "exp.toml", tmp_path / "out"
        exp.write_text(STOPPED.replace("[run]\n", f'[run]\norder = "{order}"\n'))
        proc = run_cli("run", str(exp), "--out", str(out), timeout=600)
        assert proc.returncode == 0, proc.stderr
    first = json.loads((out / "meta.json").read_text())
    whole = _cells(out)
    group_one = [c for c in whole if c.benchmark == "point-query"]
    assert len(group_one) >= 10 and first["rounds"][0]["benchmark"] == "point-query"
    # Cut in the second group's round 3, after its first target: rounds 1-2 whole, round 3 half.
    kept = _cut_short(out, len(group_one) + 5)
    proc = run_cli("run", str(exp), "--out", str(out), "--resume", timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "dbperf: resuming the run started " in proc.stderr and f" {len(kept)} cell(s) measured before" in \
        proc.stderr
    after = (out / "results.jsonl").read_text().splitlines(keepends=True)
    assert after[:len(kept)] == kept  # nothing measured before is measured again or changed
    cells = _cells(out)
    assert [c for c in cells if c.benchmark == "point-query"] == group_one  # its rounds had stopped: not run again
    two = [c for c in cells if c.benchmark == "hot-points"]
    keys = [(c.target, c.repeat) for c in two]
    assert len(keys) == len(set(keys))  # each cell once
    assert {r for _, r in keys} == set(range(1, max(r for _, r in keys) + 1))  # the rounds go on, none skipped
    assert len(two) >= 10 and all(c.ok for c in two)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["started_at"] == first["started_at"]
    assert len(meta["resumed_at"]) == 1
    assert [r["benchmark"] for r in meta["rounds"]] == ["point-query", "hot-points"]
    assert meta["rounds"][0] == first["rounds"][0]
    assert meta["rounds"][1]["stopped"] == f"budget spent after {MIN_ROUNDS} rounds"  # not the minimum again
    report = run_cli_here("report", str(out))
    assert report.returncode == 0 and "resumed (--resume) at " in report.stdout, report.stdout
    # Complete now: nothing to resume, one line.
    proc = run_cli_here("run", str(exp), "--out", str(out), "--resume")
    assert proc.returncode != 0 and proc.stderr.strip() == f"dbperf: error: {out}: its run is complete; nothing " \
                                                           "to resume (--extend BUDGET gives the cells its budget " \
                                                           "left undecided more rounds)", proc.stderr


@pytest.mark.unit
def test_a_resume_of_another_experiment_or_other_targets_is_refused_in_one_line(tmp_path, run_cli_here):
    exp = tmp_path / "exp.toml"
    exp.write_text(AUTO)
    out = tmp_path / "out"
    write_run(out, ["a", "b"], ["point-query"], 3)
    (out / "experiment.toml").write_text(AUTO)
    meta = json.loads((out / "meta.json").read_text())
    meta["status"] = "interrupted"
    (out / "meta.json").write_text(json.dumps(meta))
    assert len(earlier_run(out, parse_experiment(exp)).records) == 6
    other = tmp_path / "other.toml"
    other.write_text(AUTO.replace('time = "0.2s"', 'time = "0.3s"'))
    with pytest.raises(UserError, match=r"was run with another experiment file than .*other\.toml; --resume needs"):
        earlier_run(out, parse_experiment(other))
    (out / "experiment.toml").write_text(AUTO + '[[target]]\nname = "c"\n')
    exp.write_text(AUTO + '[[target]]\nname = "c"\n')
    with pytest.raises(UserError, match=r"was run with targets a, b, this run has a, b, c \(--aa as before\?\)"):
        earlier_run(out, parse_experiment(exp))
    with pytest.raises(UserError, match=r"no earlier run to resume \(no meta\.json\)"):
        earlier_run(tmp_path / "nothing", parse_experiment(exp))
    proc = run_cli_here("run", str(exp), "--resume")
    assert proc.returncode != 0 and proc.stderr.strip() == ("dbperf: error: --resume goes on with a run cut short: "
                                                            "give its directory with --out DIR")


@pytest.mark.unit
def test_a_study_run_resumed_keeps_the_steps_that_wrote_their_file_and_its_start(tmp_path):
    from dbperf.studies.study_run import run_study
    (tmp_path / "mine.toml").write_text(TWO_STEPS)  # two layout steps of a binary that does not exist
    study = parse_study(tmp_path / "mine.toml")
    out = tmp_path / "out"
    first = run_study(study, out, "full")
    assert "- a: failed: /nonexistent/a: not found" in first.summary
    started = json.loads((out / "study.json").read_text())["started"]
    # Step a's file, as if it had been measured before the run was cut short.
    (out / "a.json").write_text(json.dumps({"static_candidate_lines": 7}))
    with pytest.raises(UserError, match=r"already holds a study run \(summary\.md\); give another directory, or "
                                        r"--resume to go on with it"):
        run_study(study, out, "full")
    end = run_study(study, out, "full", resume=True)
    assert "- a: kept from before the resume (a.json)" in end.summary
    assert "- b: failed: /nonexistent/b: not found" in end.summary  # b had written nothing: run again
    assert "| lines of a (§6): p | 7.00 |" in end.summary
    record = json.loads((out / "study.json").read_text())
    assert record["started"] == started and len(record["resumed_at"]) == 1
    with pytest.raises(UserError, match=r"no study run to resume"):
        run_study(study, tmp_path / "none", "full", resume=True)


@pytest.mark.unit
def test_a_resume_that_keeps_every_step_adds_no_sitting_and_keeps_the_runs_host_and_load(tmp_path):
    from dbperf.studies.study_run import run_study
    (tmp_path / "mine.toml").write_text(TWO_STEPS)
    study = parse_study(tmp_path / "mine.toml")
    out = tmp_path / "out"
    run_study(study, out, "full")
    (out / "a.json").write_text(json.dumps({"static_candidate_lines": 7}))
    (out / "b.json").write_text(json.dumps({"static_candidate_lines": 9}))
    record = json.loads((out / "study.json").read_text())
    record["host"]["load_start"], record["host"]["load_end"] = [3.5, 2.0, 1.0], [4.25, 3.0, 2.0]
    (out / "study.json").write_text(json.dumps(record))
    err = io.StringIO()
    end = run_study(study, out, "full", resume=True, err=Console(file=err, width=300))
    assert "every step was kept, nothing ran; the summary is written again from its results" in err.getvalue()
    again = json.loads((out / "study.json").read_text())
    assert "resumed_at" not in again and again["started"] == record["started"] and "rewritten" in again
    assert again["host"]["load_start"] == [3.5, 2.0, 1.0] and again["host"]["load_end"] == [4.25, 3.0, 2.0]
    assert "Load average at the start 3.50" in end.summary and "| lines of a (§6): p | 7.00 |" in end.summary


@pytest.mark.unit
def test_earlier_repeats_are_what_the_stopping_rule_saw_a_duets_interference_spoiling_both_sides(tmp_path):
    """A duet's pair is one unit: interference seen by either side flags both, as when the cells were measured; a
    warm-up that never settled counts like interference; a failed repeat has no QPS."""
    from msgspec.structs import replace

    from dbperf.records import NoiseSensors
    from dbperf.run_meta import RoundsMeta
    from dbperf.runner.resume import Earlier
    from tests.synthetic import _cell, meta_of

    noisy = NoiseSensors(window_s=1.0, cpus=[1], steal=0.0, foreign_cpu=0.9, interfered=True)
    base_1 = replace(_cell("a", "point-query", 1, 1000.0, False), partner="b")
    other_1 = replace(_cell("b", "point-query", 1, 900.0, False), partner="a", noise=noisy)
    base_2 = replace(_cell("a", "point-query", 2, 1000.0, False), partner="b")
    failed_2 = replace(_cell("b", "point-query", 2, 900.0, False), partner="a", status="failed")
    elsewhere = _cell("a", "hot-points", 1, 500.0, False)
    meta = meta_of({"base": "a", "targets": [{"name": "a"}, {"name": "b"}], "started_at": "2026-11-25T20:00:00+00:00",
                    "rounds": [{"benchmark": "hot-points", "threads": 1, "rounds": 5, "stopped": "every cell decided "
                                                                                                 "after 5 rounds"}]})
    earlier = Earlier(meta, [base_1, other_1, base_2, failed_2, elsewhere])
    seen = {(m.target, m.round): m for m in earlier.measured("point-query", 1)}
    assert set(seen) == {("a", 1), ("b", 1), ("a", 2), ("b", 2)}  # hot-points is another group
    assert seen["a", 1].interfered and seen["b", 1].interfered  # b's noise spoils the pair
    assert not seen["a", 2].interfered and seen["b", 2].qps is None and seen["a", 2].qps == 1000.0
    assert seen["a", 1].partner == "b" and seen["b", 1].partner == "a"
    assert earlier.stopped("hot-points", 1) == RoundsMeta(benchmark="hot-points", threads=1, rounds=5,
                                                          stopped="every cell decided after 5 rounds")
    assert earlier.stopped("point-query", 1) is None
    assert (earlier.cells_ok(), earlier.cells_failed()) == (4, 1)
    resumed = earlier.resumed_meta(meta_of({"base": "a", "targets": [{"name": "a"}],
                                            "started_at": "2026-11-26T05:00:00+00:00"}))
    assert resumed.started_at == "2026-11-25T20:00:00+00:00" and len(resumed.resumed_at or []) == 1
    assert resumed.rounds == meta.rounds and resumed.extended is None  # kept from the first write on


@pytest.mark.unit
@pytest.mark.parametrize(("outcome", "kept"), [("interrupted", False), ("running", False), ("found", True),
                                               ("undecided", True)])
def test_a_study_resume_goes_on_with_a_bisect_cut_short_and_keeps_one_that_ended(tmp_path, outcome, kept):
    from dbperf.studies.model import load_study
    from dbperf.studies.study_run import _kept_before

    study = load_study("release-regression")
    (tmp_path / "bisect").mkdir()
    settings = {"engine": "postgres", "benchmark": "point-query", "threshold": 0.05, "time_s": 5.0, "warmup_s": 1.0,
                "budget_s": 120.0}
    (tmp_path / "bisect" / "bisect.json").write_text(json.dumps({"dbperf_bisect": 1, "settings": settings,
                                                                 "versions": ["13.23", "17.0"], "outcome": outcome,
                                                                 "steps": []}))
    said = _kept_before(study, study.step("bisect"), tmp_path)
    assert (said is not None) == kept
    assert said is None or "bisect/bisect.json" in said


@pytest.mark.unit
def test_a_resumed_run_is_estimated_on_what_is_left(tmp_path):
    """The estimate before a resume counts what is left to measure, not the whole run again: with automatic repeats,
    the budget shares of the groups whose rounds had not stopped; with fixed repeats, the cells not yet measured."""
    from dbperf.runner.estimate import estimate
    from dbperf.runner.resume import Earlier
    from tests.synthetic import _cell, meta_of

    auto = tmp_path / "auto.toml"
    auto.write_text(AUTO.replace('budget = "2m"', 'budget = "2h"'))
    e = parse_experiment(auto)
    stopped = {"benchmark": "point-query", "threads": 1, "rounds": 9, "stopped": "budget spent after 9 rounds"}
    earlier = Earlier(meta_of({"base": "a", "targets": [{"name": "a"}, {"name": "b"}], "rounds": [stopped]}), [])
    whole, resumed = estimate(e, tmp_path).seconds, estimate(e, tmp_path, earlier).seconds
    assert earlier.owed(e) == 0.5
    assert resumed == pytest.approx(whole / 2, rel=0.05)  # the load of 1,000 rows each is seconds beside an hour

    fixed = tmp_path / "fixed.toml"
    fixed.write_text(AUTO.replace('repeats = "auto"\nbudget = "2m"', "repeats = 2").replace('"0.2s"', '"100s"'))
    e = parse_experiment(fixed)
    # 2 benchmarks × 2 repeats × 2 targets = 8 cells; 6 measured before
    done = [_cell(t, b, r, 1000.0, False) for b in ("point-query", "hot-points") for r in (1, 2) for t in "ab"][:6]
    earlier = Earlier(meta_of({"base": "a", "targets": [{"name": "a"}, {"name": "b"}]}), done)
    whole, resumed = estimate(e, tmp_path).seconds, estimate(e, tmp_path, earlier).seconds
    assert resumed == pytest.approx(whole / 4, rel=0.05)


@pytest.mark.e2e
def test_extend_gives_the_groups_stopped_on_their_budget_more_rounds_and_keeps_every_earlier_one(tmp_path,
                                                                                                 stopped_run,
                                                                                                 run_cli_here):
    """`--extend`: a complete run's groups that spent their budget share undecided go on from their rounds; nothing
    measured before changes; meta.json and the report say it. An equal pair at a 0.1% minimum effect cannot be
    decided in a few rounds, so both groups stop on the budget (shorter than the minimum rounds, which run anyway)."""
    exp, out = _copy(stopped_run, tmp_path)
    first = json.loads((out / "meta.json").read_text())
    assert [r["stopped"] for r in first["rounds"]] == [f"budget spent after {MIN_ROUNDS} rounds"] * 2
    before = (out / "results.jsonl").read_text().splitlines(keepends=True)
    proc = run_cli("run", str(exp), "--out", str(out), "--extend", "6s", timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert (f"extending it by 6 s: 2 (benchmark, threads) stopped on their budget share go on: point-query t=1 "
            f"({MIN_ROUNDS} rounds), hot-points t=1 ({MIN_ROUNDS} rounds)") in proc.stderr
    assert (out / "results.jsonl").read_text().splitlines(keepends=True)[:len(before)] == before
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["started_at"] == first["started_at"]
    assert [x["budget_s"] for x in meta["extended"]] == [6.0] and meta["extended"][0]["at"] == meta["resumed_at"][0]
    assert [r["benchmark"] for r in meta["rounds"]] == ["point-query", "hot-points"]
    for r in meta["rounds"]:
        assert r["rounds"] > MIN_ROUNDS and r["stopped"] == f"budget spent after {r['rounds']} rounds"
        keys = [(c.target, c.repeat) for c in _cells(out) if c.benchmark == r["benchmark"]]
        assert sorted(keys) == [(t, n) for t in "ab" for n in range(1, r["rounds"] + 1)]  # each round once, in full
    report = run_cli_here("report", str(out))
    assert report.returncode == 0 and "extended (--extend) at " in report.stdout, report.stdout


@pytest.mark.unit
def test_extend_reopens_only_the_groups_stopped_on_their_budget_and_is_refused_where_it_cannot_help(tmp_path):
    exp = tmp_path / "exp.toml"
    exp.write_text(AUTO)
    out = tmp_path / "out"
    write_run(out, ["a", "b"], ["point-query", "hot-points"], 3)
    (out / "experiment.toml").write_text(AUTO)
    meta = json.loads((out / "meta.json").read_text())
    meta["rounds"] = [{"benchmark": "point-query", "threads": 1, "rounds": 3, "stopped": "every cell decided after 3 "
                                                                                          "rounds"}]
    (out / "meta.json").write_text(json.dumps(meta))
    e = parse_experiment(exp)
    with pytest.raises(UserError, match=r"nothing to extend: no \(benchmark, threads\) stopped on its budget share"):
        earlier_run(out, e, 3600.0)
    meta["rounds"].append({"benchmark": "hot-points", "threads": 1, "rounds": 3, "stopped": "budget spent after 3 "
                                                                                           "rounds"})
    (out / "meta.json").write_text(json.dumps(meta))
    earlier = earlier_run(out, e, 3600.0)
    assert earlier.stopped("point-query", 1) is not None and earlier.stopped("hot-points", 1) is None
    assert [r.benchmark for r in earlier.reopened()] == ["hot-points"]
    assert earlier.budget_s(e) == 3600.0  # both groups had ended: none is owed a share of the file's 2 minutes
    with pytest.raises(UserError, match=r"its run is complete; nothing to resume \(--extend BUDGET gives"):
        earlier_run(out, e)  # without --extend, a complete run has nothing left
    fixed = tmp_path / "fixed.toml"
    fixed.write_text(AUTO.replace('repeats = "auto"\nbudget = "2m"', "repeats = 3"))
    (out / "experiment.toml").write_text(fixed.read_text())
    with pytest.raises(UserError, match=r"--extend adds budget to automatic repeats; .*fixed\.toml has a fixed"):
        earlier_run(out, parse_experiment(fixed), 3600.0)


@pytest.mark.unit
def test_a_study_extend_runs_again_the_experiment_steps_whose_budget_left_cells_undecided(tmp_path):
    from dbperf.studies.model import load_study
    from dbperf.studies.study_run import _kept_before

    study = load_study("pgo-server")
    step = next(s for s in study.steps if s.name == "mariadb")
    (tmp_path / "mariadb").mkdir()
    # a meta.json as the lab writes it (typed: read_meta refuses one without its format key, base and targets)
    meta = {"dbperf_results": 1, "base": "O2", "targets": [{"name": "O2"}], "benchmarks": [],
            "status": "complete", "rounds": [{"benchmark": "point-query", "threads": 1, "rounds": 21,
                                              "stopped": "every cell decided after 21 rounds"}]}
    (tmp_path / "mariadb" / "meta.json").write_text(json.dumps(meta))
    assert _kept_before(study, step, tmp_path, extend=True) == "complete before the resume, results in mariadb/"
    meta["rounds"].append({"benchmark": "hot-points", "threads": 1, "rounds": 21,
                           "stopped": "budget spent after 21 rounds"})
    (tmp_path / "mariadb" / "meta.json").write_text(json.dumps(meta))
    assert _kept_before(study, step, tmp_path, extend=True) is None  # runs again, extended
    assert _kept_before(study, step, tmp_path) == "complete before the resume, results in mariadb/"


@pytest.mark.unit
def test_a_reopened_group_its_rounds_decide_by_todays_rule_needs_no_share(tmp_path):
    """A run whose groups stopped on their budget because the A/A copy held them (the rule before it stopped doing
    so): extended, the group whose other cells are decided stops on its replay, so it is not given a share."""
    import random

    from dbperf.experiment.aa import with_aa
    from dbperf.runner.resume import Earlier
    from tests.synthetic import _cell, meta_of

    exp = tmp_path / "exp.toml"
    exp.write_text(AUTO)
    e = with_aa(parse_experiment(exp))
    rng = random.Random(1)
    rounds = range(1, 22)
    clear = [_cell(t, "point-query", r, q * (1 + rng.uniform(-0.01, 0.01)), False)
             for r in rounds for t, q in (("a", 1000.0), ("a-aa", 1000.0), ("b", 500.0))]
    unclear = [_cell(t, "hot-points", r, 1000.0 * (1 + rng.uniform(-0.2, 0.2)), False)
               for r in rounds for t in ("a", "a-aa", "b")]
    spent = [{"benchmark": b, "threads": 1, "rounds": 21, "stopped": "budget spent after 21 rounds"}
             for b in ("point-query", "hot-points")]
    earlier = Earlier(meta_of({"base": "a", "targets": [{"name": t} for t in ("a", "a-aa", "b")],
                               "rounds": spent}), clear + unclear, extend_s=600.0)
    assert earlier.decided(e, "point-query", 1) and not earlier.decided(e, "hot-points", 1)
    assert earlier.stopped("point-query", 1) is None  # reopened all the same: its replay is where it stops


@pytest.mark.unit
def test_a_resumed_study_summary_says_when_its_sittings_began():
    from dbperf.studies.record import started_when

    assert started_when("2026-11-25T16:57:24+00:00") == "2026-11-25 16:57 UTC"
    assert started_when("2026-11-25T16:57:24+00:00", ["2026-11-26T08:47:08+00:00", "2026-11-26T10:00:00+00:00"]) == \
        "2026-11-25 16:57 UTC (resumed 2026-11-26 08:47 UTC, 2026-11-26 10:00 UTC)"


@pytest.mark.unit
def test_a_group_cut_short_is_owed_its_share_less_what_it_spent_in_each_sitting(tmp_path):
    """A group killed in its rounds, resumed and killed again, is owed its share of the budget less the time its
    cells took in each sitting; the gap between the sittings is not its time, and a group that ended owes nothing."""
    from dataclasses import replace
    from datetime import UTC, datetime

    from msgspec.structs import replace as at

    from dbperf.runner.resume import Earlier
    from tests.synthetic import _cell, meta_of

    exp = tmp_path / "exp.toml"
    exp.write_text(AUTO.replace('budget = "2m"', 'budget = "1h"'))
    e = parse_experiment(exp)
    first = datetime(2026, 11, 26, 8, 0, tzinfo=UTC).timestamp()
    second = first + 7200.0  # resumed two hours later
    # hot-points: 100 s of cells in the first sitting (cells at +0 s and +90 s, 10 s each), 50 s in the second
    cut = [at(_cell("a", "hot-points", 1, 1000.0, False), started_at=t, wall_s=10.0)
           for t in (first, first + 90.0, second + 60.0, second + 100.0)]
    done = [at(_cell("a", "point-query", 1, 1000.0, False), started_at=first - 500.0, wall_s=10.0)]
    ended = {"benchmark": "point-query", "threads": 1, "rounds": 9, "stopped": "budget spent after 9 rounds"}
    earlier = Earlier(meta_of({"base": "a", "targets": [{"name": "a"}, {"name": "b"}], "rounds": [ended],
                               "resumed_at": [datetime.fromtimestamp(second, UTC).isoformat()]}), cut + done)
    assert earlier.spent_s("hot-points", 1) == pytest.approx(150.0)
    assert earlier.spent_s("point-query", 1) == 0.0
    assert earlier.budget_s(e) == pytest.approx(1800.0 - 150.0)
    assert replace(earlier, extend_s=600.0).budget_s(e) == pytest.approx(1800.0 - 150.0 + 600.0)


@pytest.mark.e2e
def test_a_run_the_lab_kept_out_of_the_history_stays_out_when_extended(tmp_path, stopped_run):
    """A layout --fix A/B is a run the lab composes for its own question (record=False, as `stopped_run` was run);
    meta.json says so, and an extension of it by hand (`dbperf run ... --extend`) does not put it into the user's
    history."""
    exp, out = _copy(stopped_run, tmp_path)
    history = tmp_path / "history.sqlite"
    assert json.loads((out / "meta.json").read_text())["in_history"] is False
    proc = run_cli("run", str(exp), "--out", str(out), "--extend", "1s", env={"DBPERF_HISTORY": str(history)},
                   timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "recorded in the history" not in proc.stderr and not history.exists()
    assert json.loads((out / "meta.json").read_text())["in_history"] is False


@pytest.mark.e2e
def test_a_study_extend_reaches_a_layout_steps_fix_ab_and_keeps_its_check(tmp_path, stopped_run):
    """A layout step's --fix A/B whose rounds stopped on their budget undecided goes on with --extend, like an
    experiment step: the check and the rebuild are kept (the JSON's other keys), its report is appended to the
    step's log and its cell count updated; a layout step with no A/B is kept."""
    from dbperf.studies.study_run import run_study
    out = tmp_path / "out"
    study = parse_study(_write_study(tmp_path))
    run_study(study, out, "full")  # both steps fail (no binary): a study.json to extend
    ab = out / "a-ab" / "results"
    shutil.copytree(stopped_run, ab)  # an A/B run as the layout's --fix leaves it (kept out of the history)
    cells = len(_cells(ab))
    (out / "a.json").write_text(json.dumps({"static_candidate_lines": 7, "fix": {"ab_results": str(ab),
                                                                                "ab_cells": cells}}))
    (out / "b.json").write_text(json.dumps({"static_candidate_lines": 9}))
    end = run_study(study, out, "full", extend_s=4.0)
    assert end.exit_code == 0, end.summary
    assert "- a: layout check kept; its --fix A/B extended by 4 s (--extend)" in end.summary
    assert "- b: kept from before the resume (b.json)" in end.summary
    data = json.loads((out / "a.json").read_text())
    assert data["static_candidate_lines"] == 7 and data["fix"]["ab_cells"] == len(_cells(ab)) > cells
    meta = json.loads((ab / "meta.json").read_text())
    assert [x["budget_s"] for x in meta["extended"]] == [4.0]
    assert "the A/B extended by 4 s (--extend):" in (out / "a.txt").read_text()


def _write_study(tmp_path: Path) -> Path:
    path = tmp_path / "mine.toml"
    path.write_text(TWO_STEPS)
    return path
