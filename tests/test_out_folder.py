"""The one --out claim (storage/out_folder.py) for every kind of folder the lab writes: a run's (and its dry run's
look at it), a study run's, a bisect's and a calibration's. For each: a new folder and an empty one are taken; a
folder of its own kind is refused without --resume and goes on with it; another kind's folder and a user's are
refused, each in one line naming what the folder holds; nothing is created or changed by looking."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from dbperf.errors import UserError
from dbperf.storage.bisect_path import BISECT, BisectPath, BisectResult, StepSettings, write_path
from dbperf.storage.calibration_run import CALIBRATION, CalibrationRun, write_calibration
from dbperf.storage.out_folder import LOCK, FolderKind, claim, kind_of
from dbperf.storage.results import RUN, RunFolder, hold
from dbperf.studies.study_folder import StudyFolder
from dbperf.studies.study_record import STUDY_JSON, StudyRecord, record_text
from dbperf.usecases.dry_run import folder_check
from tests.synthetic import write_run

pytestmark = pytest.mark.unit

SETTINGS = StepSettings("postgres", "point-query", 0.05, 5.0, 1.0, 120.0)


def a_run(d: Path) -> Path:
    return write_run(d, ["a", "b"], ["point-query"], 2, meta_extra={"status": "interrupted"})


def a_calibration(d: Path) -> Path:
    a_run(d)
    write_calibration(d, quick=True)
    return d


def a_bisect(d: Path) -> Path:
    d.mkdir(parents=True)
    write_path(d, BisectPath(SETTINGS, BisectResult(["13.23", "14.0", "17.0"], outcome="interrupted")))
    return d


def a_study(d: Path) -> Path:
    d.mkdir(parents=True)
    (d / STUDY_JSON).write_text(record_text(StudyRecord(study="tiny", mode="smoke", status="running")))
    return d


def a_users(d: Path) -> Path:
    d.mkdir(parents=True)
    (d / "notes.txt").write_text("mine\n")
    return d


MAKERS: dict[str, Callable[[Path], Path]] = {"run": a_run, "calibration": a_calibration, "bisect": a_bisect,
                                             "study": a_study}
KINDS: dict[str, FolderKind] = {"run": RUN, "calibration": CALIBRATION, "bisect": BISECT,
                                "study": StudyFolder("tiny", "smoke")}
# How each kind's folder is named when another kind's claim refuses it.
SAID = {"run": "a dbperf run's results (interrupted)", "calibration": "a calibration run",
        "bisect": "a bisect (postgres 13.23..17.0, point-query, slower at 5.0%)", "study": "a run of study tiny"}
# The refusal of a new one in a folder of its own kind.
TAKEN = {"run": "already holds results (a dbperf run's results (interrupted))",
         "calibration": "holds a calibration run (interrupted); --resume goes on with it",
         "bisect": "already holds a bisect (postgres 13.23..17.0, point-query, slower at 5.0%), cut short",
         "study": "already holds a study run (study.json: not ended); give another directory, or --resume"}
RECORD = {"run": RunFolder, "calibration": CalibrationRun, "bisect": BisectPath, "study": StudyRecord}


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): b"<dir>" if p.is_dir() else p.read_bytes() for p in sorted(root.rglob("*"))}


def refused(directory: Path, kind: FolderKind, resume: bool) -> str:
    before = snapshot(directory) if directory.exists() else None
    with pytest.raises(UserError) as caught:
        claim(directory, kind, resume)
    line = str(caught.value)
    assert "\n" not in line and line.startswith(f"--out {directory}: "), line
    assert (snapshot(directory) if directory.exists() else None) == before  # looked at, nothing changed
    return line


@pytest.mark.parametrize("name", KINDS)
def test_a_new_or_an_empty_folder_is_taken_and_nothing_is_created(tmp_path, name):
    new, empty = tmp_path / "new" / "out", tmp_path / "empty"
    empty.mkdir()
    assert claim(new, KINDS[name]) is None and not (tmp_path / "new").exists()
    assert claim(empty, KINDS[name]) is None and not any(empty.iterdir())


@pytest.mark.parametrize("name", KINDS)
def test_a_folder_of_its_own_kind_is_refused_without_resume_and_goes_on_with_it(tmp_path, name):
    folder = MAKERS[name](tmp_path / name)
    assert TAKEN[name] in refused(folder, KINDS[name], resume=False)
    assert isinstance(claim(folder, KINDS[name], resume=True), RECORD[name])


@pytest.mark.parametrize("name", KINDS)
@pytest.mark.parametrize("other", MAKERS)
def test_another_kinds_folder_is_refused_naming_that_kind(tmp_path, name, other):
    if other == name:
        return
    folder = MAKERS[other](tmp_path / other)
    line = refused(folder, KINDS[name], resume=False)
    assert f"holds {SAID[other]}" in line and "writes only into a new or empty directory" in line, line
    line = refused(folder, KINDS[name], resume=True)
    if (name, other) == ("study", "run"):  # with the command that resumes it
        assert f"a dbperf run's results directory, not a study run; `dbperf run EXPERIMENT --resume --out {folder}`" \
               in line, line
    else:
        assert f"to resume (it holds {SAID[other]})" in line, line


@pytest.mark.parametrize("name", KINDS)
def test_a_users_folder_is_refused_with_and_without_resume(tmp_path, name):
    folder = a_users(tmp_path / "mine")
    line = refused(folder, KINDS[name], resume=False)
    assert "not empty" in line and "(holds notes.txt)" in line and "choose another --out" in line, line
    line = refused(folder, KINDS[name], resume=True)
    assert ("to resume" in line and "notes.txt" in line) or "not a study run" in line, line


@pytest.mark.parametrize("name", KINDS)
def test_a_file_where_the_folder_should_be_is_refused(tmp_path, name):
    mine = tmp_path / "notes.txt"
    mine.write_text("mine\n")
    for resume in (False, True):
        assert "exists and is not a directory" in refused(mine, KINDS[name], resume)
    assert mine.read_text() == "mine\n"


def test_resume_on_an_empty_folder_says_there_is_nothing_to_resume(tmp_path):
    for name in ("run", "calibration", "bisect"):
        assert "to resume (it holds nothing)" in refused(tmp_path, KINDS[name], resume=True)
    assert "not a study run (no study.json naming its study): nothing to resume" in refused(
        tmp_path, KINDS["study"], resume=True)


def test_a_bisect_that_ended_is_not_resumed_and_says_how_it_ended(tmp_path):
    folder = tmp_path / "b"
    folder.mkdir()
    write_path(folder, BisectPath(SETTINGS, BisectResult(["13.23", "17.0"], outcome="found", exit_code=0)))
    assert "that ended (found); give another directory" in refused(folder, BISECT, resume=False)
    assert "its bisect ended (found): nothing to resume" in refused(folder, BISECT, resume=True)


def test_another_studys_run_and_another_mode_are_not_resumed(tmp_path):
    folder = a_study(tmp_path / "s")
    assert "already holds a run of study tiny; give another directory" in refused(folder, StudyFolder("other"),
                                                                                  resume=False)
    assert "holds a run of study tiny, not other" in refused(folder, StudyFolder("other", "smoke"), resume=True)
    assert "holds a smoke run of study tiny; resume it with the same options (--smoke)" in refused(
        folder, StudyFolder("tiny", "full"), resume=True)


def test_a_calibrations_folder_is_a_calibration_before_it_is_a_run(tmp_path):
    found = kind_of(a_calibration(tmp_path / "c"))
    assert found is not None and found.kind is CALIBRATION and found.record == CalibrationRun(quick=True)
    found = kind_of(a_run(tmp_path / "r"))
    assert found is not None and found.kind is RUN


@pytest.mark.parametrize(("make", "said"), [(None, "(a new folder; not created by a dry run)"),
                                            ("empty", "(an empty folder)")])
def test_a_dry_run_says_where_a_run_would_write(tmp_path, make, said):
    out = tmp_path / "out"
    if make == "empty":
        out.mkdir()
    check = folder_check(out, None)
    assert check.problem is None and said in check.found
    assert out.exists() == (make == "empty")


@pytest.mark.parametrize("other", [*MAKERS, "users"])
def test_a_dry_run_says_the_run_would_stop_on_a_folder_that_is_taken(tmp_path, other):
    folder = (MAKERS.get(other) or a_users)(tmp_path / other)
    before = snapshot(folder)
    check = folder_check(folder, None)
    assert check.problem is not None and "\n" not in check.problem and "choose another --out" in check.problem
    assert ("already holds results" if other == "run" else "not empty") in check.problem
    assert snapshot(folder) == before


@pytest.mark.parametrize("name", KINDS)
def test_a_dangling_symlink_and_a_path_that_is_not_utf8_are_refused_before_anything(tmp_path, name):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "gone")
    for resume in (False, True):
        line = refused(link, KINDS[name], resume)
        assert f"a symbolic link to {tmp_path / 'gone'}, which does not exist" in line, line
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/r\xe9sultats"))
    with pytest.raises(UserError) as caught:
        claim(odd, KINDS[name])
    line = str(caught.value)
    assert "\n" not in line and "a byte that is not UTF-8" in line and "r\ufffdsultats" in line
    line.encode("utf-8")  # printable: the byte shown as U+FFFD, not a surrogate that would crash the print
    assert not odd.exists()


def test_a_folder_another_process_holds_is_said_in_use_with_and_without_resume(tmp_path):
    """A bisect (or any run) still going holds its folder: a second one is told it is in use, not to --resume."""
    import subprocess
    import sys
    import textwrap
    folder = a_bisect(tmp_path / "b")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from dbperf.storage.results import DirectoryClaim
        DirectoryClaim(Path({str(folder)!r}))
        print("held", flush=True)
        time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        for resume in (False, True):
            with pytest.raises(UserError) as caught:
                claim(folder, BISECT, resume)
            assert str(caught.value) == f"{folder} is in use by another dbperf run (pid {holder.pid})"
    finally:
        holder.kill()
        holder.wait()
    assert "cut short" in refused(folder, BISECT, resume=False)  # let go: the bisect's own folder again


@pytest.mark.parametrize("name", ["bisect", "study"])
def test_hold_takes_a_folder_refuses_a_second_holder_and_lets_go(tmp_path, name):
    kind = KINDS[name]
    folder = tmp_path / "new" / "out"
    with hold(folder, kind) as held:
        assert held.made and held.record is None and (folder / LOCK).is_file()
        with pytest.raises(UserError, match="is in use by another dbperf run"):
            hold(folder, kind)  # this process's own lock counts once held: a second holder is refused
    assert folder.is_dir() and not (folder / LOCK).exists()  # let go: its lock file removed, the folder kept


def test_a_refused_hold_leaves_nothing_behind(tmp_path):
    mine = a_bisect(tmp_path / "mine")
    before = sorted(p.name for p in mine.iterdir())
    with pytest.raises(UserError, match="already holds a bisect"):
        hold(mine, BISECT)
    assert sorted(p.name for p in mine.iterdir()) == before
    with hold(mine, BISECT, resume=True) as held:  # a bisect cut short goes on: its record read as it is held
        assert isinstance(held.record, BisectPath) and not held.made
    (tmp_path / "file").write_text("mine")
    with pytest.raises(UserError, match="is not a directory"):
        hold(tmp_path / "file" / "out", BISECT)
    assert (tmp_path / "file").read_text() == "mine"
