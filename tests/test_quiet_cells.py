"""Quiet cells: the cpus key, pinning, and the noise sensors' arithmetic on fixed /proc/stat samples."""

from __future__ import annotations

import os
import subprocess

import pytest

from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.host.cpus import CpuPlan, parse_cpu_list, pinned, plan_cpus
from dbperf.host.noise import CLK_TCK, Sample, read_proc_stat, sensors
from dbperf.records import CellRecord, results_record

pytestmark = pytest.mark.unit

STAT = """cpu  {u} 0 {s} 1000 0 0 0 {st} 0 0
cpu0 {u0} 0 {s0} 500 0 0 0 {st0} 0 0
cpu1 {u1} 0 {s1} 500 0 0 0 0 0 0
intr 1 2 3
"""


def _sample(at: float, u0: int, s0: int, st0: int, u1: int, s1: int, self_s: float = 0.0) -> Sample:
    text = STAT.format(u=u0 + u1, s=s0 + s1, st=st0, u0=u0, s0=s0, st0=st0, u1=u1, s1=s1)
    return Sample(at, read_proc_stat(text), self_s)


def test_foreign_cpu_is_busy_time_minus_the_labs():
    # Over 2 s: CPU 0 was busy 1.6 s (the lab used 1.0 s of it), CPU 1 busy 2 s (none of it the lab's).
    start = _sample(0.0, 0, 0, 0, 0, 0)
    end = _sample(2.0, int(1.2 * CLK_TCK), int(0.4 * CLK_TCK), int(0.1 * CLK_TCK), int(2 * CLK_TCK), 0,
                  self_s=0.0)
    s = sensors(start, end, {0}, lab_cpu_s=1.0)
    assert s.foreign_cpu == pytest.approx(0.3) and s.lab_cpu == pytest.approx(0.5)
    assert s.host_foreign_cpu == pytest.approx((3.6 - 1.0) / 2)
    assert s.steal == pytest.approx(0.1 / 1.7, abs=1e-3) and s.interfered  # 0.3 CPU > 0.25, steal 5.9% > 5%
    quiet = sensors(start, _sample(2.0, int(1.0 * CLK_TCK), int(0.1 * CLK_TCK), 0, 0, 0), {0}, lab_cpu_s=1.0)
    assert quiet.foreign_cpu == pytest.approx(0.05) and not quiet.interfered


def test_noise_is_stored_with_the_cell_and_old_lines_still_read():
    old = {"target": "a", "benchmark": "point-query", "threads": 1, "repeat": 1, "status": "failed", "error": "x"}
    rec = results_record(old)
    assert isinstance(rec, CellRecord) and rec.noise is None and rec.position is None
    new = results_record({**old, "position": 2, "noise": {"window_s": 1.0, "cpus": [0], "steal": 0.0,
                                                          "foreign_cpu": 0.4, "interfered": True}})
    assert isinstance(new, CellRecord) and new.noise is not None and new.noise.interfered and new.position == 2


def test_cpu_plan_defaults_and_checks(write_experiment):
    allowed = sorted(os.sched_getaffinity(0))
    auto = plan_cpus(None)
    if len(allowed) >= 2:
        assert auto == CpuPlan(frozenset({allowed[0]}), frozenset({allowed[1]}), "auto")
        assert auto.for_driver(True, 1) == {allowed[0]} and auto.for_driver(True, 4) == {allowed[0], allowed[1]}
        assert auto.for_driver(False, 4) == {allowed[0]}
    assert plan_cpus("off").client is None
    body = '[run]\nbenchmarks = ["point-query"]\ncpus = {cpus}\n[[target]]\nname = "a"\n'
    e = parse_experiment(write_experiment(body.format(cpus=f'{{ client = "{allowed[0]}" }}')))
    assert e.cpus.client == {allowed[0]} and e.cpus.server is None and e.cpus.how == "experiment"
    for bad, message in (('{ client = "x" }', "expected CPUs"), ('{ client = "4096" }', "CPU 4096 is not one"),
                         ('"on"', "expected { client"), ('{ driver = "0" }', "expected { client")):
        with pytest.raises(UserError, match=message):
            parse_experiment(write_experiment(body.format(cpus=bad)))


def test_cpus_are_planned_for_the_cpus_given_not_only_this_processs():
    # A fleet host's CPUs are asked there and may be none of this process's: planning takes them as an argument.
    assert plan_cpus(None, allowed=frozenset({0})) == CpuPlan(None, None, "off: one CPU")
    assert plan_cpus(None, allowed=frozenset({5, 2, 7})) == CpuPlan(frozenset({2}), frozenset({5}), "auto")
    assert plan_cpus("off", allowed=frozenset({2, 5})) == CpuPlan(None, None, "off")
    explicit = {"client": "3", "server": "0-1"}
    assert plan_cpus(explicit, allowed=frozenset({0, 1, 3})) == CpuPlan(frozenset({3}), frozenset({0, 1}),
                                                                        "experiment")
    assert parse_cpu_list("2,4-5", "x", frozenset({2, 4, 5, 9})) == {2, 4, 5}
    with pytest.raises(UserError) as refused:
        plan_cpus(explicit, "host 'h2': [run].cpus", frozenset({0}))
    assert str(refused.value) == "host 'h2': [run].cpus.client: CPU 3 is not one this process may use (allowed: 0)"


def test_a_child_started_while_pinned_inherits_the_cpus():
    cpu = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    with pinned(frozenset({cpu})):
        proc = subprocess.run(["grep", "Cpus_allowed_list", "/proc/self/status"], capture_output=True, text=True)
    assert proc.stdout.split()[-1] == str(cpu)
    assert os.sched_getaffinity(0) == before
