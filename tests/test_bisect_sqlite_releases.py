"""`dbperf bisect sqlite FIRST LAST`: the embedded default bisected over the SQLite releases the lab builds from
source (buildlab/sqlite_source.py's known versions), each a `source = "sqlite@VERSION"` target. The range and its
refusals on a faked list of known versions; end to end over the three releases the lab ships hints for, built at
-O0 (the lab's behaviour is checked, not speed) and counted under cachegrind on a small table."""

from __future__ import annotations

import json
import tomllib

import pytest

from dbperf.errors import UserError
from dbperf.metrics import SIMULATED, WALL
from dbperf.storage.bisect_path import StepSettings
from dbperf.usecases import bisect_candidates
from dbperf.usecases.bisect_candidates import Releases, SqliteReleases, candidates
from tests.conftest import run_cli

KNOWN = {"0.30.1": "3.45.1", "0.31.0": "3.46.0", "0.38.0": "3.53.2", "0.38.1": "3.53.2", "0.39.0": "3.54.0",
         "0.39.1": "3.54.1"}


def settings(**changes: object) -> StepSettings:
    fields: dict[str, object] = {"engine": "sqlite", "table_size": 1000, "metric": SIMULATED, **changes}
    return StepSettings(benchmark="point-query", threshold=0.02, time_s=5.0, warmup_s=1.0, budget_s=120.0,
                        **fields)  # type: ignore[arg-type]


@pytest.fixture
def known(monkeypatch):
    monkeypatch.setattr(bisect_candidates, "known_versions", lambda: dict(KNOWN))


@pytest.mark.unit
def test_sqlite_releases_are_their_own_kind_and_span_what_the_lab_builds_in_release_order(known):
    kind = candidates(settings())
    assert isinstance(kind, SqliteReleases) and isinstance(candidates(settings(engine="postgres")), Releases)
    assert kind.span("3.45.1", "3.54.1") == ["3.45.1", "3.46.0", "3.53.2", "3.54.0", "3.54.1"]
    assert kind.span("3.46.0", "3.54.0") == ["3.46.0", "3.53.2", "3.54.0"]  # a release of two crates: once


@pytest.mark.unit
@pytest.mark.parametrize(("first", "last", "said"), [
    ("3.44.0", "3.54.1", "'3.44.0' is not a SQLite release the lab builds (known: 3.45.1, 3.46.0, 3.53.2, 3.54.0, "
                         "3.54.1; `dbperf build --versions sqlite --scan N` finds more)"),
    ("3.54.1", "3.45.1", "reversed range: 3.54.1 is newer than 3.45.1"),
    ("3.53.2", "3.53.2", "holds one release (3.53.2): nothing to bisect"),
])
def test_a_range_the_lab_cannot_build_is_one_line(known, first, last, said):
    with pytest.raises(UserError) as err:
        candidates(settings()).span(first, last)
    assert said in str(err.value)


@pytest.mark.unit
def test_a_release_is_a_source_target_with_the_bisects_flags_and_settings():
    from dbperf.usecases.bisect_step import step_experiment
    from dbperf.usecases.bisect_work import count_experiment

    s = settings(cflags=["-O1"], config={"journal_mode": "WAL"})
    candidates(s).check()
    (counted,) = tomllib.loads(count_experiment(s, "3.54.0"))["target"]
    assert counted == {"name": "sqlite-3.54.0", "source": "sqlite@3.54.0", "cflags": ["-O1"],
                       "config": {"journal_mode": "WAL"}}
    doc = tomllib.loads(step_experiment(s, "3.53.2", "3.54.0", 60.0))
    assert doc["run"]["base"] == "sqlite-3.53.2" and [t["source"] for t in doc["target"]] == ["sqlite@3.53.2",
                                                                                             "sqlite@3.54.0"]
    for bad, said in ((settings(cflags=["-O1; rm"]), "--cflag: expected a compiler option"),
                      (settings(config={"Journal-Mode": "WAL"}), "config key 'Journal-Mode' is not a PRAGMA name"),
                      (settings(engine="postgres", metric=WALL, cflags=["-O1"]), "--cflag goes with --tree or "
                                                                                   "sqlite's releases")):
        with pytest.raises(UserError) as err:
            candidates(bad).check()
        assert said in str(err.value)


@pytest.mark.e2e
def test_three_sqlite_releases_are_built_counted_and_bisected(tmp_path):
    """The three releases the lab ships hints for: each built from its crate's amalgamation (its manifest says the
    release), counted under cachegrind, and the search's answer stated either way (found or none slower)."""
    out = tmp_path / "out"
    proc = run_cli("bisect", "sqlite", "3.53.2", "3.54.1", "--metric", "simulated", "--cflag=-O0", "--table-size",
                   "1000", "--no-confirm", "--out", str(out), "--format", "json", timeout=900)
    assert proc.returncode in (0, 1), proc.stderr
    assert "dbperf: bisect sqlite 3.53.2 .. 3.54.1: 3 releases" in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["outcome"] in ("found", "none-slower") and doc["versions"] == ["3.53.2", "3.54.0", "3.54.1"]
    counted = {p.stem for p in (out / "simulated").glob("*.json")}
    assert {"3.53.2", "3.54.1"} <= counted <= {"3.53.2", "3.54.0", "3.54.1"}
    for version in counted:
        kept = tomllib.loads((out / "simulated" / f"{version}.toml").read_text())["target"][0]
        assert kept["source"] == f"sqlite@{version}" and kept["cflags"] == ["-O0"]
        profile = json.loads((out / "simulated" / f"{version}.json").read_text())
        assert profile["per_query"]["instructions"] > 0
        assert f"sqlite {version}:" in proc.stderr and "instructions per query" in proc.stderr


@pytest.mark.e2e
def test_a_series_over_sqlite_releases_has_a_column_a_release(tmp_path):
    """Three SQLite releases in one run (the builds above, kept), recorded in a history of their own: `dbperf
    series --engine sqlite` lays them out by release, rQPS against the oldest, one build and config."""
    targets = "".join(f'\n[[target]]\nname = "s{v}"\nsource = "sqlite@{v}"\ncflags = ["-O0"]\n'
                      for v in ("3.53.2", "3.54.0", "3.54.1"))
    exp = tmp_path / "exp.toml"
    exp.write_text('[run]\nbenchmarks = ["point-query"]\ntable_size = 2000\ntime = "0.3s"\nwarmup = "0.1s"\n'
                   "repeats = 3\n" + targets)
    env = {"DBPERF_HISTORY": str(tmp_path / "history.sqlite")}
    proc = run_cli("run", str(exp), "--out", str(tmp_path / "out"), env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    series = run_cli("series", "--engine", "sqlite", "--format", "json", env=env)
    assert series.returncode == 0, series.stderr
    doc = json.loads(series.stdout)
    assert [c["version"] for c in doc["columns"]] == ["3.53.2", "3.54.0", "3.54.1"], doc
    assert doc["identity"]["build"] == "-O2 -O0" and doc["rows"][0]["benchmark"] == "point-query"
