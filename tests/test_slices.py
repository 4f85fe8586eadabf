"""Slices runs (`order = "slices"`, orders/slice_rounds.py, driver/src/slices.rs): what the experiment refuses, the
plan, the estimate, the library copies, the one driver job of a round and the record's `slices` field (unit), and a
real run of two SQLite targets taking turns in one driver process (e2e)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from dbperf.errors import UserError
from dbperf.experiment.model import default_sqlite_library
from dbperf.experiment.spec import parse_experiment
from dbperf.host.remedies import AppliedRemedies
from dbperf.records import CellRecord, DriverJob, RunResult, SlicesResult, SlicesSide, encode, results_line
from dbperf.runner.cell_plan import CellPlan
from dbperf.runner.cell_run import CellRun
from dbperf.runner.estimate import estimate
from dbperf.runner.orders.base import CELL_OVERHEAD_S
from dbperf.runner.orders.slice_rounds import own_libraries, slices_job
from dbperf.runner.plan import RunPlan
from tests.conftest import run_cli
from tests.refusal import assert_refused

SLICES = """
[run]
benchmarks = ["point-query"]
table_size = 1000
time = "0.5s"
warmup = "0.2s"
repeats = 2
order = "slices"
aa = true

[[target]]
name = "wal"
config = { journal_mode = "WAL", synchronous = "NORMAL" }
"""
SERVER = """
[[target]]
name = "pg"
engine = "postgres"
dsn = "postgresql://bench@127.0.0.1:5432/bench"
"""


@pytest.mark.unit
@pytest.mark.parametrize(("edit", "says"), [
    (lambda t: t + SERVER, "all SQLite libraries or all servers; 'wal' is SQLite and 'pg' a PostgreSQL server"),
    (lambda t: t.replace("aa = true", "aa = true\nsteady = true"), "drop steady or the slices"),
    (lambda t: t.replace("aa = true", "aa = true\nrate = 1000"), "drop rate or the slices"),
    (lambda t: t.replace('order = "slices"', 'slice = "0.2s"'), "slice: only with order = \"slices\""),
    (lambda t: t.replace("aa = true", 'aa = true\nslice = "0.5ms"'), "slice: at least 1 ms"),
    (lambda t: t + '\n[[target]]\nname = "off"\nhugepages = "off"\n',
     "target 'off': order = \"slices\" runs every target in one driver process, so its setup must be that of target "
     "'wal' (process the default"),
    (lambda t: t + '\n[[target]]\nname = "noaslr"\nremedies = ["aslr-off"]\n', "remedies on the process aslr-off"),
    (lambda t: t.replace('order = "slices"', "turn_checkpoint = true"),
     "[run].turn_checkpoint: only with order = \"slices\" (order is 'alternate')"),
    (lambda t: t.replace("aa = true", "aa = true\nturn_checkpoint = true").replace(
        'name = "wal"\nconfig = { journal_mode = "WAL", synchronous = "NORMAL" }', SERVER.split("\n", 2)[2]),
     "[run].turn_checkpoint: checkpoints a SQLite target's WAL in its own turns; a server checkpoints on its own"),
])
def test_what_slices_cannot_do_is_refused_in_one_line(write_experiment, edit, says):
    with pytest.raises(UserError) as err:
        parse_experiment(write_experiment(edit(SLICES)))
    assert says in str(err.value) and "\n" not in str(err.value) and "''" not in str(err.value)


@pytest.mark.unit
@pytest.mark.parametrize(("edit", "says"), [
    (lambda t: t.replace('time = "0.5s"', 'time = "1s"\nslice = "10s"'), "slice = 10 s is not shorter than time = 1 s"),
    (lambda t: t.replace('time = "0.5s"', 'time = "1s"\nslice = "1s"'), "slice = 1 s is not shorter than time = 1 s"),
    (lambda t: t.replace('time = "0.5s"', 'time = "0.01s"'), "slice = 0.02 s (the default) is not shorter than time"),
])
def test_a_slice_as_long_as_the_time_is_refused_before_anything_runs(write_experiment, tmp_path, edit, says):
    """A turn as long as a target's whole time: each target would run one block a round and the targets would never
    take turns, while every record said slice_s."""
    out = tmp_path / "out"
    line = assert_refused(run_cli("run", str(write_experiment(edit(SLICES))), "--out", str(out)), 2, says, out)
    assert "never take turns" in line, line
    assert parse_experiment(write_experiment(SLICES.replace('time = "0.5s"', 'time = "1s"\nslice = "0.5s"'))
                            ).slice_s == 0.5  # shorter: taken


@pytest.mark.unit
def test_a_remedy_on_a_targets_own_data_is_not_the_process(write_experiment):
    """warm-file acts on the target's own file before the process starts: it may differ between targets."""
    e = parse_experiment(write_experiment(SLICES + '\n[[target]]\nname = "warm"\nremedies = ["warm-file"]\n'))
    assert e.order == "slices" and e.slice_s == 0.02 and [t.name for t in e.targets] == ["wal", "wal-aa", "warm"]


