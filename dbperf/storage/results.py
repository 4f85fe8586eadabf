"""The results directory of one run.

    DIR/meta.json         host, driver, targets (library, sha256, engine version), run settings, status
    DIR/experiment.toml   the experiment file as it was run
    DIR/results.jsonl     one JSON object per measured repeat, appended and flushed the moment it is measured

    DIR/.lock             held (flock) by the run writing into DIR, for as long as it runs (DirectoryClaim)

A run kept on record (a study's, in the docs: studies/record.py) is a copy made by `keep_results`, with
results.jsonl gzip-compressed as results.jsonl.gz; `read_results` reads either.

A run that is interrupted or crashes keeps every line written so far; `dbperf report` reads whatever is there.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import json
import os
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from dbperf.errors import UserError
from dbperf.records import NotJson, RecordError, ResultsRecord, encode, results_line
from dbperf.run_meta import DIED, MetaError, RunMeta, encode_file, run_meta
from dbperf.storage.out_folder import CHOOSE, LOCK, FolderKind, claim, register

META = "meta.json"
RESULTS = "results.jsonl"
KEPT_RESULTS = "results.jsonl.gz"  # a copy kept on record (keep_results), read-only
EXPERIMENT = "experiment.toml"
# A reader probing the lock (read_results) holds it for microseconds: a claim waits that long out, no more.
CLAIM_WAIT_S = 0.5


class ResultsWriteError(UserError):
    """Results could not be written (disk full, read-only, I/O error): the message names the path and the error."""


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """A write of the lab's (a full disk, a read-only file system) is one line naming the file, not a traceback."""
    try:
        yield
    except OSError as e:
        raise ResultsWriteError(f"{e.filename or path}: cannot write: {e.strerror or e}") from None


def write_whole(path: Path, data: bytes) -> None:
    """`path` replaced whole: written beside it and renamed over it, so that an interrupt or a full disk mid-write
    leaves the file as it was (its folder created if need be); a failure is one line naming the file."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(data)
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


class DirectoryClaim:
    """A results directory claimed by one run: an exclusive flock on DIR/.lock, taken before the directory is
    looked at and held until the run closes it, so that of two runs started together on one --out the second is
    refused whatever the timing, and a later reader can tell a run that goes on from one whose lab died (meta.json
    says `running`, nobody holds the lock: the kernel releases it when the lab dies, even by SIGKILL). The file
    holds the holder's pid, for the refusal; it is removed when the run ends (and left by a lab that died)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK
        deadline = time.monotonic() + CLAIM_WAIT_S
        fd = -1
        try:
            while True:
                fd, self.created = _open_lock(self.path)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    fd = -1
                    if time.monotonic() >= deadline:
                        raise UserError(f"{directory} is in use by another dbperf run (pid {_holder(self.path)})"
                                        ) from None
                    time.sleep(0.05)
                    continue
                # A run that ended removed the file between our open and our lock: lock the one now in place.
                if _same_file(fd, self.path):
                    break
                os.close(fd)
                fd = -1
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError as e:
            if fd >= 0:
                os.close(fd)
            raise ResultsWriteError(f"{e.filename or self.path}: cannot write: {e.strerror or e}") from None
        self.fd: int | None = fd

    def release(self, remove: bool = True) -> None:
        """Removed while still held (so that no one locks a file about to go), then let go."""
        if self.fd is None:
            return
        if remove:
            with contextlib.suppress(OSError):
                self.path.unlink()
        os.close(self.fd)
        self.fd = None


class Held:
    """A folder held by one command (`hold`): its lock taken, and what the folder held of the command's own kind
    when it was resumed (its record; None for a new or empty folder). Released at the end (`with`, or `release`)."""

    def __init__(self, directory: Path, record: object | None, lock: DirectoryClaim, made: bool) -> None:
        self.directory, self.record, self.lock = directory, record, lock
        self.made = made  # `hold` made the folder (a command that fails before its first file may remove it)

    def release(self) -> None:
        self.lock.release()

    def __enter__(self) -> Held:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


