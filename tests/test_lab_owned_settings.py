"""An experiment file's server `config` cannot reach a setting the lab owns in any form the server reads it:
MariaDB's `loose-` prefix, its `-`/`_` spellings and unique abbreviations (`bind` for bind-address) count as the
setting itself, so no lab server listens beyond 127.0.0.1 or runs as root."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("engine", "setting"), [
    ("mariadb", "loose-bind-address"), ("mariadb", "bind"), ("mariadb", "loose_user"),
    ("postgres", "listen_addresses"),
])
def test_an_experiment_cannot_set_a_lab_owned_setting_in_another_form(write_experiment, tmp_path, engine,
                                                                       setting):
    exp = write_experiment(f'[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\nengine = "{engine}"\n'
                           f'config = {{ "{setting}" = "0.0.0.0" }}\n')
    done = run_cli("run", str(exp), "--out", str(tmp_path / "out"), "--dry-run")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and setting in lines[0] and "lab" in lines[0], done.stderr
    assert not (tmp_path / "out").exists()
