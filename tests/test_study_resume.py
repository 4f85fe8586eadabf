"""`dbperf study run --resume` of a study whose step cannot go on from what it wrote: a replication lab's run cut
short by Ctrl-C runs again from its start, its cut-short output kept aside (DIR/<step>.cut-short-N/), never read
as this sitting's. No server runs: the CLI runs as a subprocess with a study directory of the test's own and the
replication lab replaced by one that writes the lab's own records (the first sitting interrupted after one)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

# The CLI as `python -m dbperf.cli` runs it, with the studies read from argv[1] and run_replication replaced:
# it writes one stale-reads record, then raises KeyboardInterrupt (what Ctrl-C raises) when argv[2] is "interrupt".
FAKE_LAB = r'''
import runpy, sys, time
from pathlib import Path
import dbperf.studies.model as model
import dbperf.usecases.run as use
from dbperf.records import StaleReadsRecord, StaleReadsResult, WaitLatency
from dbperf.replication.lab import _meta
from dbperf.runner.matrix import RunOutcome
from dbperf.storage.results import ResultsWriter, close_run, recorded_status

model.STUDY_DIR = Path(sys.argv[1])
interrupt = sys.argv[2] == "interrupt"

def fake_lab(e, out, console, keep_data=False, builds=None):
    writer, meta, outcome = ResultsWriter(out), _meta(e, builds or {}), RunOutcome(out)
    lat = WaitLatency(p50_us=300.0, p95_us=800.0, p99_us=1200.0, max_us=5000.0, mean_us=350.0)
    stale = 300 if interrupt else 100  # the second sitting's figure differs: the first's is not read back
    try:
        with recorded_status(meta, out):
            writer.write_meta(meta, e.text)
            writer.append(StaleReadsRecord(
                type="replication_stale_reads", wait=False, reads=1000, background_threads=1, status="ok",
                started_at=time.time(), result=StaleReadsResult(
                    reads=1000, stale=stale, wait_timeouts=0, write_latency=lat, read_latency=lat,
                    background_transactions=5000, background_trx_per_s=2500.0, elapsed_s=2.0)))
            outcome.cells_ok += 1
            if interrupt:
                raise KeyboardInterrupt
    finally:
        close_run(meta, writer)
    return outcome

use.run_replication = fake_lab
sys.argv = ["dbperf", *sys.argv[3:]]
runpy.run_module("dbperf.cli", run_name="__main__")
'''

STUDY = """
name = "fake-replication"
title = "a replication step, its lab faked"
sources = ['Kristian Nielsen, "Using MASTER_GTID_WAIT() to avoid stale reads from slaves in replication" (2014-02-10)']
duration = "a second"
description = "d"

[[step]]
name = "mariadb"
kind = "experiment"
experiment = "replication.toml"

[[figure]]
what = "stale reads, no wait"
section = "§7"
published = "reads from replicas can be stale"
measure = { from = "json", step = "mariadb", path = "replication.stale_reads.without_wait" }
scale = 100
unit = "%"
"""

EXPERIMENT = """
[run]
benchmarks = ["update-index"]
threads = [1]
table_size = 1000

[replication]
studies = ["stale-reads"]
transactions = 300
stale_reads = 50
repeats = 1

[[target]]
name = "maria"
engine = "mariadb"
"""


def _studies(tmp_path: Path) -> Path:
    studies = tmp_path / "studies"
    studies.mkdir()
    (studies / "fake-replication.toml").write_text(STUDY)
    (studies / "replication.toml").write_text(EXPERIMENT)
    return studies


def _study_cli(studies: Path, sitting: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", FAKE_LAB, str(studies), sitting, *args], capture_output=True,
                          text=True, cwd=REPO, timeout=120)


@pytest.mark.unit
def test_an_interrupted_replication_step_runs_again_from_its_start_on_resume_its_cut_short_output_kept(tmp_path):
    studies, out = _studies(tmp_path), tmp_path / "run"
    first = _study_cli(studies, "interrupt", "study", "run", "fake-replication", "--out", str(out))
    assert first.returncode == 130, first.stderr
    ended = json.loads((out / "study.json").read_text())["steps"]
    assert ended[0]["ended"].startswith("interrupted"), ended
    assert json.loads((out / "mariadb" / "meta.json").read_text())["status"] == "interrupted"

    again = _study_cli(studies, "complete", "study", "run", "fake-replication", "--resume", "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert "go on with a matrix run" not in again.stderr and "Traceback" not in again.stderr
    assert "step mariadb: a replication lab's run does not go on from its measurements: it runs again from its " \
           "start" in again.stderr
    aside = out / "mariadb.cut-short-1"
    # What the interrupted sitting measured is kept, with the report made from it; the step's folder is the new run.
    assert json.loads((aside / "meta.json").read_text())["status"] == "interrupted"
    assert (aside / "results.jsonl").read_text().count("replication_stale_reads") == 1
    assert (aside / "mariadb-report.json").is_file()
    assert json.loads((out / "mariadb" / "meta.json").read_text())["status"] == "complete"
    record = json.loads((out / "study.json").read_text())
    assert record["exit_code"] == 0 and record["resumed_at"]
    (figure,) = record["figures"]
    assert figure["value"] == pytest.approx(10.0), figure  # this sitting's 10%, not the cut-short one's 30%
    (step,) = record["steps"]
    assert step["ended"].startswith("experiment ") and "run again from its start on --resume; what its cut-short " \
           "sitting wrote is kept in mariadb.cut-short-1/" in step["ended"]
    assert "kept in mariadb.cut-short-1/" in (out / "summary.md").read_text()
