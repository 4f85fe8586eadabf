"""meta.json typed and versioned (dbperf/run_meta.py): results directories of every format version this dbperf has
written read through the upgrade path, a newer one is refused in one line, and what a writer writes reads back equal.

tests/data/results-v1 is a directory the matrix run wrote before meta.json was typed (two SQLite targets, two
benchmarks, 2 repeats, trimmed to a 1000-row table); tests/data/results-v1-spine is the same run's meta.json in the
shape the first commit's writer gave it (no noise thresholds, load model, rounds, CPUs, min_effect...)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from dbperf.build_manifest import MANIFEST_VERSION, build_manifest
from dbperf.buildlab.builder import _cached_manifest
from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.replication.lab import _meta as replication_meta
from dbperf.run_meta import (
    FORMAT_VERSION,
    BenchmarkMeta,
    Extension,
    FleetHostMeta,
    FleetMeta,
    HostMeta,
    MetaError,
    RunMeta,
    TargetMeta,
    encode_file,
    meta_dict,
    run_meta,
    upgraded,
)
from dbperf.runner.matrix import run_meta_of
from dbperf.runner.plan import RunPlan
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage.results import ResultsWriter, read_results
from tests.conftest import run_cli

pytestmark = pytest.mark.unit

DATA = Path(__file__).parent / "data"


def matrix_meta(e, infos, settings):
    """The matrix run's first meta.json for an experiment and its targets' facts."""
    return run_meta_of(RunPlan.of(e, facts=infos), settings)
V1 = DATA / "results-v1"
V1_SPINE = DATA / "results-v1-spine"


def _copy(src: Path, tmp_path: Path) -> Path:
    out = tmp_path / src.name
    shutil.copytree(src, out)
    return out


@pytest.mark.parametrize("fixture", [V1, V1_SPINE])
def test_a_version_1_directory_reads_with_its_values(fixture: Path) -> None:
    meta, records, skipped = read_results(fixture)
    assert meta.dbperf_results == FORMAT_VERSION and meta.status == "complete" and not skipped
    assert meta.base == "wal" and meta.target_names == ["wal", "delete"] and meta.threads == [1]
    assert [(b.name, b.group) for b in meta.benchmarks] == [("point-query", "point"), ("update-index", "write")]
    wal = meta.target("wal")
    assert wal is not None and wal.engine == "sqlite" and wal.engine_version == "3.40.1"
    assert wal.settings == [("journal_mode", "WAL"), ("synchronous", "NORMAL")]
    assert wal.load == {"engine_version": "3.40.1", "tables": 1, "rows": 1000, "seconds": 0.002211058}
    assert meta.host is not None and meta.host.hostname == "vm" and meta.host.cores == 2
    assert meta.tables == 1 and meta.table_size == 1000 and meta.repeats == 2 and meta.aggregate == "median"
    assert len(records) == 8
    m = build_matrix(meta, records)
    assert m.base == "wal" and m.targets == ["wal", "delete"]
    cell = m.cell("delete", "update-index", 1)
    assert cell is not None and cell.qps is not None and cell.rqps is not None
    # the medians of the two repeats of each side, as results.jsonl holds them
    assert cell.rqps == pytest.approx(((896.6666666666667 + 826.6666666666667) / 2) / ((52120.0 + 39920.0) / 2))


def test_fields_added_within_version_1_have_their_defaults_in_the_oldest_shape() -> None:
    meta, _, _ = read_results(V1_SPINE)
    assert meta.min_effect is None and meta.rounds is None and meta.load_model is None and meta.cpus is None
    assert meta.noise_thresholds is None and meta.fleet is None and meta.replication is None
    assert all(t.trained_on == [] and t.post_write == [] for t in meta.targets)
    current, _, _ = read_results(V1)
    assert current.min_effect == 0.02 and current.cpus == {"client": [0], "server": [1], "how": "auto"}
    assert current.load_model is not None and current.load_model["percentiles"] == [50.0, 95.0, 99.0, 99.9]


@pytest.mark.parametrize("fixture", [V1, V1_SPINE])
def test_the_report_of_a_version_1_directory(fixture: Path, tmp_path: Path) -> None:
    proc = run_cli("report", str(_copy(fixture, tmp_path)), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["base"] == "wal" and doc["status"] == "complete" and doc["meta"]["dbperf_results"] == 1
    assert {(c["target"], c["benchmark"]) for c in doc["cells"]} == {
        (t, b) for t in ("wal", "delete") for b in ("point-query", "update-index")}


def test_a_newer_version_is_refused_in_one_line_naming_the_file_and_both_versions(tmp_path: Path) -> None:
    out = _copy(V1, tmp_path)
    raw = json.loads((out / "meta.json").read_text())
    (out / "meta.json").write_text(json.dumps({**raw, "dbperf_results": FORMAT_VERSION + 1}))
    with pytest.raises(UserError) as err:
        read_results(out)
    line = str(err.value)
    assert "\n" not in line and str(out / "meta.json") in line
    assert f"version {FORMAT_VERSION + 1} is newer than this dbperf reads ({FORMAT_VERSION})" in line
    proc = run_cli("report", str(out))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("version", [None, 0, "1", True])
def test_a_version_that_never_was_is_refused(version: Any) -> None:
    with pytest.raises(MetaError, match="is not one this dbperf reads"):
        upgraded({"dbperf_results": version})


def test_upgrades_run_in_order_from_the_files_version_to_the_current_one() -> None:
    """asv's shape, on a made-up history of three versions: each update_to_N sees its predecessor's output."""
    seen: list[int] = []

    def update_to_2(raw: dict[str, Any]) -> dict[str, Any]:
        seen.append(2)
        raw = dict(raw)
        raw["renamed"] = raw.pop("old")
        return raw

    def update_to_3(raw: dict[str, Any]) -> dict[str, Any]:
        seen.append(3)
        return {**raw, "renamed": raw["renamed"] * 10}

    steps = {2: update_to_2, 3: update_to_3}
    assert upgraded({"dbperf_results": 1, "old": 4}, current=3, upgrades=steps) == {"dbperf_results": 3,
                                                                                      "renamed": 40}
    assert seen == [2, 3]
    seen.clear()
    assert upgraded({"dbperf_results": 2, "renamed": 4}, current=3, upgrades=steps)["renamed"] == 40
    assert seen == [3]
    assert upgraded({"dbperf_results": 3, "renamed": 4}, current=3, upgrades=steps)["renamed"] == 4
    with pytest.raises(MetaError, match="version 4 is newer"):
        upgraded({"dbperf_results": 4}, current=3, upgrades=steps)


def _full_meta() -> RunMeta:
    return RunMeta(
        status="running", started_at="2026-11-23T00:00:00+00:00", experiment="x.toml",
        host=HostMeta(hostname="h", cores=2), driver="dbperf-driver 0", base="a", threads=[1, 4], repeats="auto",
        budget_s=60.0, min_effect=0.03,
        benchmarks=[BenchmarkMeta(name="point-query", group="point", phase="read", queries_per_event=1,
                                  sql=["SELECT 1"])],
        targets=[TargetMeta(name="a", engine="sqlite", settings=[("journal_mode", "WAL")], trained_on=["x"],
                            load={"rows": 10}, post_write=[{"statements": ["VACUUM"]}]),
                 TargetMeta(name="b", engine="postgres", dsn="postgresql://127.0.0.1/db", restarts=1)],
        fleet=FleetMeta(scheduler="tcp://127.0.0.1:1", hosts={
            "h1": FleetHostMeta(status="pending", targets=["a", "b"], cells=4),
            "h2": FleetHostMeta(status="complete", targets=[TargetMeta(name="a", engine_version="3.45")])}),
        resumed_at=["2026-11-23T01:00:00+00:00"],
        extended=[Extension(at="2026-11-23T01:00:00+00:00", budget_s=3600.0)])


def test_what_a_writer_writes_reads_back_equal(tmp_path: Path) -> None:
    meta = _full_meta()
    writer = ResultsWriter(tmp_path / "o")
    try:
        writer.write_meta(meta, "")
        read, _, _ = read_results(tmp_path / "o")
        assert read == meta
        meta.status = "complete"
        writer.update_meta(meta)
    finally:
        writer.close()
    again, _, _ = read_results(tmp_path / "o")
    assert again == meta and again.status == "complete"
    assert encode_file(again) == (tmp_path / "o" / "meta.json").read_bytes()


def test_a_target_field_is_absent_until_the_run_gets_to_it() -> None:
    """`load` appears once loaded (tests poll for it), as the untyped dict did."""
    doc = json.loads(encode_file(_full_meta()))
    assert doc["dbperf_results"] == FORMAT_VERSION
    a, b = doc["targets"]
    assert "load" in a and "load" not in b and "error" not in a and "trained_on" not in b
    assert doc["fleet"]["hosts"]["h1"] == {"status": "pending", "targets": ["a", "b"], "cells": 4}


def test_the_version_1_fixture_survives_a_read_and_a_rewrite() -> None:
    """Every field the writers wrote is declared: nothing a version-1 directory holds is dropped by a rewrite
    (the fleet's --resume rewrites what it read); only nulls of the targets are left out."""
    raw = json.loads((V1 / "meta.json").read_text())
    again = json.loads(encode_file(run_meta(raw)))

    def without_nulls(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: without_nulls(v) for k, v in x.items() if v is not None and v != [] and v != {}}
        if isinstance(x, list):
            return [without_nulls(v) for v in x]
        return x

    assert without_nulls(again) == without_nulls(raw)
    assert set(raw) <= set(again)


def test_a_died_run_says_so_in_its_meta_but_never_stores_it(tmp_path: Path) -> None:
    meta = run_meta({**json.loads((V1 / "meta.json").read_text()), "status": "died"})
    assert meta.status_note == "the lab died while running (killed?)"
    assert meta_dict(meta)["status_note"] == meta.status_note
    assert "status_note" not in json.loads(encode_file(meta))


def test_a_malformed_meta_stays_a_one_line_error() -> None:
    with pytest.raises(MetaError, match="expected a JSON object"):
        run_meta([])
    with pytest.raises(MetaError, match=r"Expected `int`.*\$\.threads\[0\]"):
        run_meta({"dbperf_results": 1, "base": "a", "targets": [{"name": "a"}], "benchmarks": [],
                  "threads": [1.5]})
    with pytest.raises(MetaError, match=r"\$\.targets\[0\]\.restarts"):
        run_meta({"dbperf_results": 1, "base": "a", "targets": [{"name": "a", "restarts": "x"}], "benchmarks": []})


# --- the SQLite build manifest (dbperf/build_manifest.py) ---------------------------------------------------------

MANIFEST_V1 = DATA / "build-manifest-v1.json"  # a PGO build's manifest as the cache held it, before its version key


def test_a_manifest_without_a_version_is_version_1_and_reads_with_its_values() -> None:
    raw = json.loads(MANIFEST_V1.read_text())
    assert "manifest_version" not in raw
    m = build_manifest(raw)
    assert m.manifest_version == MANIFEST_VERSION == 1 and m.label == "sqlite@3.54.1 [O2 pgo]"
    assert m.compiler.version == "cc (Debian 12.2.0-14+deb12u1) 12.2.0" and m.build_seconds == 38.8
    assert m.pgo is not None and m.pgo["training_set"] == ["train-mix"]
    assert m.library_sha256 == "201d51feb0828e095c65c01ec5c4081f9fee520e5c725280e5ea3ca67c248722"
    again = json.loads(encode_file(m))
    # nothing dropped; the fields a version-1 manifest gained later (a relink's) read as their defaults
    assert again == {"manifest_version": 1, **raw, "objects": [], "ldflags": [], "relink": None}


def test_a_manifest_this_dbperf_cannot_read_is_a_cache_miss(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    raw = json.loads(MANIFEST_V1.read_text())
    path.write_text(json.dumps(raw))
    cached = _cached_manifest(path)
    assert cached is not None and cached.key == raw["key"]
    with pytest.raises(MetaError, match="build manifest version 2 is newer than this dbperf reads"):
        build_manifest({**raw, "manifest_version": 2})
    for bad in ({**raw, "manifest_version": 2}, {**raw, "compiler": "gcc"}, [raw]):
        path.write_text(json.dumps(bad))
        assert _cached_manifest(path) is None
    path.write_text("{torn")
    assert _cached_manifest(path) is None


@pytest.mark.parametrize("example", ["quick", "demo", "sqlite-config", "pg-ladder", "fleet", "replication",
                                     "replication-postgres"])
def test_each_writers_meta_reads_back_as_written(example: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The matrix run's and the replication lab's meta.json, for the shipped examples, as they are written before the
    run starts: decoded through the reader's path, they encode to the same bytes."""
    # both writers start from runner.matrix.started_meta; the unit tier runs no driver
    monkeypatch.setattr("dbperf.runner.matrix.driver_version", lambda: "dbperf-driver (test)")
    e = parse_experiment(Path(__file__).parent.parent / "examples" / f"{example}.toml")
    meta = replication_meta(e, {}) if e.replication else matrix_meta(e, {t.name: {} for t in e.targets},
                                                                     {t.name: [] for t in e.targets})
    written = encode_file(meta)
    read = run_meta(json.loads(written))
    assert encode_file(read) == written and read.dbperf_results == FORMAT_VERSION
    assert (read.replication is not None) == (e.replication is not None)
    assert read.target_names == [t.name for t in e.targets]


def test_cumulative_writes_say_the_data_is_never_restored(write_experiment: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness settings (runner/post_write.py meta_fields) replace the default `data_restore`."""
    monkeypatch.setattr("dbperf.runner.matrix.driver_version", lambda: "dbperf-driver (test)")
    text = (Path(__file__).parent.parent / "examples" / "quick.toml").read_text()
    e = parse_experiment(write_experiment(text.replace("[run]\n", '[run]\nwrites = "cumulative"\n', 1)))
    meta = run_meta(json.loads(encode_file(matrix_meta(e, {t.name: {} for t in e.targets},
                                                       {t.name: [] for t in e.targets}))))
    assert meta.writes == "cumulative" and meta.data_restore is not None and meta.data_restore.startswith("never")


@pytest.mark.parametrize(("field", "value", "says"), [
    ("time_s", float("nan"), "'time_s' must be a positive number of seconds, not nan"),
    ("time_s", 0, "'time_s' must be a positive number of seconds, not 0"),
    ("warmup_s", float("inf"), "'warmup_s' must be a number of seconds, 0 or more, not inf"),
    ("table_size", -5, "'table_size' must be a count of 1 or more, not -5"),
    ("min_effect", 1.5, "'min_effect' must be a share between 0 and 1, not 1.5"),
    ("threads", [1, -1], "'threads' must be thread counts of 1 or more, not -1"),
    ("threads", [float("nan")], "'threads' must be thread counts of 1 or more, not nan"),
])
def test_a_setting_no_run_writes_is_refused_naming_its_field(field, value, says) -> None:
    with pytest.raises(MetaError) as err:
        run_meta({"dbperf_results": 1, "base": "a", "targets": [{"name": "a"}], "benchmarks": [], field: value})
    assert str(err.value) == says
