"""`dbperf bisect`: the search with a fake judge (its order, undecided steps, its number of steps), the range of
released versions, a step's experiment, and bad input as one line with exit 2."""

from __future__ import annotations

import http.server
import math
import threading
import tomllib

import pytest

from dbperf.cli.bisect import config_settings
from dbperf.errors import UserError
from dbperf.storage.bisect_path import FOUND, NONE_SLOWER, STEP_FAILED, STILL_UNDECIDED, Judgement, StepSettings
from dbperf.usecases.bisect_search import expected_steps, search
from dbperf.usecases.bisect_settings import parse_threshold, release_range
from dbperf.usecases.bisect_step import step_experiment
from tests.conftest import run_cli

PUBLISHED = ["9.6.24", "10.4.0", "12.22.0", "12.9.0", "13.23.0", "14.0.0", "14.10.0", "16.4.0", "16.4.0-1",
             "17.0.0"]


class FakeJudge:
    """Versions at or after `first_slower` (index) are slower; `undecided` maps a version to how many of its
    first tries stay undecided; every call is kept."""

    def __init__(self, versions: list[str], first_slower: int | None, undecided: dict[str, int] | None = None,
                 verdict_else: str = "same") -> None:
        self.versions, self.first_slower = versions, first_slower
        self.undecided = undecided or {}
        self.verdict_else = verdict_else
        self.calls: list[tuple[str, str, int]] = []

    def __call__(self, good: str, probe: str, attempt: int) -> Judgement:
        self.calls.append((good, probe, attempt))
        if attempt < self.undecided.get(probe, 0):
            return Judgement("undecided", 0.97, -0.06, 0.01, rounds=9 * (attempt + 1))
        slower = self.first_slower is not None and self.versions.index(probe) >= self.first_slower
        return Judgement("slower" if slower else self.verdict_else, 0.9 if slower else 1.0, rounds=12)


VERSIONS = [f"1.{i}" for i in range(20)]


@pytest.mark.unit
@pytest.mark.parametrize("first_slower", range(1, 20))
def test_the_search_finds_the_first_slower_release_in_about_log2_steps(first_slower):
    judge = FakeJudge(VERSIONS, first_slower)
    result = search(VERSIONS, judge)
    assert result.outcome == "found" and result.exit_code == FOUND
    assert result.first_slower == result.answer == VERSIONS[first_slower]
    assert result.last_not_slower == VERSIONS[first_slower - 1]
    assert len(result.steps) <= expected_steps(20) == 1 + math.ceil(math.log2(19))
    assert all(good == "1.0" for good, _, _ in judge.calls)  # every step against the oldest


@pytest.mark.unit
def test_the_newest_is_judged_first_then_the_middles():
    judge = FakeJudge(VERSIONS, 3)
    search(VERSIONS, judge)
    assert [p for _, p, _ in judge.calls] == ["1.19", "1.9", "1.4", "1.2", "1.3"]


@pytest.mark.unit
def test_faster_counts_as_not_slower():
    result = search(VERSIONS, FakeJudge(VERSIONS, 15, verdict_else="faster"))
    assert result.first_slower == "1.15"


@pytest.mark.unit
def test_nothing_slower_in_the_range_is_said_with_its_own_status_after_one_step():
    result = search(VERSIONS, FakeJudge(VERSIONS, None))
    assert (result.outcome, result.exit_code, len(result.steps)) == ("none-slower", NONE_SLOWER, 1)
    assert result.first_slower is None and result.answer is None and result.last_not_slower == "1.19"


@pytest.mark.unit
def test_an_undecided_step_gets_more_tries_before_it_counts():
    judge = FakeJudge(VERSIONS, 3, undecided={"1.9": 2})
    result = search(VERSIONS, judge, tries=3)
    assert result.first_slower == "1.3"
    assert [(p, a) for _, p, a in judge.calls][:4] == [("1.19", 0), ("1.9", 0), ("1.9", 1), ("1.9", 2)]
    tried = [s for s in result.steps if s.version == "1.9"]
    assert [s.attempt for s in tried] == [1, 2, 3] and [s.judgement.verdict for s in tried] == [
        "undecided", "undecided", "slower"]


