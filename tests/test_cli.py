"""Bad input through the real CLI: one clear line on stderr, exit code 2, no traceback."""

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.unit

GOOD = """
[run]
benchmarks = ["point-query"]
time = "1s"
repeats = 1

[[target]]
name = "a"
"""


def assert_one_line_error(proc, fragment: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("dbperf: error: ") and fragment in lines[0], lines[0]


@pytest.mark.parametrize(("edit", "fragment"), [
    (lambda s: s.replace('"point-query"', '"pointquery"'), "unknown benchmark 'pointquery'"),
    (lambda s: s.replace("repeats = 1", "repeats = 0"), "repeats: expected an integer >= 1"),
    (lambda s: s.replace('"1s"', '"one second"'), "cannot parse duration 'one second'"),
    (lambda s: s.replace("repeats = 1", "repeat = 1"), "unknown key 'repeat'"),
    (lambda s: s.replace("[run]", "[run"), "malformed TOML"),
])
def test_bad_experiment(write_experiment, edit, fragment):
    path = write_experiment(edit(GOOD))
    proc = run_cli("run", str(path), "--out", str(path.parent / "out"))
    assert_one_line_error(proc, fragment)
    assert str(path) in proc.stderr


def test_library_that_is_not_sqlite(write_experiment, tmp_path):
    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    path = write_experiment(GOOD.replace('name = "a"', f'name = "a"\nlibrary = "{libc}"'))
    proc = run_cli("run", str(path), "--out", str(tmp_path / "out"))
    assert_one_line_error(proc, f"{libc} is not a SQLite library")


def test_file_that_is_not_a_library(write_experiment, tmp_path):
    path = write_experiment(GOOD.replace('name = "a"', 'name = "a"\nlibrary = "exp.toml"'))
    proc = run_cli("run", str(path), "--out", str(tmp_path / "out"))
    assert_one_line_error(proc, "cannot load library")


def test_missing_experiment_file(tmp_path):
    assert_one_line_error(run_cli("run", str(tmp_path / "nope.toml")), "cannot read")


def test_report_of_a_directory_without_results(tmp_path):
    assert_one_line_error(run_cli("report", str(tmp_path)), "not a dbperf results directory")


def test_report_format_must_be_known(tmp_path):
    assert_one_line_error(run_cli("report", str(tmp_path), "--format", "xml"), "--format")


def test_list_shows_names_and_sql():
    proc = run_cli("list")
    assert proc.returncode == 0
    assert "update-index" in proc.stdout and "UPDATE sbtest{table} SET k = k + 1 WHERE id = ?" in proc.stdout


def test_keys_prints_every_declared_key():
    from dbperf.experiment.keys import SECTIONS

    proc = run_cli("keys")
    assert proc.returncode == 0, proc.stderr
    for section, declared in SECTIONS.items():
        assert section in proc.stdout
        for key in declared:
            assert f"\n{key.name} " in proc.stdout, key.name