@pytest.mark.unit
def test_a_slices_round_is_one_unit_of_every_target_whose_first_alternates(write_experiment):
    e = parse_experiment(write_experiment(SLICES.replace("aa = true", 'aa = true\nslice = "50ms"')))
    assert e.slice_s == 0.05
    plan = RunPlan.of(e)
    rounds = [plan.order.round_cells(e.benchmarks[0], 1, r) for r in (1, 2)]
    assert [len(units) for units in rounds] == [1, 1]
    assert [[(c.target.name, c.position) for c in units[0]] for units in rounds] == [
        [("wal", 1), ("wal-aa", 2)], [("wal-aa", 1), ("wal", 2)]]
    assert plan.cell_count() == len(list(plan.cells())) == 2 * 2  # rounds × targets: a record per side


@pytest.mark.unit
def test_the_estimate_counts_a_slices_round_once(write_experiment, tmp_path):
    """A slices round is one process of targets × (warmup + time), with the lab's overhead once, where interleaved
    rounds pay it once per target."""
    e = parse_experiment(write_experiment(SLICES))
    interleaved = replace(e, order="alternate")
    saved = estimate(interleaved, tmp_path).seconds - estimate(e, tmp_path).seconds
    assert saved == pytest.approx(2 * (2 - 1) * CELL_OVERHEAD_S)  # rounds × (targets − 1) overheads
    assert estimate(e, tmp_path).seconds > 2 * 2 * (e.time_s + e.warmup_s)


@pytest.mark.unit
def test_targets_sharing_a_library_file_each_load_a_copy(write_experiment, tmp_path):
    shared = tmp_path / "libshared.so"
    shared.write_bytes(b"not really a library")
    alias = tmp_path / "alias.so"
    alias.symlink_to(shared)
    own = tmp_path / "libown.so"
    own.write_bytes(b"another")
    e = parse_experiment(write_experiment(SLICES))
    a, b = e.targets
    targets = [replace(a, library=str(shared)), replace(b, library=str(alias)),
               replace(a, name="own", library=str(own))]
    libraries = own_libraries(targets, tmp_path / "data")
    assert libraries["own"] == str(own), "a file of its own is loaded where it is"
    copies = [Path(libraries["wal"]), Path(libraries["wal-aa"])]
    assert all(tmp_path / "data" in p.parents and p.read_bytes() == shared.read_bytes() for p in copies)
    assert os.stat(copies[0]).st_ino != os.stat(copies[1]).st_ino


def _runs(e, edit=lambda i, job: job) -> list[CellRun]:
    """A round's prepared cells as prepare_cell makes them, each job edited by `edit(side, job)`."""
    runs = []
    for i, target in enumerate(e.targets):
        job = DriverJob(mode="run", engine="sqlite", tables=1, table_size=10, library=target.library,
                        database=f"/d/{i}.db", settings=[("journal_mode", "WAL")], time_s=0.5)
        place = AppliedRemedies({}, (), frozenset({0}), {}, {})
        runs.append(CellRun(CellPlan(e.benchmarks[0], 1, 1, target, i + 1), edit(i, job), {}, frozenset({0}), place,
                            None, None, 1.0))
    return runs


@pytest.mark.unit
def test_a_rounds_sides_make_one_job_or_are_refused_naming_the_target(write_experiment):
    e = parse_experiment(write_experiment(SLICES))
    libraries = {"wal": "/copies/wal.so", "wal-aa": "/copies/wal-aa.so"}
    job, env = slices_job(e, _runs(e), libraries)
    assert (job.library, job.database, job.settings, job.slice_s, env) == ("", "", [], 0.02, {})
    assert [(s.library, s.database) for s in job.slices or []] == [("/copies/wal.so", "/d/0.db"),
                                                                  ("/copies/wal-aa.so", "/d/1.db")]
    assert not job.turn_checkpoint, "the run does not ask for it"
    differing = _runs(e, lambda i, job: job.replace(thp_disable=i == 1))
    with pytest.raises(UserError, match="target 'wal-aa' shares one driver process with 'wal', but its driver "
                                        "job's thp_disable differs"):
        slices_job(e, differing, libraries)


