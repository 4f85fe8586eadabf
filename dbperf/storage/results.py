"""The results directory of one run.

    DIR/meta.json         host, driver, targets (library, sha256, engine version), run settings, status
    DIR/experiment.toml   the experiment file as it was run
    DIR/results.jsonl     one JSON object per measured repeat, appended and flushed the moment it is measured

A run that is interrupted or crashes keeps every line written so far; `dbperf report` reads whatever is there.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dbperf.errors import UserError

META = "meta.json"
RESULTS = "results.jsonl"
EXPERIMENT = "experiment.toml"


class ResultsWriteError(UserError):
    """Results could not be written (disk full, read-only, I/O error): the message names the path and the error."""


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    try:
        yield
    except OSError as e:
        raise ResultsWriteError(f"{e.filename or path}: cannot write: {e.strerror or e}") from None


class ResultsWriter:
    """Writes into a new or empty directory only: a directory that holds anything else is refused, so that no
    file of the user's is overwritten and nothing the lab did not create is ever deleted."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        if directory.exists() and not directory.is_dir():
            raise UserError(f"{directory}: exists and is not a directory; choose another --out")
        if directory.is_dir():
            if (directory / RESULTS).exists():
                raise UserError(f"{directory}: already holds results; choose another --out")
            try:
                entries = sorted(p.name for p in directory.iterdir())
            except OSError as e:
                raise UserError(f"{directory}: cannot read the directory: {e.strerror}") from None
            if entries:
                what = "a dbperf run's files" if META in entries else f"files ({', '.join(entries[:3])}...)"
                raise UserError(f"{directory}: not empty (holds {what}); dbperf writes only into a new or empty "
                                "directory: choose another --out")
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"{directory}: cannot create results directory: {e.strerror}") from None
        # Kept open for the whole run: every record is appended and fsynced as it is measured.
        with _writing(directory / RESULTS):
            self._results = open(directory / RESULTS, "a", encoding="utf-8")  # noqa: SIM115

    def write_meta(self, meta: dict[str, Any], experiment_text: str) -> None:
        with _writing(self.directory / EXPERIMENT):
            (self.directory / EXPERIMENT).write_text(experiment_text)
        self.update_meta(meta)

    def update_meta(self, meta: dict[str, Any]) -> None:
        tmp = self.directory / (META + ".tmp")
        try:
            with _writing(tmp):
                tmp.write_text(json.dumps(meta, indent=2) + "\n")
                os.replace(tmp, self.directory / META)
        except ResultsWriteError:
            tmp.unlink(missing_ok=True)  # the last complete meta.json stays as it was
            raise

    def append(self, record: dict[str, Any]) -> None:
        with _writing(self.directory / RESULTS):
            self._results.write(json.dumps(record) + "\n")
            self._results.flush()
            os.fsync(self._results.fileno())

    def close(self) -> None:
        with contextlib.suppress(OSError):  # a write that failed has been reported already
            self._results.close()


def read_results(directory: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """meta and records; a torn last line (the run was killed mid-write) is skipped."""
    if not (directory / META).is_file():
        raise UserError(f"{directory}: not a dbperf results directory (no {META})")
    try:
        meta = json.loads((directory / META).read_text())
    except json.JSONDecodeError as e:
        raise UserError(f"{directory / META}: unreadable: {e}") from None
    records = []
    path = directory / RESULTS
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return meta, records
