"""The run's banner, `..., results in DIR`, is said once the results folder is the run's (issue 45): a run refused
before (a folder not empty, a password variable not set) printed it, naming a folder that never received anything,
and then its error."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.test_run_out_and_signals import one_error_line

pytestmark = pytest.mark.e2e

EXP = """
[run]
benchmarks = ["point-query"]
table_size = 1000
time = "0.2s"
warmup = "0.1s"
repeats = 1

[[target]]
name = "a"
{extra}
"""


def test_a_run_refused_for_its_folder_does_not_name_it_as_its_results(write_experiment, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's own file")
    proc = run_cli("run", str(write_experiment(EXP.format(extra=""))), "--out", str(mine))
    assert "not empty" in one_error_line(proc)
    assert "results in" not in proc.stderr, proc.stderr


def test_a_run_refused_for_a_password_not_set_does_not_name_a_folder(write_experiment, tmp_path, monkeypatch):
    monkeypatch.delenv("DBPERF_TEST_UNSET_PASSWORD", raising=False)
    external = ('\n[[target]]\nname = "ext"\nengine = "postgres"\ndsn = "postgresql://u@127.0.0.1:9/db"\n'
                'password_env = "DBPERF_TEST_UNSET_PASSWORD"\n')
    out = tmp_path / "out"
    proc = run_cli("run", str(write_experiment(EXP.format(extra=external))), "--out", str(out))
    assert "DBPERF_TEST_UNSET_PASSWORD is not set" in one_error_line(proc)
    assert "results in" not in proc.stderr, proc.stderr
    assert not out.exists()


def test_a_run_that_claims_its_folder_names_it_once(write_experiment, tmp_path):
    out = tmp_path / "out"
    proc = run_cli("run", str(write_experiment(EXP.format(extra=""))), "--out", str(out), timeout=120)
    assert proc.returncode == 0, proc.stderr
    banners = [line for line in proc.stderr.splitlines() if "results in" in line]
    assert banners == [f"dbperf: 1 benchmarks × 1 thread counts × 1 repeats × 1 targets, results in {out}"], (
        proc.stderr)
