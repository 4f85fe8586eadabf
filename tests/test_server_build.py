"""Servers built from source: the experiment keys, what a failed build leaves (unit), and PostgreSQL built from
Debian's source package with -O2, then measured (network: the archive)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from dbperf.buildlab import server_build
from dbperf.buildlab.recipes import recipes
from dbperf.buildlab.recipes.mariadb import MariadbRecipe
from dbperf.buildlab.recipes.postgres import PostgresRecipe
from dbperf.buildlab.resume import BuildState
from dbperf.buildlab.sources import debian
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.host.compiler import find_compiler
from tests.conftest import NEEDS_SERVERS, run_cli


@pytest.mark.unit
@pytest.mark.parametrize(("target", "message"), [
    ('source = "postgres@debian-src"\nbuild = ["O2", "pgo"]\npgo_train = ["point-query"]',
     "server builds train on the server training set"),
    ('source = "postgres@debian-src"\nbuild = ["O9"]', "unknown variant 'O9'"),
    ('source = "postgres@debian-src"\ncflags = ["; rm -rf /"]', "expected a list of compiler options"),
    ('source = "postgres@debian-src"\ncompiler = "icc"', "compiler: expected one of 'clang-16'"),
    ('source = "postgres@debian-src"\nbuild = ["O2", "pgo"]\ncompiler = "clang-16"', "pgo variant of server builds "
     "needs gcc"),
    ('engine = "postgres"\ncompiler = "clang-16"', "'compiler' needs a source to build"),
    ('source = "sqlite@3.45.1"\ncompiler = "clang-16"', "compiler: only for servers built from source"),
    ('source = "mariadb@debian-src"\ncflags = ["-O1 x"]', "expected a list of compiler options"),
    ('engine = "postgres"\nbuild = ["O3"]', "'build' needs a source to build"),
    ('source = "sqlite@3.45.1"\nbuild = ["O2", "bolt"]', "the bolt variant is for servers built from source"),
    ('source = "postgres@debian-src"\npgo_partial_training = true', "only meaningful with the \"pgo\" variant"),
    ('source = "postgres@debian-src"\nbuild = ["O2", "pgo"]\npgo_train_seconds = 0', "pgo_train_seconds: expected "
     "seconds per training workload, above 0 and at most 3600, got 0"),
    ('source = "sqlite@3.45.1"\nbuild = ["O2", "pgo"]\npgo_train_seconds = "60"', "pgo_train_seconds: expected"),
    ('engine = "postgres"\npgo_train_seconds = 60', "'pgo_train_seconds' needs a source to build"),
])
def test_bad_server_builds_are_one_line(write_experiment, target, message):
    exp = write_experiment(f'[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\n{target}\n')
    proc = run_cli("run", str(exp), "--yes")
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


class FailingRecipe:
    engine: ClassVar[str] = "postgres"
    options: ClassVar[tuple[str, ...]] = ()
    departures: ClassVar[tuple[object, ...]] = ()
    tools: ClassVar[dict[str, str]] = {}

    def expected_steps(self, tree: Path) -> int:
        return 2

    def commands(self, tree, prefix, cc, flags, jobs):
        return [["sh", "-c", "echo 'cc -c a.c'; echo 'a.c:1: error: expected ;'; exit 3"]]

    def binaries(self, prefix: Path) -> Path:
        return prefix / "bin"

    def server_binary(self, prefix: Path) -> Path:
        return prefix / "bin" / "postgres"

    def is_step(self, line: str) -> bool:
        return " -c " in line


def _no_training(engine: str, binaries: Path, logs: Path) -> dict[str, Any]:
    raise AssertionError("a plain build trains nothing")


@pytest.mark.unit
def test_a_failed_build_names_its_last_lines_and_leaves_no_cache_entry(where, monkeypatch):
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(where / "servers"))
    builds = server_build.server_cache() / "build"
    builds.mkdir(parents=True)
    work = builds / ".k-work"
    (work / "src").mkdir(parents=True)
    steps = []
    with pytest.raises(UserError, match=r"failed at `sh -c .*a.c:1: error: expected ;") as err:
        server_build._build(ServerBuildSpec("postgres"), FailingRecipe(), find_compiler(), work / "src", {}, "k",
                            work, builds / "k", lambda phase, done, expected: steps.append(done), _no_training,
                            BuildState(work, persist=False))
    assert steps == [1]
    assert not (builds / "k").exists()  # the caller removes the staging directory
    kept = list((builds / "failed").glob("*.log"))
    assert len(kept) == 1 and "expected ;" in kept[0].read_text() and str(kept[0]) in str(err.value)


@pytest.mark.network
@NEEDS_SERVERS
def test_postgres_from_debian_source_is_built_once_and_measured(write_experiment, tmp_path):
    exp = write_experiment('[run]\nbenchmarks = ["point-query"]\ntable_size = 2000\ntime = "1s"\nwarmup = "0s"\n'
                           'repeats = 1\n[[target]]\nname = "src"\nsource = "postgres@debian-src"\nbuild = ["O2"]\n')
    out = tmp_path / "out"
    proc = run_cli("run", str(exp), "--yes", "--out", str(out), timeout=3600)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    (target,) = meta["targets"]
    build = target["build"]
    assert build["flags"] == ["-O2"] and build["source"]["origin"] == "debian-src"
    assert build["source"]["package"] == "postgresql-15" and build["compile_steps"] > 500
    assert target["engine_version"].startswith(build["source"]["upstream_version"])
    (cell,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert cell["status"] == "ok" and cell["result"]["server_usage"]["user_us"] > 0
    again = run_cli("build", str(exp))
    assert again.returncode == 0 and "(cached)" in again.stdout, again.stderr


@pytest.mark.unit
def test_bolt_without_the_bolt_tools_is_refused_before_any_fetch(write_experiment, tmp_path):
    bin_dir = tmp_path / "bin"  # a PATH with the compiler and make but no llvm-bolt-16, cmake or ninja
    bin_dir.mkdir()
    (bin_dir / "cc").symlink_to(find_compiler().path)
    (bin_dir / "make").symlink_to("/usr/bin/make")
    exp = write_experiment('[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\n'
                           'source = "postgres@debian-src"\nbuild = ["O2", "pgo", "bolt"]\n')
    proc = run_cli("run", str(exp), "--yes", env={"PATH": str(bin_dir), "CC": "cc"})
    assert proc.returncode == 2, proc.stderr
    assert "needs llvm-bolt-16 (apt install bolt-16)" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    exp = write_experiment('[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\n'
                           'source = "mariadb@debian-src"\n', "maria.toml")
    proc = run_cli("run", str(exp), "--yes", env={"PATH": str(bin_dir), "CC": "cc"})
    assert proc.returncode == 2, proc.stderr
    assert "building mariadb from source needs cmake, ninja, bison, c++ (apt install bison cmake g++ ninja-build)" \
        in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.unit
def test_server_pgo_takes_partial_training_and_a_training_time_of_its_own(write_experiment):
    """PostgreSQL's PGO build with partial training matched -O2 where the plain one lost 11% (docs/studies/
    pgo-server.md): an experiment key, not a cflag, with the flag in the profile-use build only and its own cache
    key; a longer training another key. The defaults keep the keys of builds already cached."""
    from dbperf.experiment.spec import parse_experiment
    exp = write_experiment('[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\n'
                           'source = "postgres@debian-src"\nbuild = ["O2", "pgo"]\npgo_partial_training = true\n'
                           'pgo_train_seconds = 60\n')
    spec = parse_experiment(exp).targets[0].server_build
    assert spec == ServerBuildSpec("postgres", variants=("O2", "pgo"), pgo_partial_training=True,
                                   pgo_train_seconds=60.0)
    assert spec.label() == "postgres@debian-src [O2 pgo partial-training trained 60s per workload]"
    assert spec.flags() == ["-O2"]  # not in the instrumented build
    use = server_build.profile_use_flags(spec, Path("/p"))
    assert use[-1] == "-fprofile-partial-training" and "-fprofile-use=/p" in use
    assert "-fprofile-partial-training" not in server_build.profile_use_flags(ServerBuildSpec(
        "postgres", variants=("O2", "pgo")), Path("/p"))
    cc, recipe = find_compiler(), PostgresRecipe()
    plain = ServerBuildSpec("postgres", variants=("O2", "pgo"))
    keys = {server_build._key(s, "postgresql-15", "15.18-0+deb12u1", cc, recipe)
            for s in (plain, spec, ServerBuildSpec("postgres", variants=("O2", "pgo"), pgo_partial_training=True),
                      ServerBuildSpec("postgres", variants=("O2", "pgo"), pgo_train_seconds=60.0))}
    assert len(keys) == 4
    assert server_build._key(ServerBuildSpec("postgres", variants=("O2", "pgo"), pgo_train_seconds=3), "postgresql-15",
                             "15.18-0+deb12u1", cc, recipe) == \
        server_build._key(plain, "postgresql-15", "15.18-0+deb12u1", cc, recipe)


@pytest.mark.unit
def test_bolt_links_with_relocations_and_keeps_other_keys():
    recipe = PostgresRecipe()
    spec = ServerBuildSpec("postgres", variants=("O2", "lto", "bolt"))
    configure = recipe.commands(Path("/src"), Path("/p"), find_compiler(), spec.flags(), 2)[0]
    assert "CFLAGS=-O2 -flto=auto -fno-reorder-blocks-and-partition" in configure
    assert "LDFLAGS=-flto=auto -Wl,-q" in configure
    assert ServerBuildSpec("postgres", variants=("O2", "pgo")).flags() == ["-O2"]
    # Debian's per-version-dirs patch would send the modules to /usr/lib/postgresql/15/lib without this.
    assert "--libdir=${exec_prefix}/lib/postgresql" in configure


@pytest.mark.unit
def test_mariadb_recipe_is_cmake_with_the_minimal_plugin_set_and_the_variants_flags():
    recipe = MariadbRecipe()
    cc = find_compiler()
    configure, build, install = recipe.commands(Path("/src"), Path("/p"), cc, ["-O3", "-flto=auto", "-Wl,-q"], 2)
    for plugin in ("COLUMNSTORE", "ROCKSDB", "MROONGA", "SPIDER", "CONNECT", "TOKUDB", "OQGRAPH", "S3"):
        assert f"-DPLUGIN_{plugin}=NO" in configure
    assert "-DWITH_EMBEDDED_SERVER=OFF" in configure and "-DWITH_UNIT_TESTS=OFF" in configure
    assert "-DCMAKE_CXX_FLAGS=-O3 -flto=auto" in configure and f"-DCMAKE_CXX_COMPILER={cc.cxx}" in configure
    assert "-DCMAKE_EXE_LINKER_FLAGS=-flto=auto -Wl,-q" in configure
    assert build == ["ninja", "-C", "/src/lab-build", "-j2"] and install[-1] == "install"
    assert recipe.is_step("[12/1149] Building CXX object sql/CMakeFiles/sql.dir/item.cc.o")
    assert not recipe.is_step("[13/1149] Linking CXX executable sql/mariadbd")
    assert recipe.binaries(Path("/p")) == Path("/p/bin/mariadbd")


@pytest.mark.unit
def test_a_build_does_not_inherit_the_calling_make(monkeypatch):
    # Under `make test`, MAKELEVEL=1 made PostgreSQL's top-level make skip its generated headers (errcodes.h).
    from dbperf.host.compiler import build_environment

    monkeypatch.setenv("MAKELEVEL", "1")
    monkeypatch.setenv("MAKEFLAGS", " -j2 --jobserver-auth=3,4")
    monkeypatch.setenv("CC", "cc")
    env = build_environment()
    assert "MAKELEVEL" not in env and "MAKEFLAGS" not in env
    assert env["CC"] == "cc" and env["LC_ALL"] == "C"


@pytest.mark.unit
def test_missing_library_headers_are_named_by_their_package_before_any_fetch(monkeypatch):
    from dbperf.host.compiler import missing_headers
    cc = find_compiler()
    assert missing_headers(cc, {"stdio.h": "libc6-dev", "nope/never.h": "libnope-dev"}) == ["libnope-dev"]
    monkeypatch.setattr(MariadbRecipe, "tools", {})
    monkeypatch.setattr(MariadbRecipe, "headers", {"stdio.h": "libc6-dev", "nope/never.h": "libnope-dev",
                                                                "nope/again.h": "libnope-dev"})
    monkeypatch.setattr(debian, "candidate_versions", lambda engine: pytest.fail("fetched before the check"))
    with pytest.raises(UserError, match=r"needs the development files of libnope-dev \(apt install libnope-dev\)$"):
        server_build.build_server(ServerBuildSpec("mariadb"), lambda *a: None)


@pytest.mark.unit
def test_make_setup_builds_installs_every_package_a_source_build_names():
    """The build lab names, per recipe, the Debian package of each tool and header it needs (and BOLT's and the
    named compilers'); `scripts/install-system-packages.sh build` must install them all, so that `make setup-builds`
    is enough for every study that builds a server."""
    import re
    import subprocess

    from dbperf.buildlab.compiler_cache import PACKAGE as CCACHE
    from dbperf.buildlab.server_bolt import BOLT_PACKAGES
    from dbperf.host.compiler import NAMED_COMPILERS
    from tests.conftest import REPO

    script = (REPO / "scripts" / "install-system-packages.sh").read_text()
    lists = {name: set(body.split()) for name, body in re.findall(r'^([A-Z]+_PACKAGES)="([^"]*)"', script, re.M)}
    assert set(lists) == {"DEMO_PACKAGES", "SERVER_PACKAGES", "BUILD_PACKAGES"}
    installed = set().union(*lists.values())
    every = [*recipes().values(), *(r.lean() for r in recipes().values() if r.lean())]  # lean = true's too
    needed = {p for r in every if r for p in (*r.tools.values(), *r.headers.values())}
    needed |= set(BOLT_PACKAGES) | {package for _cc, _cxx, package in NAMED_COMPILERS.values()} | {CCACHE}
    assert needed <= installed, f"not installed by `make setup-builds`: {sorted(needed - installed)}"
    assert "build)" in script and "$BUILD_PACKAGES" in script.split("build)")[1].split(";;")[0]
    refused = subprocess.run(["sh", str(REPO / "scripts" / "install-system-packages.sh"), "nonsense"],
                             capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2 and refused.stderr.strip().endswith("[demo|all|build]")



@pytest.mark.unit
def test_every_builds_tools_are_checked_before_the_first_build(monkeypatch, tmp_path):
    """A ladder of builds whose last needs BOLT: without BOLT the run is refused before the first build starts, not
    after the builds before it (an hour on 2 cores), naming the build and the package."""
    from rich.console import Console

    from dbperf.buildlab import server_bolt
    from dbperf.experiment.spec import parse_experiment
    from dbperf.runner import targets

    class NoToolsRecipe(FailingRecipe):
        headers: ClassVar[dict[str, str]] = {}
        language: ClassVar[str] = "c"

    monkeypatch.setitem(recipes(), "postgres", NoToolsRecipe())
    monkeypatch.setattr(server_bolt, "LLVM_BOLT", "llvm-bolt-not-installed")

    def no_build(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a build started before every build's tools were checked")

    monkeypatch.setattr(targets, "build_server", no_build)
    exp = tmp_path / "ladder.toml"
    exp.write_text('[run]\nbenchmarks = ["point-query"]\n'
                   + "".join(f'[[target]]\nname = "{n}"\nsource = "postgres@debian-src"\nbuild = {b}\n'
                             for n, b in (("base", '["O2"]'), ("O3", '["O3"]'), ("bolt", '["O2", "bolt"]'))))
    with pytest.raises(UserError) as e:
        targets.build_servers(parse_experiment(exp), Console(file=None))
    assert str(e.value).endswith("bolt]: the bolt variant needs llvm-bolt-not-installed (apt install bolt-16)")
