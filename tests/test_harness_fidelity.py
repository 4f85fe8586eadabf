"""Harness fidelity ([Callaghan, mytools], docs/sources.md): the harness's step orders, the read-only-* parts at range
1000, warm-up cells, cumulative writes and the post-write step, on real SQLite (servers:
tests/test_resources_servers.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from dbperf.catalog.harness import CLASSIC, NEWER
from dbperf.catalog.registry import AFTER_WRITES, builtin, expand_group, resolve
from dbperf.errors import UserError
from dbperf.experiment.harness_settings import harness_wait_s
from dbperf.experiment.spec import parse_experiment
from dbperf.runner.post_write import steps_before
from tests.conftest import run_cli

SQLITE_TARGET = '[[target]]\nname = "s"\nconfig = { journal_mode = "WAL" }\n'


@pytest.mark.unit
def test_all_is_the_classic_order():
    names = [w.name for w in expand_group("all")]
    assert len(names) == len(CLASSIC) == 43  # point-query.warm + 15 + 8 + 17 + delete, insert
    assert names[0] == "point-query.warm"
    writes = names[16:24]
    assert writes == ["update-inlist", "update-index", "update-nonindex", "update-one", "update-zipf",
                      "write-only", "read-write-10", "read-write-100"]
    after = names[24:41]
    assert after[0] == "read-only-10" + AFTER_WRITES and after[-1] == "scan" + AFTER_WRITES
    assert all(n.endswith(AFTER_WRITES) for n in after)
    assert names[-2:] == ["delete", "insert"]
    assert len(set(names)) == len(names)


@pytest.mark.unit
def test_all_2025_has_32_reported_steps_and_the_range_1000_parts():
    names = [w.name for w in expand_group("all-2025")]
    assert len(NEWER) == 33 and names[:2] == ["scan.warm", "scan"]
    reported = [n for n in names if not n.endswith(".warm")]
    assert len(reported) == 32
    for part in ("simple", "sum", "order", "distinct", "count"):
        assert f"read-only-{part}{AFTER_WRITES}" in names
        assert f"read-only-{part}" not in [w.name for w in expand_group("reads")]  # the classic reads only
    assert builtin()["read-only-count"].display_sql() == [
        "BEGIN", "SELECT COUNT(*) FROM sbtest{table} WHERE id BETWEEN ? AND ?", "COMMIT"]
    distinct = builtin()["read-only-distinct"]
    assert distinct.statements[0].params["r"]["size"] == 1000
    assert distinct.display_sql()[1].endswith("ORDER BY c")


@pytest.mark.unit
def test_warm_cells_resolve_by_name(tmp_path: Path):
    got = resolve(["scan.warm", "scan", "update-index", "point-query"], tmp_path, "x")
    assert [w.name for w in got] == ["scan.warm", "scan", "update-index", "point-query" + AFTER_WRITES]
    assert got[0].statements == builtin()["scan"].statements
    assert steps_before(got) == {"point-query" + AFTER_WRITES}


@pytest.mark.unit
def test_harness_keys(write_experiment):
    def exp(extra: str) -> Path:
        return write_experiment(f'[run]\nbenchmarks = ["point-query"]\ntable_size = 3000000\n{extra}\n'
                                + SQLITE_TARGET)
    default = parse_experiment(exp(""))
    assert (default.writes, default.post_write) == ("restore", False)
    assert default.post_write_wait_s == harness_wait_s(3_000_000) == 63.0
    cumulative = parse_experiment(exp('writes = "cumulative"\npost_write_wait = "0.5s"'))
    assert (cumulative.writes, cumulative.post_write, cumulative.post_write_wait_s) == ("cumulative", True, 0.5)
    assert harness_wait_s(10**10) == 1200.0
    with pytest.raises(UserError, match=r"\[run\]\.writes: expected one of restore, cumulative"):
        parse_experiment(exp('writes = "keep"'))
    with pytest.raises(UserError, match="post_write_wait"):
        parse_experiment(exp('post_write_wait = "soon"'))


def _inserted(out: Path, table_size: int) -> int:
    db = sqlite3.connect(out / ".data" / "s" / "work.db")
    try:
        return db.execute("SELECT COUNT(*) FROM sbtest1").fetchone()[0] - table_size
    finally:
        db.close()


@pytest.mark.e2e
@pytest.mark.parametrize("writes", ["cumulative", "restore"])
def test_writes_accumulate_or_restore_and_post_write_is_recorded(tmp_path: Path, write_experiment, writes):
    out = tmp_path / "out"
    exp = write_experiment(f'[run]\nbenchmarks = ["point-query.warm", "insert", "scan"]\ntable_size = 2000\n'
                           f'time = "0.4s"\nwarmup = "0s"\nrepeats = 2\nwrites = "{writes}"\npost_write = true\n'
                           f'post_write_wait = "0.1s"\n' + SQLITE_TARGET)
    proc = run_cli("run", str(exp), "--out", str(out), "--keep-data")
    assert proc.returncode == 0, proc.stderr
    cells = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [c["benchmark"] for c in cells] == ["point-query.warm"] * 2 + ["insert"] * 2 + [
        "scan" + AFTER_WRITES] * 2
    events = [c["result"]["events"] for c in cells if c["benchmark"] == "insert"]
    inserted = _inserted(out, 2000)
    # An event that ends after the window is not counted: at most one per repeat.
    expected = sum(events) if writes == "cumulative" else events[-1]
    assert expected <= inserted <= expected + 2
    meta = json.loads((out / "meta.json").read_text())
    assert meta["writes"] == writes and meta["post_write_wait_s"] == 0.1
    [step] = meta["targets"][0]["post_write"]
    assert step["before"] == "scan" + AFTER_WRITES
    assert step["statements"] == ["PRAGMA wal_checkpoint(TRUNCATE)"] and step["wait_s"] == 0.1
    # Resources of the same run (targets/resources.py): the driver is the engine, so an insert writes through it.
    insert = [c["resources"] for c in cells if c["benchmark"] == "insert"]
    assert all(r["window_s"] > 0.2 and r["queries"] > 0 for r in insert)
    assert any(r["client_io"]["wchar"] > 0 for r in insert)
    assert all("server_io" not in r and "server_io" not in r.get("unavailable", {}) for r in insert)
    assert all(("device" in r) != ("device" in r.get("unavailable", {})) for r in insert)
    assert meta["targets"][0]["db_bytes_after_load"] > 0
    assert meta["targets"][0]["db_bytes_at_end"] >= meta["targets"][0]["db_bytes_after_load"]
    view = run_cli("report", str(out), "--resources", "--format", "json")
    assert view.returncode == 0, view.stderr
    doc = json.loads(view.stdout)
    row = next(c for c in doc["cells"] if c["benchmark"] == "insert")
    assert row["repeats"] == 2 and row["per_query"]["client_wchar"] > 0
    table = run_cli("report", str(out), "--resources")
    assert table.returncode == 0 and "drv wr KB" in table.stdout and "insert" in table.stdout
