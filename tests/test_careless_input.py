"""Careless and hostile input through the real CLI: names that look like markup, wrongly typed values, binary
files, absurd durations, duplicate cells, settings that would undo the loopback binding, and results directories
edited by hand. One line and exit 2 for what cannot be used; what can be reported is, with what was skipped said.
The refusals and reports run the CLI in the test's process (`run_cli_here`: the same entry point, its exit code and
output); a process of its own says the same for a file of each kind (test_binary_files, a hand-edited meta.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.test_run_out_and_signals import one_error_line

pytestmark = pytest.mark.e2e

RUN = """
[run]
benchmarks = [{benchmarks}]
table_size = 2000
time = "1s"
warmup = "0.2s"
repeats = 1
{extra}
[[target]]
name = "a"
"""
GOOD_WORKLOAD = '[[statement]]\nsql = "SELECT c FROM sbtest{table} WHERE id = {id}"\nparams.id = { gen = "uniform" }\n'


def _experiment(tmp_path: Path, benchmarks: str = '"w.toml"', extra: str = "", workload: str | None = None) -> Path:
    if workload is not None:
        (tmp_path / "w.toml").write_text(workload)
    path = tmp_path / "exp.toml"
    path.write_text(RUN.format(benchmarks=benchmarks, extra=extra))
    return path


@pytest.mark.parametrize("name", ["x[/red]", "a|b", "<script>alert(1)</script>", "new\nline", "", "@after"])
def test_workload_names_are_validated(tmp_path, run_cli_here, name):
    exp = _experiment(tmp_path, workload=f"name = {json.dumps(name)}\n" + GOOD_WORKLOAD)
    line = one_error_line(run_cli_here("run", str(exp), "--out", str(tmp_path / "o")))
    assert "w.toml" in line and "'name' must be letters, digits" in line


@pytest.mark.parametrize(("workload", "fragment"), [
    ("name = 123\n" + GOOD_WORKLOAD, "'name' must be letters, digits"),
    ('description = 5\n' + GOOD_WORKLOAD, "description must be a string"),
    ('order = "first"\n' + GOOD_WORKLOAD, "order: expected a positive integer"),
    ('group = ["point"]\n' + GOOD_WORKLOAD, "group must be one of"),
    ('vars = 3\n' + GOOD_WORKLOAD, "'vars' must be a table"),
    ('variants = [{ name = "v[/b]" }]\n' + GOOD_WORKLOAD, "'name' must be letters, digits"),
])
def test_wrongly_typed_workload_values(tmp_path, run_cli_here, workload, fragment):
    exp = _experiment(tmp_path, workload=workload)
    assert fragment in one_error_line(run_cli_here("run", str(exp), "--out", str(tmp_path / "o")))


def test_binary_files(tmp_path):
    (tmp_path / "w.toml").write_bytes(b"\xa5\xff\x00binary" * 20)
    exp = _experiment(tmp_path)
    assert "w.toml: not a text (UTF-8) file" in one_error_line(run_cli("run", str(exp), "--out", str(tmp_path / "o")))
    exp.write_bytes(b"\xa5\xff\x00binary" * 20)
    assert "exp.toml: not a text (UTF-8) file" in one_error_line(run_cli("run", str(exp)))


@pytest.mark.parametrize(("extra", "fragment"), [
    ('time = "100000h"', "[run].time: '100000h' is longer than a week per cell"),
    ('warmup = "800000s"', "[run].warmup: '800000s' is longer than a week per cell"),
    ("threads = [1, 2, 1]", "[run].threads: 1 is listed twice"),
])
def test_absurd_or_duplicate_run_settings(tmp_path, run_cli_here, extra, fragment):
    body = _experiment(tmp_path, '"point-query"').read_text().replace('time = "1s"\n', "")
    body = body.replace('warmup = "0.2s"\n', "") if "warmup" in extra else body
    (tmp_path / "exp.toml").write_text(body.replace("repeats = 1", f"repeats = 1\n{extra}"))
    assert fragment in one_error_line(run_cli_here("run", str(tmp_path / "exp.toml"), "--out", str(tmp_path / "o")))


@pytest.mark.parametrize(("engine", "setting", "why"), [
    ("postgres", 'listen_addresses = "0.0.0.0"', "the lab's servers listen on 127.0.0.1 only"),
    ("postgres", 'unix_socket_directories = "/tmp"', "the lab puts a server's Unix socket in its private data"),
    ("mariadb", 'bind-address = "0.0.0.0"', "the lab's servers listen on 127.0.0.1 only"),
    ("mariadb", 'bind_address = "0.0.0.0"', "the lab's servers listen on 127.0.0.1 only"),
    ("mariadb", 'skip-networking = "OFF"', "the lab's servers listen on 127.0.0.1 only"),
    ("mariadb", 'init-file = "/etc/passwd"', "the lab sets up a server's logins itself"),
])
def test_settings_that_would_undo_the_labs_binding_are_refused(tmp_path, run_cli_here, engine, setting, why):
    exp = tmp_path / "exp.toml"
    exp.write_text(RUN.format(benchmarks='"point-query"', extra="").replace('name = "a"', f'name = "s"\nengine = '
                                                                            f'"{engine}"\nconfig = {{ {setting} }}'))
    line = one_error_line(run_cli_here("run", str(exp), "--out", str(tmp_path / "o")))
    key = setting.split(" =")[0]
    assert f"config.{key}: {why}" in line, line  # each setting's own reason (engines/owned_reasons.py)


ERROR_WORKLOAD = ('name = "odd-error"\n[[statement]]\nsql = "SELECT `[/red]|<script>x</script>` FROM '
                  'sbtest{table} WHERE id = {id}"\nparams.id = { gen = "uniform" }\n')


def test_engine_errors_are_escaped_in_every_format(finished, run_cli_here):
    out, shown = finished
    assert "[/red]|<script>" in shown  # shown as text in the terminal table, not taken as markup
    reports = {}
    for fmt in ("table", "markdown", "csv", "json"):
        reports[fmt] = run_cli_here("report", str(out), "--format", fmt)
        assert reports[fmt].returncode == 0 and "Traceback" not in reports[fmt].stderr, reports[fmt].stderr
    assert "[/red]|<script>" in reports["table"].stdout
    markdown = reports["markdown"].stdout
    assert "<script>" not in markdown and "&lt;script&gt;" in markdown and "\\[/red\\]" not in markdown
    # (run after update-index, its name says so: odd-error@after-writes)
    row = next(x for x in markdown.splitlines() if x.startswith("| odd-error") and " | failed: " in x)
    assert "\\|" in row and row.count(" | ") == row.replace("\\|", "").count(" | ")
    doc = json.loads(reports["json"].stdout)
    assert any("[/red]|<script>" in e for c in doc["cells"] for e in c["errors"])


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> tuple[Path, str]:
    """One real run that every test of a finished run reads (a copy when it edits it): two benchmarks that succeed
    and one whose engine error holds markup; the run's directory and what it printed."""
    tmp = tmp_path_factory.mktemp("finished")
    (tmp / "w.toml").write_text(ERROR_WORKLOAD)
    out = tmp / "out"
    proc = run_cli("run", str(_experiment(tmp, '"point-query", "update-index", "w.toml"')), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out, proc.stdout


@pytest.fixture
def finished_run(finished) -> Path:
    return finished[0]


def _copy(finished_run: Path, tmp_path: Path) -> Path:
    out = tmp_path / "copy"
    shutil.copytree(finished_run, out)
    return out


@pytest.mark.parametrize(("meta", "fragment"), [
    ([], "expected a JSON object"),
    ({}, "results format version None is not one this dbperf reads"),
    ({"dbperf_results": 99}, "results format version 99"),
    ({"dbperf_results": 1, "targets": [], "benchmarks": []}, "'targets' must be a non-empty list"),
    ({"dbperf_results": 1, "targets": [{"library": "x"}], "benchmarks": []}, "'targets' must be a non-empty list"),
    ({"dbperf_results": 1, "targets": [{"name": "a"}], "benchmarks": [{"name": "b"}], "base": "a"},
     "'benchmarks' must be a list of objects with a 'name' and a 'group'"),
    ({"dbperf_results": 1, "targets": [{"name": "a"}], "benchmarks": [], "base": "zz"}, "'base' 'zz' is not one"),
    ({"dbperf_results": 1, "targets": [{"name": "a"}], "benchmarks": [], "base": "a", "time_s": float("nan")},
     "'time_s' must be a positive number of seconds, not nan"),
    ({"dbperf_results": 1, "targets": [{"name": "a"}], "benchmarks": [], "base": "a", "threads": [-1]},
     "'threads' must be thread counts of 1 or more, not -1"),
    ("not json", "unreadable"),
])
@pytest.mark.parametrize("how", [["--format", "table"], ["--format", "markdown"], ["--format", "csv"],
                                 ["--format", "json"], ["--ladder"]])
def test_a_hand_edited_meta_json_is_one_line(finished_run, tmp_path, run_cli_here, meta, fragment, how):
    out = _copy(finished_run, tmp_path)
    (out / "meta.json").write_text(meta if isinstance(meta, str) else json.dumps(meta))
    line = one_error_line(run_cli_here("report", str(out), *how))
    assert str(out / "meta.json") in line and fragment in line


def test_a_hand_edited_meta_json_is_one_line_from_a_process_of_its_own(finished_run, tmp_path):
    out = _copy(finished_run, tmp_path)
    (out / "meta.json").write_text(json.dumps({"dbperf_results": 99}))
    line = one_error_line(run_cli("report", str(out)))
    assert str(out / "meta.json") in line and "results format version 99" in line


def test_bad_and_torn_result_lines_are_skipped_and_said(finished_run, tmp_path, run_cli_here):
    out = _copy(finished_run, tmp_path)
    good = (out / "results.jsonl").read_text().splitlines()
    first = json.loads(good[0])
    broken = {**first, "result": {"qps": "fast"}}
    lines = [good[0], "42", json.dumps({"target": "a"}), json.dumps(broken), good[1], good[1][: len(good[1]) // 2]]
    (out / "results.jsonl").write_text("\n".join(lines))
    for how in (["--format", "table"], ["--format", "markdown"], ["--format", "csv"], ["--ladder"]):
        proc = run_cli_here("report", str(out), *how)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        assert "results.jsonl: 4 line(s) skipped" in proc.stderr
        assert "line 6: torn last line" in proc.stderr and "line 2: not a JSON object" in proc.stderr
    doc = json.loads(run_cli_here("report", str(out), "--format", "json").stdout)
    assert [s["line"] for s in doc["skipped_lines"]] == [2, 3, 4, 6]
    assert {c["benchmark"] for c in doc["cells"] if c["status"] == "ok"} == {"point-query", "update-index"}


def test_a_complete_run_reports_nothing_skipped(finished_run, run_cli_here):
    proc = run_cli_here("report", str(finished_run), "--format", "json")
    assert json.loads(proc.stdout)["skipped_lines"] == [] and "skipped" not in proc.stderr


@pytest.mark.parametrize("time", ['"0.0000001s"', '"5ms"'])
def test_a_cell_time_below_what_a_cell_can_measure_is_refused_before_the_folder_is_claimed(tmp_path, run_cli_here,
                                                                                           time):
    exp = _experiment(tmp_path, benchmarks='"point-query"')
    exp.write_text(exp.read_text().replace('time = "1s"', f"time = {time}"))
    for args in (("--dry-run",), ("--out", str(tmp_path / "o"))):
        line = one_error_line(run_cli_here("run", str(exp), *args))
        assert "is shorter than the 10 ms a cell needs" in line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("setting", "said"), [
    ("threads = [1, 1000000]", "threads: 1,000,000 client threads: at most 4,096 in one driver"),
    ("repeats = 100000000000000000000000", "repeats: 1e+23 repeats: at most 2^53"),
])
def test_counts_beyond_what_a_host_can_run_are_refused_by_the_dry_run(tmp_path, run_cli_here, setting, said):
    exp = _experiment(tmp_path, benchmarks='"point-query"')
    key = setting.split(" =")[0]
    text = exp.read_text()
    text = text.replace("repeats = 1\n", "") if key == "repeats" else text
    exp.write_text(text.replace("[run]\n", f"[run]\n{setting}\n"))
    assert said in one_error_line(run_cli_here("run", str(exp), "--dry-run"))


@pytest.mark.parametrize("command", [
    ["run", "{exp}"], ["run", "{exp}", "--dry-run"], ["calibrate", "--quick"], ["bisect", "postgres", "12", "13"],
    ["study", "run", "barriers-spin", "--smoke"],
])
def test_a_dangling_symlink_as_out_is_one_line_before_anything_is_planned_or_built(tmp_path, run_cli_here, command):
    exp = _experiment(tmp_path, benchmarks='"point-query"')
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "gone")
    proc = run_cli_here(*[a.format(exp=exp) for a in command], "--out", str(link))
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    (line,) = proc.stderr.strip().splitlines()
    assert f"a symbolic link to {tmp_path / 'gone'}, which does not exist" in line, line
    assert not (tmp_path / "gone").exists()
