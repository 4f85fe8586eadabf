"""Slices runs of server targets (`order = "slices"` with PostgreSQL, MariaDB or MySQL targets; orders/slice_rounds.py,
driver/src/slices.rs): what the experiment refuses, the one driver job of a round (each server side's password in a
variable of its own, never in the job), the sides' server usage and resources (unit), and a real run of two
PostgreSQL servers taking turns in one driver process (server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.host.remedies import AppliedRemedies
from dbperf.records import DriverJob, SlicesResult, Usage, encode
from dbperf.runner.cell_plan import CellPlan
from dbperf.runner.cell_run import CellRun
from dbperf.runner.orders.slice_rounds import own_libraries, slices_job
from dbperf.servers.lifecycle import PASSWORD_ENV
from dbperf.targets.resources import NOT_THIS_SIDES, SLICES_SERVER_METHOD, CellSampler
from tests.conftest import NEEDS_SERVERS, run_cli

# Two PostgreSQL servers of the same binaries under two names: an A/A pair of servers.
TWO_SERVERS = """
[run]
benchmarks = ["point-query", "update-index"]
table_size = 2000
time = "0.5s"
warmup = "0.2s"
repeats = 2
order = "slices"

[[target]]
name = "pg-a"
engine = "postgres"
config = { shared_buffers = "32MB" }

[[target]]
name = "pg-b"
engine = "postgres"
config = { shared_buffers = "32MB" }
"""
MARIADB = '\n[[target]]\nname = "maria"\nengine = "mariadb"\n'
# The same event in every engine but MariaDB's (a dialect of its own): a slices process runs one SQL on every side.
DIALECT = """name = "dialect-point"
[[statement]]
sql = "SELECT c FROM sbtest{table} WHERE id = {id}"
dialect = { mariadb = "SELECT c FROM sbtest{table} WHERE id = {id} LIMIT 1" }
params.id = { gen = "uniform" }
"""


@pytest.mark.unit
@pytest.mark.parametrize(("edit", "says"), [
    (lambda t: t + '\n[[target]]\nname = "lite"\n',
     "all SQLite libraries or all servers; 'pg-a' is a PostgreSQL server and 'lite' SQLite"),
    (lambda t: t.replace('name = "pg-b"\n', 'name = "pg-b"\ndriver = "pgbench"\n'),
     "target 'pg-b': order = \"slices\" runs every target from the lab's driver; pgbench runs its cells"),
    (lambda t: t.replace("order = \"slices\"", "order = \"slices\"\nsteady = true"), "drop steady or the slices"),
    (lambda t: t.replace("order = \"slices\"", "order = \"slices\"\nrate = 100"), "drop rate or the slices"),
    (lambda t: t.replace('name = "pg-b"\n', 'name = "pg-b"\nhugepages = "off"\n'),
     "target 'pg-b': order = \"slices\" runs every target in one driver process, so its setup must be that of "
     "target 'pg-a' (hugepages not 'off'), not hugepages = 'off', which the driver takes too"),
    (lambda t: t.replace('engine = "postgres"\n', 'engine = "postgres"\ndsn = "postgresql://bench@127.0.0.1/b"\n'),
     "target 'pg-b': order = \"slices\" would measure one server twice in one process: 'pg-a' names the same dsn"),
])
def test_what_slices_of_servers_cannot_do_is_refused_in_one_line(write_experiment, edit, says):
    with pytest.raises(UserError) as err:
        parse_experiment(write_experiment(edit(TWO_SERVERS)))
    assert says in str(err.value) and "\n" not in str(err.value)


@pytest.mark.unit
def test_a_replication_run_is_not_sliced(write_experiment):
    text = ('[run]\nbenchmarks = ["update-index"]\norder = "slices"\n[replication]\n'
            '[[target]]\nname = "maria"\nengine = "mariadb"\n')
    with pytest.raises(UserError, match=r"\[replication\]: the replication lab runs its own cells, not order = "
                                        r"\"slices\" rounds"):
        parse_experiment(write_experiment(text))


@pytest.mark.unit
def test_servers_of_different_engines_share_a_process_only_where_their_sql_is_one(write_experiment, tmp_path):
    """PostgreSQL and MariaDB run one point-query; a workload whose MariaDB SQL is its own is refused by name."""
    e = parse_experiment(write_experiment(TWO_SERVERS + MARIADB))
    assert [t.engine for t in e.targets] == ["postgres", "postgres", "mariadb"]
    (tmp_path / "dialect-point.toml").write_text(DIALECT)
    text = TWO_SERVERS.replace('["point-query", "update-index"]', '["dialect-point.toml"]') + MARIADB
    with pytest.raises(UserError, match="target 'maria': order = \"slices\" runs one workload on every side; "
                                        "'dialect-point' is not the same SQL for MariaDB as for PostgreSQL"):
        parse_experiment(write_experiment(text))


@pytest.mark.unit
def test_a_servers_allocator_is_its_own_and_may_differ(write_experiment):
    e = parse_experiment(write_experiment(TWO_SERVERS.replace('name = "pg-b"\n',
                                                              'name = "pg-b"\nallocator = "jemalloc"\n')))
    assert [t.process.allocator for t in e.targets] == [None, "jemalloc"]


@pytest.mark.unit
def test_servers_load_no_library_copy(write_experiment, tmp_path):
    e = parse_experiment(write_experiment(TWO_SERVERS))
    assert own_libraries(e.targets, tmp_path / "data") == {t.name: t.library for t in e.targets}
    assert not (tmp_path / "data").exists()


def _server_runs(e: Any, edit=lambda i, job: job, env=lambda i: {}) -> list[CellRun]:
    """A round's prepared cells as prepare_cell makes them for lab servers: each its DSN, server pid and password."""
    runs = []
    for i, target in enumerate(e.targets):
        job = DriverJob(mode="run", engine=target.engine, tables=1, table_size=2000, time_s=0.5,
                        dsn=f"postgresql://dbperf@127.0.0.1:{5400 + i}/sbtest", server_pid=100 + i)
        place = AppliedRemedies({}, (), frozenset({0}), {}, {})
        runs.append(CellRun(CellPlan(e.benchmarks[0], 1, 1, target, i + 1), edit(i, job),
                            {PASSWORD_ENV: f"secret-{i}", **env(i)}, None, place, None, None, 1.0))
    return runs