@pytest.mark.unit
def test_a_step_still_undecided_after_the_cap_stops_the_search_without_a_guess():
    judge = FakeJudge(VERSIONS, 3, undecided={"1.4": 5})
    result = search(VERSIONS, judge, tries=2)
    assert (result.outcome, result.exit_code) == ("undecided", STILL_UNDECIDED)
    # the path so far: the newest, 1.9, then 1.4 twice; the bracket known so far is kept
    assert [(s.version, s.attempt) for s in result.steps] == [("1.19", 1), ("1.9", 1), ("1.4", 1), ("1.4", 2)]
    assert (result.last_not_slower, result.first_slower) == ("1.0", "1.9")
    # What the record says for the first slower release: the bracket, never the bracket's end as the answer.
    assert result.answer == "after 1.0, at or before 1.9 (stopped: 1.4 undecided after 2 tries)"
    assert result.to_json()["answer"] == result.answer


@pytest.mark.unit
def test_unstable_counts_as_undecided_and_a_failed_step_stops_at_once():
    def unstable(good, probe, attempt):
        return Judgement("unstable", 0.8, -0.4, 0.1, rounds=30)
    result = search(VERSIONS, unstable, tries=2)
    assert result.outcome == "undecided" and len(result.steps) == 2

    def failed(good, probe, attempt):
        return Judgement("failed", exit_code=3)
    result = search(VERSIONS, failed, tries=3)
    assert (result.outcome, result.exit_code, len(result.steps)) == ("failed", STEP_FAILED, 1)


@pytest.mark.unit
def test_an_interrupted_step_ends_with_the_signal_status_and_the_path_so_far():
    calls = []

    def judge(good, probe, attempt):
        calls.append(probe)
        return Judgement("slower", 0.9, rounds=10) if len(calls) == 1 else Judgement("undecided", exit_code=130)
    seen = []
    result = search(VERSIONS, judge, on_step=lambda r: seen.append(len(r.steps)))
    assert (result.outcome, result.exit_code, len(result.steps)) == ("interrupted", 130, 2)
    assert seen == [1, 2]


@pytest.mark.unit
def test_a_range_of_two_takes_one_step():
    result = search(["1.0", "1.1"], FakeJudge(["1.0", "1.1"], 1))
    assert result.first_slower == "1.1" and len(result.steps) == 1


@pytest.mark.unit
def test_a_range_of_one_and_no_tries_are_bad_input():
    with pytest.raises(UserError, match="one release"):
        search(["1.0"], FakeJudge(["1.0"], None))
    with pytest.raises(UserError, match="--tries"):
        search(VERSIONS, FakeJudge(VERSIONS, 1), tries=0)


@pytest.mark.unit
def test_the_range_is_sorted_by_version_one_entry_per_release():
    versions = release_range("postgres", "12", "16.4", PUBLISHED)
    # numeric order (12.9 before 12.22), the newest of 12 is 12.22 so the range starts there; 16.4.0-1 is 16.4
    assert versions == ["12.22", "13.23", "14.0", "14.10", "16.4"]
    assert release_range("postgres", "9.6", "10.4", PUBLISHED) == ["9.6.24", "10.4"]


@pytest.mark.unit
def test_unknown_versions_a_reversed_range_and_a_range_of_one_are_one_line_errors():
    with pytest.raises(UserError, match=r"postgres@15\.2: no such released version"):
        release_range("postgres", "15.2", "17", PUBLISHED)
    with pytest.raises(UserError, match=r"reversed range: 17 .* is newer than 13"):
        release_range("postgres", "17", "13", PUBLISHED)
    with pytest.raises(UserError, match="holds one release"):
        release_range("postgres", "14.0", "14.0", PUBLISHED)
    with pytest.raises(UserError, match="no released binaries"):
        release_range("sqlite", "3.40", "3.45", PUBLISHED)


@pytest.mark.unit
@pytest.mark.parametrize(("text", "value"), [("5%", 0.05), ("0.05", 0.05), (" 2.5% ", 0.025)])
def test_the_threshold_reads_percentages_and_fractions(text, value):
    assert parse_threshold(text) == pytest.approx(value)


@pytest.mark.unit
@pytest.mark.parametrize("text", ["5", "0", "-3%", "abc", "150%"])
def test_a_bad_threshold_is_refused(text):
    with pytest.raises(UserError, match="--threshold"):
        parse_threshold(text)


