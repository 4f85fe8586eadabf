"""Duet runs (`order = "duet"`, orders/duet_rounds.py): the plan and its fallbacks (unit), and two real SQLite drivers
released together on two CPUs, their records and the per-duet pairing the stopping rule sees (e2e)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.host import driver
from dbperf.host.cpus import CpuPlan
from dbperf.records import DriverJob
from dbperf.runner import matrix
from dbperf.runner.estimate import estimate
from dbperf.runner.orders.base import CELL_OVERHEAD_S
from dbperf.runner.orders.duet_rounds import Side, plan_duets, run_together
from dbperf.runner.plan import RunPlan
from dbperf.runner.targets import build_targets
from tests.conftest import DBPERF, REPO, run_cli

TWO_CPUS = CpuPlan(frozenset({0}), frozenset({1}), "auto")

DUET = """
[run]
benchmarks = ["point-query", "update-index"]
table_size = 1000
time = "0.3s"
warmup = "0.1s"
repeats = 2
order = "duet"
aa = true

[[target]]
name = "wal"
config = { journal_mode = "WAL", synchronous = "NORMAL" }

[[target]]
name = "wal2"
config = { journal_mode = "WAL", synchronous = "NORMAL", cache_size = -4000 }
"""


def _parsed(write_experiment, text: str = DUET, cpus: CpuPlan = TWO_CPUS):
    return replace(parse_experiment(write_experiment(text)), cpus=cpus)


@pytest.mark.unit
def test_duet_rounds_pair_the_base_with_each_target_and_alternate_cpus(write_experiment):
    e = _parsed(write_experiment)
    cells = list(RunPlan.of(e).cells())
    assert len(cells) == RunPlan.of(e).cell_count() == 2 * 2 * 2 * 2  # benchmarks × rounds × duets × sides
    keys = [c.key for c in cells]
    assert len(set(keys)) == len(keys), "the partner tells the base's cells of one round apart"
    first = [c for c in cells if c.benchmark.name == "point-query" and c.repeat == 1]
    assert [(c.target.name, c.partner) for c in first] == [
        ("wal", "wal-aa"), ("wal-aa", "wal"), ("wal", "wal2"), ("wal2", "wal")]
    assert all(a.cpus and b.cpus and not a.cpus & b.cpus for a, b in zip(first[::2], first[1::2], strict=True))
    base_cpus = {(c.partner, c.repeat): c.cpus for c in cells if c.target.name == "wal" and c.benchmark.name ==
                 "point-query"}
    assert base_cpus[("wal2", 1)] != base_cpus[("wal2", 2)], "each target meets the base on both CPUs"
    assert base_cpus[("wal-aa", 1)] != base_cpus[("wal2", 1)], "consecutive duets of a round swap sides"


@pytest.mark.unit
@pytest.mark.parametrize(("edit", "cpus", "why"), [
    (lambda s: s, CpuPlan(None, None, "off"), 'cpus = "off"'),
    (lambda s: s, CpuPlan(None, None, "off: one CPU"), "fewer than 2 CPUs"),
    (lambda s: s + '\n[[target]]\nname = "pg"\nengine = "postgres"\n', TWO_CPUS, "'pg' is a server"),
    (lambda s: s.replace("aa = true\n", 'aa = true\nwrites = "cumulative"\n'), TWO_CPUS, "cumulative"),
])
def test_fallback_is_said_in_one_line(write_experiment, edit, cpus, why):
    e = _parsed(write_experiment, edit(DUET), cpus)
    plan = plan_duets(e)
    assert plan is not None
    note = plan.note(e.threads)
    assert note is not None and "\n" not in note and why in note and "interleaved rounds" in note
    assert plan.describe(e.threads)["used"] is False
    cells = list(RunPlan.of(e).cells())
    assert all(c.partner is None for c in cells) and len(cells) == RunPlan.of(e).cell_count()
    assert [c.target.name for c in cells[:len(e.targets) * 2]][:2] == [e.targets[0].name, e.targets[1].name]


@pytest.mark.unit
def test_more_threads_than_a_side_has_cpus_run_interleaved(write_experiment):
    e = _parsed(write_experiment, DUET.replace("repeats = 2", "repeats = 2\nthreads = [1, 2]"))
    plan = plan_duets(e)
    assert plan is not None and plan.formed(1) and not plan.formed(2)
    assert plan.describe(e.threads) == {"used": True, "interleaved_threads": [2], "cpus": [[0], [1]],
                                        "why": "threads=2: 2 client threads need more than the 1 CPU(s) of one side"}
    assert "threads=2" in (plan.note(e.threads) or "")
    cells = list(RunPlan.of(e).cells())
    assert {c.partner is not None for c in cells if c.threads == 1} == {True}
    assert {c.partner for c in cells if c.threads == 2} == {None}
    assert len(cells) == RunPlan.of(e).cell_count()


@pytest.mark.unit
def test_the_estimate_counts_a_duet_once_not_once_per_side(write_experiment, tmp_path):
    """A duet's two cells run at the same moment: a round takes one cell length per target other than the base
    (2 here, with the A/A copy), where interleaved rounds take one per target (3)."""
    e = _parsed(write_experiment)
    interleaved = replace(e, order="alternate")
    cell_s = e.time_s + e.warmup_s + CELL_OVERHEAD_S
    saved = estimate(interleaved, tmp_path).seconds - estimate(e, tmp_path).seconds
    assert saved == pytest.approx(2 * 2 * (3 - 2) * cell_s)  # benchmarks × rounds × (targets − duets)
    one_side = replace(e, cpus=CpuPlan(None, None, "off"))  # no duet formed: timed like interleaved rounds
    assert estimate(one_side, tmp_path).seconds == pytest.approx(estimate(interleaved, tmp_path).seconds)


@pytest.mark.unit
def test_steady_with_duet_is_refused(write_experiment):
    with pytest.raises(UserError, match="drop steady or the duet"):
        parse_experiment(write_experiment(DUET.replace("aa = true", "aa = true\nsteady = true")))


@pytest.mark.unit
def test_other_orders_plan_no_duet(write_experiment):
    e = _parsed(write_experiment, DUET.replace('order = "duet"', 'order = "random"'))
    plan = RunPlan.of(e)
    assert "duet" not in plan.order.describe() and all(c.partner is None for c in plan.cells())


# A stand-in for dbperf-driver that keeps the start barrier's side of the contract; the job's seed says how it
# behaves: 1 sets up and waits for the start, 2 fails its setup, 3 hangs in it.
FAKE_DRIVER = """
import json, os, sys, time
job = json.load(sys.stdin)
if job["seed"] == 2:
    sys.exit("dbperf-driver: cannot open the database")
