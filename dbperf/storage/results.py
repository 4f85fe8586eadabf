"""The results directory of one run.

    DIR/meta.json         host, driver, targets (library, sha256, engine version), run settings, status
    DIR/experiment.toml   the experiment file as it was run
    DIR/results.jsonl     one JSON object per measured repeat, appended and flushed the moment it is measured

A run that is interrupted or crashes keeps every line written so far; `dbperf report` reads whatever is there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dbperf.errors import UserError

META = "meta.json"
RESULTS = "results.jsonl"
EXPERIMENT = "experiment.toml"


class ResultsWriter:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"{directory}: cannot create results directory: {e.strerror}") from None
        if (directory / RESULTS).exists():
            raise UserError(f"{directory}: already holds results; choose another --out")
        # Kept open for the whole run: every record is appended and fsynced as it is measured.
        self._results = open(directory / RESULTS, "a", encoding="utf-8")  # noqa: SIM115

    def write_meta(self, meta: dict[str, Any], experiment_text: str) -> None:
        (self.directory / EXPERIMENT).write_text(experiment_text)
        self.update_meta(meta)

    def update_meta(self, meta: dict[str, Any]) -> None:
        tmp = self.directory / (META + ".tmp")
        tmp.write_text(json.dumps(meta, indent=2) + "\n")
        os.replace(tmp, self.directory / META)

    def append(self, record: dict[str, Any]) -> None:
        self._results.write(json.dumps(record) + "\n")
        self._results.flush()
        os.fsync(self._results.fileno())

    def close(self) -> None:
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
