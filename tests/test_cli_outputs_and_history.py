"""Issue 23, the CLI's part: output files that never overwrite measurements, a history store that only opens its
own files, every report view in every format, and the smaller items (interrupt reason, the estimate's refusal said
once, a run with no ok cell kept out of the history). Each test reproduced its defect before the fix."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import sqlite3
from pathlib import Path

import pytest

from dbperf.errors import UserError
from tests.conftest import run_cli
from tests.synthetic import write_run

FORMATS = ("markdown", "csv", "json", "html")


def _sums(*paths: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", ["a", "b"], ["point-query", "range"], 3)


def _one_line_refusal(done, *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dbperf: error:"), done.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


# -- item 1: output files --------------------------------------------------------------------------------------------

@pytest.mark.unit
def test_report_and_compare_never_write_over_the_results_files_even_with_force(results, tmp_path):
    own = [results / "results.jsonl", results / "meta.json"]
    before = _sums(*own)
    link = tmp_path / "innocent.html"
    link.symlink_to(results / "results.jsonl")
    for target in (*own, link):
        for force in ([], ["--force"]):
            _one_line_refusal(run_cli("report", str(results), "--format", "html", "-o", str(target), *force),
                              "results directory's own")
            _one_line_refusal(run_cli("compare", str(results), str(results), "--format", "csv", "-o", str(target),
                                      *force), "results directory's own")
    assert _sums(*own) == before and link.is_symlink()


@pytest.mark.unit
def test_an_existing_file_is_replaced_only_with_force(results, tmp_path):
    mine = tmp_path / "notes.md"
    mine.write_text("my own notes\n")
    before = _sums(mine)
    for args in (["report", str(results), "--format", "markdown"], ["report", str(results), "--ladder", "--format",
                                                                     "csv"],
                 ["compare", str(results), str(results), "--format", "json"]):
        _one_line_refusal(run_cli(*args, "-o", str(mine)), "exists", "--force")
        assert _sums(mine) == before
    done = run_cli("report", str(results), "--format", "markdown", "-o", str(mine), "--force")
    assert done.returncode == 0, done.stderr
    assert "rQPS relative to a" in mine.read_text()


@pytest.mark.unit
def test_a_trailing_slash_is_a_directory_and_a_missing_one_is_refused(results, tmp_path):
    missing = tmp_path / "missing-dir"
    _one_line_refusal(run_cli("report", str(results), "--format", "html", "-o", f"{missing}/"), "no such directory")
    assert not missing.exists()  # no file named like the directory
    _one_line_refusal(run_cli("report", str(results), "--format", "csv", "-o", str(missing / "r.csv")),
                      "does not exist")
    out = tmp_path / "reports"
    out.mkdir()
    for slash in ("/", ""):
        done = run_cli("report", str(results), "--format", "csv", "-o", f"{out}{slash}", "--force")
        assert done.returncode == 0, done.stderr
    assert (out / "report.csv").read_text().startswith("target,benchmark")
    assert run_cli("report", str(results), "--ladder", "--format", "json", "-o", f"{out}/").returncode == 0
    assert json.loads((out / "ladder.json").read_text())["view"] == "ladder"


@pytest.mark.unit
def test_output_file_rules_directly(tmp_path):
    from dbperf.output_file import output_path, write_file
    run = tmp_path / "run"
    run.mkdir()
    (run / "meta.json").write_text('{"dbperf_results": 1}')
    with pytest.raises(UserError, match=r"own meta\.json"):
        output_path(run / "meta.json", True, "report.html")
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "meta.json").write_text('{"not": "dbperf"}')  # not a results directory: an ordinary file
    assert output_path(other / "meta.json", True, "x") == other / "meta.json"
    with pytest.raises(UserError, match="exists"):
        output_path(other / "meta.json", False, "x")
    assert write_file(f"{other}/", "doc", False, "report.md") == other / "report.md"
    assert (other / "report.md").read_text() == "doc"
    with pytest.raises(UserError, match="exists"):
        write_file(other / "report.md", "again", False)
    assert (other / "report.md").read_text() == "doc"
    assert not [p for p in other.iterdir() if p.name.endswith(".tmp")]  # no temporary left behind
    with pytest.raises(UserError, match="empty path"):
        output_path("", True, "report.html")


@pytest.mark.unit
def test_a_stored_probe_result_is_not_replaced_without_force(tmp_path):
    out = tmp_path / "probes"
    (out / "host-1").mkdir(parents=True)
    for held in (out / "probes.json", out / "host-1" / "probes.json"):
        held.write_text('{"measured": "earlier"}\n')
        before = _sums(held)
        _one_line_refusal(run_cli("probe", "timers", "--scale", "0.01", "--out", str(out)), "already holds",
                          "--force")
        assert _sums(held) == before
        held.unlink()


@pytest.mark.unit
def test_layout_and_profile_json_files_follow_the_same_rules(results, tmp_path):
    mine = tmp_path / "kept.json"
    mine.write_text('{"mine": true}\n')
    before = _sums(mine, results / "meta.json")
    _one_line_refusal(run_cli("layout", "/bin/true", "--json", str(mine)), "--json", "exists", "--force")
    _one_line_refusal(run_cli("layout", "/bin/true", "--json", str(results / "meta.json"), "--force"),
                      "results directory's own")
    _one_line_refusal(run_cli("profile", str(tmp_path / "exp.toml"), "--target", "a", "--benchmark", "point-query",
                              "--json", str(mine)), "--json", "exists")
    assert _sums(mine, results / "meta.json") == before


# -- item 6: every report view in every format -----------------------------------------------------------------------

@pytest.mark.unit
@pytest.mark.parametrize("view", ["--ladder", "--intervals", "--resources"])
def test_every_report_view_renders_every_format_and_honours_output(results, tmp_path, view):
    table = run_cli("report", str(results), view)
    assert table.returncode == 0, table.stderr
    printed = run_cli("report", str(results), view, "--format", "markdown")
    assert printed.returncode == 0 and printed.stdout.startswith("## "), printed.stderr
    for fmt in FORMATS:
        out = tmp_path / f"{view.strip('-')}.{fmt}"
        done = run_cli("report", str(results), view, "--format", fmt, "-o", str(out))
        assert done.returncode == 0 and "wrote" in done.stderr, done.stderr
        document = out.read_text()
        assert document != table.stdout and (fmt != "markdown" or document == printed.stdout)
        if fmt == "json":
            assert json.loads(document)
        elif fmt == "csv":
            assert next(csv.reader(io.StringIO(document)))[:2] in (["step", "target"], ["target", "benchmark"])
        elif fmt == "html":
            assert document.startswith("<!DOCTYPE html>") and "</html>" in document
    _one_line_refusal(run_cli("report", str(results), view, "-o", str(tmp_path / "t.txt")), "not with --format "
                                                                                             "table")


@pytest.mark.unit
def test_a_view_escapes_what_users_named(tmp_path):
    evil = "<script>alert(1)</script>|`x`"
    run = write_run(tmp_path / "evil", ["base", evil], ["point-query"], 2)
    page = run_cli("report", str(run), "--ladder", "--format", "html").stdout
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    markdown = run_cli("report", str(run), "--ladder", "--format", "markdown").stdout
    table_lines = [line for line in markdown.splitlines() if line.startswith("|")]
    assert all(line.startswith("    ") for line in markdown.splitlines() if "<script>" in line)  # a code block
    assert any("\\|" in line for line in table_lines) and not any("<script>" in line for line in table_lines)


@pytest.mark.unit
def test_two_views_at_once_are_refused(results):
    _one_line_refusal(run_cli("report", str(results), "--ladder", "--intervals"), "one at a time")


# -- item 2: the history store is recognized by its own marker ------------------------------------------------------

def _foreign(path: Path, sql: str) -> Path:
    db = sqlite3.connect(path)
    db.executescript(sql)
    db.commit()
    db.close()
    return path


@pytest.mark.unit
@pytest.mark.parametrize(("name", "make", "words"), [
    ("conflicting-runs", lambda p: _foreign(p, "CREATE TABLE runs (x INTEGER, y TEXT); INSERT INTO runs VALUES "
                                               "(1, 'theirs');"), "not a dbperf history store"),
    ("other-tables", lambda p: _foreign(p, "CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT);"),
     "not a dbperf history store"),
    ("other-app", lambda p: _foreign(p, "PRAGMA application_id = 1234;"), "another program's SQLite database"),
    ("text", lambda p: p.write_text("just some notes\n") and p, "not a SQLite database"),
])
def test_a_foreign_file_as_the_history_is_refused_untouched(results, tmp_path, name, make, words):
    store = tmp_path / f"{name}.sqlite"
    make(store)
    before = _sums(store)
    env = {"DBPERF_HISTORY": str(store)}
    for args in (["history", "add", str(results)], ["history", "list"], ["history", "show"], ["series"],
                 ["regressions"]):
        _one_line_refusal(run_cli(*args, env=env), words)
    assert _sums(store) == before and sorted(p.name for p in tmp_path.iterdir() if name in p.name) == [store.name]


@pytest.mark.unit
def test_a_store_of_a_newer_schema_is_refused_untouched(results, tmp_path):
    from dbperf.history import store as history
    path = tmp_path / "h.sqlite"
    history.Store(path).close()
    db = sqlite3.connect(path)
    db.execute(f"UPDATE {history.MARKER_TABLE} SET version = 99")
    db.commit()
    db.close()
    before = _sums(path)
    _one_line_refusal(run_cli("history", "add", str(results), env={"DBPERF_HISTORY": str(path)}),
                      "schema version 99")
    assert _sums(path) == before


@pytest.mark.unit
def test_a_new_store_gets_the_marker_and_a_store_from_before_the_marker_is_adopted(results, tmp_path):
    from dbperf.history import store as history
    new = tmp_path / "new.sqlite"
    history.Store(new).close()
    db = sqlite3.connect(new)
    assert db.execute("PRAGMA application_id").fetchone()[0] == history.APPLICATION_ID
    assert db.execute(f"SELECT version FROM {history.MARKER_TABLE}").fetchall() == [(history.SCHEMA_VERSION,)]
    db.close()
    schema_1 = history.SCHEMA.replace(",\n    simulated TEXT", "")  # before the marker, schema 1 was the only one
    assert schema_1 != history.SCHEMA
    old = _foreign(tmp_path / "old.sqlite", schema_1 + "PRAGMA user_version = 1;")
    done = run_cli("history", "add", str(results), env={"DBPERF_HISTORY": str(old)})
    assert done.returncode == 0 and "recorded as run 1" in done.stdout, done.stderr
    assert sqlite3.connect(old).execute("PRAGMA application_id").fetchone()[0] == history.APPLICATION_ID
    assert "simulated" in [c[1] for c in sqlite3.connect(old).execute("PRAGMA table_info(results)")]  # upgraded
    # dbperf's table names with other columns are someone else's
    lookalike = _foreign(tmp_path / "lookalike.sqlite", "CREATE TABLE runs (id INTEGER PRIMARY KEY); "
                                                        "CREATE TABLE results (id INTEGER PRIMARY KEY);")
    with pytest.raises(UserError, match="not a dbperf history store"):
        history.Store(lookalike)


@pytest.mark.unit
def test_a_schema_1_store_is_upgraded_in_place_and_keeps_its_runs(results, tmp_path):
    from dbperf.history import store as history
    path = tmp_path / "h.sqlite"
    env = {"DBPERF_HISTORY": str(path)}
    assert run_cli("history", "add", str(results), env=env).returncode == 0
    db = sqlite3.connect(path)  # back to schema 1: no simulated column, marker 1
    db.execute("ALTER TABLE results DROP COLUMN simulated")
    db.execute(f"UPDATE {history.MARKER_TABLE} SET version = 1")
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()
    store = history.Store(path)
    try:
        kept = store.results()
        assert kept and all(r.simulated is None for r in kept)
        assert store.db.execute(f"SELECT version FROM {history.MARKER_TABLE}").fetchall() == [(2,)]
    finally:
        store.close()


@pytest.mark.unit
def test_an_empty_dbperf_history_is_an_error_not_the_default(tmp_path):
    _one_line_refusal(run_cli("history", "list", env={"DBPERF_HISTORY": ""}), "DBPERF_HISTORY is set but empty")


@pytest.mark.unit
def test_typer_parameter_errors_are_one_line(tmp_path):
    env = {"DBPERF_HISTORY": str(tmp_path / "h.sqlite")}
    _one_line_refusal(run_cli("history", "show", "abc", env=env), "history show", "'run'")
    _one_line_refusal(run_cli("series", "--threads", "x", env=env), "series", "--threads")
    _one_line_refusal(run_cli("regressions", "--pvalue", "much", env=env), "regressions", "--pvalue")
    _one_line_refusal(run_cli("history", "show", "--bogus", env=env), "No such option")


# -- the smaller items ----------------------------------------------------------------------------------------------

@pytest.mark.unit
@pytest.mark.parametrize(("interrupt", "reason", "code"), [
    (KeyboardInterrupt(), "interrupted (Ctrl-C);", 130),
    ("SIGTERM", "interrupted (SIGTERM);", 143),
])
def test_an_interrupted_run_says_why(tmp_path, capsys, interrupt, reason, code):
    import signal

    from dbperf.runner.interrupts import Interrupted
    from dbperf.usecases import run as uc
    raised = Interrupted(signal.SIGTERM) if interrupt == "SIGTERM" else interrupt

    def run():
        raise raised

    end = uc.run_to_end(tmp_path, False, "cell", run, record=True)
    err = capsys.readouterr().err
    assert reason in err and "()" not in err and end.exit_code == code


@pytest.mark.unit
def test_a_run_with_no_ok_cell_is_not_recorded_in_the_history(results, tmp_path, capsys, monkeypatch):
    from dbperf.history.store import open_store
    from dbperf.runner.matrix import RunOutcome
    from dbperf.usecases import run as uc
    monkeypatch.setenv("DBPERF_HISTORY", str(tmp_path / "h.sqlite"))
    end = uc.run_to_end(results, False, "cell", lambda: RunOutcome(results, cells_ok=0, cells_failed=4), record=True)
    assert end.exit_code == uc.NO_CELL_SUCCEEDED
    assert "not recorded in the history: no cell succeeded" in capsys.readouterr().err
    store = open_store()
    try:
        assert store.runs() == []
    finally:
        store.close()
    uc.run_to_end(results, False, "cell", lambda: RunOutcome(results, cells_ok=4, cells_failed=0), record=True)
    assert "recorded in the history as run 1" in capsys.readouterr().err


@pytest.mark.unit
def test_the_estimate_refusal_is_said_once(write_experiment, tmp_path):
    body = ('[run]\nbenchmarks = ["point-query"]\ntable_size = 1000\ntime = "0.2s"\nrepeats = 100000000000\n\n'
            '[[target]]\nname = "a"\n')
    done = run_cli("run", str(write_experiment(body)), "--out", str(tmp_path / "out"))
    _one_line_refusal(done, "add --yes")
    assert not (tmp_path / "out").exists()


@pytest.mark.unit
def test_a_run_refuses_an_empty_dbperf_history_before_measuring(write_experiment, tmp_path):
    body = '[run]\nbenchmarks = ["point-query"]\ntable_size = 1000\ntime = "0.2s"\n\n[[target]]\nname = "a"\n'
    done = run_cli("run", str(write_experiment(body)), "--out", str(tmp_path / "out"), env={"DBPERF_HISTORY": ""})
    _one_line_refusal(done, "DBPERF_HISTORY is set but empty")
    assert not (tmp_path / "out").exists()


@pytest.mark.unit
@pytest.mark.parametrize("args", [["probe", "--scale", "nan"], ["probe", "--scale", "inf"],
                                  ["probe", "--fleet", "--local", "-3"]])
def test_probe_numbers_that_are_not_numbers_are_one_line(args):
    """`--scale nan` passed the `scale <= 0` check, and `--local -3` was blamed on --workers."""
    proc = run_cli(*args)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert args[-2] in proc.stderr


@pytest.mark.unit
def test_interrupt_reason_names_ctrl_c_and_signals():
    import signal

    from dbperf.runner import interrupts
    assert interrupts.reason(KeyboardInterrupt()) == "Ctrl-C"
    assert interrupts.reason(interrupts.Interrupted(signal.SIGTERM)) == "SIGTERM"


@pytest.mark.unit
@pytest.mark.parametrize(("interrupt", "said", "code"), [
    (KeyboardInterrupt(), "dbperf: interrupted (Ctrl-C)", 130),
    ("SIGTERM", "dbperf: interrupted (SIGTERM)", 143),
])
def test_a_command_interrupted_outside_a_run_says_so_and_exits_with_its_signals_code(capsys, monkeypatch, interrupt,
                                                                                     said, code):
    # Typer turns a KeyboardInterrupt into a silent exit 130 (SIGTERM's 143 lost): the lab carries it past Typer.
    import signal

    import dbperf.cli as cli
    from dbperf.cli import build
    from dbperf.runner.interrupts import Interrupted
    raised = Interrupted(signal.SIGTERM) if interrupt == "SIGTERM" else interrupt

    def building(experiment):
        raise raised

    monkeypatch.setattr(build, "build_experiment", building)
    monkeypatch.setattr("sys.argv", ["dbperf", "build", "e.toml"])
    with pytest.raises(SystemExit) as end:
        cli._dispatch()
    assert end.value.code == code and capsys.readouterr().err.strip() == said