@pytest.mark.unit
def test_a_rounds_servers_make_one_job_each_password_in_a_variable_of_its_own(write_experiment):
    e = parse_experiment(write_experiment(TWO_SERVERS))
    job, env = slices_job(e, _server_runs(e), {})
    assert (job.engine, job.dsn, job.server_pid, job.library, job.database) == ("postgres", None, None, "", "")
    assert [(s.engine, s.dsn, s.server_pid, s.password_env) for s in job.slices or []] == [
        ("postgres", "postgresql://dbperf@127.0.0.1:5400/sbtest", 100, "DBPERF_PASSWORD_1"),
        ("postgres", "postgresql://dbperf@127.0.0.1:5401/sbtest", 101, "DBPERF_PASSWORD_2")]
    assert env == {"DBPERF_PASSWORD_1": "secret-0", "DBPERF_PASSWORD_2": "secret-1"}
    sent = encode(job).decode()
    assert "secret" not in sent, "a password travels in the environment only"
    assert all(set(side) == {"engine", "dsn", "server_pid", "password_env"}
               for side in json.loads(sent)["slices"]), "a server side names no library, database or settings"


@pytest.mark.unit
@pytest.mark.parametrize(("edit", "env", "says"), [
    (lambda i, job: job.replace(prepared=i == 0), lambda i: {}, "its driver job's prepared differs"),
    (lambda i, job: job, lambda i: {"LD_PRELOAD": "x.so"} if i else {}, "its environment differs"),
])
def test_servers_whose_driver_process_would_differ_are_refused_naming_the_target(write_experiment, edit, env, says):
    e = parse_experiment(write_experiment(TWO_SERVERS))
    with pytest.raises(UserError, match=f"target 'pg-b' shares one driver process with 'pg-a', but {says}"):
        slices_job(e, _server_runs(e, edit, env), {})


SIDE = {"qps": 100.0, "eps": 100.0, "queries": 50, "errors": 0, "events": 50, "duration_s": 0.5,
        "latency": {"p50_us": 1.0, "p99_us": 2.0, "max_us": 3.0},
        "client_usage": {"user_us": 1.0, "system_us": 0.0, "voluntary_cs": 0, "involuntary_cs": 0}}


def _usage(cpu_us: float) -> dict[str, Any]:
    return {"user_us": cpu_us, "system_us": 1.0, "voluntary_cs": 2, "involuntary_cs": 1}


