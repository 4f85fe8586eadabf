"""Steady-state warm-ups on real servers: PostgreSQL and MariaDB cells go through the same driver loop as SQLite,
so each reports its warm-up and whether it settled, and the lab's engine-counter samples wait for the driver's
window. One short run; bounds are generous (the host may be loaded)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import NEEDS_SERVERS, run_cli

pytestmark = [pytest.mark.server, NEEDS_SERVERS]

EXPERIMENT = """
[run]
benchmarks = ["point-query"]
table_size = 1000
time = "0.5s"
warmup = "0.2s"
repeats = 1
threads = [2]
steady = { tolerance = 0.3, window = 2, interval = "0.25s", max_warmup = "3s" }

[[target]]
name = "pg"
engine = "postgres"
config = { shared_buffers = "64MB" }

[[target]]
name = "maria"
engine = "mariadb"
config = { innodb_buffer_pool_size = "64M" }
"""


def test_both_servers_report_their_steady_state_warmup(where):
    exp = where / "exp.toml"
    exp.write_text(EXPERIMENT)
    out = where / "out"
    proc = run_cli("run", str(exp), "--out", str(out), timeout=600)
    assert proc.returncode == 0, proc.stderr
    cells = {c["target"]: c for c in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert set(cells) == {"pg", "maria"}
    for name, cell in cells.items():
        assert cell["status"] == "ok", (name, cell.get("error"))
        result, steady = cell["result"], cell["result"]["steady"]
        assert 0.5 <= result["warmup_s"] <= 3.0 + 10.0, name
        assert isinstance(steady["settled"], bool) and len(steady["samples_eps"]) >= 2, name
        assert steady["settled"] or result["warmup_s"] >= 3.0, name
        assert result["events"] > 0 and result["server_usage"] is not None, name
    resources = cells["pg"].get("resources")  # absent when the lab could not sample it
    if resources is not None:  # sampled from the driver's window on, by the engine's own counters
        assert "steady-state warm-up" in resources["method"]
        assert resources["engine_counters"]["xact_commit"] > 0
    doc = json.loads(run_cli("report", str(out), "--format", "json").stdout)
    assert {c["target"]: c["unsettled_runs"] for c in doc["cells"]} == {
        t: 0 if c["result"]["steady"]["settled"] else 1 for t, c in cells.items()}
