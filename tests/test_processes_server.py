"""`processes = P` on a real PostgreSQL A/A run: the base and its A/A copy are started again between blocks of
rounds, every process is named in meta.json, each block's rounds are kept with their block, and the verdict's
unit is the process (stats/process_level.py)."""

from __future__ import annotations

import json

import pytest

from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage.results import read_results
from tests.conftest import NEEDS_SERVERS, run_cli

pytestmark = [pytest.mark.server, NEEDS_SERVERS]

EXPERIMENT = """
[run]
benchmarks = ["point-query"]
table_size = 2000
time = "0.3s"
warmup = "0.1s"
repeats = 6
processes = 3
aa = true

[[target]]
name = "pg"
engine = "postgres"
config = { shared_buffers = "32MB" }
"""


def test_an_aa_run_restarts_its_servers_between_blocks_and_judges_on_processes(where):
    exp = where / "exp.toml"
    exp.write_text(EXPERIMENT)
    out = where / "out"
    proc = run_cli("run", str(exp), "--out", str(out), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("dbperf: process block") == 2, proc.stderr  # blocks 2 and 3, said as they begin
    meta = json.loads((out / "meta.json").read_text())
    assert meta["processes"] == 3
    for target in meta["targets"]:  # pg and pg-aa: three processes each, all named, the last the running one's
        assert target["processes"] == 3 and len(set(target["server_pids"])) == 3, target
        assert target["server_pid"] == target["server_pids"][-1] and target["restarts"] == 0
    cells = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted((c["target"], c["repeat"], c["process"]) for c in cells) == sorted(
        (t, r, (r - 1) // 2 + 1) for t in ("pg", "pg-aa") for r in range(1, 7))
    meta_, records, _ = read_results(out)
    m = build_matrix(meta_, records)
    v = m.cell("pg-aa", "point-query", 1)
    assert v is not None and v.verdict_detail is not None and v.verdict_detail.processes == 3
    report = run_cli("report", str(out))
    assert "verdicts' unit: the server process, each cell's verdict on 3 complete processes a side" in report.stdout


def test_processes_need_a_server_the_lab_starts(where):
    exp = where / "sqlite.toml"
    exp.write_text('[run]\nbenchmarks = ["point-query"]\nprocesses = 3\n\n[[target]]\nname = "s"\nengine = "sqlite"\n')
    proc = run_cli("run", str(exp), "--dry-run")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "processes: 3 processes a target needs a server the lab starts" in proc.stderr