@pytest.mark.unit
def test_each_side_has_its_own_servers_usage_and_the_process_all_of_them():
    result = msgspec.convert({"slice_s": 0.02, "threads": 1, "duration_s": 1.0, "warmup_s": 0.4,
                              "window_start_unix_s": 1.0, "process": {}, "client_usage": _usage(5.0),
                              "sides": [{**SIDE, "server_usage": _usage(10.0), "server_processes": 3},
                                        {**SIDE, "server_usage": _usage(20.0), "server_processes": 4}]},
                             SlicesResult)
    assert [s.server_usage.user_us for s in result.sides if s.server_usage] == [10.0, 20.0]
    # what the noise sensors count as the lab's own: every server over the window
    assert result.server_usage == Usage(user_us=30.0, system_us=2.0, voluntary_cs=4, involuntary_cs=2)
    sqlite = msgspec.convert({**msgspec.to_builtins(result), "sides": [SIDE, SIDE]}, SlicesResult)
    assert sqlite.server_usage is None


class _Server:
    """A lab server as the sampler sees it before it samples: its facts only."""

    def describe(self) -> dict[str, Any]:
        return {"server_pid": 4242, "data_dir": None}


@pytest.mark.unit
def test_a_server_sides_resources_are_its_own_servers_per_its_own_queries(write_experiment):
    e = parse_experiment(write_experiment(TWO_SERVERS))
    sampler = CellSampler(e, e.targets[0], _Server())
    sampler.slices_side()
    sampler.method = SLICES_SERVER_METHOD
    io = {"read_bytes": 0, "write_bytes": 0, "rchar": 0, "wchar": 0}
    sampler.samples = [{"t": 0.0, "server": {4242: io}, "counters": {"xact_commit": 10.0}},
                       {"t": 1.0, "server": {4242: {**io, "write_bytes": 8192}}, "counters": {"xact_commit": 60.0}}]
    result = msgspec.convert({"slice_s": 0.02, "threads": 1, "duration_s": 1.0, "warmup_s": 0.4,
                              "window_start_unix_s": 1.0, "process": {}, "client_usage": _usage(5.0),
                              "sides": [SIDE, SIDE]}, SlicesResult)
    r = sampler.resources(result, queries=50)
    assert r is not None and r.queries == 50 and r.method == SLICES_SERVER_METHOD
    assert r.server_io is not None and r.server_io.write_bytes == 8192 and r.engine_counters == {"xact_commit": 50.0}
    assert r.client_io is None and r.device is None
    assert {k: r.unavailable[k] for k in NOT_THIS_SIDES} == NOT_THIS_SIDES
    assert sampler.resources(result, queries=0) is None  # the side measured nothing: nothing per query


@pytest.mark.server
@NEEDS_SERVERS
def test_two_postgres_servers_take_turns_in_one_driver_process(where):
    """Two lab PostgreSQL servers of the same binaries (an A/A pair), 0.02 s slices: every record is a side of its
    round's one process, each its own server's CPU over the process's window, both about as fast."""
    exp = where / "exp.toml"
    exp.write_text(TWO_SERVERS)
    out = where / "out"
    proc = run_cli("run", str(exp), "--out", str(out), timeout=300)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["order"] == "slices" and meta["slices"] == {"slice_s": 0.02, "library_copies": {}}
    pids = {t["name"]: t["server_pid"] for t in meta["targets"]}
    assert len(set(pids.values())) == 2 and all(pids.values()), pids
    records = [json.loads(line) for line in Path(out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 2 * 2 * 2 and all(r["status"] == "ok" for r in records), [r.get("error") for r in records]
    for r in records:
        s, result = r["slices"], r["result"]
        assert (s["sides"], s["targets"][s["position"] - 1], s["position"] in (1, 2)) == (2, r["target"], True)
        assert result["events"] > 0 and result["errors"] == 0 and result["interval_s"] == 0.02
        assert result["server_usage"]["user_us"] + result["server_usage"]["system_us"] > 0
        assert result["server_processes"] >= 2  # the postmaster and the driver's backend at least
        if "resources" in r:
            assert r["resources"]["method"].startswith("a server side of a slices process")
    for benchmark in ("point-query", "update-index"):
        for repeat in (1, 2):
            sides = [r for r in records if (r["benchmark"], r["repeat"]) == (benchmark, repeat)]
            assert {r["target"] for r in sides} == {"pg-a", "pg-b"}
            assert len({r["slices"]["pid"] for r in sides}) == 1, "one driver process a round"
            assert sorted(r["slices"]["position"] for r in sides) == [1, 2]
        qps = {t: sum(r["result"]["qps"] for r in records if (r["benchmark"], r["target"]) == (benchmark, t))
               for t in ("pg-a", "pg-b")}
        assert 0.5 < qps["pg-a"] / qps["pg-b"] < 2, qps  # an A/A pair: as fast, give or take the host
