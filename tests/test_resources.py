"""Resources per query (targets/resources.py, report/resources_view.py) without an engine: the /proc readers on
this process, the deltas, and old results that have no resources."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dbperf.host.procfs import process_tree
from dbperf.records import CellRecord, IoBytes, Resources, results_record
from dbperf.report.resources_view import resource_rows
from dbperf.targets.resources import _io_delta, device_of, diskstats, proc_io

pytestmark = pytest.mark.unit

OLD_LINE = {"target": "a", "benchmark": "point-query", "threads": 1, "repeat": 1, "status": "ok",
            "result": {"qps": 10.0, "eps": 10.0, "queries": 10, "errors": 0,
                       "latency": {"p50_us": 1, "p99_us": 2, "max_us": 3},
                       "client_usage": {"user_us": 1, "system_us": 1, "voluntary_cs": 0, "involuntary_cs": 0}}}


def test_proc_readers_see_this_process(tmp_path: Path):
    before = proc_io(os.getpid())
    assert before is not None and set(before) == {"read_bytes", "write_bytes", "rchar", "wchar"}
    (tmp_path / "f").write_bytes(b"x" * 100_000)
    after = proc_io(os.getpid())
    assert after is not None and after["wchar"] - before["wchar"] >= 100_000
    assert process_tree(os.getpid())[0] == os.getpid()
    device = device_of(tmp_path)
    if device is not None:  # a block device (not tmpfs or overlay): its counters are readable
        stats = diskstats(device)
        assert stats is not None and stats["read_bytes"] >= 0


def test_io_delta_sums_the_processes_alive_at_the_end():
    unavailable: dict[str, str] = {}
    before = {1: {"read_bytes": 10, "write_bytes": 10, "rchar": 10, "wchar": 10}}
    after = {1: {"read_bytes": 30, "write_bytes": 10, "rchar": 15, "wchar": 10},
             2: {"read_bytes": 5, "write_bytes": 7, "rchar": 0, "wchar": 1}}  # born inside the window
    io = _io_delta(before, after, unavailable, "server_io")
    assert io == IoBytes(read_bytes=25, write_bytes=7, rchar=5, wchar=1, processes=2)
    assert _io_delta(before, None, unavailable, "server_io") is None
    assert unavailable == {"server_io": "no process to sample"}


def test_old_results_read_and_the_view_skips_cells_without_resources():
    cell = results_record(OLD_LINE)
    assert isinstance(cell, CellRecord) and cell.resources is None
    io = IoBytes(read_bytes=4096, write_bytes=8192)
    new = CellRecord(target="a", benchmark="point-query", threads=1, repeat=2, status="ok", result=cell.result,
                     resources=Resources(window_s=1.0, queries=4.0, method="m", client_io=io,
                                         engine_counters={"blks_read": 8.0}))
    again = results_record({**OLD_LINE, "repeat": 2, "resources": {
        "window_s": 1.0, "queries": 4.0, "method": "m", "client_io": {"read_bytes": 4096, "write_bytes": 8192},
        "engine_counters": {"blks_read": 8.0}}})
    assert again == new
    [row] = resource_rows([cell, new])
    assert row["repeats"] == 1
    assert row["per_query"]["client_read_bytes"] == 1024 and row["per_query"]["engine.blks_read"] == 2.0