def hold(directory: Path, kind: FolderKind, resume: bool = False) -> Held:
    """`directory` made the command's, the one way for every kind (a run's results, a bisect's, a study run's):
    looked at (out_folder.claim: new or empty, or with `resume` a folder of `kind` that goes on), made, locked
    (DirectoryClaim) and looked at again now that it is held, so that of two commands started together on one
    --out the second is refused whatever the timing. Refused in one line; a refused command leaves nothing behind
    (the lock file, and the folder when it made it)."""
    claim(directory, kind, resume)
    made = not directory.exists()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ResultsWriteError(kind.unwritable(directory, e)) from None
    lock = None
    try:
        lock = DirectoryClaim(directory)
        record = claim(directory, kind, resume)  # again, now that it is held
        _pause_after_claim()
    except BaseException:
        if lock is not None:
            lock.release(remove=lock.created)
        if made:
            with contextlib.suppress(OSError):
                directory.rmdir()
        raise
    return Held(directory, record, lock, made)


def _open_lock(path: Path) -> tuple[int, bool]:
    """The lock file opened for writing, and whether this call created it."""
    while True:
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644), True
        except FileExistsError:
            pass
        try:
            return os.open(path, os.O_RDWR | os.O_CLOEXEC), False
        except FileNotFoundError:
            continue  # removed in between by a run that ended


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def _holder(path: Path) -> str:
    with contextlib.suppress(OSError, UnicodeDecodeError):
        pid = path.read_text(encoding="utf-8").strip()
        if pid.isdigit():
            return pid
    return "unknown"


def lab_died(directory: Path) -> bool:
    """A run's lock file is there but no process holds its lock: the lab that wrote the directory is gone without
    recording how the run ended (SIGKILL, a crash of the machine). Probed with a shared lock, released at once. A
    directory without a lock file (written before dbperf took one) cannot tell: False."""
    try:
        fd = os.open(directory / LOCK, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return False  # held: the run goes on
    finally:
        os.close(fd)
    return True


def _pause_after_claim() -> None:
    """Tests only: a pause between claiming the directory and writing into it, so that two runs racing for one
    --out are tested with a forced delay, not with luck (DBPERF_TEST_CLAIM_DELAY_S seconds)."""
    delay = os.environ.get("DBPERF_TEST_CLAIM_DELAY_S")
    if delay:
        time.sleep(float(delay))


class ResultsWriter:
    """Writes into a new or empty directory only: a directory that holds anything else is refused, so that no
    file of the user's is overwritten and nothing the lab did not create is ever deleted."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        # Held (claimed, then looked at again): two runs on one --out cannot both find it empty.
        self._claim = hold(directory, RUN).lock
        try:
            # Kept open for the whole run: every record is appended and fsynced as it is measured.
            with writing(directory / RESULTS):
                self._results = open(directory / RESULTS, "a", encoding="utf-8")  # noqa: SIM115
        except BaseException:
            self._claim.release(remove=self._claim.created)  # a refused run leaves nothing in the user's directory
            raise

    @classmethod
    def reopen(cls, directory: Path) -> ResultsWriter:
        """An earlier run's directory, appended to (`dbperf fleet ... --resume`). A torn last line (a run killed
        mid-write) is ended first, so that it stays one skipped line and the next record starts a line of its own."""
        writer = cls.__new__(cls)
        writer.directory = directory
        writer._claim = DirectoryClaim(directory)  # refused while another run (an earlier controller) holds it
        path = directory / RESULTS
        try:
            with writing(path):
                torn = False
                if path.is_file() and path.stat().st_size:
                    with open(path, "rb") as f:
                        f.seek(-1, os.SEEK_END)
                        torn = f.read(1) != b"\n"
                writer._results = open(path, "a", encoding="utf-8")  # noqa: SIM115
                if torn:
                    writer._results.write("\n")
        except BaseException:
            writer._claim.release(remove=writer._claim.created)
            raise
        return writer

    def write_meta(self, meta: RunMeta, experiment_text: str) -> None:
        with writing(self.directory / EXPERIMENT):
            (self.directory / EXPERIMENT).write_text(experiment_text)
        self.update_meta(meta)

    def update_meta(self, meta: RunMeta) -> None:
        tmp = self.directory / (META + ".tmp")
        try:
            with writing(tmp):
                tmp.write_bytes(encode_file(meta))
                os.replace(tmp, self.directory / META)
        except ResultsWriteError:
            # The last complete meta.json stays as it was. On a file system gone read-only even removing a file
            # that is not there fails (EROFS): the write's error is the one to say.
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise

    def append(self, record: ResultsRecord) -> None:
        with writing(self.directory / RESULTS):
            self._results.write(encode(record).decode() + "\n")
            self._results.flush()
            os.fsync(self._results.fileno())

    def close(self) -> None:
        """The end of the run: the results file closed, the directory let go (its lock file removed)."""
        with contextlib.suppress(OSError):  # a write that failed has been reported already
            self._results.close()
        self._claim.release()


@dataclass(frozen=True)
class RunFolder:
    """A run's results folder as a claim sees it: its status as read_meta gives it (None: no meta.json, or one
    that cannot be read)."""
    status: str | None


class RunKind(FolderKind):
    """`dbperf run`'s folder: meta.json (typed, read_meta), or its results alone (a run that wrote no meta.json)."""
    noun = "dbperf run's results"
    writer = "dbperf"
    generic = True

    def record(self, directory: Path) -> RunFolder | None:
        if not any((directory / name).is_file() for name in (META, RESULTS, KEPT_RESULTS)):
            return None
        return RunFolder(meta_status(directory))

    def unwritable(self, directory: Path, error: OSError) -> str:
        return f"{directory}: cannot create results directory: {error.strerror or error}"

    def said(self, record: object) -> str:
        status = record.status if isinstance(record, RunFolder) else None
        return "a dbperf run's results" + (f" ({status})" if status else "")

    def taken(self, directory: Path, record: object) -> str:
        return (f"--out {directory}: already holds results ({self.said(record)}); {CHOOSE} (`dbperf run EXPERIMENT "
                f"--resume --out {directory}` goes on with a run cut short)")


