"""`dbperf study record`: a study run cut short (interrupted, a step failed, a figure not measured, or stopped before
its summary) is refused in one line unless --partial, and a partial record says so; a --quick run going on record
is said on stderr; --docs naming a file is one line; the help names only options that exist."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli

HOST = {"cpu": "AMD EPYC 7B13", "cores": 2, "virtualised": True, "counters": "simulated", "counters_reason": "VM",
        "kernel": "6.1", "load_start": [0.5, 0.4, 0.3]}


def _study_run(directory: Path, mode: str = "full", exit_code: int | None = 0, ended: str = "probes 2 repeats",
               **extra: object) -> Path:
    """A barriers-spin run's study.json and summary.md as `dbperf study run` writes them."""
    directory.mkdir(parents=True)
    (directory / "summary.md").write_text("# Study barriers-spin: t\n\n| a | b |\n")
    run = {"dbperf_study": 1, "study": "barriers-spin", "title": "t", "mode": mode, "quick": mode != "full",
           "smoke": False, "started": "2026-11-23T20:00:00+00:00", "ended": "2026-11-23T20:01:00+00:00",
           "directory": str(directory), "command": "dbperf study run barriers-spin", "left_out": {},
           "host": HOST, "steps": [{"name": "probes", "ended": ended}],
           "figures": [{"what": "PAUSE latency", "section": "§4", "published": "x", "measured": "60 TSC ticks",
                        "verdict": "holds", "value": 60.0}], **extra}
    if exit_code is not None:
        run["exit_code"] = exit_code
    (directory / "study.json").write_text(json.dumps(run))
    return directory


def _record(run: Path, docs: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return run_cli("study", "record", "barriers-spin", str(run), "--docs", str(docs), *flags, timeout=120)


def _refused(proc: subprocess.CompletedProcess[str], message: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.startswith("dbperf: error: ") and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert message in proc.stderr, proc.stderr


@pytest.mark.unit
def test_an_interrupted_run_is_refused_unless_partial_and_the_partial_record_says_so(tmp_path):
    run = _study_run(tmp_path / "run", exit_code=130, ended="interrupted (Ctrl-C)")
    docs = tmp_path / "docs"
    proc = _record(run, docs)
    _refused(proc, f"{run}: an interrupted run (step probes interrupted): its figures are not the whole study's; "
                   f"go on with it (`dbperf study run barriers-spin --resume --out {run}`), or add --partial")
    assert not docs.exists()  # nothing written
    partial = _record(run, docs, "--partial")
    assert partial.returncode == 0, partial.stderr
    assert "dbperf: note: an interrupted run (step probes interrupted) went on record (--partial)" in partial.stderr
    page = (docs / "barriers-spin.md").read_text()
    assert "**A partial run** (put on record with --partial): an interrupted run (step probes interrupted)." in page
    assert json.loads((docs / "barriers-spin.json").read_text())["partial"] == \
        "an interrupted run (step probes interrupted)"


@pytest.mark.unit
def test_an_incomplete_run_a_step_failed_or_a_figure_not_measured_is_refused(tmp_path):
    failed = _study_run(tmp_path / "failed", exit_code=1, ended="failed: cc: not found")
    _refused(_record(failed, tmp_path / "docs"), "an incomplete run (step probes failed)")
    # An older study.json without its exit code: its steps say.
    old = _study_run(tmp_path / "old", exit_code=None, ended="failed: cc: not found")
    unmeasured = _study_run(tmp_path / "unmeasured", exit_code=1, figures=[
        {"what": "PAUSE latency", "section": "§4", "published": "x", "measured": "not measured: no such group",
         "verdict": "–", "value": None}])
    for run, said in ((old, "an incomplete run (step probes failed)"),
                      (unmeasured, "an incomplete run (1 figure(s) not measured)")):
        _refused(_record(run, tmp_path / "docs"), said)
    assert not (tmp_path / "docs").exists()


@pytest.mark.unit
def test_a_run_stopped_before_its_summary_is_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "study.json").write_text(json.dumps({"dbperf_study": 1, "study": "barriers-spin", "mode": "full",
                                                "status": "running"}))
    _refused(_record(run, tmp_path / "docs"), f"{run}: the study run has not ended (it is running, or was stopped "
                                              "before its summary)")


@pytest.mark.unit
def test_a_quick_run_going_on_record_is_said_on_stderr(tmp_path):
    run = _study_run(tmp_path / "run", mode="quick")
    proc = _record(run, tmp_path / "docs")
    assert proc.returncode == 0, proc.stderr
    assert "dbperf: note: a --quick run went on record (fewer versions, smaller tables, shorter cells: a check " \
           "that the study runs, not the published method)" in proc.stderr
    assert ", quick mode." in (tmp_path / "docs" / "barriers-spin.md").read_text()


@pytest.mark.unit
def test_docs_naming_a_file_is_one_line_and_the_file_is_left_alone(tmp_path):
    run = _study_run(tmp_path / "run")
    docs = tmp_path / "docs.md"
    docs.write_text("mine\n")
    proc = _record(run, docs)
    _refused(proc, f"--docs {docs}: not a directory")
    assert "Traceback" not in proc.stderr and docs.read_text() == "mine\n"
    under = _record(run, docs / "studies")
    _refused(under, f"--docs {docs / 'studies'}: cannot create the directory: Not a directory")


@pytest.mark.unit
def test_record_help_names_only_its_own_options():
    proc = run_cli("study", "record", "--help", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "-o " not in proc.stdout and "-o/" not in proc.stdout and "--output" not in proc.stdout
    assert "--partial" in proc.stdout and "--force" in proc.stdout


@pytest.mark.unit
def test_how_a_run_was_cut_short_is_said_without_the_steps_punctuation():
    """`study record` of a run whose step ended "interrupted; ..." said "step mariadb interrupted;, 4 figure(s)"."""
    from dbperf.studies.figures import Row
    from dbperf.studies.record import unfinished
    from dbperf.studies.study_record import StepEnded, StudyRecord
    run = StudyRecord(study="pgo-server", exit_code=130, figures=[Row("w", measured="not measured: cut short")],
                      steps=[StepEnded("mariadb", "interrupted; its cells measured so far are kept")])
    assert unfinished(run) == "an interrupted run (step mariadb interrupted, 1 figure(s) not measured)"
