"""Where a command's `-o/--output FILE` (or `--json FILE`) goes, and writing it without losing anything.

The rules, one place for every writer:
- only a regular file is written: a device (`/dev/null`), a FIFO or a socket is refused, with or without `--force`;
- an existing file is replaced only with `--force` (the user asked for it); otherwise one line, exit 2;
- a symlink is refused, with or without `--force`: replacing it would drop the link, writing through it would
  replace a file the user did not name; the refusal names the file it leads to (give that, or remove the link). A
  path through /proc (`/dev/stdout`, `/proc/self/fd/1`: an open file, perhaps appended to, that a rename would throw
  away) is refused too;
- every file a results directory holds (a directory whose meta.json is dbperf's, or any folder inside one) is the
  run's own: an existing one is never written, not even with `--force`, whatever symlink leads there; nor are the
  names a run writes (`results.jsonl`, its kept copy `results.jsonl.gz`, `meta.json`, `experiment.toml`, `.lock`),
  even before they exist. A new file beside them (`-o RUN/report.html`) is allowed;
- a path ending in `/`, or an existing directory, is a directory: the file goes inside it under the view's default
  name (`report.html`, `compare.csv`, ...), by the same rules; a directory that does not exist is refused;
- a missing parent directory is refused (nothing is created on a guess);
- a file system error (read-only, full, no permission) is one line naming the path, never a traceback;
- the document is written whole to a temporary file beside the target, then moved into place: without `--force`
  by a hard link, which fails if the name was taken meanwhile (no check-then-write race), with `--force` by a
  rename, which replaces the directory entry and never writes into the old file (a hard link to it keeps its bytes).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from dbperf.errors import UserError

RESULT_FILES = ("results.jsonl", "results.jsonl.gz", "meta.json")
# Every name a run writes into its directory (storage/results.py): refused even before it exists, since the run
# (or its --resume) writes it later.
RUN_FILES = (*RESULT_FILES, "experiment.toml", ".lock", "explain.json")  # explain.json: `dbperf explain`
DEFAULT_STEM = "report"
KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (pipe)"),
         (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))  # what a file is that is not a regular one


class _Marked(msgspec.Struct):
    """What makes a meta.json dbperf's: its format version's key (run_meta.py VERSION_KEY), whatever its value.
    Only the mark is decoded, not the run (storage/results.py read_meta): a meta.json of a newer format, or one
    damaged by hand, is still a run's file and still protected; and this module sits below storage's layer."""
    dbperf_results: Any


def is_results_directory(directory: Path) -> bool:
    """A directory holding a dbperf results meta.json (the key `dbperf_results`, storage/results.py)."""
    try:
        msgspec.json.decode((directory / "meta.json").read_bytes(), type=_Marked)
    except (OSError, msgspec.DecodeError, RecursionError):
        return False
    return True


def results_directory_holding(path: Path) -> Path | None:
    """The results directory `path` (absolute, resolved) lies in, at any depth (its logs/ too), if any."""
    return next((d for d in path.parents if is_results_directory(d)), None)


def output_path(where: str | Path, force: bool, name: str, option: str = "-o/--output") -> Path:
    """The file to write for `where` (as the user typed it: a Path has lost its trailing slash); a UserError (one
    line) when it must not be written. `name` is the default file name used when `where` is a directory."""
    if not str(where).strip():
        raise UserError(f"{option}: an empty path (give a file or a directory)")
    try:
        return _checked(where, force, name, option)
    except (OSError, RuntimeError) as e:  # a loop of symlinks (RuntimeError before Python 3.13), EACCES on a parent
        raise UserError(f"{option} {where}: cannot use it: {getattr(e, 'strerror', None) or e}") from None


def _checked(where: str | Path, force: bool, name: str, option: str) -> Path:
    path = Path(where)
    if str(where).endswith(os.sep) or path.is_dir():
        if not path.is_dir():
            raise UserError(f"{option} {where}: no such directory")
        path = path / name
    if not path.parent.is_dir():
        raise UserError(f"{option} {path}: the directory {path.parent} does not exist")
    real = destination(path, option)
    _refuse_results_files(path, real, option)
    try:
        mode = real.stat().st_mode
    except FileNotFoundError:
        return path
    kind = _kind(mode)
    if kind is not None:
        # Never an invitation to --force: a rename would put a regular file in place of a device for the whole host.
        raise UserError(f"{option} {path}: {kind}, not a regular file; only regular files are written")
    if (path.parent.resolve() / path.name).is_symlink():
        raise UserError(f"{option} {path}: a symbolic link to {real}; neither the link nor the file it leads to is "
                        "replaced, not even with --force: give that file itself, or remove the link")
    if not force:
        raise UserError(f"{option} {path}: the file exists; add --force to replace it")
    return path


def destination(path: Path, option: str) -> Path:
    """The file `path` names: the path itself in its real directory, or, for a symlink, the file it leads to (for
    the checks and the refusal, which names it)."""
    placed = path.parent.resolve() / path.name
    if _through_proc(placed):
        # /dev/stdout, /proc/self/fd/N: an open file, maybe appended to (`>> log`); a rename would throw it away.
        raise UserError(f"{option} {path}: leads through /proc (an open file, such as /dev/stdout's, or the "
                        "kernel's), not to a file's own name; give the file itself")
    if not placed.is_symlink():
        return placed
    try:
        followed = os.stat(placed)
    except FileNotFoundError:
        raise UserError(f"{option} {path}: a symlink to {os.readlink(placed)}, which does not exist; give the file "
                        "itself") from None
    real = placed.resolve()
    with contextlib.suppress(FileNotFoundError):
        if os.path.samestat(followed, os.stat(real)):
            return real
    # The name realpath found is another file (a mount or a rename under it meanwhile): nothing sure to write to.
    kind = _kind(followed.st_mode)
    if kind is not None:
        raise UserError(f"{option} {path}: {kind}, not a regular file; only regular files are written")
    raise UserError(f"{option} {path}: a symlink that cannot be followed to a file's name; give the file itself")


def _through_proc(placed: Path) -> bool:
    """`placed` or a symlink on its way (40 hops, the kernel's limit) in /proc."""
    for _ in range(40):
        if placed.parent.resolve().parts[1:2] == ("proc",):
            return True
        if not placed.is_symlink():
            return False
        placed = placed.parent / os.readlink(placed)  # an absolute target replaces the whole path
    return False


def _kind(mode: int) -> str | None:
    """What a file that is not a regular one is, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in KINDS if test(mode)), "not a regular file")


def _refuse_results_files(path: Path, real: Path, option: str) -> None:
    """A results directory's own files (the module's rules), by the symlink's own place and by where it leads."""
    if real.name in RUN_FILES and is_results_directory(real.parent):
        what = "the measurements" if real.name in RESULT_FILES else "the run's own file"
        raise UserError(f"{option} {path}: that is the results directory's own {real.name} ({what}); write the "
                        "report elsewhere")
    placed = path.parent.resolve() / path.name
    for where in dict.fromkeys((placed, real)):
        run = results_directory_holding(where) if os.path.lexists(where) else None
        if run is not None:
            raise UserError(f"{option} {path}: already in the results directory {run}, whose files are the run's "
                            "own and never replaced, not even with --force; write the report elsewhere")


