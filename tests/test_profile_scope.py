"""A PGO build's scope (buildlab/profile_scope.py, `pgo_scope`): the key, its checks and its place in the build key;
then a CMake project of two directories built as the lab builds it: the base in a kept tree through ccache, then a
partial profile's two stages in another folder with one directory named: that directory's object instrumented
(gcov's symbols and notes), the other's byte for byte the base's, and the profile of the named one only."""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import pytest

from dbperf import engines
from dbperf.buildlab import server_build
from dbperf.buildlab.compiler_cache import find_ccache
from dbperf.buildlab.debian_source import DebianSource
from dbperf.buildlab.pgo_guard import GuardCounts
from dbperf.buildlab.profile_proof import NOTES_FLAG, prove
from dbperf.buildlab.profile_proof import Training as ProofFacts
from dbperf.buildlab.profile_scope import KINDS, QueryPath, Stage, WholeProgram, scope_kind
from dbperf.buildlab.recipes import recipes
from dbperf.buildlab.recipes.mysql import LEAN, LeanMysqlRecipe, MysqlRecipe
from dbperf.buildlab.recipes.postgres import PostgresRecipe
from dbperf.buildlab.sources import debian
from dbperf.engines.descriptor import ProfileProof
from dbperf.errors import UserError
from dbperf.experiment.build_variants import PGO_SCOPES, ServerBuildSpec
from dbperf.experiment.spec import parse_experiment
from dbperf.host.compiler import Compiler, build_environment, find_compiler
from dbperf.servers.lifecycle import run_setup

TARGET = '[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\nsource = "mysql@debian-src"\n'


class SqlOnly(LeanMysqlRecipe):
    profile_dirs: ClassVar[tuple[str, ...]] = ("sql",)


@pytest.mark.unit
def test_a_query_path_profile_is_a_build_of_its_own_and_its_base_is_the_build_without_pgo(write_experiment):
    spec = parse_experiment(write_experiment(TARGET + 'build = ["O2", "pgo"]\npgo_scope = "query-path"\n'
                                             'lean = true\n')).targets[0].server_build
    assert spec is not None and spec.pgo_scope == "query-path"
    assert spec.label() == "mysql@debian-src [O2 pgo query-path-profile lean]"
    whole = replace(spec, pgo_scope="whole")
    cc, recipe = find_compiler(), LEAN
    key = server_build._key(spec, "mysql-9.7", "9.7.2-4", cc, recipe)
    assert key != server_build._key(whole, "mysql-9.7", "9.7.2-4", cc, recipe)
    # the default scope keeps the keys of the PGO builds cached before scopes
    assert server_build._key(whole, "mysql-9.7", "9.7.2-4", cc, recipe) == server_build._key(
        ServerBuildSpec("mysql", variants=("O2", "pgo"), lean=True), "mysql-9.7", "9.7.2-4", cc, recipe)
    # another list of directories is another build
    assert key != server_build._key(spec, "mysql-9.7", "9.7.2-4", cc, SqlOnly())
    assert server_build.base_spec(spec) == ServerBuildSpec("mysql", variants=("O2",), lean=True)


