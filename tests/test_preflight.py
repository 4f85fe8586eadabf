"""What a run looks at before it claims its results folder (runner/preflight.py), as its dry run does: an external
server that does not answer where its dsn points, a dsn port that is no port number, a fixed port that is taken or
that only root may listen on. Each is one line, and no --out folder is left that the next `run --out` refuses."""

from __future__ import annotations

import os
import pwd
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbperf.errors import UserError
from dbperf.experiment.dsn_address import DsnAddress, dsn_address
from dbperf.servers.process import unprivileged_port_start
from tests.conftest import run_cli
from tests.refusal import assert_refused

RUN = ('[run]\nbenchmarks = ["point-query"]\ntable_size = 1000\ntime = "0.2s"\nwarmup = "0.1s"\nrepeats = 1\n\n'
       '[[target]]\nname = "lite"\nengine = "sqlite"\n\n')


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nobody listens here


@pytest.fixture
def listening() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _refused_twice(write_experiment, where: Path, target: str, says: str) -> None:
    """Refused by a real run with no folder made in `where`, and shown by the dry run as what would stop the run."""
    exp = write_experiment(RUN + target)
    out = where / "out"
    assert_refused(run_cli("run", str(exp), "--out", str(out), timeout=120), 2, says, out)
    dry = run_cli("run", str(exp), "--out", str(out), "--dry-run", timeout=120)
    assert_refused(dry, 2, says, out)
    assert any(line.startswith("  FAILS") and says in line for line in dry.stdout.splitlines()), dry.stdout


@pytest.mark.e2e
def test_a_closed_dsn_port_is_said_before_the_folder_is_claimed(write_experiment, tmp_path, closed_port):
    target = f'[[target]]\nname = "ext"\nengine = "postgres"\ndsn = "postgresql://bob@127.0.0.1:{closed_port}/db"\n'
    _refused_twice(write_experiment, tmp_path, target, f"nothing listens at 127.0.0.1:{closed_port}")


@pytest.mark.e2e
def test_a_dsn_that_answers_passes_the_dry_run_without_a_login(write_experiment, tmp_path, listening):
    exp = write_experiment(RUN + f'[[target]]\nname = "ext"\nengine = "mysql"\n'
                                 f'dsn = "mysql://bob@127.0.0.1:{listening}/db"\n')
    proc = run_cli("run", str(exp), "--out", str(tmp_path / "out"), "--dry-run", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"target ext: an external server answering at 127.0.0.1:{listening} (not logged in)" in proc.stdout


@pytest.mark.e2e
def test_a_dsn_port_that_is_no_port_number_is_refused(write_experiment, tmp_path):
    target = '[[target]]\nname = "ext"\nengine = "mysql"\ndsn = "mysql://bob@127.0.0.1:99999/db"\n'
    exp = write_experiment(RUN + target)
    out = tmp_path / "out"
    says = "dsn: port '99999' is not a port number (1 to 65535)"
    assert_refused(run_cli("run", str(exp), "--out", str(out), timeout=120), 2, says, out)
    assert_refused(run_cli("run", str(exp), "--out", str(out), "--dry-run", timeout=120), 2, says, out)


@pytest.mark.e2e
@pytest.mark.skipif(not any(u.pw_name == "postgres" for u in pwd.getpwall()), reason="no postgres user")
def test_a_lab_port_only_root_may_take_is_said_before_the_folder_is_claimed(write_experiment, tmp_path):
    if unprivileged_port_start() <= 22:
        pytest.skip("this host lets any user listen on port 22")
    target = '[[target]]\nname = "pg"\nengine = "postgres"\nport = 22\n'
    _refused_twice(write_experiment, tmp_path, target, "port 22 is below")


@pytest.mark.e2e
@pytest.mark.skipif(not any(u.pw_name == "postgres" for u in pwd.getpwall()), reason="no postgres user")
def test_a_lab_port_in_use_is_said_before_the_folder_is_claimed(write_experiment, tmp_path, listening):
    target = f'[[target]]\nname = "pg"\nengine = "postgres"\nport = {listening}\n'
    _refused_twice(write_experiment, tmp_path, target, f"port {listening} on 127.0.0.1 is already in use")


@pytest.mark.unit
def test_where_a_dsn_points():
    assert dsn_address("postgresql://u@db.example:6543/x", 5432, "d") == DsnAddress("db.example", 6543)
    assert dsn_address("mysql://u@[::1]/x", 3306, "d") == DsnAddress("::1", 3306)
    assert dsn_address("mysql://u@/x?socket=/run/mysqld/mysqld.sock", 3306, "d") == DsnAddress(
        socket="/run/mysqld/mysqld.sock")
    assert dsn_address("postgresql://u@%2Fvar%2Frun%2Fpostgresql/x", 5432, "d") == DsnAddress(
        socket="/var/run/postgresql")
    assert dsn_address("postgresql://u@h1:5432,h2:5433/x", 5432, "d") is None  # several hosts: not looked at
    for bad in ("0", "65536", "５４３２", "54x"):
        with pytest.raises(UserError, match=f"d: port '{bad}' is not a port number"):
            dsn_address(f"postgresql://u@h:{bad}/x", 5432, "d")


@pytest.mark.e2e
def test_a_driver_that_is_not_there_is_said_before_the_folder_is_claimed(write_experiment, tmp_path):
    exp, out = write_experiment(RUN), tmp_path / "out"
    proc = run_cli("run", str(exp), "--out", str(out), env={"DBPERF_DRIVER": str(tmp_path / "none")}, timeout=120)
    assert_refused(proc, 2, f"DBPERF_DRIVER={tmp_path / 'none'}: not an executable file", out)


@pytest.mark.e2e
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a read-only file system needs root")
def test_a_read_only_destination_is_said_as_such_by_the_run_and_its_dry_run(write_experiment, tmp_path):
    from tests.test_bisect_folders import read_only

    with read_only(tmp_path / "ro") as ro:
        _refused_twice(write_experiment, ro, "", f"{ro} is on a read-only file system")