RUN = register(RunKind())


@dataclass(frozen=True)
class SkippedLine:
    line: int
    reason: str


def results_path(directory: Path) -> Path:
    """The results file read_results reads: results.jsonl, or the copy kept on record when only that is there."""
    kept = directory / KEPT_RESULTS
    return kept if not (directory / RESULTS).is_file() and kept.is_file() else directory / RESULTS


def read_results(directory: Path) -> tuple[RunMeta, list[ResultsRecord], list[SkippedLine]]:
    """meta (upgraded from an older format version, run_meta.py), the usable records, and the lines skipped (a torn
    last line: the run was killed mid-write; a line edited by hand) with why. A meta.json that cannot be reported
    is a UserError naming the file."""
    meta = read_meta(directory)
    records: list[ResultsRecord] = []
    skipped: list[SkippedLine] = []
    text = _results_text(directory)
    lines = text.splitlines()
    # Torn: the last line, written without its newline (a run killed mid-write); a line of junk anywhere else, or
    # one that ended with its newline (NUL bytes a crash left), is not JSON, said so where it is.
    torn = len(lines) if text and not text.endswith("\n") else None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(_record(line, last=number == torn))
        except RecordError as e:
            skipped.append(SkippedLine(number, str(e)))
    return meta, records, skipped


def read_meta(directory: Path) -> RunMeta:
    """A results directory's meta.json alone (the records may be large), typed: upgraded from an older format
    version (run_meta.py) and decoded, its status `died` when it says `running` and no lab holds the run's lock; a
    UserError naming the file when it cannot be read."""
    meta = _read_meta(directory)
    if meta.status == "running" and lab_died(directory):
        meta.status = DIED  # its note: RunMeta.status_note
    return meta


def meta_status(directory: Path) -> str | None:
    """The status of the run in `directory` as read_meta gives it (`died` for a run no lab holds any more), None
    when there is no meta.json or one that cannot be read (nothing to resume there)."""
    try:
        return read_meta(directory).status or None
    except UserError:
        return None