@pytest.mark.unit
@pytest.mark.parametrize(("keys", "message"), [
    ('pgo_scope = "query-path"', "pgo_scope: only meaningful with the \"pgo\" variant"),
    ('build = ["O2", "pgo"]\npgo_scope = "sql"', "pgo_scope: expected one of whole, query-path, hot-path, got 'sql'"),
    ('build = ["O2", "pgo", "bolt"]\npgo_scope = "query-path"', "drop bolt or pgo_scope"),
])
def test_bad_scopes_are_one_line(write_experiment, keys, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_experiment(write_experiment(TARGET + keys + "\n"))
    sqlite = '[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\nsource = "sqlite@3.45.1"\n'
    with pytest.raises(UserError, match="pgo_scope: only for servers built from source"):
        parse_experiment(write_experiment(sqlite + 'build = ["O2", "pgo"]\npgo_scope = "query-path"\n'))


@pytest.mark.unit
def test_a_recipe_without_profile_directories_is_refused_and_each_covers_its_engines_proof(tmp_path):
    said = scope_kind("query-path").refusal(PostgresRecipe())
    assert "names its profile directories (postgres's does not)" in str(said)
    assert scope_kind("whole").refusal(PostgresRecipe()) is None
    assert tuple(KINDS) == PGO_SCOPES  # every value the experiment file accepts is a kind
    named = [r for r in recipes().values() if r.profile_dirs]
    assert {r.engine for r in named} == {"mysql", "mariadb"}
    for recipe in named:
        proof = engines.engine(recipe.engine).profile_proof
        assert proof is not None
        # the proof counts the functions of objects the partial profile instruments
        assert all(any(o.startswith(f"{d}/") for d in recipe.profile_dirs) for o in proof.objects), recipe.engine
    assert isinstance(scope_kind("whole").scope(MysqlRecipe(), tmp_path), WholeProgram)


CMAKE = ("cmake_minimum_required(VERSION 3.13)\nproject(t C)\nadd_subdirectory(hot)\nadd_subdirectory(cold)\n"
         "add_executable(mysqld main.c)\ntarget_link_libraries(mysqld hot cold)\n"
         "install(TARGETS mysqld DESTINATION bin)\n")
FILES = {
    "CMakeLists.txt": CMAKE,
    "hot/CMakeLists.txt": "add_library(hot STATIC hot.c)\n",
    "cold/CMakeLists.txt": "add_library(cold STATIC cold.c)\n",
    "hot/hot.c": "int hot(int n) { int s = 0; for (int i = 0; i < n; i++) s += i % 7; return s; }\n",
    # __FILE__: the source's path is in the object, so that two folders compile alike only as ccache runs them
    "cold/cold.c": "const char *cold(void) { return __FILE__; }\n",
    "main.c": "int hot(int); const char *cold(void);\nint main(void) { return hot(1000) < 0 || !cold()[0]; }\n",
}
HOT, COLD = "hot/CMakeFiles/hot.dir/hot.c.o", "cold/CMakeFiles/cold.dir/cold.c.o"


class TwoDirs(MysqlRecipe):
    """MySQL's recipe (its options are unknown to this project: cmake warns and goes on) naming hot/ only."""
    profile_dirs: ClassVar[tuple[str, ...]] = ("hot",)


def _project(src: Path, files: dict[str, str] = FILES) -> None:
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)


def _run(commands: list[list[str]], src: Path, env: dict[str, str]) -> str:
    out = ""
    for cmd in commands:
        proc = subprocess.run(cmd, cwd=src, env={**build_environment(), **env}, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out += proc.stdout + proc.stderr
    return out


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _symbols(path: Path) -> str:
    return subprocess.run(["nm", str(path)], capture_output=True, text=True, check=True).stdout


def _instrumented(scope: QueryPath, recipe: TwoDirs, cc: Compiler, work: Path, src: Path) -> Path:
    """The scope's instrumented stage run in `src`; the profile folder it writes to."""
    profile = work / "profile"
    generate = Stage("instrumented", [f"-fprofile-generate={profile}", "-fprofile-update=atomic", NOTES_FLAG])
    _run(scope.commands(recipe, src, work / "instrumented", cc, ["-O2"], generate, 2), src,
         scope.environment(generate))
    return profile


def _base_and_staging(servers: Path, tmp_path: Path, files: dict[str, str], staging: str) -> tuple[Path, Path, Path]:
    """As the lab lays them out: the project's base built in a kept tree through ccache, and the same project in a
    PGO build's staging folder; (base source, staging folder, its source)."""
    base_src, work = servers / "trees" / "k1" / "src", servers / "build" / staging
    pgo_src = work / "src"
    for src in (base_src, pgo_src):
        _project(src, files)
    cache = find_ccache(servers / "ccache", servers / "trees", tmp_path / "base.log")
    assert cache is not None
    _run(TwoDirs().commands(base_src, base_src.parent / "prefix", replace(find_compiler(), launcher=cache.program),
                            ["-O2"], 2), base_src, cache.environment())
    return base_src, work, pgo_src


@pytest.mark.unit
@pytest.mark.skipif(any(shutil.which(t) is None for t in ("cmake", "ninja", "gcc", "gcov", "ccache", "nm")),
                    reason="needs cmake, ninja, gcc, gcov, ccache and nm")
def test_the_launcher_profiles_the_named_directory_and_the_others_object_is_the_bases(where, tmp_path,
                                                                                    monkeypatch):
    servers = where / "servers"  # the server cache must be reachable by others (paths.server_cache)
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(servers))
    base_src, work, pgo_src = _base_and_staging(servers, tmp_path, FILES, ".k2.partial")
    recipe, cc = TwoDirs(), find_compiler()
    scope = scope_kind("query-path").scope(recipe, work)
    assert isinstance(scope, QueryPath) and scope.directories == ("hot",)
    profile = _instrumented(scope, recipe, cc, work, pgo_src)
    base, pgo = base_src / "lab-build", pgo_src / "lab-build"
    assert "__gcov_" in _symbols(pgo / HOT) and "__gcov_" not in _symbols(base / HOT)
    assert (pgo / HOT).with_suffix(".gcno").is_file() and not (pgo / COLD).with_suffix(".gcno").exists()
    assert _sha(pgo / COLD) == _sha(base / COLD) and "__gcov_" not in _symbols(pgo / COLD)
    # the instrumented server (linked with libgcov) writes the profile of hot/ alone
    started = time.time()
    subprocess.run([work / "instrumented" / "bin" / "mysqld"], check=True)
    assert [p.name.rsplit("#", 1)[-1] for p in profile.rglob("*.gcda")] == ["hot.c.gcda"]
    # the profile's proof counts hot/'s functions and refuses a directory without a .gcda
    proof = ProfileProof(sentinels=("hot",), objects=("hot/",), floor=0.1)
    facts = prove(ProofFacts("t [O2 pgo]", profile, pgo, proof, os.geteuid(), started, (), ("hot",)))
    assert facts["gcda_by_directory"] == {"hot": 1} and facts["sentinels"] == {"hot": 1}
    with pytest.raises(UserError, match=r"refused: no \.gcda of an object under cold/, which the profile covers"):
        prove(ProofFacts("t [O2 pgo]", profile, pgo, proof, os.geteuid(), started, (), ("hot", "cold")))
    use = Stage("profile-use", [f"-fprofile-use={profile}", "-fprofile-correction", "-Wmissing-profile"])
    out = _run([*recipe.clean_commands(pgo_src), *scope.commands(recipe, pgo_src, work / "install", cc, ["-O2"],
                                                                  use, 2)], pgo_src, scope.environment(use))
    assert "profile count data file not found" not in out  # hot/ found its profile; cold/ was never asked
    assert _sha(pgo / COLD) == _sha(base / COLD) and "__gcov_" not in _symbols(pgo / HOT)
    subprocess.run([work / "install" / "bin" / "mysqld"], check=True)
    record = scope.record()
    assert record is not None and record["directories"] == ["hot"] and record["scope"] == "query-path"
    # cold.c and main.c from the cache in each stage (hot.c never goes through it)
    assert record["ccache"] == {"instrumented": {"hits": 2, "misses": 0}, "profile-use": {"hits": 2, "misses": 0}}


