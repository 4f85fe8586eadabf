"""The build lab on real SQLite sources from crates.io and the machine's gcc. To keep CI short the builds are -O0
or -O1 (a trailing cflag overrides the variant's level); what is checked is the lab's behaviour, not speed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbperf.buildlab.builder import build, build_key, cached_builds
from dbperf.buildlab.sqlite_source import resolve
from dbperf.errors import UserError
from dbperf.experiment.build_variants import BuildSpec
from dbperf.host import process_variants
from dbperf.host.compiler import find_compiler
from dbperf.host.driver import library_info
from dbperf.records import LibraryInfo
from tests.conftest import run_cli

pytestmark = pytest.mark.e2e

VERSION = "3.54.1"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DBPERF_CACHE", str(root))
        yield root


@pytest.fixture(scope="module")
def source(cache):
    return resolve(VERSION)


def test_source_is_pinned_checksummed_and_versioned(source):
    assert source.sqlite_version == VERSION
    assert source.crate == "libsqlite3-sys" and len(source.crate_checksum) == 64
    assert Path(source.amalgamation, "sqlite3.c").is_file() and len(source.sqlite3_c_sha256) == 64


def test_variants_give_distinct_libraries_with_flags_in_the_manifest(source):
    quick = BuildSpec(VERSION, ("O2", "frame-pointers"), ("-O0",))
    single = BuildSpec(VERSION, ("O2",), ("-O0", "-DSQLITE_THREADSAFE=0"))
    a, b = build(quick, source), build(single, source)
    assert a.library != b.library and a.manifest["library_sha256"] != b.manifest["library_sha256"]
    assert a.manifest["flags"] == ["-O2", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer", "-O0"]
    assert "-DSQLITE_THREADSAFE=0" in b.manifest["flags"]
    assert a.manifest["compiler"]["version"] == find_compiler().version
    assert a.manifest["source"]["crate_checksum"] == source.crate_checksum
    assert library_info("sqlite", str(a.library)) == LibraryInfo(engine_version=VERSION, threadsafe=True)
    assert library_info("sqlite", str(b.library)).threadsafe is False
    again = build(quick, source)
    assert again.cached and again.library == a.library


def test_pgo_build_consumed_a_profile(source):
    # Partial training and a training time of its own: 1 s per workload, half prepared, half as SQL text.
    spec = BuildSpec(VERSION, ("O2", "pgo"), ("-O1",), ("train-mix",), pgo_partial_training=True,
                     pgo_train_seconds=1.0)
    b = build(spec, source)
    pgo = b.manifest["pgo"]
    assert pgo["training_set"] == ["train-mix"] and pgo["seconds_per_workload"] == 1.0
    assert pgo["profile_files"] and all(f["bytes"] > 0 for f in pgo["profile_files"])
    assert "-Werror=missing-profile" in pgo["profile_use_flags"] and pgo["profile_warnings"] == []
    assert "-fprofile-partial-training" in pgo["profile_use_flags"]
    assert all(r["events"] > 0 and r["errors"] == 0 for r in pgo["training_runs"])
    assert all(r["seconds"] == pytest.approx(0.5, abs=0.1) for r in pgo["training_runs"])
    assert {r["prepared"] for r in pgo["training_runs"]} == {True, False}
    assert b.manifest["label"].endswith("[O2 pgo -O1 partial-training trained 1s per workload]")
    assert any("-fprofile-use=" in " ".join(c) for c in b.manifest["commands"])
    assert library_info("sqlite", str(b.library)).engine_version == VERSION


def test_training_set_is_part_of_the_cache_key(source):
    cc = find_compiler()
    mix = BuildSpec(VERSION, ("O2", "pgo"), (), ("train-mix",))
    other = BuildSpec(VERSION, ("O2", "pgo"), (), ("point-query",))
    plain = BuildSpec(VERSION, ("O2",))
    partial = BuildSpec(VERSION, ("O2", "pgo"), (), ("train-mix",), pgo_partial_training=True)
    longer = BuildSpec(VERSION, ("O2", "pgo"), (), ("train-mix",), pgo_train_seconds=60.0)
    keys = {build_key(s, source, cc) for s in (mix, other, plain, partial, longer)}
    assert len(keys) == 5
    # The default training time is the key it always was.
    assert build_key(BuildSpec(VERSION, ("O2", "pgo"), (), ("train-mix",), pgo_train_seconds=3.0), source, cc) == \
        build_key(mix, source, cc)


def _experiment(tmp_path: Path, target: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(f'[run]\nbenchmarks = ["point-query"]\ntime = "1s"\n\n[[target]]\nname = "t"\n{target}\n')
    return path


def _one_line_error(proc) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    return line


def test_unknown_version_is_one_line(tmp_path, cache):
    line = _one_line_error(run_cli("build", str(_experiment(tmp_path, 'source = "sqlite@9.0.0"'))))
    assert "sqlite@9.0.0: no libsqlite3-sys release on crates.io bundles it" in line and "3.54.1" in line


def test_failed_build_shows_the_compiler(tmp_path, cache):
    exp = _experiment(tmp_path, 'source = "sqlite@3.54.1"\ncflags = ["-O0", "-fno-such-option-anywhere"]')
    line = _one_line_error(run_cli("build", str(exp)))
    assert "build of sqlite@3.54.1" in line and "failed" in line and "-fno-such-option-anywhere" in line
    # it leaves its log, not the lab's copy of the source (megabytes no command lists or clears)
    (entry,) = [p.parent for p in cache.rglob("build.log") if "-fno-such-option-anywhere" in p.read_text()]
    assert not (entry / "work").exists() and not (entry / "manifest.json").exists()


def test_a_failed_build_leaves_the_build_beside_it_whole(tmp_path, cache):
    """Two builds at once (one a core): the refused one is one line, the last; the other, still compiling when the
    first failed, is waited for and cached whole."""
    exp = tmp_path / "exp.toml"
    targets = [("good", "-DDBPERF_POOL_TEST=1"), ("bad", "-fno-such-option-anywhere")]
    exp.write_text('[run]\nbenchmarks = ["point-query"]\ntime = "1s"\n' + "".join(
        f'\n[[target]]\nname = "{name}"\nsource = "sqlite@3.54.1"\ncflags = ["-O0", "{flag}"]\n'
        for name, flag in targets))
    proc = run_cli("build", str(exp))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    *before, last = proc.stderr.strip().splitlines()
    assert [line for line in before if line.split()[:1] == ["built"] and "-DDBPERF_POOL_TEST=1" in line]
    assert "build of sqlite@3.54.1" in last and "failed" in last and "-fno-such-option-anywhere" in last
    (good,) = [m for m in cached_builds() if "-DDBPERF_POOL_TEST=1" in m["cflags"]]
    assert Path(good["library"]).is_file() and good["library_sha256"]
    assert not [m for m in cached_builds() if "-fno-such-option-anywhere" in m["cflags"]]


def test_no_compiler(tmp_path, cache):
    exp = _experiment(tmp_path, 'source = "sqlite@3.54.1"\ncflags = ["-O0"]')
    line = _one_line_error(run_cli("build", str(exp), env={"CC": "no-such-cc"}))
    assert "no C compiler" in line and "apt install gcc" in line


def test_missing_allocator_names_the_package(monkeypatch):
    monkeypatch.setitem(process_variants.ALLOCATORS, "jemalloc", ("libjemalloc.so.99", "libjemalloc2"))
    expected = r"allocator jemalloc: .*libjemalloc\.so\.99 not found \(apt install libjemalloc2\)"
    with pytest.raises(UserError, match=expected):
        process_variants.allocator_library("jemalloc")


def test_unmapped_allocator_fails_the_check():
    variant = process_variants.ProcessVariant(allocator="jemalloc")
    assert "is not mapped" in variant.check([])
    assert variant.check(["/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"]) is None


def test_allocator_preload_and_hugepages_are_verified_and_recorded(tmp_path):
    body = ('[run]\nbenchmarks = ["point-query"]\ntable_size = 5000\ntime = "0.5s"\nwarmup = "0.1s"\nrepeats = 1\n'
            '[[target]]\nname = "glibc"\nhugepages = "off"\n'
            '[[target]]\nname = "jemalloc"\nallocator = "jemalloc"\n'
            '[[target]]\nname = "thp"\nhugepages = "thp"\n')
    path = tmp_path / "alloc.toml"
    path.write_text(body)
    out = tmp_path / "out"
    proc = run_cli("run", str(path), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    runs = {r["target"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert all(r["status"] == "ok" for r in runs.values())
    assert any("libjemalloc.so.2" in p for p in runs["jemalloc"]["result"]["process"]["allocators_mapped"])
    assert runs["glibc"]["result"]["process"]["allocators_mapped"] == []
    assert runs["glibc"]["result"]["process"]["thp_disabled"] is True
    meta = json.loads((out / "meta.json").read_text())
    variants = {t["name"]: t["process_variant"] for t in meta["targets"]}
    assert variants["jemalloc"]["environment"]["LD_PRELOAD"].endswith("libjemalloc.so.2")
    assert variants["thp"]["environment"] == {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
    assert variants["thp"]["kernel_thp"] in ("always", "madvise", "never", None)


def test_two_processes_building_one_key_at_once_share_one_whole_entry(tmp_path, cache):
    """Two `dbperf build` of the same key started together (two runs started at once): the second waits for the
    first's lock on the key, then takes its entry from the cache; neither fails, and the entry is built once."""
    import subprocess

    from tests.conftest import DBPERF, REPO
    exp = _experiment(tmp_path, 'source = "sqlite@3.54.1"\ncflags = ["-O0", "-DDBPERF_TWO_AT_ONCE=1"]')
    procs = [subprocess.Popen([*DBPERF, "build", str(exp)], cwd=REPO, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(2)]
    ends = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in ends]
    said = "".join(out for out, _ in ends)
    assert said.count("(cached)") == 1, said  # one built it, the other found it whole
    (entry,) = [m for m in cached_builds() if "-DDBPERF_TWO_AT_ONCE=1" in m["cflags"]]
    log = Path(entry["library"]).parent / "build.log"
    assert Path(entry["library"]).is_file() and "cannot find" not in log.read_text()
