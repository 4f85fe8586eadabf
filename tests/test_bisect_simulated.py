"""`dbperf bisect --metric simulated`: the search decided on work per query from a fake metric source (no
servers): one count a release, the right step for every position of a synthetic change, ties, less work and a flat
series; the lead at the step; bisect.json; and bad input as one line."""

from __future__ import annotations

import json
import tomllib

import pytest

from dbperf.errors import UserError
from dbperf.metrics import SIMULATED, WALL
from dbperf.records import Profile
from dbperf.report.bisect_view import bisect_view, lead_section
from dbperf.storage.bisect_path import FOUND, NONE_SLOWER, BisectPath, StepSettings, read_path, write_path
from dbperf.usecases.bisect import earlier_steps
from dbperf.usecases.bisect_metrics import WAYS, bisection, metric, run_bisect
from dbperf.usecases.bisect_search import search
from dbperf.usecases.bisect_work import Counted, SimulatedBisect, WorkCounts, count_experiment, work_verdict
from tests.conftest import run_cli
from tests.fake_maven import UNREACHABLE
from tests.refusal import assert_refused
from tests.test_simulated_tools import path_without_valgrind

VERSIONS = [f"1.{i}" for i in range(20)]
SETTINGS = StepSettings("postgres", "update-index", 0.02, 5.0, 1.0, 120.0, metric=SIMULATED)


def profile(instructions: float, functions: dict[str, dict[str, float]] | None = None) -> Profile:
    return Profile(mode="simulated", mode_reason="test", tool="cachegrind", target="t", benchmark="update-index",
                   events=100, queries=100, method="fake", per_query={"instructions": instructions},
                   functions=functions or {})


class FakeSource:
    """Work per query of each version from `work`; every call is kept."""

    def __init__(self, work: list[float]) -> None:
        self.work = work
        self.calls: list[str] = []

    def __call__(self, version: str) -> Counted:
        self.calls.append(version)
        return Counted(profile(self.work[VERSIONS.index(version)]), f"/counts/{version}.json")


def step_at(position: int, size: float = 1.10) -> list[float]:
    return [1000.0 if i < position else 1000.0 * size for i in range(len(VERSIONS))]


@pytest.mark.unit
@pytest.mark.parametrize("position", range(1, 20))
def test_every_position_of_a_change_is_found_with_one_count_a_release(position):
    source = FakeSource(step_at(position))
    result = search(VERSIONS, WorkCounts(source).judge(0.02), tries=1)
    assert result.outcome == "found" and result.exit_code == FOUND
    assert (result.first_slower, result.last_not_slower) == (VERSIONS[position], VERSIONS[position - 1])
    assert len(source.calls) == len(set(source.calls)) == len(result.steps) + 1  # the oldest once, a count a step
    assert all(s.attempt == 1 and s.judgement.metric is SIMULATED for s in result.steps)
    assert result.steps[0].judgement.work == pytest.approx(1.10)


@pytest.mark.unit
def test_a_change_within_the_threshold_is_the_same_and_less_work_is_not_slower():
    assert work_verdict(0.019, 0.02) == work_verdict(-0.02, 0.02) == "same"
    assert work_verdict(0.021, 0.02) == "slower" and work_verdict(-0.03, 0.02) == "faster"
    work = [1000.0, 1010.0, 990.0, 1015.0, 900.0, 905.0, 1100.0, 1100.0, 1100.0]  # within 2% until 1.6, then +10%
    counts = WorkCounts(lambda v: Counted(profile(work[VERSIONS.index(v)]), None))
    result = search(VERSIONS[:9], counts.judge(0.02), tries=1)
    assert (result.first_slower, result.last_not_slower) == ("1.6", "1.5")
    assert {s.judgement.verdict for s in result.steps} <= {"slower", "faster", "same"}


