"""The `--out` claim, one rule for every command that writes a folder of results (a run and its dry run, a study
run, a bisect, a calibration): the folder is new or empty, or, with --resume, a folder of the command's own kind.
Anything else is refused in one line before anything is built, fetched or measured, naming what the folder holds,
so that no file of the user's is overwritten and no other run's folder is taken over.

A folder's kind is not guessed from its file names: each kind (a `FolderKind`) reads its own typed record there
(meta.json, bisect.json, calibration.json, study.json) and says whether the folder is its. The kinds are found by
import: each registers itself where its record is defined (`register`), so that a claim names another kind's
folder as that kind, not as a list of files.

`claim` looks; storage/results.py's `hold` takes: the one way a results folder, a bisect's and a study run's is made
the command's (looked at, made, locked, looked at again now that it is held)."""

from __future__ import annotations

import fcntl
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from dbperf.errors import UserError
from dbperf.storage.writable import check_writable

LOCK = ".lock"  # a claim's lock file (storage/results.py's DirectoryClaim): not the folder's content
CHOOSE = "choose another --out"


@dataclass(frozen=True)
class Found:
    """A folder's kind and the typed record it read there (None for a folder that holds nothing)."""
    kind: FolderKind
    record: object


class FolderKind(ABC):
    """A kind of results folder: how it is named, the command that writes it, and its record, read typed."""
    noun: str  # "bisect", "calibration run": "a bisect", "no bisect to resume"
    writer: str  # who writes it, for "... writes only into a new or empty directory"
    # A run's own folder (meta.json) is asked last: a calibration's folder holds one too.
    generic: bool = False
    # How a folder that is not empty is said when it is not this kind's ("not empty and not a calibration run")
    besides: str = ""
    # Whether the claim looks at the folder's file system (a read-only one said as such); a kind that creates its
    # first file at once may say that failure its own way.
    checks_writable: bool = True

    @abstractmethod
    def record(self, directory: Path) -> object | None:
        """This kind's typed record in `directory`, None when the folder is not of this kind."""

    def same(self, other: FolderKind) -> bool:
        """Whether `other` is this kind (a kind may be asked as an instance made for one claim: a study's)."""
        return type(other) is type(self)

    def said(self, record: object) -> str:
        """A folder of this kind as a user would name it: "a bisect (postgres 13.23..17.0, point-query, ...)"."""
        return f"a {self.noun}"

    def taken(self, directory: Path, record: object) -> str:
        """The refusal of a new one of this kind in a folder of this kind."""
        return f"--out {directory}: already holds {self.said(record)}; give another directory, or --resume to go on " \
               "with it"

    def goes_on(self, directory: Path, record: object) -> str | None:
        """With --resume, in a folder of this kind: None when it goes on, else the refusal."""
        return None

    def unwritable(self, directory: Path, error: OSError) -> str:
        """The refusal when the folder cannot be made (a read-only file system, a file in its path): storage/
        results.py's `hold`."""
        return f"{directory}: cannot write: {error.strerror or error}"

    def nothing_to_resume(self, directory: Path, held: list[str], other: Found | None) -> str:
        """The refusal of --resume where no folder of this kind is: saying what is there instead."""
        return f"--out {directory}: no {self.noun} to resume (it holds {holding(held, other)})"


KINDS: list[FolderKind] = []


def register(kind: FolderKind) -> FolderKind:
    """`kind` known to every claim (done once where the kind is defined); a run's folder asked last."""
    if not any(k.same(kind) for k in KINDS):
        KINDS.append(kind)
        KINDS.sort(key=lambda k: k.generic)
    return kind


def path_problem(directory: Path) -> None:
    """A path no results folder can be made at, refused before anything is claimed: one with a byte that is not
    UTF-8 (meta.json, reports and the history name the folder in UTF-8), a symbolic link to nothing."""
    text = str(directory)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        raise UserError(f"--out {shown}: the path has a byte that is not UTF-8 (shown as \ufffd); the lab names its "
                        f"folders in UTF-8: {CHOOSE}") from None
    if directory.is_symlink() and not directory.exists():
        raise UserError(f"--out {directory}: a symbolic link to {directory.readlink()}, which does not exist; "
                        f"{CHOOSE}, or make the folder it points to")


def in_use(directory: Path) -> str | None:
    """Who holds the folder's claim (storage/results.py's DirectoryClaim: an exclusive flock on its lock file) as
    "pid N", or None when no live process does: asked with a shared lock, never taken, nothing created."""
    try:
        fd = os.open(directory / LOCK, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            pid = os.read(fd, 32).decode(errors="replace").strip()
        except OSError:
            pid = ""
        if pid == str(os.getpid()):
            return None  # this process's own claim (a command looks again once it holds the folder)
        return f"pid {pid}" if pid.isdigit() else "its pid not written yet"
    except OSError:
        return None
    finally:
        os.close(fd)  # closing lets go of a shared lock taken
    return None


def held(directory: Path) -> list[str]:
    """What a folder holds besides a claim's lock file, sorted ([] when it does not exist)."""
    try:
        return sorted(p.name for p in directory.iterdir() if p.name != LOCK) if directory.is_dir() else []
    except OSError as e:
        raise UserError(f"--out {directory}: cannot read the directory: {e.strerror or e}") from None


def holding(names: list[str], found: Found | None) -> str:
    """What a folder holds, in words: a kind's folder by its kind, else its first few files."""
    if found is not None:
        return found.kind.said(found.record)
    if not names:
        return "nothing"
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


def kind_of(directory: Path, asking: FolderKind | None = None) -> Found | None:
    """The kind of the folder (`asking` asked first, among its peers: a run's folder last), None when no kind
    known reads its record there."""
    kinds = sorted([*([asking] if asking else []), *(k for k in KINDS if asking is None or not k.same(asking))],
                   key=lambda k: k.generic)
    for kind in kinds:
        record = kind.record(directory)
        if record is not None:
            return Found(kind, record)
    return None


def claim(directory: Path, kind: FolderKind, resume: bool = False) -> object | None:
    """Whether a command of `kind` may write into `directory`: new or empty (None), or, with `resume`, a folder of
    its kind that goes on (its record). Looked at only: nothing is created. Refused in one line (UserError)."""
    path_problem(directory)
    holder = in_use(directory)
    if holder is not None:
        # the words of DirectoryClaim's refusal (storage/results.py): one line however the timing falls
        raise UserError(f"{directory} is in use by another dbperf run ({holder})")
    if directory.exists() and not directory.is_dir():
        raise UserError(f"--out {directory}: exists and is not a directory; {CHOOSE}")
    names = held(directory)
    found = kind_of(directory, kind) if names else None
    own = found is not None and found.kind.same(kind)
    if resume:
        if found is None or not own:
            raise UserError(kind.nothing_to_resume(directory, names, found))
        refusal = found.kind.goes_on(directory, found.record)
        if refusal:
            raise UserError(refusal)
    elif found is not None and own:
        raise UserError(found.kind.taken(directory, found.record))
    elif names:
        raise UserError(f"--out {directory}: not empty{kind.besides} (holds {holding(names, found)}); "
                        f"{kind.writer} writes only into a new or empty directory: {CHOOSE}")
    if kind.checks_writable:
        check_writable(directory)  # a read-only file system said as such, before any estimate of its free disk
    return found.record if found is not None else None
