"""The driver's Connection contract (driver/src/contract.rs) on real PostgreSQL and MariaDB started by the lab."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from dbperf.experiment.spec import parse_experiment
from dbperf.servers.registry import server_target
from tests.conftest import NEEDS_SERVERS, REPO
from tests.test_servers import experiment, lab_processes

pytestmark = [pytest.mark.server, NEEDS_SERVERS]


def test_every_connection_keeps_the_contract_on_the_real_engines(where, monkeypatch):
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("cargo is not on PATH")
    monkeypatch.setenv("DBPERF_SERVER_PASSWORD", "contract-pw'\\1")  # one password for both servers
    body = ('[[target]]\nname = "pg"\nengine = "postgres"\n\n[[target]]\nname = "maria"\nengine = "mariadb"\n')
    exp = parse_experiment(experiment(where, body))
    servers = [server_target(where / t.name, where / "logs", t, exp) for t in exp.targets]
    try:
        for server in servers:
            server.start()
        env = {"DBPERF_CONTRACT_POSTGRES": servers[0].dsn("sbtest_pristine"),
               "DBPERF_CONTRACT_MARIADB": servers[1].dsn("sbtest_pristine"), **servers[0].env()}
        proc = subprocess.run([cargo, "test", "--release", "--quiet", "contract", "--", "--nocapture"],
                              cwd=REPO / "driver", capture_output=True, text=True, timeout=900,
                              env={**os.environ, **env})
    finally:
        for server in servers:
            server.stop()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "contract kept: postgres" in proc.stdout and "contract kept: mariadb" in proc.stdout
    assert lab_processes() == []