@pytest.mark.unit
def test_turn_checkpoint_goes_to_the_driver_for_writing_cells_only(write_experiment):
    """A read cell's WAL stays empty: only a cell whose benchmark writes asks the driver for turn checkpoints."""
    body = SLICES.replace("aa = true", "aa = true\nturn_checkpoint = true").replace(
        '["point-query"]', '["point-query", "update-index"]')
    e = parse_experiment(write_experiment(body))
    assert e.turn_checkpoint
    libraries = {"wal": "/copies/wal.so", "wal-aa": "/copies/wal-aa.so"}
    asked = {}
    for benchmark in e.benchmarks:
        runs = [replace(run, cell=replace(run.cell, benchmark=benchmark)) for run in _runs(e)]
        asked[benchmark.name] = slices_job(e, runs, libraries)[0].turn_checkpoint
    assert asked == {"point-query": False, "update-index": True}
    sent = msgspec.json.decode(encode(slices_job(e, [replace(r, cell=replace(r.cell, benchmark=e.benchmarks[1]))
                                                     for r in _runs(e)], libraries)[0]))
    assert sent["turn_checkpoint"] is True


DRIVER_SIDE = {"qps": 100.0, "eps": 100.0, "queries": 50, "errors": 0, "events": 50, "duration_s": 0.5,
               "latency": {"p50_us": 1.0, "p99_us": 2.0, "max_us": 3.0},
               "client_usage": {"user_us": 1.0, "system_us": 0.0, "voluntary_cs": 0, "involuntary_cs": 0}}


@pytest.mark.unit
def test_a_slices_result_and_its_records_read_and_older_records_still_do():
    result = msgspec.convert({"slice_s": 0.1, "threads": 1, "duration_s": 1.0, "warmup_s": 0.4,
                              "window_start_unix_s": 1.0, "process": {},
                              "client_usage": {"user_us": 2.0, "system_us": 0.0, "voluntary_cs": 0,
                                               "involuntary_cs": 0},
                              "sides": [DRIVER_SIDE, DRIVER_SIDE]}, SlicesResult)
    assert result.qps == 100.0 and result.server_usage is None  # the process's window: every side's queries
    record = CellRecord(target="wal", benchmark="point-query", threads=1, repeat=1, status="ok",
                        result=result.sides[0], slices=SlicesSide(slice_s=0.1, sides=2, position=1,
                                                                  process="point-query/t1/r1",
                                                                  targets=["wal", "wal-aa"], pid=7))
    back = results_line(encode(record).decode())
    assert isinstance(back, CellRecord) and back.slices == record.slices
    assert result.sides[0].turns is None, "a driver from before turns"
    turns = msgspec.convert({**DRIVER_SIDE, "turns": {"spill_s": 0.004, "spill_max_s": 0.003, "spills": 1,
                                                      "turn_checkpoint": True, "checkpoints": 25,
                                                      "checkpoint_s": 0.02, "checkpoint_max_s": 0.002}}, RunResult)
    assert turns.turns is not None and (turns.turns.checkpoints, turns.turns.spills) == (25, 1)
    older = json.loads(encode(record))
    del older["slices"]
    read = results_line(json.dumps(older))
    assert isinstance(read, CellRecord) and read.slices is None


# The same run on the system SQLite (named, so the A/A copy shares its file), without the resource sampler.
TWO_SQLITES = SLICES.replace('aa = true\n', 'aa = true\nresources = false\n').replace(
    'name = "wal"\n', 'name = "sys"\nlibrary = "LIBRARY"\n')


