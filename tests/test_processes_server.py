"""`processes` on a real PostgreSQL A/A run: the count chosen ("auto") after the first round and kept, the base and
its A/A copy started again between blocks of rounds, every process named in meta.json, each block's rounds kept
with their block, and the verdict's unit the process (stats/process_level.py)."""

from __future__ import annotations

import json
import math

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
repeats = "auto"
budget = "45s"
processes = "auto"
aa = true

[[target]]
name = "pg"
engine = "postgres"
config = { shared_buffers = "32MB" }
"""


def test_an_aa_run_chooses_its_processes_restarts_its_servers_between_blocks_and_judges_on_them(where):
    exp = where / "exp.toml"
    exp.write_text(EXPERIMENT)
    out = where / "out"
    proc = run_cli("run", str(exp), "--out", str(out), timeout=600)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    chosen, group = meta["processes"], meta["rounds"][0]
    assert 5 <= chosen <= 32 and meta["processes_chosen"].startswith(f"{chosen}, "), meta
    assert proc.stderr.count('dbperf: processes = "auto": ') == 1, proc.stderr  # said once, before block 2
    per = math.ceil(group["planned"] / chosen)
    begun = math.ceil(group["rounds"] / per)  # the blocks the group's rounds reached (a decided group stops early)
    assert proc.stderr.count("dbperf: process block") == begun - 1, proc.stderr
    for target in meta["targets"]:  # pg and pg-aa: a process a block each, all named, the last the running one's
        assert target["processes"] == begun and len(set(target["server_pids"])) == begun, target
        assert target["server_pid"] == target["server_pids"][-1] and target["restarts"] == 0
    cells = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted((c["target"], c["repeat"], c["process"]) for c in cells) == sorted(
        (t, r, (r - 1) // per + 1) for t in ("pg", "pg-aa") for r in range(1, group["rounds"] + 1))
    meta_, records, _ = read_results(out)
    m = build_matrix(meta_, records)
    v = m.cell("pg-aa", "point-query", 1)
    assert v is not None and v.verdict_detail is not None and v.verdict_detail.processes == begun
    report = run_cli("report", str(out))
    assert (f"verdicts' unit: the server process, each cell's verdict on {begun} complete processes a side"
            in report.stdout), report.stdout
    assert f'processes = "auto": {chosen}, ' in report.stdout


def test_processes_need_a_server_the_lab_starts(where):
    exp = where / "sqlite.toml"
    exp.write_text('[run]\nbenchmarks = ["point-query"]\nprocesses = 3\n\n[[target]]\nname = "s"\nengine = "sqlite"\n')
    proc = run_cli("run", str(exp), "--dry-run")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "processes: 3 processes a target needs a server the lab starts" in proc.stderr