# hot-path: one file of hot/ listed, its neighbour not (the recipe's hot sources, buildlab/hot_sources.py)
FILES_HOT = {**FILES, "hot/CMakeLists.txt": "add_library(hot STATIC hot.c warm.c)\n",
             "hot/warm.c": "const char *warm(void) { return __FILE__; }\n"}
WARM = "hot/CMakeFiles/hot.dir/warm.c.o"


@pytest.mark.unit
@pytest.mark.skipif(any(shutil.which(t) is None for t in ("cmake", "ninja", "gcc", "gcov", "ccache", "nm")),
                    reason="needs cmake, ninja, gcc, gcov, ccache and nm")
def test_a_hot_path_scope_profiles_the_listed_file_and_its_neighbours_object_is_the_bases(where, tmp_path,
                                                                                         monkeypatch):
    servers = where / "servers"
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(servers))
    base_src, work, pgo_src = _base_and_staging(servers, tmp_path, FILES_HOT, ".k3.partial")
    recipe, cc = TwoDirs(), find_compiler()
    ccache = find_ccache(servers / "ccache", servers, work / "ccache.log")
    assert ccache is not None
    scope = QueryPath("hot-path", ("hot",), ccache, work, ("hot/hot.c",))
    _instrumented(scope, recipe, cc, work, pgo_src)
    base, pgo = base_src / "lab-build", pgo_src / "lab-build"
    assert "__gcov_" in _symbols(pgo / HOT) and "__gcov_" not in _symbols(pgo / WARM)
    assert _sha(pgo / WARM) == _sha(base / WARM) and _sha(pgo / COLD) == _sha(base / COLD)
    record = scope.record()
    assert record is not None and record["sources"] == ["hot/hot.c"] and record["directories"] == ["hot"]