def _read_meta(directory: Path) -> RunMeta:
    meta_path = directory / META
    try:
        if not meta_path.is_file():
            raise UserError(f"{directory}: not a dbperf results directory (no {META})")
        raw = json.loads(meta_path.read_text(encoding="utf-8"))
        return run_meta(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{meta_path}: unreadable: {e}") from None
    except RecursionError:  # [[[[... nested deeper than Python's json (or msgspec) goes
        raise UserError(f"{meta_path}: unreadable: nested too deeply") from None
    except MetaError as e:
        raise UserError(f"{meta_path}: {e}") from None
    except OSError as e:  # a directory that cannot be entered (is_file raises for EACCES), an I/O error
        raise UserError(f"{e.filename or meta_path}: cannot read: {e.strerror or e}") from None


def _results_text(directory: Path) -> str:
    """results.jsonl (or the copy kept on record, decompressed) as text; a missing file reads as empty."""
    path = directory / RESULTS
    try:
        path = results_path(directory)
        data = path.read_bytes() if path.is_file() else b""
        if path.name == KEPT_RESULTS:
            data = gzip.decompress(data)
    except OSError as e:  # gzip.BadGzipFile (not gzip) is an OSError with no strerror
        raise UserError(f"{path}: cannot read: {e.strerror or e}") from None
    except EOFError:
        raise UserError(f"{path}: cannot read: the compressed copy is cut short") from None
    except zlib.error as e:
        raise UserError(f"{path}: cannot read: the compressed copy is damaged ({e})") from None
    return data.decode("utf-8", errors="replace")


def _record(line: str, last: bool) -> ResultsRecord:
    """One line of results.jsonl as its record, or RecordError with the reason the line is skipped (records.py
    says why; here, that a last line that is not JSON was torn)."""
    try:
        return results_line(line)
    except NotJson:
        if last:
            raise RecordError("torn last line (the run was cut off while writing it)") from None
        raise


def keep_results(source: Path, dest: Path) -> Path:
    """A copy of the results directory `source` in `dest` (replacing what was there), to keep beside a record:
    meta.json and experiment.toml as they are and results.jsonl compressed (a third of its size: the per-second
    intervals and latency histograms stay, so `dbperf compare` and `dbperf report` read it as the original).
    Compressed with no timestamp, so that keeping the same run again writes the same bytes."""
    if not (source / META).is_file():
        raise UserError(f"{source}: not a dbperf results directory (no {META})")
    try:
        dest.mkdir(parents=True, exist_ok=True)
        for name in (META, EXPERIMENT):
            if (source / name).is_file():
                (dest / name).write_bytes((source / name).read_bytes())
        (dest / RESULTS).unlink(missing_ok=True)
        data = (source / RESULTS).read_bytes() if (source / RESULTS).is_file() else b""
        (dest / KEPT_RESULTS).write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    except OSError as e:
        raise UserError(f"{e.filename or dest}: cannot keep the results: {e.strerror}") from None
    return dest


@contextmanager
def recorded_status(meta: RunMeta, out: Path) -> Iterator[None]:
    """A run's body: its status in `meta` on the way out (complete, interrupted, failed); an OSError of the body
    (loading or restoring data on a full disk, mostly) becomes one line naming the path, never a traceback."""
    try:
        yield
    except KeyboardInterrupt:
        meta.status = "interrupted"
        raise
    except OSError as err:
        meta.status = "failed"
        raise ResultsWriteError(f"{err.filename or out}: {err.strerror or err}") from None
    except BaseException:
        meta.status = "failed"
        raise
    meta.status = "complete"


def close_run(meta: RunMeta, writer: ResultsWriter) -> None:
    """The last meta.json of a run, on every exit path, after its servers and data are gone. A write error is
    raised only for a completed run: otherwise the error that ended the run is already on its way to the user."""
    meta.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
    try:
        writer.update_meta(meta)
    except ResultsWriteError:
        if meta.status == "complete":
            raise
    finally:
        writer.close()

