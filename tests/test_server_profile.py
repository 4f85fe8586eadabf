"""Counters of server processes: PostgreSQL under cachegrind, the N-minus-0 windows of its backends."""

from __future__ import annotations

import json

import pytest

from tests.conftest import NEEDS_SERVERS, run_cli

pytestmark = [pytest.mark.server, NEEDS_SERVERS]

EXPERIMENT = ('[run]\nbenchmarks = ["point-query", "update-index"]\ntable_size = 2000\n'
              '[[target]]\nname = "pg"\nengine = "postgres"\n'
              '[[target]]\nname = "maria"\nengine = "mariadb"\n')


def test_postgres_backend_counters_per_query(write_experiment, tmp_path):
    exp = write_experiment(EXPERIMENT)
    proc = run_cli("profile", str(exp), "--target", "pg", "--benchmark", "point-query", "--queries", "1000",
                   "--mode", "simulated", "--json", str(tmp_path / "p.json"), timeout=900)
    assert proc.returncode == 0, proc.stderr
    p = json.loads((tmp_path / "p.json").read_text())
    assert p["mode"] == "simulated" and p["queries"] == 1000 and "backend" in p["method"]
    # A PostgreSQL point query through the protocol costs tens of thousands of instructions in the server.
    assert 5_000 < p["per_query"]["instructions"] < 1_000_000
    assert p["per_query"]["i1_misses"] > 0 and p["top_by_instructions"]
    assert p["slowdown"]["native_s"] is None  # not timed natively, and not claimed
    assert "not timed natively" in proc.stdout


def test_server_counters_that_are_not_measured_say_so(write_experiment):
    exp = write_experiment(EXPERIMENT)
    hardware = run_cli("profile", str(exp), "--target", "pg", "--benchmark", "point-query", "--mode", "hardware")
    assert hardware.returncode == 2 and "Traceback" not in hardware.stderr
    maria = run_cli("profile", str(exp), "--target", "maria", "--benchmark", "point-query", "--mode", "simulated",
                    timeout=600)
    assert maria.returncode == 2 and "MariaDB's one multi-threaded process is not profiled yet" in maria.stderr