if job["seed"] == 3:
    time.sleep(120)
fd = job["start_fd"]
os.write(fd, b"r")
if os.read(fd, 1) != b"s":
    sys.exit("dbperf-driver: the lab closed the start barrier without releasing this run")
print(json.dumps({"qps": 1.0, "eps": 1.0, "queries": 1, "errors": 0, "client_usage": {"user_us": 1.0,
    "system_us": 0.0, "voluntary_cs": 0, "involuntary_cs": 0}, "latency": {"p50_us": 1.0, "p99_us": 1.0,
    "max_us": 1.0}, "window_start_unix_s": time.time()}))
"""


def _fake_sides(tmp_path, monkeypatch, *seeds: int) -> list[Side]:
    script = tmp_path / "fake-driver"
    script.write_text(f"#!{sys.executable}\n{FAKE_DRIVER}")
    script.chmod(0o755)
    monkeypatch.setattr(driver, "driver_path", lambda: str(script))
    return [Side(DriverJob(mode="run", engine="sqlite", tables=1, table_size=1, seed=seed), {}, frozenset(), 60.0)
            for seed in seeds]


@pytest.mark.unit
def test_both_sides_are_released_together(tmp_path, monkeypatch):
    released = []
    outcomes = run_together(_fake_sides(tmp_path, monkeypatch, 1, 1), released.append)
    assert all(o.ok and o.result for o in outcomes) and all(p is not None for p in released[0])
    starts = [o.result.window_start_unix_s for o in outcomes if o.result]
    assert abs(starts[0] - starts[1]) < 0.05


@pytest.mark.unit
@pytest.mark.parametrize(("seed", "error"), [(2, "cannot open the database"), (3, "SIGKILL")])
def test_a_side_that_never_gets_ready_fails_and_its_partner_runs(tmp_path, monkeypatch, seed, error):
    released = []
    started = time.monotonic()
    good, bad = run_together(_fake_sides(tmp_path, monkeypatch, 1, seed), released.append, ready_timeout_s=2.0)
    assert good.ok and not bad.ok and error in (bad.error or "")
    assert released[0][0] is not None and released[0][1] is None
    assert time.monotonic() - started < 30, "a side hung in its setup is killed after the ready timeout"


@pytest.mark.e2e
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a duet needs two CPUs")
def test_sigterm_mid_duet_stops_both_drivers(write_experiment, tmp_path):
    text = DUET.replace('time = "0.3s"', 'time = "30s"').replace("aa = true\n", "")
    out = tmp_path / "out"
    lab = subprocess.Popen([*DBPERF, "run", str(write_experiment(text)), "--out", str(out)], cwd=REPO,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        drivers: list[int] = []
        while len(drivers) < 2 and time.monotonic() < deadline and lab.poll() is None:
            drivers = _running_cells(lab.pid)
            time.sleep(0.05)
        assert len(drivers) == 2, "the duet's two drivers never ran at once"
        lab.send_signal(signal.SIGTERM)
        _, stderr = lab.communicate(timeout=60)
        assert lab.returncode == 143, stderr
        assert json.loads((out / "meta.json").read_text())["status"] == "interrupted"
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in drivers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(p) for p in drivers), "a duet driver outlived the interrupted run"
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.wait()


def _running_cells(lab: int) -> list[int]:
    """The lab's children `dbperf-driver run -`."""
    found = []
    for p in Path("/proc").iterdir():
        try:
            if not p.name.isdigit():
                continue
            ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = (p / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == lab and argv[0].endswith(b"dbperf-driver") and argv[1:2] == [b"run"]:
            found.append(int(p.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.e2e
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a duet needs two CPUs")
def test_duet_sides_start_together_on_their_own_cpus(write_experiment, tmp_path, monkeypatch):
    """In-process, so that what the stopping rule is handed (Measured) can be seen."""
    seen = []
    run_rounds = matrix.run_rounds

    def spy(state, *args, **kwargs):
        out = run_rounds(state, *args, **kwargs)
        seen.extend(out.measured)
        return out

    monkeypatch.setattr(matrix, "run_rounds", spy)
    e = parse_experiment(write_experiment(DUET))
    e, builds = build_targets(e, Console(quiet=True))
    out = tmp_path / "out"
    outcome = matrix.run_plan(RunPlan.inspected(e, builds), out, Console(quiet=True))
    assert outcome.cells_failed == 0 and outcome.cells_ok == 16

    meta = json.loads((out / "meta.json").read_text())
    assert meta["order"] == "duet" and meta["duet"]["used"] is True and meta["duet"]["why"] is None
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 16
    for base, other in zip(records[::2], records[1::2], strict=True):
        assert base["target"] == "wal" and base["partner"] == other["target"] and other["partner"] == "wal"
        assert base["repeat"] == other["repeat"] and base["position"] == other["position"]
        starts = [r["result"]["window_start_unix_s"] for r in (base, other)]
        assert abs(starts[0] - starts[1]) < 0.05, f"windows opened {abs(starts[0] - starts[1]):.3f} s apart"
        affinity = [r["result"]["process"]["cpus"] for r in (base, other)]
        assert affinity == [base["cpus"], other["cpus"]] and len(affinity[0]) == 1 and affinity[0] != affinity[1]
        assert base["noise"]["cpus"] == base["cpus"], "a side's sensors watch its own CPU, not its partner's"
    wal_cpus = {(r["benchmark"], r["partner"], r["repeat"]): tuple(r["cpus"]) for r in records
                if r["target"] == "wal"}
    assert wal_cpus[("point-query", "wal2", 1)] != wal_cpus[("point-query", "wal2", 2)]

    assert len(seen) == 16
    for m in seen:
        assert m.qps and m.qps > 0 and m.cpu_qps and m.cpu_qps > 0
        assert m.partner == "wal" if m.target != "wal" else m.partner in ("wal-aa", "wal2")
    base_partners = sorted((m.round, m.partner) for m in seen if m.target == "wal")
    assert base_partners == [(1, "wal-aa"), (1, "wal-aa"), (1, "wal2"), (1, "wal2"),
                             (2, "wal-aa"), (2, "wal-aa"), (2, "wal2"), (2, "wal2")]


@pytest.mark.e2e
def test_duet_fallback_is_said_once_and_recorded(write_experiment, tmp_path):
    text = DUET.replace('order = "duet"', 'order = "duet"\ncpus = "off"').replace("repeats = 2", "repeats = 1")
    text = text.replace('["point-query", "update-index"]', '["point-query"]')
    out = tmp_path / "out"
    proc = run_cli("run", str(write_experiment(text)), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if 'order = "duet"' in x]
    assert len(lines) == 1 and 'cpus = "off"' in lines[0] and "interleaved rounds" in lines[0]
    meta = json.loads((Path(out) / "meta.json").read_text())
    assert meta["duet"]["used"] is False and 'cpus = "off"' in meta["duet"]["why"]
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["target"] for r in records] == ["wal", "wal-aa", "wal2"] and all("partner" not in r for r in records)
