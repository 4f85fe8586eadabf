"""One `repeats = "auto"` run with an A/A copy on the real system SQLite through the real driver, small budget."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.e2e

AUTO = """
[run]
benchmarks = ["point-query"]
table_size = 5000
time = "0.3s"
warmup = "0.1s"
repeats = "auto"
budget = "30s"
"""
TARGET = '\n[[target]]\nname = "wal"\nconfig = { journal_mode = "WAL", synchronous = "NORMAL" }\n'


def test_auto_repeats_with_aa(write_experiment, tmp_path):
    out = tmp_path / "out"
    proc = run_cli("run", str(write_experiment(AUTO + TARGET)), "--out", str(out), "--aa")
    assert proc.returncode == 0, proc.stderr
    assert "auto repeats (at least 9 rounds, budget 30 s)" in proc.stderr and "warning" not in proc.stderr
    assert "A/A: wal-aa is wal run against itself:" in proc.stdout and "of 1 cells called changed" in proc.stdout

    meta = json.loads((out / "meta.json").read_text())
    assert meta["repeats"] == "auto" and meta["aa_target"] == "wal-aa" and meta["order"] == "alternate"
    assert meta["cpus"]["how"] in ("auto", "off: one CPU")
    (group,) = meta["rounds"]
    assert group["rounds"] >= 9 and group["stopped"]
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 2 * group["rounds"] and all(x["status"] == "ok" for x in lines)
    assert [x["target"] for x in lines[:4]] == ["wal", "wal-aa", "wal-aa", "wal"]
    assert all(x["noise"]["window_s"] > 0 and x["noise"]["foreign_cpu"] >= 0 for x in lines)

    doc = json.loads(run_cli("report", str(out), "--format", "json").stdout)
    aa = next(c for c in doc["cells"] if c["target"] == "wal-aa")
    assert aa["verdict"] in ("faster", "slower", "same", "undecided", "unstable")
    assert aa["decided_by"] in ("paired", "unpaired") and aa["noise_threshold"] > 0
    assert doc["aa"]["cells"] == 1 and doc["aa"]["changed"] in (0, 1)
