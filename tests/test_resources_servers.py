"""Harness fidelity and resources on real servers, in one short run: cumulative writes, the post-write step on
PostgreSQL (VACUUM ANALYZE, CHECKPOINT) and MariaDB (dirty pages flushed), engine counters and server I/O per
query, database sizes."""

from __future__ import annotations

import json

import pytest

from tests.conftest import NEEDS_SERVERS, run_cli

pytestmark = [pytest.mark.server, NEEDS_SERVERS]

EXPERIMENT = """
[run]
benchmarks = ["update-index", "point-query"]
table_size = 2000
time = "1s"
warmup = "0.2s"
repeats = 1
writes = "cumulative"
post_write_wait = "0.1s"

[[target]]
name = "pg"
engine = "postgres"
config = { shared_buffers = "64MB" }

[[target]]
name = "maria"
engine = "mariadb"
config = { innodb_buffer_pool_size = "64M" }
"""


def test_post_write_and_resources_on_both_servers(where):
    exp = where / "exp.toml"
    exp.write_text(EXPERIMENT)
    out = where / "out"
    proc = run_cli("run", str(exp), "--out", str(out), timeout=600)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    pg, maria = meta["targets"]
    [pg_step] = pg["post_write"]
    assert pg_step["statements"] == ["VACUUM ANALYZE", "CHECKPOINT"]
    assert pg_step["before"] == "point-query@after-writes" and pg_step["wait_s"] == 0.1
    [maria_step] = maria["post_write"]
    assert maria_step["dirty_pages_left"] == 0
    assert "SET GLOBAL innodb_max_dirty_pages_pct = 0" in maria_step["statements"]
    for t in (pg, maria):
        assert t["db_bytes_after_load"] > 100_000 and t["db_bytes_at_end"] > 100_000
    lines = (out / "results.jsonl").read_text().splitlines()
    cells = {(c["target"], c["benchmark"]): c for c in map(json.loads, lines)}
    assert all(c["status"] == "ok" for c in cells.values())
    pg_update = cells[("pg", "update-index")]["resources"]
    assert pg_update["engine_counters"]["xact_commit"] > 0 and pg_update["engine_counters"]["tup_updated"] > 0
    assert pg_update["server_io"]["processes"] >= 2  # the postmaster and at least the driver's backend
    assert pg_update["server_io"]["write_bytes"] > 0  # updates reach the WAL
    maria_update = cells[("maria", "update-index")]["resources"]
    assert maria_update["engine_counters"]["Innodb_buffer_pool_read_requests"] > 0
    assert "server_io" in maria_update
    view = run_cli("report", str(out), "--resources")
    assert view.returncode == 0, view.stderr
    assert "blks hit" in view.stdout and "bp req" in view.stdout
