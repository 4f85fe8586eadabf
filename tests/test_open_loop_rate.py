"""An open-loop rate below one event in a cell's measured time (issue 45): `rate = 1e-300` ran an unthrottled closed
loop (the driver's gap between events overflowed to infinity, every event came due at once) while meta.json said
open loop at that rate. Refused in one line when the experiment is read, by a run and by its dry run."""

from __future__ import annotations

import pytest

from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from tests.conftest import run_cli
from tests.test_run_out_and_signals import one_error_line

pytestmark = pytest.mark.unit

EXP = """
[run]
benchmarks = ["point-query"]
table_size = 1000
time = "{time}"
warmup = "0.1s"
repeats = 1
rate = {rate}

[[target]]
name = "a"
"""


@pytest.mark.parametrize("extra", [(), ("--dry-run",)])
def test_a_rate_below_one_event_in_the_cell_is_refused_before_anything_runs(write_experiment, tmp_path, extra):
    out = tmp_path / "out"
    line = one_error_line(run_cli("run", str(write_experiment(EXP.format(rate="1e-300", time="0.2s"))),
                                  "--out", str(out), *extra))
    assert "[run].rate: 1e-300 events/s is less than one event in a cell's measured time (time = 0.2 s)" in line
    assert "ask for at least 5 events/s, or drop rate for a closed loop" in line
    assert not out.exists()


@pytest.mark.parametrize(("rate", "time"), [("5e-324", "10s"), ("0.05", "10s"), ("4.9", "0.2s")])
def test_any_rate_below_one_event_in_the_cell_is_refused(write_experiment, rate, time):
    with pytest.raises(UserError, match=r"\[run\]\.rate: .* less than one event in a cell's measured time"):
        parse_experiment(write_experiment(EXP.format(rate=rate, time=time)))


@pytest.mark.parametrize(("rate", "time"), [("0.1", "10s"), ("5", "0.2s"), ("1", "1s")])
def test_one_event_in_the_cell_is_enough(write_experiment, rate, time):
    e = parse_experiment(write_experiment(EXP.format(rate=rate, time=time)))
    assert e.load.open_loop and e.load.rate == float(rate)


def test_the_check_names_the_smallest_rate_it_takes(write_experiment):
    with pytest.raises(UserError, match=r"ask for at least 0\.1 events/s"):
        parse_experiment(write_experiment(EXP.format(rate="0.01", time="10s")))
