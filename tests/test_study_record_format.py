"""study.json read and written only through StudyRecord (studies/study_record.py), versioned like meta.json: every
record committed under docs/studies/ reads, and writes back, key for key, as it is; the steps' results kept beside
them read as results directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbperf.run_meta import MetaError
from dbperf.storage.results import read_results
from dbperf.studies.figures import Row
from dbperf.studies.study_record import (
    DOCS_STUDIES,
    FORMAT_VERSION,
    StudyRecord,
    read_record,
    record_text,
    recorded_results,
    study_record,
)

pytestmark = pytest.mark.unit

RECORDS = sorted(DOCS_STUDIES.glob("*.json"))


def test_there_are_committed_records():
    assert len(RECORDS) >= 6


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.stem)
def test_every_committed_record_reads_and_writes_back_unchanged(path: Path):
    record = read_record(path)
    assert record.study == path.stem and record.figures and record.steps
    assert all(isinstance(f, Row) for f in record.figures)
    assert json.loads(record_text(record)) == json.loads(path.read_text())
    assert record.run_mode in ("full", "quick")
    assert record.run_host.cpu != "?"


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.stem)
def test_every_committed_records_kept_results_read(path: Path):
    record = read_record(path)
    kept = recorded_results(record)
    assert set(kept) == set(record.results or {})  # each one it names is there
    for directory in kept.values():
        meta, records, skipped = read_results(directory)
        assert meta.targets and records and not skipped


def test_a_record_from_before_mode_and_exit_code_were_kept_reads_with_their_defaults():
    record = study_record({"dbperf_study": 1, "study": "barriers-spin", "quick": True,
                           "steps": [{"name": "probes", "ended": "failed: x"}]})
    assert record.run_mode == "quick" and record.step_ends == [("probes", "failed: x")]
    assert json.loads(record_text(record)) == {"dbperf_study": 1, "study": "barriers-spin", "quick": True,
                                               "steps": [{"name": "probes", "ended": "failed: x"}]}


@pytest.mark.parametrize(("raw", "said"), [
    ([], "expected a JSON object"),
    ({"dbperf_study": 1}, "no study name"),
    ({"dbperf_study": FORMAT_VERSION + 1, "study": "x"}, "newer than this dbperf reads"),
    ({"dbperf_study": 1, "study": "x", "mode": "fast"}, "mode"),
    ({"dbperf_study": 1, "study": "x", "figures": [{"measured": "1"}]}, "figures"),
])
def test_what_is_not_a_study_record_is_said_in_one_line(raw: object, said: str):
    with pytest.raises(MetaError, match=said):
        study_record(raw)


def test_the_claim_is_the_study_its_mode_and_status_only():
    claim = StudyRecord(study="x", title="t", mode="smoke", quick=True, smoke=True, status="running")
    assert claim.running and list(json.loads(record_text(claim))) == ["dbperf_study", "study", "title", "mode",
                                                                        "quick", "smoke", "status"]