@pytest.mark.e2e
def test_two_sqlite_targets_take_turns_in_one_driver_process(write_experiment, tmp_path):
    """The system SQLite and its A/A copy (one library file: each side loads a copy of its own), 0.02 s slices (the
    default): every record is a side of its round's one process, each side measured its own 0.5 s in 25 slices."""
    out = tmp_path / "out"
    proc = run_cli("run", str(write_experiment(TWO_SQLITES.replace("LIBRARY", default_sqlite_library()))), "--out",
                   str(out))
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["order"] == "slices" and meta["slices"]["slice_s"] == 0.02
    assert set(meta["slices"]["library_copies"]) == {"sys", "sys-aa"}
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["repeat"], r["target"], r["status"]) for r in records] == [
        (1, "sys", "ok"), (1, "sys-aa", "ok"), (2, "sys-aa", "ok"), (2, "sys", "ok")]
    for r in records:
        s, result = r["slices"], r["result"]
        assert (s["sides"], s["targets"][s["position"] - 1], s["slice_s"]) == (2, r["target"], 0.02)
        assert s["library"] and s["library"] != default_sqlite_library()
        assert result["events"] > 0 and result["interval_s"] == 0.02
        assert abs(result["duration_s"] - 0.5) < 0.1  # its own slices: time, to within one slice
        intervals = result["intervals"]
        assert len(intervals) == math.ceil(0.5 / 0.02)
        assert all(abs(iv["duration_s"] - 0.02) < 1e-6 for iv in intervals)
        assert sum(iv["events"] for iv in intervals) == result["events"]
        # its slices alternate with the other side's: every other 0.02 s of the process's window
        assert [round(iv["t_s"], 3) for iv in intervals] == [round(0.02 * (s["position"] + 2 * i), 3)
                                                               for i in range(25)]
    for repeat in (1, 2):
        sides = [r for r in records if r["repeat"] == repeat]
        assert len({r["slices"]["pid"] for r in sides}) == 1 and len({r["slices"]["library"] for r in sides}) == 2
        assert sides[0]["noise"] == sides[1]["noise"], "the shared process's window, in every side's record"


@pytest.mark.e2e
def test_a_target_that_fails_to_load_takes_every_round_down_and_every_cell_names_it(write_experiment, tmp_path):
    """In slices a round's targets share one driver process: a target whose data did not load fails every round,
    which stderr says (not "the other targets are measured"), and every cell records that target's load failure,
    not the driver's error on the side that found no tables."""
    out = tmp_path / "out"
    body = (TWO_SQLITES.replace("LIBRARY", default_sqlite_library())
            + '\n[[target]]\nname = "bad"\nconfig = { journal_mode = "NOPE" }\n')
    proc = run_cli("run", str(write_experiment(body)), "--out", str(out))
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr  # no cell succeeded
    (note,) = [x for x in proc.stderr.splitlines() if "target 'bad'" in x]
    assert "takes every round down" in note and "the other targets are measured" not in note, note
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 2 * 3 and all(r["status"] == "failed" for r in records)
    for r in records:
        assert r["error"].startswith("target 'bad': loading the tables") and "journal_mode" in r["error"], r
        assert "no such table" not in r["error"]
        assert ("one driver process" in r["error"]) == (r["target"] != "bad"), r


@pytest.mark.e2e
def test_two_writing_sqlite_targets_each_checkpoint_in_their_own_turns(write_experiment, tmp_path):
    """turn_checkpoint on a write benchmark: every side's record says its own turn checkpoints (at most one per
    measured slice: 0.2 s of 0.02 s slices) and the time its events ran into the other target's slices; a read
    benchmark's sides ran none."""
    body = (TWO_SQLITES.replace("LIBRARY", default_sqlite_library())
            .replace('["point-query"]', '["point-query", "update-index"]').replace("repeats = 2", "repeats = 1")
            .replace('time = "0.5s"', 'time = "0.2s"').replace("aa = true", "aa = true\nturn_checkpoint = true"))
    out = tmp_path / "out"
    proc = run_cli("run", str(write_experiment(body)), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "meta.json").read_text())["slices"]["turn_checkpoint"] is True
    assert "dbperf: turn_checkpoint: in the write cells each target's WAL is checkpointed" in proc.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted((r["benchmark"], r["target"]) for r in records) == [
        ("point-query", "sys"), ("point-query", "sys-aa"), ("update-index", "sys"), ("update-index", "sys-aa")]
    for r in records:
        turns = r["result"]["turns"]
        assert r["status"] == "ok" and turns["spill_s"] >= turns["spill_max_s"] >= 0, r
        if r["benchmark"] == "update-index":
            assert turns["turn_checkpoint"] and 1 <= turns["checkpoints"] <= 10, turns
            assert turns["checkpoint_s"] >= turns["checkpoint_max_s"] > 0, turns
        else:
            assert (turns["turn_checkpoint"], turns["checkpoints"], turns["checkpoint_s"]) == (False, 0, 0.0)