@pytest.mark.unit
def test_a_step_experiment_is_the_good_release_as_base_against_the_probe_with_auto_repeats():
    settings = StepSettings("postgres", "update-index", 0.05, 5.0, 1.0, 120.0, config={"shared_buffers": "256MB"})
    doc = tomllib.loads(step_experiment(settings, "13.23", "14.10", 240.0))
    assert doc["run"]["base"] == "postgres-13.23" and doc["run"]["repeats"] == "auto"
    assert doc["run"]["budget"] == "240s" and doc["run"]["min_effect"] == 0.05
    assert doc["run"]["benchmarks"] == ["update-index"]
    assert [(t["name"], t["source"]) for t in doc["target"]] == [("postgres-13.23", "postgres@13.23"),
                                                                 ("postgres-14.10", "postgres@14.10")]
    assert doc["target"][1]["config"] == {"shared_buffers": "256MB"}


@pytest.mark.unit
def test_config_pairs_become_the_step_targets_config():
    settings = config_settings(["shared_buffers=256MB", " work_mem = 4MB "])
    assert settings == {"shared_buffers": "256MB", "work_mem": "4MB"}
    doc = tomllib.loads(step_experiment(StepSettings("postgres", "update-index", 0.05, 5.0, 1.0, 120.0,
                                                     config=settings), "15.5.1", "18.6", 240.0))
    assert [t["config"] for t in doc["target"]] == [settings, settings]


@pytest.mark.unit
def test_a_bisect_step_runs_in_the_order_it_is_given_and_refuses_an_unknown_one(tmp_path):
    from dbperf.experiment.spec import parse_experiment
    from dbperf.usecases.bisect_settings import check_settings
    sliced = StepSettings("postgres", "update-index", 0.05, 5.0, 1.0, 120.0, order="slices")
    text = step_experiment(sliced, "15.5.1", "18.6", 240.0)
    assert tomllib.loads(text)["run"]["order"] == "slices"
    assert "order" not in tomllib.loads(step_experiment(StepSettings("postgres", "update-index", 0.05, 5.0, 1.0,
                                                                     120.0), "15.5.1", "18.6", 240.0))["run"]
    (tmp_path / "step.toml").write_text(text)
    assert parse_experiment(tmp_path / "step.toml").order == "slices"  # an experiment the lab takes as it is
    check_settings(sliced)
    with pytest.raises(UserError, match=r"^--order: expected one of .*slices.*, got 'sliced'$"):
        check_settings(StepSettings("postgres", "update-index", 0.05, 5.0, 1.0, 120.0, order="sliced"))


@pytest.fixture
def maven(monkeypatch):
    """maven-metadata.xml of PUBLISHED on 127.0.0.1, so that the CLI lists versions without the network."""
    body = ("<metadata><versioning><versions>" + "".join(f"<version>{v}</version>" for v in PUBLISHED)
            + "</versions></versioning></metadata>").encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            ok = self.path.endswith("/maven-metadata.xml")
            self.send_response(200 if ok else 404)
            self.end_headers()
            if ok:
                self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"DBPERF_MAVEN_URL": f"http://127.0.0.1:{server.server_address[1]}"}
    server.shutdown()


