"""A study run's folder as the --out claim sees it (storage/out_folder.py): a folder whose study.json names its
study (read by studies/study_record.py, typed). A new study run takes a new or empty folder; --resume (and
--extend) go on only with a run of the same study in the same mode: not a user's folder, another study's run
(whose study.json and summary it would replace) or a `dbperf run` results directory."""

from __future__ import annotations

from pathlib import Path

from dbperf.storage.out_folder import FolderKind, Found, register
from dbperf.storage.results import RUN
from dbperf.studies.model import Mode, mode_flag
from dbperf.studies.study_record import STUDY_JSON, StudyRecord, read_record

SUMMARY = "summary.md"


def resume_command(name: str, mode: Mode, directory: Path) -> str:
    """The command that goes on with a study run cut short in DIRECTORY."""
    return " ".join(w for w in ("dbperf study run", name, mode_flag(mode), "--resume --out", str(directory)) if w)


def study_run_record(directory: Path) -> StudyRecord | None:
    """DIR/study.json when it is a study run's (naming its study); None when missing or not one."""
    try:
        return read_record(directory / STUDY_JSON)
    except (OSError, ValueError):
        return None


class StudyFolder(FolderKind):
    """The folder of a run of study `study` in `mode` (both None: any study run's, as another kind's claim asks)."""
    noun = "study run"
    writer = "a study run"
    # A new run's folder, made at once (storage/results.py's `hold`), says that it cannot be written, its way.
    checks_writable = False

    def __init__(self, study: str | None = None, mode: Mode | None = None) -> None:
        self.study, self.mode = study, mode

    def record(self, directory: Path) -> StudyRecord | None:
        return study_run_record(directory)

    def unwritable(self, directory: Path, error: OSError) -> str:
        return f"--out {directory}: cannot write the study run there: {error.strerror or error}"

    def said(self, record: object) -> str:
        return f"a run of study {record.study}" if isinstance(record, StudyRecord) else "a study run"

    def taken(self, directory: Path, record: object) -> str:
        assert isinstance(record, StudyRecord)
        if record.study != self.study:
            return f"--out {directory}: already holds {self.said(record)}; give another directory"
        said = SUMMARY if (directory / SUMMARY).exists() else f"{STUDY_JSON}: not ended"
        return (f"--out {directory}: already holds a study run ({said}); give another directory, or --resume to go "
                "on with it")

    def goes_on(self, directory: Path, record: object) -> str | None:
        assert isinstance(record, StudyRecord)
        if record.study != self.study:
            return (f"--out {directory}: holds a run of study {record.study}, not {self.study}; "
                    f"`{resume_command(record.study, record.run_mode, directory)}` goes on with it")
        if self.mode is not None and record.run_mode != self.mode:
            flag = mode_flag(record.run_mode) or "neither --quick nor --smoke"
            return (f"--out {directory}: holds a {record.run_mode} run of study {self.study}; resume it with the same "
                    f"options ({flag})")
        return None

    def nothing_to_resume(self, directory: Path, held: list[str], other: Found | None) -> str:
        if not directory.is_dir():
            return f"--out {directory}: no study run to resume"
        if other is not None and other.kind.same(RUN):
            return (f"--out {directory}: a dbperf run's results directory, not a study run; `dbperf run EXPERIMENT "
                    f"--resume --out {directory}` goes on with it")
        if other is not None:
            return super().nothing_to_resume(directory, held, other)
        return f"--out {directory}: not a study run (no {STUDY_JSON} naming its study): nothing to resume"


register(StudyFolder())
