"""The simulated tier's tools are checked before the first round (issue 45): `simulated = true` on a machine without
valgrind used to run the whole budget and end with exit 0, nothing on stderr and every simulated figure missing.
Now a run is refused in one line before it builds, loads or measures anything. valgrind is taken out of the way by
a PATH that lacks it (the lab looks it up on PATH, as the profiler runs it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.test_run_out_and_signals import one_error_line

pytestmark = pytest.mark.unit

EXP = """
[run]
benchmarks = ["point-query"]
table_size = 1000
time = "0.2s"
warmup = "0.1s"
repeats = 1
{simulated}

[[target]]
name = "a"
"""


def path_without_valgrind(tmp_path: Path, valgrind: str | None = None) -> str:
    """A PATH of its own: setarch (the other tool the tier needs) and, if given, a `valgrind` script."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "setarch").symlink_to("/usr/bin/setarch")
    if valgrind is not None:
        script = bin_dir / "valgrind"
        script.write_text(f"#!/bin/sh\n{valgrind}\n")
        script.chmod(0o755)
    return str(bin_dir)


@pytest.mark.parametrize(("simulated", "option"), [("simulated = true", ()), ("", ("--simulated",))])
def test_a_run_without_valgrind_is_refused_before_its_first_round(write_experiment, tmp_path, simulated, option):
    out = tmp_path / "out"
    proc = run_cli("run", str(write_experiment(EXP.format(simulated=simulated))), "--out", str(out), *option,
                   env={"PATH": path_without_valgrind(tmp_path)}, timeout=120)
    line = one_error_line(proc)
    assert "simulated = true (or --simulated): valgrind not found on PATH" in line, line
    assert "apt install valgrind" in line
    assert not out.exists()  # nothing measured, no results folder
    assert "results in" not in proc.stderr


def test_a_valgrind_that_does_not_run_is_refused_too(write_experiment, tmp_path):
    out = tmp_path / "out"
    proc = run_cli("run", str(write_experiment(EXP.format(simulated="simulated = true"))), "--out", str(out),
                   env={"PATH": path_without_valgrind(tmp_path, "echo 'valgrind: broken install' >&2; exit 1")},
                   timeout=120)
    line = one_error_line(proc)
    assert "valgrind --version failed" in line and "broken install" in line, line
    assert not out.exists()