@pytest.mark.unit
def test_a_flat_series_ends_after_one_step_as_not_more_work():
    source = FakeSource([1000.0] * 20)
    result = search(VERSIONS, WorkCounts(source).judge(0.02), tries=1)
    assert (result.outcome, result.exit_code, len(result.steps)) == ("none-slower", NONE_SLOWER, 1)
    assert source.calls == ["1.0", "1.19"]


@pytest.mark.unit
def test_an_oldest_with_no_count_is_one_line():
    counts = WorkCounts(lambda v: Counted(profile(0.0), None))
    with pytest.raises(UserError, match="no simulated instructions per query"):
        search(VERSIONS[:3], counts.judge(0.02), tries=1)


@pytest.mark.unit
def test_the_found_step_gets_its_lead_and_the_path_is_written_with_the_metric(tmp_path):
    def counted(version: str) -> Counted:
        new = VERSIONS.index(version) >= 7
        functions = {"ExecScan": {"instructions": 500.0 + (80 if new else 0), "i1_misses": 1.0, "d1_misses": 2.0},
                     "palloc": {"instructions": 300.0, "i1_misses": 0.5, "d1_misses": 1.0 + (3 if new else 0)},
                     "hash_search": {"instructions": 200.0 + (20 if new else 0), "i1_misses": 0.1, "d1_misses": 0.2}}
        return Counted(profile(sum(f["instructions"] for f in functions.values()), functions), None)

    chosen = SimulatedBisect(SETTINGS, tmp_path, source=counted, confirm=False)
    result = search(VERSIONS, chosen.judge(), tries=1)
    written: list[int] = []
    chosen.finish(result, lambda r: written.append(len(r.lead)))
    assert written == [len(result.lead)] and result.lead
    by_work = [r for r in result.lead if r.why == "instructions"]
    assert [r.function for r in by_work] == ["ExecScan", "hash_search"]  # palloc's instructions did not change
    assert by_work[0].after - by_work[0].before == pytest.approx(80.0)
    assert [(r.function, r.misses) for r in result.lead if r.why == "misses"] == [("palloc", pytest.approx(3.0))]
    lead = lead_section(result)
    assert lead is not None and "ExecScan" in str(lead)
    result.metric = SIMULATED
    write_path(tmp_path, BisectPath(SETTINGS, result))
    doc = json.loads((tmp_path / "bisect.json").read_text())
    assert doc["metric"] == doc["settings"]["metric"] == "simulated" and doc["lead"][0]["function"] == "ExecScan"
    assert "work per query" in str(bisect_view(BisectPath(SETTINGS, result), 4))


@pytest.mark.unit
def test_run_bisect_takes_one_try_a_step_and_writes_the_path_after_each(tmp_path, monkeypatch):
    from dbperf.usecases import bisect_metrics
    source = FakeSource(step_at(5))
    monkeypatch.setattr(bisect_metrics, "SimulatedBisect",
                        lambda s, out, yes, err: SimulatedBisect(s, out, yes, err, source=source, confirm=False))
    seen: list[int] = []
    result = run_bisect(SETTINGS, VERSIONS, tmp_path, tries=3, on_step=lambda r: seen.append(len(r.steps)))
    assert (result.first_slower, result.metric) == ("1.5", SIMULATED)
    assert seen == list(range(1, len(result.steps) + 1))
    assert json.loads((tmp_path / "bisect.json").read_text())["outcome"] == "found"


@pytest.mark.unit
def test_a_path_written_before_metric_existed_resumes_as_a_wall_clock_bisect(tmp_path):
    wall = StepSettings("postgres", "point-query", 0.05, 5.0, 1.0, 120.0)
    doc = {"dbperf_bisect": 1, "settings": {k: v for k, v in wall.as_json().items()
                                            if k != "metric"},
           "versions": VERSIONS[:4], "steps": [], "outcome": "running"}
    (tmp_path / "bisect.json").write_text(json.dumps(doc))
    assert earlier_steps(tmp_path, wall, VERSIONS[:4]) == []
    with pytest.raises(UserError, match="metric 'wall' there, 'simulated' here"):
        earlier_steps(tmp_path, StepSettings("postgres", "point-query", 0.05, 5.0, 1.0, 120.0, metric=SIMULATED),
                      VERSIONS[:4])


