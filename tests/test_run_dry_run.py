"""`dbperf run EXPERIMENT --dry-run` (issue 45): the plan (cells, rounds, budget, estimate, disk) and every check a run
makes before its first round (targets' libraries and binaries, builds cached or not, the driver, the tools of the
tiers asked for), exit 0, with nothing built, fetched, measured or written: no results folder. A check that would
stop the run is shown and is the one error line (exit 2). Before, the only cheap check was a run refused by its own
estimate."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from dbperf.build_manifest import BuildManifest, CompilerInfo
from dbperf.buildlab.builder import build_key
from dbperf.buildlab.sqlite_source import SqliteSource
from dbperf.experiment.model import default_sqlite_library
from dbperf.experiment.spec import parse_experiment
from dbperf.host.compiler import find_compiler
from dbperf.run_meta import encode_file
from tests.conftest import NEEDS_SERVERS, REPO, run_cli
from tests.synthetic import write_run
from tests.test_run_out_and_signals import one_error_line
from tests.test_simulated_tools import path_without_valgrind

pytestmark = pytest.mark.e2e

RUN = """
[run]
benchmarks = ["point-query", "update-index"]
threads = [1, 2]
table_size = 1000
time = "0.2s"
warmup = "0.1s"
{repeats}
"""
TARGET = '\n[[target]]\nname = "{name}"\n{extra}\n'


def _experiment(write_experiment, targets: list[tuple[str, str]], repeats: str = "repeats = 2",
                name: str = "exp.toml") -> Path:
    return write_experiment(RUN.format(repeats=repeats) + "".join(TARGET.format(name=n, extra=x) for n, x in targets),
                            name)


def _checks(stdout: str) -> dict[str, str]:
    """`  ok     target a: ...` -> {"target a": "ok     target a: ..."}"""
    lines = stdout.split("checks:\n", 1)[1].splitlines()
    return {line.split(None, 1)[1].split(":", 1)[0]: line.strip() for line in lines}


def test_the_plan_is_printed_and_nothing_is_measured_or_written(write_experiment, tmp_path):
    exp = _experiment(write_experiment, [("a", ""), ("b", 'config = { journal_mode = "WAL" }')])
    out = tmp_path / "out"
    proc = run_cli("run", str(exp), "--out", str(out), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "results in" not in proc.stderr
    text = proc.stdout
    assert "nothing is built, fetched, started, measured or written" in text
    assert "cells: 2 benchmark(s) × 2 thread count(s) × 2 round(s) × 2 target(s) = 16 cells" in text
    assert "rounds: 2 per (benchmark, threads) (repeats = 2)" in text
    assert "budget: none (a fixed number of rounds)" in text
    assert "estimate: about " in text and f"of data in {out} (free: " in text
    checks = _checks(text)
    assert checks["results"].startswith("ok") and "a new folder; not created by a dry run" in checks["results"]
    assert checks["dbperf-driver"].startswith("ok")
    for name in ("a", "b"):
        assert checks[f"target {name}"].startswith("ok") and "SQLite 3." in checks[f"target {name}"]
        assert default_sqlite_library() in checks[f"target {name}"]
    assert not out.exists()


def test_the_default_results_folder_is_named_not_created(write_experiment):
    stem = f"dry-run-{hashlib.sha256(str(write_experiment).encode()).hexdigest()[:12]}"
    exp = _experiment(write_experiment, [("a", "")], repeats='repeats = "auto"\nbudget = "2m"', name=f"{stem}.toml")
    before = set((REPO / "results").glob(f"{stem}-*"))
    proc = run_cli("run", str(exp), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "rounds: auto: at least 9 per (benchmark, threads)" in proc.stdout
    assert "budget: 2 min of measured rounds" in proc.stdout
    assert f"{REPO / 'results' / stem}-" in proc.stdout
    assert set((REPO / "results").glob(f"{stem}-*")) == before


def _cache_a_build(cache: Path, exp: Path, target: int) -> Path:
    """A build of the target in the cache as the build lab leaves one (its manifest written last, its key worked out
    from its own source), its library the system's SQLite: found as cached without fetching or compiling."""
    e = parse_experiment(exp)
    spec = e.targets[target].build
    assert spec is not None
    source = SqliteSource(spec.sqlite_version, "libsqlite3-sys", "0.0.0-test", "", "/nonexistent", "0" * 64)
    cc = find_compiler()
    key = build_key(spec, source, cc, exp.parent)
    entry = cache / "builds" / key
    entry.mkdir(parents=True)
    library = entry / "libsqlite3.so"
    shutil.copyfile(default_sqlite_library(), library)
    digest = hashlib.sha256(library.read_bytes()).hexdigest()
    (entry / "manifest.json").write_bytes(encode_file(BuildManifest(
        key=key, label=spec.label(), source=source.provenance(), variants=list(spec.variants), flags=spec.flags(),
        compiler=CompilerInfo(path=cc.path, version=cc.version), library=str(library), library_sha256=digest)))
    return library


