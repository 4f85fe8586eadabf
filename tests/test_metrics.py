"""The metrics (dbperf/metrics/): each asked for its words and figures, a name resolved once or refused in one line,
and a bisect path that names its metric read back as the object."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dbperf.errors import UserError
from dbperf.metrics import CPU, METRICS, SIMULATED, WALL, among, named
from dbperf.storage.bisect_path import BisectPath, BisectResult, Judgement, Step, StepSettings, read_path, write_path


@pytest.mark.unit
def test_each_metric_gives_its_own_figure():
    measured = SimpleNamespace(qps=1000.0, cpu_qps=1500.0)
    stored = SimpleNamespace(qps_center=990.0, simulated={"instructions": 41_000.0})
    assert (WALL.rate(measured), CPU.rate(measured), SIMULATED.rate(measured)) == (1000.0, 1500.0, None)
    assert (WALL.stored(stored), SIMULATED.stored(stored)) == (990.0, 41_000.0)
    assert SIMULATED.stored(SimpleNamespace(qps_center=1.0, simulated=None)) is None  # not counted in that run


@pytest.mark.unit
def test_work_is_not_speed():
    assert SIMULATED.work and SIMULATED.deterministic and SIMULATED.trees
    assert not WALL.work and not WALL.deterministic and not WALL.trees
    assert SIMULATED.regression(0.05) and not SIMULATED.regression(-0.05)  # more work is the regression ...
    assert WALL.regression(-0.05) and not WALL.regression(0.05)  # ... less speed is
    assert (WALL.said, CPU.said) == ("", " (cpu)")  # the headline goes unnamed beside its verdict
    assert (WALL.label, CPU.label) == ("wall clock", "CPU time")


@pytest.mark.unit
def test_a_name_is_resolved_once_or_refused_in_one_line():
    assert named("simulated") is SIMULATED and named("wall", lambda m: m.bisects) is WALL
    assert [m.name for m in among(lambda m: m.bisects)] == ["wall", "simulated"]
    with pytest.raises(UserError) as err:
        named("cycles", lambda m: m.series)
    assert str(err.value) == "--metric: expected one of wall, simulated, got 'cycles'"
    with pytest.raises(UserError, match="expected one of wall, simulated, got 'cpu'"):
        named("cpu", lambda m: m.bisects)  # a verdict's metric, never a bisect's
    assert set(METRICS) == {"wall", "cpu", "simulated"}


@pytest.mark.unit
def test_a_bisect_path_writes_the_name_and_reads_the_object(tmp_path):
    settings = StepSettings("postgres", "point-query", 0.02, 5.0, 1.0, 120.0, metric=SIMULATED)
    result = BisectResult(["13.23", "17.0"], [Step(1, "17.0", 1, Judgement("same", metric=CPU))], metric=SIMULATED)
    write_path(tmp_path, BisectPath(settings, result))
    text = (tmp_path / "bisect.json").read_text()
    assert '"metric": "simulated"' in text and '"metric": "cpu"' in text
    back = read_path(tmp_path)
    assert back is not None and back.settings.metric is SIMULATED and back.result.metric is SIMULATED
    assert back.result.steps[0].judgement.metric is CPU
    assert back.describe().endswith("by simulated work")
    (tmp_path / "bisect.json").write_text(text.replace('"metric": "cpu"', '"metric": "cycles"'))
    with pytest.raises(UserError, match=r"not a bisect path .*got 'cycles'"):
        read_path(tmp_path)
