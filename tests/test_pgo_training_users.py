"""A PGO training (runner/server_training.py) never runs a program of the trained install as anyone but the service
user (issue 46): every process the lab starts during a training on Debian's PostgreSQL and MariaDB is recorded at
the lab's process-start seam (subprocess.Popen, which subprocess.run and every lab helper go through), with the user
it was started as. An instrumented install's programs would write the build's profile as whoever ran them; the
version probe PostgreSQL's start-up made as root lost the whole profile."""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dbperf import engines
from dbperf.runner.server_training import train_server
from tests.conftest import NEEDS_SERVERS

pytestmark = [pytest.mark.server, NEEDS_SERVERS]


def _user_name(user: Any) -> str | None:
    if user is None:
        return None
    return pwd.getpwuid(user).pw_name if isinstance(user, int) else str(user)


@pytest.mark.skipif(os.geteuid() != 0, reason="the lab's servers run as their service users: root only")
@pytest.mark.parametrize(("engine", "binaries", "install"), [
    ("postgres", "/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/15"),
    ("mariadb", "/usr/sbin/mariadbd", "/usr"),  # its install script and server: /usr/bin, /usr/sbin
])
def test_a_pgo_training_runs_every_program_of_the_install_as_the_service_user(engine, binaries, install, tmp_path,
                                                                              monkeypatch):
    started: list[tuple[str, str | None]] = []

    class Recorded(subprocess.Popen):
        def __init__(self, args: Any, *rest: Any, **kwargs: Any) -> None:
            argv = [args] if isinstance(args, (str, Path)) else list(args)
            started.append((str(argv[0]), _user_name(kwargs.get("user"))))
            super().__init__(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", Recorded)
    facts = train_server(engine, Path(binaries), tmp_path / "logs", 0.4)
    assert facts["training_runs"] and all(r["events"] > 0 for r in facts["training_runs"])
    service_user = engines.engine(engine).service_user
    from_install = [(program, user) for program, user in started
                    if Path(os.path.realpath(program)).is_relative_to(install)]
    names = {Path(program).name for program, _ in from_install}
    if engine == "postgres":
        assert {"postgres", "initdb"} <= names  # the version probe and the server, initdb
    else:
        assert {"mariadbd", "mariadb-install-db"} <= names
    assert [(p, u) for p, u in from_install if u != service_user] == []
    # what the clients printed goes to a log the profile's proof reads
    assert (tmp_path / "logs" / "client.log").is_file()