def test_builds_are_said_cached_or_to_be_built_and_none_is_built(write_experiment, tmp_path):
    exp = _experiment(write_experiment, [("sys", ""), ("o3", 'source = "sqlite@3.54.1"\nbuild = ["O3"]'),
                                         ("lto", 'source = "sqlite@3.54.1"\nbuild = ["O3", "lto"]')])
    cache = tmp_path / "cache"
    library = _cache_a_build(cache, exp, 1)
    proc = run_cli("run", str(exp), "--out", str(tmp_path / "out"), "--dry-run", env={"DBPERF_CACHE": str(cache)})
    assert proc.returncode == 0, proc.stderr
    checks = _checks(proc.stdout)
    assert checks["target o3"].startswith("ok     target o3: sqlite@3.54.1 [O3]: cached, SQLite 3.")
    assert f"({library})" in checks["target o3"]
    assert "not cached, would be built" in checks["target lto"] and checks["target lto"].startswith("ok")
    # nothing fetched (cargo's project), nothing built: the cache holds the one build it held
    assert sorted(p.name for p in cache.iterdir()) == ["builds"]
    assert [p.name for p in (cache / "builds").iterdir()] == [library.parent.name]
    assert not (tmp_path / "out").exists()


def test_what_would_stop_the_run_is_shown_and_is_the_one_error_line(write_experiment, tmp_path):
    fake = tmp_path / "libsqlite3.so"
    fake.write_text("not a library")  # found, as the experiment is read; not SQLite, as the run finds first
    exp = _experiment(write_experiment, [("a", ""), ("bad", f'library = "{fake}"')])
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's own file")
    proc = run_cli("run", str(exp), "--out", str(mine), "--dry-run")
    line = one_error_line(proc)
    assert "the run would stop: results: " in line and "not empty (holds notes.txt)" in line, line
    assert "(and 1 more, listed above)" in line
    checks = _checks(proc.stdout)
    assert checks["results"].startswith("FAILS") and checks["target bad"].startswith("FAILS")
    assert str(fake) in checks["target bad"] and checks["target a"].startswith("ok")
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
    assert (mine / "notes.txt").read_text() == "the user's own file"


@NEEDS_SERVERS
def test_lab_server_binaries_are_checked_without_starting_a_server(write_experiment, tmp_path):
    exp = _experiment(write_experiment, [("pg", 'engine = "postgres"\nbinaries = "/nonexistent/bin"'),
                                         ("maria", 'engine = "mariadb"')])
    before = subprocess.run(["pgrep", "-c", "mariadbd"], capture_output=True, text=True).stdout
    proc = run_cli("run", str(exp), "--out", str(tmp_path / "out"), "--dry-run")
    line = one_error_line(proc)
    assert "target pg: PostgreSQL server not found: no /nonexistent/bin/initdb" in line, line
    assert "apt install" not in line  # the user named the binaries: Debian's package would not be them
    checks = _checks(proc.stdout)
    assert checks["target maria"].startswith("ok") and "MariaDB" in checks["target maria"]
    assert subprocess.run(["pgrep", "-c", "mariadbd"], capture_output=True, text=True).stdout == before


def test_the_simulated_tier_without_valgrind(write_experiment, tmp_path):
    exp = _experiment(write_experiment, [("a", "")])
    path = path_without_valgrind(tmp_path)
    proc = run_cli("run", str(exp), "--simulated", "--dry-run", env={"PATH": path})
    line = one_error_line(proc)
    assert "the run would stop: valgrind (simulated tier): valgrind not found on PATH" in line, line
    assert _checks(proc.stdout)["setarch (simulated tier)"].startswith("ok")
    # without the tier valgrind is not needed
    proc = run_cli("run", str(exp), "--dry-run", env={"PATH": path})
    assert proc.returncode == 0, proc.stderr
    assert "valgrind" not in proc.stdout


def _line(stdout: str, start: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith(start))


def test_a_resume_plans_only_what_is_left(write_experiment, tmp_path):
    """A run cut short after 3 of its 12 cells: the dry run of its --resume counts the 9 left, and its estimate is
    what is left, not the whole run's again."""
    exp = write_experiment('[run]\nbenchmarks = ["point-query", "hot-points"]\ntable_size = 1000\ntime = "5s"\n'
                           'warmup = "0.1s"\nrepeats = 3\n[[target]]\nname = "a"\n[[target]]\nname = "b"\n')
    out = write_run(tmp_path / "out", ["a", "b"], ["point-query", "hot-points"], 3,
                    meta_extra={"status": "interrupted"})
    (out / "experiment.toml").write_text(exp.read_text())
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    assert len(lines) == 12
    (out / "results.jsonl").write_text("".join(lines[:3]))
    resumed = run_cli("run", str(exp), "--out", str(out), "--dry-run", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert _line(resumed.stdout, "cells: ").endswith("= 12 cells; 9 left to measure (3 measured before are kept)")
    assert "3 cell(s) measured before are kept" in _line(resumed.stdout, "  ok     results: ")
    whole = run_cli("run", str(exp), "--out", str(tmp_path / "new"), "--dry-run")
    assert _line(whole.stdout, "cells: ").endswith("= 12 cells")  # a new run: nothing left out
    estimate = _line(resumed.stdout, "estimate: ")
    assert estimate.endswith("(what is left, the data loaded again)") and estimate != _line(whole.stdout, "estimate: ")