def write_file(path: str | Path, document: str | bytes, force: bool, name: str = DEFAULT_STEM,
               option: str = "-o/--output") -> Path:
    """Writes `document` to the file `output_path` chooses; returns that path (as the user named it)."""
    target = output_path(path, force, name, option)
    data = document.encode("utf-8") if isinstance(document, str) else document
    tmp: Path | None = None
    try:
        real = destination(target, option)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
        tmp = Path(tmp_name)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        if force:
            _replace(tmp, real, target, option)
        else:
            _link_new(tmp, real, data)
    except OSError as e:
        if e.errno == errno.EEXIST:
            raise UserError(f"{option} {path}: the file exists; add --force to replace it") from None
        raise UserError(f"{option} {target}: cannot write: {e.strerror or e}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
    return target


def _replace(tmp: Path, real: Path, target: Path, option: str) -> None:
    """`tmp` renamed over `real`, looked at again just before: what was checked may have changed while the
    document was written, and a rename over a device would replace it."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.lstat(real).st_mode):
            raise UserError(f"{option} {target}: no longer a regular file; only regular files are written")
    tmp.replace(real)


def _link_new(tmp: Path, target: Path, data: bytes) -> None:
    """`tmp` under the new name `target`, failing with EEXIST if the name is taken."""
    try:
        os.link(tmp, target)
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EMLINK):
            raise
        # A file system without hard links: create-exclusive, then write (not whole at once, but never over).
        with open(target, "xb") as f:
            f.write(data)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