@pytest.mark.unit
def test_a_release_is_counted_in_a_one_target_experiment():
    doc = tomllib.loads(count_experiment(StepSettings("postgres", "update-index", 0.02, 5.0, 1.0, 120.0,
                                                      table_size=20_000, config={"work_mem": "4MB"}), "16.4"))
    assert doc["run"]["benchmarks"] == ["update-index"] and doc["run"]["threads"] == [1]
    assert doc["run"]["table_size"] == 20_000 and doc["run"]["base"] == "postgres-16.4"
    assert doc["target"] == [{"name": "postgres-16.4", "source": "postgres@16.4", "config": {"work_mem": "4MB"}}]


@pytest.mark.unit
def test_metrics_are_named_and_an_unknown_one_is_refused(tmp_path):
    assert set(WAYS) == {WALL, SIMULATED} and metric("simulated").deterministic and not metric("wall").deterministic
    assert metric(None) is WALL and metric(None, tree=True) is SIMULATED
    assert isinstance(bisection(SETTINGS, tmp_path), SimulatedBisect)
    with pytest.raises(UserError, match="--metric: expected one of wall, simulated, got 'speed'"):
        metric("speed")


@pytest.mark.unit
def test_an_unknown_metric_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    proc = run_cli("bisect", "postgres", "13", "17", "--metric", "speed", "--out", str(tmp_path / "b"), timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--metric: expected one of wall, simulated" in lines[0], proc.stderr
    assert not (tmp_path / "b").exists()


@pytest.mark.unit
def test_without_valgrind_the_bisect_is_refused_before_its_folder_or_any_fetch(tmp_path):
    """The tools of the metric first, as `dbperf run` looks at its tiers' tools: no --out claimed, no release list
    asked for (nothing answers at UNREACHABLE: asking would be another error)."""
    out = tmp_path / "b"
    proc = run_cli("bisect", "postgres", "13", "17", "--metric", "simulated", "--out", str(out), timeout=60,
                   env={"PATH": path_without_valgrind(tmp_path), "DBPERF_MAVEN_URL": UNREACHABLE})
    assert_refused(proc, 2, "--metric simulated: valgrind not found on PATH", out)


@pytest.mark.unit
def test_a_step_that_raises_leaves_a_failed_path_that_resume_goes_on_with(tmp_path, monkeypatch):
    """bisect.json says failed, with the error, not "running": the folder is not taken for a bisect cut short; the
    decided steps are kept for a --resume once the cause is fixed."""
    from dbperf.usecases import bisect_metrics

    class Broken(FakeSource):
        def __call__(self, version: str) -> Counted:
            if len(self.calls) == 3:  # the oldest and two probes counted, two steps decided
                raise UserError(f"postgres@{version}: fetching the release failed: HTTP 404")
            return super().__call__(version)

    source = Broken(step_at(5))
    monkeypatch.setattr(bisect_metrics, "SimulatedBisect",
                        lambda s, out, yes, err: SimulatedBisect(s, out, yes, err, source=source, confirm=False))
    with pytest.raises(UserError, match="HTTP 404"):
        run_bisect(SETTINGS, VERSIONS, tmp_path, tries=3)
    doc = json.loads((tmp_path / "bisect.json").read_text())
    assert doc["outcome"] == "failed" and doc["error"].endswith(": fetching the release failed: HTTP 404"), doc
    path = read_path(tmp_path)
    assert len(doc["steps"]) == 2 and len(earlier_steps(tmp_path, SETTINGS, VERSIONS)) == 2
    assert path is not None and path.result.resumable
    path.result.error = None  # a step that measured nothing: the search's own end, not resumed
    assert not path.result.resumable
