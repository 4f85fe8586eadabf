"""Where `dbperf study run` writes: `--out` is a new or empty folder (`dbperf run`'s rule), `--resume` goes on only
with a run of the same study in the same mode, and a folder it cannot write is one line. Whatever a refused command
found there is left exactly as it was. The refusals come before any step runs: the real studies are used; a run that
is taken uses a study of one step that fails at once (tests/study_cli.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import DBPERF, REPO, run_cli
from tests.study_cli import study_cli, write_studies
from tests.synthetic import write_run


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() if p.is_file() else b"<dir>"
            for p in sorted(directory.rglob("*"))}


def _one_line_refusal(proc: subprocess.CompletedProcess[str], message: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.startswith("dbperf: error: ") and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert message in proc.stderr, proc.stderr
    assert "--force" not in proc.stderr  # study run has no such option
    assert "results in" not in proc.stderr  # no banner for a run that did not start


@pytest.mark.unit
def test_a_folder_holding_a_users_notes_is_refused_and_left_as_it_was(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes\n")
    proc = run_cli("study", "run", "barriers-spin", "--smoke", "--out", str(out), timeout=120)
    _one_line_refusal(proc, f"--out {out}: not empty (holds notes.txt); a study run writes only into a new or "
                            "empty directory")
    assert _snapshot(out) == {"notes.txt": b"my notes\n"}


@pytest.mark.unit
def test_a_users_summary_and_probes_are_not_read_back_as_results(tmp_path):
    out = tmp_path / "mine"
    (out / "probes").mkdir(parents=True)
    (out / "summary.html").write_text("<p>my page</p>")
    (out / "probes" / "probes.json").write_text('{"mine": true}')
    before = _snapshot(out)
    proc = run_cli("study", "run", "barriers-spin", "--smoke", "--out", str(out), timeout=120)
    _one_line_refusal(proc, "not empty (holds probes, summary.html)")
    assert _snapshot(out) == before


@pytest.mark.unit
def test_resume_of_a_plain_run_folder_is_refused_and_says_what_it_is(tmp_path):
    run = write_run(tmp_path / "plain", ["a", "b"], ["point-query"], 3)
    before = _snapshot(run)
    proc = run_cli("study", "run", "barriers-spin", "--smoke", "--resume", "--out", str(run), timeout=120)
    _one_line_refusal(proc, f"--out {run}: a dbperf run's results directory, not a study run; `dbperf run "
                            f"EXPERIMENT --resume --out {run}` goes on with it")
    assert _snapshot(run) == before


@pytest.mark.unit
def test_resume_of_another_studys_run_is_refused_naming_that_study_and_its_files_stay(tmp_path):
    out = tmp_path / "other"
    out.mkdir()
    (out / "study.json").write_text(json.dumps({"dbperf_study": 1, "study": "replication", "mode": "smoke",
                                                "exit_code": 130, "steps": []}))
    (out / "summary.md").write_text("# Study replication\n")
    before = _snapshot(out)
    proc = run_cli("study", "run", "barriers-spin", "--smoke", "--resume", "--out", str(out), timeout=120)
    _one_line_refusal(proc, f"--out {out}: holds a run of study replication, not barriers-spin; `dbperf study run "
                            f"replication --smoke --resume --out {out}` goes on with it")
    # The same study in another mode: its steps' results are not this mode's.
    other_mode = run_cli("study", "run", "replication", "--quick", "--resume", "--out", str(out), timeout=120)
    _one_line_refusal(other_mode, "holds a smoke run of study replication; resume it with the same options "
                                  "(--smoke)")
    assert _snapshot(out) == before


@pytest.mark.unit
def test_resume_of_an_empty_folder_is_refused(tmp_path):
    proc = run_cli("study", "run", "barriers-spin", "--resume", "--out", str(tmp_path), timeout=120)
    _one_line_refusal(proc, "not a study run (no study.json naming its study): nothing to resume")
    assert not any(tmp_path.iterdir())


@pytest.mark.unit
def test_a_new_or_empty_folder_is_taken_and_the_run_then_resumes_as_that_studys_own(tmp_path):
    studies = write_studies(tmp_path / "studies")
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "new" / "run", tmp_path / "empty"):
        proc = study_cli(studies, "study", "run", "tiny", "--out", str(out))
        assert proc.returncode == 1, proc.stderr  # its one step fails: said in the summary
        record = json.loads((out / "study.json").read_text())
        assert record["study"] == "tiny" and "status" not in record and record["exit_code"] == 1
        assert (out / "summary.md").is_file()
    again = study_cli(studies, "study", "run", "tiny", "--out", str(out))
    _one_line_refusal(again, "already holds a study run (summary.md); give another directory, or --resume")
    resumed = study_cli(studies, "study", "run", "tiny", "--resume", "--out", str(out))
    assert resumed.returncode == 1 and "Traceback" not in resumed.stderr, resumed.stderr
    assert json.loads((out / "study.json").read_text())["resumed_at"]


@pytest.mark.unit
def test_a_run_stopped_before_its_summary_is_said_so_and_resumes(tmp_path):
    """A new run claims its folder with a first study.json (its study, status running): a run killed before its
    summary is still known as this study's, and nothing reads it as one that ended."""
    studies = write_studies(tmp_path / "studies")
    out = tmp_path / "run"
    out.mkdir()
    (out / "study.json").write_text(json.dumps({"dbperf_study": 1, "study": "tiny", "mode": "full",
                                                "started": "2026-11-23T20:00:00+00:00", "status": "running"}))
    said = study_cli(studies, "study", "summary", str(out))
    _one_line_refusal(said, f"{out}: the study run has not ended (it is running, or was stopped before its summary); "
                            f"`dbperf study run tiny --resume --out {out}` goes on with it")
    resumed = study_cli(studies, "study", "run", "tiny", "--resume", "--out", str(out))
    assert resumed.returncode == 1 and "Traceback" not in resumed.stderr, resumed.stderr
    record = json.loads((out / "study.json").read_text())
    assert "status" not in record and record["started"] == "2026-11-23T20:00:00+00:00" and record["steps"]


@pytest.mark.unit
def test_a_destination_under_a_file_is_one_line(tmp_path):
    (tmp_path / "file").write_text("mine")
    proc = run_cli("study", "run", "barriers-spin", "--smoke", "--out", str(tmp_path / "file" / "run"), timeout=120)
    _one_line_refusal(proc, "cannot write the study run there: Not a directory")
    assert (tmp_path / "file").read_text() == "mine"


def _can_mount_read_only(where: Path) -> bool:
    """Whether this test may mount a read-only tmpfs in a mount namespace of its own (root, unshare)."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o ro tmpfs {where}"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


@pytest.mark.unit
def test_a_read_only_destination_is_one_line(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    if not _can_mount_read_only(ro):
        pytest.skip("needs a read-only mount (unshare -m and mount, as root)")
    # The mount lives in the namespace of the one shell that runs the CLI: nothing outlives it.
    proc = subprocess.run(["unshare", "-m", "sh", "-c", f'mount -t tmpfs -o ro tmpfs {ro} && exec "$@"', "sh",
                           *DBPERF, "study", "run", "barriers-spin", "--smoke", "--out", str(ro / "run")],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    _one_line_refusal(proc, f"--out {ro / 'run'}: cannot write the study run there: Read-only file system")
    assert not any(ro.iterdir())
