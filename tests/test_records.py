"""The typed records: what Python sends the driver and reads back matches driver/src/job.rs field for field, and a
results.jsonl line is parsed once into its record, with the reason when it cannot be."""

import json
import re
from pathlib import Path

import msgspec
import pytest

from dbperf.records import (
    CellRecord,
    CountersRecord,
    DriverJob,
    LoadResult,
    Profile,
    RecordError,
    RunResult,
    SliceSide,
    TopFunction,
    decode,
    encode,
    results_record,
)

pytestmark = pytest.mark.unit

JOB_RS = Path(__file__).resolve().parents[1] / "driver" / "src" / "job.rs"

RESULT = {"engine_version": "3.46.0", "threads": 1, "duration_s": 1.0, "events": 100, "queries": 100, "rows": 100,
          "errors": 0, "error_samples": [], "qps": 100.0, "eps": 100.0,
          "latency": {"min_us": 1.0, "mean_us": 2.0, "p50_us": 2.0, "p95_us": 3.0, "p99_us": 4.0, "max_us": 9.0},
          "client_usage": {"user_us": 900.0, "system_us": 100.0, "voluntary_cs": 3, "involuntary_cs": 1},
          "process": {"allocators_mapped": [], "anon_huge_kb": 0, "thp_disabled": False},
          "server_usage": None, "server_processes": None}


def rust_fields(struct: str) -> set[str]:
    body = re.search(rf"pub struct {struct} \{{(.*?)\n\}}", JOB_RS.read_text(), re.S)
    assert body, struct
    return set(re.findall(r"^\s*pub (\w+):", body.group(1), re.M))


@pytest.mark.parametrize(("python", "rust"), [
    (DriverJob, "Job"), (RunResult, "RunResult"), (LoadResult, "LoadResult"), (SliceSide, "SliceSide")])
def test_python_and_driver_records_have_the_same_fields(python, rust):
    assert set(python.__struct_fields__) == rust_fields(rust)


def test_a_job_sends_its_mode_and_only_what_differs_from_the_drivers_defaults():
    job = DriverJob(mode="load", engine="sqlite", tables=2, table_size=10, settings=[("journal_mode", "WAL")])
    assert json.loads(encode(job)) == {"mode": "load", "engine": "sqlite", "tables": 2, "table_size": 10,
                                       "settings": [["journal_mode", "WAL"]]}
    assert json.loads(encode(job.replace(mode="run", threads=4)))["threads"] == 4
    with pytest.raises(TypeError):
        job.replace(thread=4)  # a misspelt field is an error, not a silently ignored key


def test_a_driver_result_of_the_wrong_shape_names_the_field():
    assert decode(RunResult, json.dumps(RESULT)).client_usage.cpu_us == 1000.0
    with pytest.raises(RecordError, match=r"missing required field `p99_us` - at `\$\.latency`"):
        decode(RunResult, json.dumps({**RESULT, "latency": {"p50_us": 1.0, "max_us": 2.0}}))
    with pytest.raises(RecordError, match="not JSON"):
        decode(RunResult, "{")


def test_a_cell_line_round_trips_and_keeps_its_format():
    line = {"target": "a", "benchmark": "point-query", "threads": 1, "repeat": 2, "started_at": 1.5, "wall_s": 2.0,
            "queries_per_event": 1, "rows_per_event": None, "status": "ok", "result": RESULT}
    rec = results_record(line)
    assert isinstance(rec, CellRecord) and rec.ok and rec.result and rec.result.latency.p99_us == 4.0
    written = json.loads(encode(rec))
    assert "type" not in written and "rows_per_event" not in written  # as lines were written before the type
    assert results_record(written) == rec


def test_lines_written_before_newer_driver_fields_still_read():
    old = {k: v for k, v in RESULT.items() if k not in ("process", "server_usage", "server_processes", "rows")}
    rec = results_record({"target": "a", "benchmark": "b", "threads": 1, "repeat": 1, "status": "ok", "result": old})
    assert isinstance(rec, CellRecord) and rec.result and rec.result.server_usage is None


def test_a_counters_line_round_trips():
    profile = Profile(mode="simulated", mode_reason="no PMU", tool="cachegrind", target="a", benchmark="b",
                      events=10, queries=10, method="N minus 0", per_query={"instructions": 1234.5},
                      top_by_instructions=[TopFunction("sqlite3VdbeExec", 600.0, 0.5)],
                      functions={"sqlite3VdbeExec": {"instructions": 600.0}})
    rec = CountersRecord(type="counters", target="a", benchmark="b", counters=profile)
    back = results_record(json.loads(encode(rec)))
    assert back == rec and isinstance(back, CountersRecord) and back.counters and back.counters.cost_key == \
        "instructions"
    failed = results_record({"type": "counters", "target": "a", "benchmark": "b", "error": "valgrind not found"})
    assert isinstance(failed, CountersRecord) and failed.counters is None


@pytest.mark.parametrize(("line", "reason"), [
    ([1, 2], "not a JSON object"),
    ({"type": "timing", "target": "a", "benchmark": "b"}, "unknown record type 'timing'"),
    ({"target": "a", "benchmark": "b", "threads": "1", "repeat": 1, "status": "ok"}, r"\$\.threads"),
    ({"target": "a", "benchmark": "b", "threads": 1, "repeat": 1, "status": "ok"}, "an ok cell without a 'result'"),
    ({"target": "a", "benchmark": "b", "threads": 1, "repeat": 1, "status": "ok", "result": {"qps": "fast"}},
     r"\$\.result"),
    ({"type": "counters", "target": "a", "benchmark": "b", "counters": {"mode": "guessed"}}, r"\$\.counters"),
])
def test_a_line_that_is_not_a_record_says_why(line, reason):
    with pytest.raises(RecordError, match=reason):
        results_record(line)


def test_records_are_msgspec_structs_so_that_unknown_keys_from_newer_labs_are_ignored():
    rec = results_record({"target": "a", "benchmark": "b", "threads": 1, "repeat": 1, "status": "failed",
                          "error": "x", "added_by_a_newer_lab": 1})
    assert isinstance(rec, msgspec.Struct) and isinstance(rec, CellRecord) and rec.error == "x"
