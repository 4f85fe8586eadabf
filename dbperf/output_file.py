"""Where a command's `-o/--output FILE` (or `--json FILE`) goes, and writing it without losing anything.

The rules, one place for every writer:
- an existing file is replaced only with `--force` (the user asked for it); otherwise one line, exit 2;
- a results directory's own `results.jsonl` (or its kept copy `results.jsonl.gz`) and `meta.json` (a directory
  whose meta.json is dbperf's) are never written, not even with `--force`, whatever symlink leads there: they are
  the measurements;
- a path ending in `/`, or an existing directory, is a directory: the file goes inside it under the view's default
  name (`report.html`, `compare.csv`, ...), by the same rules; a directory that does not exist is refused;
- a missing parent directory is refused (nothing is created on a guess);
- the document is written whole to a temporary file beside the target, then moved into place: without `--force`
  by a hard link, which fails if the name was taken meanwhile (no check-then-write race), with `--force` by a
  rename, which replaces the directory entry and never writes into the old file (a hard link to it keeps its bytes).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from pathlib import Path

from dbperf.errors import UserError

RESULT_FILES = ("results.jsonl", "results.jsonl.gz", "meta.json")
DEFAULT_STEM = "report"
def is_results_directory(directory: Path) -> bool:
    """A directory holding a dbperf results meta.json (the key `dbperf_results`, storage/results.py)."""
    try:
        meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and "dbperf_results" in meta


def output_path(where: str | Path, force: bool, name: str, option: str = "-o/--output") -> Path:
    """The file to write for `where` (as the user typed it: a Path has lost its trailing slash); a UserError (one
    line) when it must not be written. `name` is the default file name used when `where` is a directory."""
    if not str(where).strip():
        raise UserError(f"{option}: an empty path (give a file or a directory)")
    path = Path(where)
    if str(where).endswith(os.sep) or path.is_dir():
        if not path.is_dir():
            raise UserError(f"{option} {where}: no such directory")
        path = path / name
    if not path.parent.is_dir():
        raise UserError(f"{option} {path}: the directory {path.parent} does not exist")
    real = path.resolve()
    if real.name in RESULT_FILES and is_results_directory(real.parent):
        raise UserError(f"{option} {path}: that is the results directory's own {real.name} (the measurements); "
                        "write the report elsewhere")
    if path.is_dir():
        raise UserError(f"{option} {path}: is a directory")
    if (path.exists() or path.is_symlink()) and not force:
        raise UserError(f"{option} {path}: the file exists; add --force to replace it")
    return path


def write_file(path: str | Path, document: str | bytes, force: bool, name: str = DEFAULT_STEM,
               option: str = "-o/--output") -> Path:
    """Writes `document` to the file `output_path` chooses; returns that path."""
    target = output_path(path, force, name, option)
    data = document.encode("utf-8") if isinstance(document, str) else document
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        if force:
            tmp.replace(target)
        else:
            _link_new(tmp, target, data)
    except OSError as e:
        if e.errno == errno.EEXIST:
            raise UserError(f"{option} {path}: the file exists; add --force to replace it") from None
        raise UserError(f"{option} {target}: cannot write: {e.strerror or e}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return target


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
