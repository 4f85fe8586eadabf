"""A calibration's results folder (usecases/calibrate.py): a run's folder (storage/results.py) that also holds
calibration.json, the calibration's own record, typed: that the folder is a calibration's, and whether it is
`--quick`'s (which builds and benchmarks a resume goes on with and a fit says). It is written as soon as the run
has claimed the folder, before its first cell.

A calibration made before calibration.json existed is known by the first line of its experiment.toml, a comment
naming the kind ("# dbperf calibrate (--quick): ..."): read here, once, as the record it stands for."""

from __future__ import annotations

from pathlib import Path

import msgspec

from dbperf.errors import UserError
from dbperf.storage.out_folder import FolderKind, register
from dbperf.storage.results import EXPERIMENT, meta_status, write_whole

CALIBRATION_JSON = "calibration.json"
VERSION = 1
# The first line of a calibration's experiment file (still written, for whoever reads the file; read back only
# from a folder without calibration.json).
MARKER = "# dbperf calibrate"


class CalibrationRun(msgspec.Struct, kw_only=True, frozen=True):
    """calibration.json."""
    dbperf_calibration: int = VERSION
    quick: bool


def write_calibration(directory: Path, quick: bool) -> Path:
    path = directory / CALIBRATION_JSON
    write_whole(path, msgspec.json.encode(CalibrationRun(quick=quick)) + b"\n")
    return path


def read_calibration(directory: Path) -> CalibrationRun | None:
    """The folder's calibration record, None when it is not a calibration's; a UserError naming the file when it
    cannot be read or was written by a newer dbperf."""
    path = directory / CALIBRATION_JSON
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return _legacy(directory)
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        record = msgspec.json.decode(data, type=CalibrationRun)
    except (msgspec.DecodeError, RecursionError) as e:
        raise UserError(f"{path}: not a calibration's record ({e})") from None
    if record.dbperf_calibration > VERSION:
        raise UserError(f"{path}: written by a newer dbperf (format {record.dbperf_calibration}; this one reads up "
                        f"to {VERSION})")
    return record


def _legacy(directory: Path) -> CalibrationRun | None:
    try:
        with open(directory / EXPERIMENT, encoding="utf-8") as f:
            first = f.readline()
    except (OSError, UnicodeDecodeError):
        return None
    return CalibrationRun(quick="(--quick)" in first) if first.startswith(MARKER) else None


class CalibrationKind(FolderKind):
    noun = "calibration run"
    writer = "calibrate"
    besides = " and not a calibration run"

    def record(self, directory: Path) -> CalibrationRun | None:
        return read_calibration(directory)

    def taken(self, directory: Path, record: object) -> str:
        status = meta_status(directory) or "not started"
        return (f"--out {directory}: holds a calibration run ({status}); --resume goes on with it (or fits it again "
                "when complete), another --out starts a new one")


CALIBRATION = register(CalibrationKind())