# The pipeline's own run of a partial profile (server_build.build_server), on a MySQL in miniature: sql/ holds the
# engine's sentinel, storage/innobase/ a function every "query" calls, cold/ the rest.
MINI = {
    "CMakeLists.txt": ("cmake_minimum_required(VERSION 3.13)\nproject(t C)\nadd_subdirectory(sql)\n"
                       "add_subdirectory(storage/innobase)\nadd_subdirectory(cold)\nadd_executable(mysqld main.c)\n"
                       "target_link_libraries(mysqld sqlx innobase cold)\ninstall(TARGETS mysqld DESTINATION bin)\n"),
    "sql/CMakeLists.txt": "add_library(sqlx STATIC sql_parse.c)\n",
    "storage/innobase/CMakeLists.txt": "add_library(innobase STATIC row0sel.c)\n",
    "cold/CMakeLists.txt": "add_library(cold STATIC cold.c)\n",
    "sql/sql_parse.c": "int row_search(int);\nint dispatch_command(int q) { return row_search(q) + 1; }\n",
    "storage/innobase/row0sel.c": "int row_search(int q) { return q % 5; }\n",
    "cold/cold.c": "const char *cold(void) { return __FILE__; }\n",
    "main.c": ("int dispatch_command(int); const char *cold(void);\nint main(void) { int s = 0;\n"
               "for (int i = 0; i < 100; i++) s += dispatch_command(i);\nreturn s < 0 || !cold()[0]; }\n"),
}


class Mini(MysqlRecipe):
    profile_dirs: ClassVar[tuple[str, ...]] = ("sql", "storage/innobase")


def _mini_lab(where: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The build lab with Mini as MySQL's recipe and a stand-in archive whose source is MINI; the fetched trees."""
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(where / "servers"))
    recipe, fetched = Mini(), []
    monkeypatch.setattr(server_build, "check_can_build", lambda spec: (recipe, find_compiler()))
    monkeypatch.setattr(debian, "candidate_versions", lambda engine: (None, "mysql-9.7", ["9.7.2-4"]))

    def unpacked(apt, package: str, engine: str, version: str, work: Path, skipped: list[str],
                 announce=None) -> DebianSource:
        for name, text in MINI.items():
            (work / "src" / name).parent.mkdir(parents=True, exist_ok=True)
            (work / "src" / name).write_text(text)
        fetched.append(work / "src")
        return DebianSource(engine, package, version, work / "src", {"origin": "debian-src", "package": package,
                                                                     "version": version})

    monkeypatch.setattr(debian, "fetch_debian_source", unpacked)
    return fetched


def _train_as_the_service_user(engine: str, binaries: Path, logs: Path, seconds: float) -> dict[str, object]:
    run_setup([str(binaries / "bin" / "mysqld")], logs / "training.log", engines.engine(engine).service_user,
              "training")
    return {"trained": "mini"}


@pytest.mark.e2e
@pytest.mark.skipif(any(shutil.which(t) is None for t in ("cmake", "ninja", "gcc", "gcov", "ccache")),
                    reason="needs cmake, ninja, gcc, gcov and ccache")
def test_a_partial_pgo_build_builds_its_base_first_and_its_manifest_names_the_profiled_directories(where,
                                                                                                 monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("training as the service user needs root")
    try:
        pwd.getpwnam(engines.engine("mysql").service_user)
    except KeyError:
        pytest.skip("the mysql user is created by make setup")
    fetched = _mini_lab(where, monkeypatch)
    bases: list[Path] = []

    def guard(engine: str, binaries: Path, base) -> GuardCounts:
        bases.append(base())
        return GuardCounts(90.0, 100.0, 100, 100, ("mini",), 0.1, "stand-in")

    spec = ServerBuildSpec("mysql", variants=("O2", "pgo"), pgo_scope="query-path")
    built = server_build.build_server(spec, _train_as_the_service_user, guard=guard)
    base = server_build.build_server(server_build.base_spec(spec), _train_as_the_service_user)
    assert base.cached and bases == [base.binaries] and len(fetched) == 2  # the base's kept tree, the PGO's folder
    pgo = built.manifest["pgo"]
    assert pgo["scope"]["directories"] == ["sql", "storage/innobase"] and pgo["scope"]["scope"] == "query-path"
    assert pgo["proof"]["gcda_by_directory"] == {"sql": 1, "storage/innobase": 1}
    assert pgo["proof"]["sentinels"] == {"dispatch_command": 100}
    # cold.c and main.c from the base's objects in both stages; the profiled ones compiled by gcc itself
    assert pgo["scope"]["ccache"] == {"instrumented": {"hits": 2, "misses": 0},
                                      "profile-use": {"hits": 2, "misses": 0}}
    assert pgo["missing_profile_warnings"]["own_objects"] == 0 and pgo["guard"]["ratio"] == 0.9
    assert "query-path-profile" in built.manifest["label"]
    subprocess.run([built.binaries / "bin" / "mysqld"], check=True)