@pytest.mark.unit
@pytest.mark.parametrize(("args", "message"), [
    (["postgres", "15.2", "17"], "postgres@15.2: no such released version"),
    (["postgres", "17", "13"], "reversed range"),
    (["postgres", "14.0", "14.0"], "holds one release"),
    (["sqlite", "3.40", "3.45"], "bisect sqlite: '3.40' is not a SQLite release the lab builds"),
    (["oracle", "1", "2"], "unknown engine 'oracle'"),
    (["postgres", "13", "17", "--threshold", "lots"], "--threshold"),
    (["postgres", "13", "17", "--benchmark", "no-such"], "'no-such' is not a catalog benchmark"),
    (["postgres", "13", "17", "--time", "-1s"], "--time"),
    (["postgres", "13", "17", "--tries", "0"], "--tries"),
    (["postgres", "13", "17", "--resume"], "no bisect to resume"),
    (["postgres", "13", "17", "--config", "shared_buffers"], "--config: expected NAME=VALUE"),
    (["postgres", "13", "17", "--config", "work_mem=4MB", "--config", "work_mem=8MB"], "work_mem is given twice"),
    (["postgres", "13", "17", "--config", "listen_addresses=0.0.0.0"], "config.listen_addresses: the lab's servers"),
    (["postgres", "13", "17", "--config", "work_mem=4MB;rm -rf"], "is not a plain word, number or size"),
])
def test_bad_input_is_one_line_and_exit_2(maven, tmp_path, args, message):
    proc = run_cli("bisect", *args, "--out", str(tmp_path / "b"), env=maven, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert not (tmp_path / "b").exists()  # nothing run, nothing written


@pytest.mark.unit
def test_a_step_is_judged_from_its_results_directory_as_the_report_decides_it(tmp_path):
    from dbperf.usecases.bisect_step import judgement_of
    from tests.synthetic import write_run
    directory = write_run(tmp_path / "step", ["postgres-13.23", "postgres-14.0"], ["point-query"], 20,
                          speed={"postgres-14.0": 0.8}, noise=0.01)
    j = judgement_of(directory, "postgres-14.0", "point-query", 1, 0)
    assert j.verdict == "slower" and j.rounds == 20 and j.rqps == pytest.approx(0.8, rel=0.05)
    assert j.lower is not None and j.upper is not None and j.lower < j.upper < 0
    assert judgement_of(directory, "postgres-15.0", "point-query", 1, 0).verdict == "failed"
    assert judgement_of(tmp_path / "nothing", "x", "point-query", 1, 130).interrupted


@pytest.mark.unit
def test_a_bisect_cut_short_goes_on_replaying_its_decided_steps(tmp_path, monkeypatch):
    """The first sitting is interrupted in its third step; `--resume` replays steps 1-2 from bisect.json without
    running them, resumes the third step's own run, and ends where an uninterrupted search would."""
    import json
    import shutil

    from dbperf.storage.bisect_path import BisectPath, write_path
    from dbperf.usecases import bisect_step
    from dbperf.usecases.bisect import earlier_steps
    from dbperf.usecases.run import RunEnd
    from tests.synthetic import write_run

    versions = VERSIONS[:9]
    settings = StepSettings("postgres", "point-query", 0.05, 5.0, 1.0, 120.0)
    out = tmp_path / "b"
    runs: list[tuple[str, bool]] = []
    interrupt_at = [3]

    def fake_run(experiment, directory, keep_data, yes=False, err=None, resume=False):
        runs.append((directory.name, resume))
        doc = tomllib.loads(experiment.read_text())
        base, probe = (t["name"] for t in doc["target"])
        slow = versions.index(probe.removeprefix("postgres-")) >= 5
        if resume:  # the real run reopens the directory and measures the missing cells; this one measures anew
            shutil.rmtree(directory)
        write_run(directory, [base, probe], ["point-query"], 20, speed={probe: 0.8 if slow else 1.0}, noise=0.005,
                  engine="postgres")
        if len(runs) == interrupt_at[0]:  # cut short: its meta says so, and the run exits as Ctrl-C does
            meta = json.loads((directory / "meta.json").read_text())
            (directory / "meta.json").write_text(json.dumps({**meta, "status": "interrupted"}))
            return RunEnd(directory, 130)
        return RunEnd(directory, 0)

    monkeypatch.setattr(bisect_step, "run_experiment", fake_run)
    first = search(versions, bisect_step.release_judge(settings, out),
                   on_step=lambda r: write_path(out, BisectPath(settings, r)))
    write_path(out, BisectPath(settings, first))
    assert (first.outcome, len(first.steps)) == ("interrupted", 3)
    earlier = earlier_steps(out, settings, versions)
    assert [s.judgement.interrupted for s in earlier] == [False, False, True]

    runs.clear()
    interrupt_at[0] = 0
    result = search(versions, bisect_step.release_judge(settings, out, earlier=earlier))
    assert (result.outcome, result.first_slower, result.last_not_slower) == ("found", "1.5", "1.4")
    assert runs[0] == (earlier[2].judgement.directory.rsplit("/", 1)[-1], True)  # step 3 resumed, 1-2 not run
    assert all(not resumed for _, resumed in runs[1:])
    assert [s.judgement.verdict for s in result.steps[:2]] == [s.judgement.verdict for s in earlier[:2]]

    write_path(out, BisectPath(settings, result))
    with pytest.raises(UserError, match=r"its bisect ended \(found\)"):
        earlier_steps(out, settings, versions)
    (out / "bisect.json").write_text(json.dumps({**json.loads((out / "bisect.json").read_text()),
                                                 "outcome": "running"}))
    with pytest.raises(UserError, match="other settings or another range"):
        earlier_steps(out, StepSettings("postgres", "point-query", 0.03, 5.0, 1.0, 120.0), versions)
    with pytest.raises(UserError, match="no bisect to resume"):
        earlier_steps(tmp_path / "none", settings, versions)


@pytest.mark.unit
def test_a_step_that_measured_nothing_ends_the_bisect_with_a_runs_own_status():
    from dbperf.usecases.run import NO_CELL_SUCCEEDED
    assert STEP_FAILED == NO_CELL_SUCCEEDED
