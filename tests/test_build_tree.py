"""Kept build trees (buildlab/build_tree.py) and what a build in one says (rebuilt.py, compiler_cache.py): the tree's
key, the switch between patch sets on a small source (a Makefile and two .c files compiled by gcc: a one-file change
rebuilds one object), the rebuilt counts read from make's lines and ninja's log, ccache's hits and the line when it
is missing; then the pipeline of a server build with the fetch stood in for, twice in one tree."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import pytest

from dbperf.buildlab import kept_build, server_build, server_cache_listing
from dbperf.buildlab.build_tree import BuildTree, kept_tree, tree_identity, tree_key
from dbperf.buildlab.compiler_cache import MISSING, find_ccache, stats_of
from dbperf.buildlab.debian_source import DebianSource
from dbperf.buildlab.rebuilt import compiles_in, ninja_rebuilt
from dbperf.buildlab.recipes import recipes
from dbperf.buildlab.recipes.mysql import MysqlRecipe
from dbperf.buildlab.recipes.postgres import PostgresRecipe
from dbperf.buildlab.sources import debian
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.experiment.user_source import PatchFile
from dbperf.host.compiler import Compiler, build_environment, find_compiler

pytestmark = pytest.mark.unit

GCC = Compiler("/usr/bin/gcc", "gcc (Debian 12.2.0-14) 12.2.0", True, "/usr/bin/g++")
SOURCE = {"engine": "postgres", "origin": "debian-src", "package": "postgresql-15", "version": "15.18-0+deb12u1"}
MAKEFILE = "server: a.o b.o\n\tgcc -o server a.o b.o\n\n%.o: %.c\n\tgcc -O1 -c $< -o $@\n"
A = "int a(void) { return 1; }\n"
B = "int a(void);\nint main(void) { return a(); }\n"
ONE = "--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-int a(void) { return 1; }\n+int a(void) { return 2; }\n"
# another set: a.c as ONE leaves it, and a file of its own
TWO = ONE + "--- /dev/null\n+++ b/c.h\n@@ -0,0 +1 @@\n+#define C 3\n"
BAD = "--- a/b.c\n+++ b/b.c\n@@ -1 +1 @@\n-int nothing;\n+int something;\n"


def test_a_trees_key_holds_source_flags_and_compiler_and_never_the_patches():
    base = tree_key(tree_identity(SOURCE, ["-O2"], GCC, PostgresRecipe.options))
    assert tree_key(tree_identity(dict(SOURCE), ["-O2"], GCC, PostgresRecipe.options)) == base
    others = [tree_identity(SOURCE, ["-O3"], GCC, PostgresRecipe.options),
              tree_identity(SOURCE, ["-O2"], Compiler("/usr/bin/clang-16", "Debian clang version 16.0.6", False,
                                                      "/usr/bin/clang++-16", "clang-16"), PostgresRecipe.options),
              tree_identity(SOURCE, ["-O2"], Compiler(GCC.path, "gcc (Debian 13.2.0-1) 13.2.0", True, GCC.cxx),
                            PostgresRecipe.options),
              tree_identity({**SOURCE, "version": "15.19-0+deb12u1"}, ["-O2"], GCC, PostgresRecipe.options)]
    assert len({base, *map(tree_key, others)}) == 5
    # the spec's patches are not part of what a tree is keyed by: two patch sets, one tree, two build keys
    spec = ServerBuildSpec("postgres", patches=(PatchFile("one.patch", "/p/one.patch", "0" * 64),))
    assert server_build._key(spec, "postgresql-15", "15.18", GCC, recipes()["postgres"]) != \
        server_build._key(ServerBuildSpec("postgres"), "postgresql-15", "15.18", GCC, recipes()["postgres"])
    assert "patches" not in tree_identity(SOURCE, spec.flags(), GCC, PostgresRecipe.options)


def _patch(tmp_path: Path, name: str, text: str) -> PatchFile:
    (tmp_path / name).write_text(text)
    return PatchFile(name, str(tmp_path / name), hashlib.sha256(text.encode()).hexdigest())


def _make(src: Path) -> int:
    """make in `src`; the objects it compiled, from its own lines."""
    proc = subprocess.run(["make"], cwd=src, capture_output=True, text=True, check=True)
    time.sleep(0.02)  # file times tick coarsely: a file patched next is newer than these objects, as in a real build
    return compiles_in(proc.stdout, PostgresRecipe().is_step)


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[BuildTree]:
    with kept_tree(tmp_path / "trees", tree_identity(SOURCE, ["-O1"], GCC, ())) as kept:
        kept.src.mkdir()
        for name, text in (("Makefile", MAKEFILE), ("a.c", A), ("b.c", B)):
            (kept.src / name).write_text(text)
        kept.set_source({"origin": "debian-src"})
        yield kept


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None, reason="needs gcc and make")
def test_patch_sets_switch_on_a_kept_tree_and_make_rebuilds_only_the_changed_object(tree: BuildTree, tmp_path: Path):
    log = tmp_path / "build.log"
    one, two = _patch(tmp_path, "one.patch", ONE), _patch(tmp_path, "two.patch", TWO)
    assert _make(tree.src) == 2  # the first build of the tree: both objects
    assert tree.switch((one,), log, "one") == 1 and (tree.src / "a.c").read_text() == "int a(void) { return 2; }\n"
    assert _make(tree.src) == 1  # a.o alone
    assert subprocess.run([tree.src / "server"]).returncode == 2
    # ONE's change to a.c is TWO's too: reverted and applied again, a.c keeps its mtime and nothing is compiled
    assert tree.switch((two,), log, "two") == 1 and (tree.src / "c.h").is_file()
    assert _make(tree.src) == 0
    assert tree.switch((), log, "none") == 2  # back to the source as unpacked: a.c again, c.h removed
    assert (tree.src / "a.c").read_text() == A and not (tree.src / "c.h").exists()
    assert _make(tree.src) == 1 and subprocess.run([tree.src / "server"]).returncode == 1
    assert tree.switch((), log, "none") == 0 and _make(tree.src) == 0
    assert tree.record.touched == {} and not tree.pristine.exists()


def test_a_patch_that_does_not_apply_leaves_the_tree_as_unpacked(tree: BuildTree, tmp_path: Path):
    log = tmp_path / "build.log"
    one, bad = _patch(tmp_path, "one.patch", ONE), _patch(tmp_path, "bad.patch", BAD)
    tree.switch((one,), log, "one")
    with pytest.raises(UserError, match=r"^l: patch bad.patch \(2 of 2\) does not apply: hunk #1 fails on b.c"):
        tree.switch((one, bad), log, "l")
    assert (tree.src / "a.c").read_text() == A and (tree.src / "b.c").read_text() == B
    assert tree.record.applied == [] and tree.record.touched == {}
    # what tree.json says is what the next build reads
    again = BuildTree(tree.root, tree.record.identity)
    assert again.record.applied == [] and again.record.provenance == {"origin": "debian-src"}


def test_a_renamed_file_is_put_back_under_its_name(tree: BuildTree, tmp_path: Path):
    rename = _patch(tmp_path, "rename.patch", "diff --git a/b.c b/main.c\nsimilarity index 100%\nrename from b.c\n"
                    "rename to main.c\n")
    assert tree.switch((rename,), tmp_path / "log", "r") == 2
    assert not (tree.src / "b.c").exists() and (tree.src / "main.c").read_text() == B
    tree.switch((), tmp_path / "log", "r")
    assert (tree.src / "b.c").read_text() == B and not (tree.src / "main.c").exists()


def test_a_second_build_in_the_same_tree_waits_for_the_first(tmp_path: Path):
    identity = tree_identity(SOURCE, ["-O2"], GCC, ())
    said: list[str] = []
    order: list[str] = []

    def second() -> None:
        with kept_tree(tmp_path, identity, said.append):
            order.append("second")
    with kept_tree(tmp_path, identity):
        waiting = threading.Thread(target=second)
        waiting.start()
        deadline = time.monotonic() + 10
        while not said and time.monotonic() < deadline:
            time.sleep(0.01)
        order.append("first")
    waiting.join(10)
    assert order == ["first", "second"]
    assert said == [f"waiting for another dbperf (pid {os.getpid()}) building in the same kept tree"]
    with kept_tree(tmp_path, tree_identity(SOURCE, ["-O3"], GCC, ())), kept_tree(tmp_path, identity, said.append):
        pass  # another tree is not waited for
    assert len(said) == 1


def test_a_tree_record_this_dbperf_cannot_read_starts_the_tree_over(tree: BuildTree):
    (tree.root / "tree.json").write_text("{half")
    again = BuildTree(tree.root, tree.record.identity)
    assert again.record.provenance is None and not again.src.exists()


def test_make_compiles_are_counted_from_its_lines():
    output = ("make -C src/backend all\n"
              "gcc -Wall -O2 -I../../src/include -c -o parser.o parser.c\n"
              "ccache /usr/bin/gcc -Wall -O2 -c -o postgres.o postgres.c\n"
              "gcc -Wall -O2 -L../../src/port -Wl,--as-needed -o postgres access/objfiles.txt\n"
              "make[1]: Nothing to be done for 'all'.\n")
    assert compiles_in(output, PostgresRecipe().is_step) == 2


def test_ninja_rebuilt_objects_are_read_from_its_log_by_their_mtime():
    since = 1_795_904_941_000_000_000
    log = ("# ninja log v5\n"
           "1\t39\t1795904940731287517\tsql/CMakeFiles/sql.dir/a.cc.o\t551432a7ceccb825\n"
           "0\t42\t1795904940734418776\tsql/CMakeFiles/sql.dir/b.cc.o\tcfc141ee3d0f1211\n"
           "0\t50\t1795904941799139451\tsql/CMakeFiles/sql.dir/b.cc.o\tcfc141ee3d0f1211\n"
           "50\t90\t1795904941899139451\tbin/mysqld\t0123456789abcdef\n"
           "garbage line\n")
    assert ninja_rebuilt(log, since) == 1  # b.cc.o again; the link is no object
    assert ninja_rebuilt(log, 0) == 2  # every object once, however often it was built


def test_ninja_counts_the_objects_a_real_ninja_wrote(tmp_path: Path):
    if shutil.which("ninja") is None or shutil.which("gcc") is None:
        pytest.skip("needs ninja and gcc")
    build = tmp_path / MysqlRecipe.BUILD_DIR
    build.mkdir()
    (build / "build.ninja").write_text("rule cc\n  command = gcc -c $in -o $out\n"
                                       f"build a.o: cc {tmp_path}/a.c\nbuild b.o: cc {tmp_path}/b.c\n")
    (tmp_path / "a.c").write_text(A)
    (tmp_path / "b.c").write_text(B)
    subprocess.run(["ninja", "-C", str(build)], capture_output=True, check=True)
    stamp = tmp_path / "started"
    time.sleep(0.05)  # file times tick coarsely: the stamp after the first build's objects, before the next ones
    stamp.touch()
    time.sleep(0.05)
    (tmp_path / "a.c").write_text("int a(void) { return 5; }\n")
    subprocess.run(["ninja", "-C", str(build)], capture_output=True, check=True)
    assert MysqlRecipe().rebuilt_objects(tmp_path, stamp.stat().st_mtime_ns, "") == 1


@pytest.mark.skipif(any(shutil.which(t) is None for t in ("cmake", "ninja", "gcc", "g++", "ccache")),
                    reason="needs cmake, ninja, gcc, g++ and ccache")
def test_the_cmake_recipe_rebuilds_one_object_through_ccache(tmp_path: Path):
    """MySQL's recipe's own commands (its options are unknown to this small project: cmake warns and goes on), with
    ccache as the launcher, on a project of two C files: a one-file change, one object, one miss."""
    src, prefix = tmp_path / "src", tmp_path / "prefix"
    src.mkdir()
    (src / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.13)\nproject(t C CXX)\n"
                                        "add_executable(mysqld a.c b.c)\ninstall(TARGETS mysqld DESTINATION bin)\n")
    (src / "a.c").write_text(A)
    (src / "b.c").write_text(B)
    cache = find_ccache(tmp_path / "ccache", tmp_path, tmp_path / "stats.log")
    assert cache is not None
    recipe = MysqlRecipe()
    cc = replace(find_compiler(), launcher=cache.program)
    commands = recipe.commands(src, prefix, cc, ["-O1"], 2)
    env = {**build_environment(), **cache.environment()}
    for command in commands:
        subprocess.run(command, cwd=src, env=env, capture_output=True, check=True)
    assert cache.counts()["misses"] == 2
    time.sleep(0.05)
    stamp = tmp_path / "started"
    stamp.touch()
    time.sleep(0.05)
    (src / "a.c").write_text("int a(void) { return 4; }\n")
    shutil.rmtree(prefix)  # as the lab does: cmake's install skips a file of the same size and second
    for command in commands[1:]:
        subprocess.run(command, cwd=src, env=env, capture_output=True, check=True)
    assert recipe.rebuilt_objects(src, stamp.stat().st_mtime_ns, "") == 1
    assert cache.counts()["misses"] == 3 and subprocess.run([prefix / "bin" / "mysqld"]).returncode == 4


def test_ccache_hits_and_misses_are_read_from_its_stats_log():
    log = ("# a.c\ncache_miss\ndirect_cache_miss\nlocal_storage_miss\npreprocessed_cache_miss\n"
           "# a.c\ndirect_cache_hit\nlocal_storage_hit\n"
           "# b.c\ndirect_cache_miss\npreprocessed_cache_hit\nlocal_storage_hit\n"
           "# conftest.c\ncalled_for_link\n")
    assert stats_of(log) == {"hits": 2, "misses": 1}
    assert stats_of("") == {"hits": 0, "misses": 0}


class MakeRecipe:
    """A server recipe whose build is the small Makefile above, installing its program as the server."""
    engine: ClassVar[str] = "postgres"
    options: ClassVar[tuple[str, ...]] = ()
    departures: ClassVar[tuple[object, ...]] = ()
    tools: ClassVar[dict[str, str]] = {}
    headers: ClassVar[dict[str, str]] = {}
    language: ClassVar[str] = "c"
    resumable: ClassVar[bool] = False
    launchers: ClassVar[list[str]] = []

    def expected_steps(self, tree: Path) -> int:
        return 2

    def commands(self, tree: Path, prefix: Path, cc: Any, flags: list[str], jobs: int) -> list[list[str]]:
        self.launchers.append(cc.launcher)
        return [["sh", "-c", "echo configured >> configure.count"],
                ["make", f"CCLAUNCH={cc.command}"],
                ["sh", "-c", f"mkdir -p {prefix}/bin && cp server {prefix}/bin/postgres"]]

    def binaries(self, prefix: Path) -> Path:
        return prefix / "bin"

    def server_binary(self, prefix: Path) -> Path:
        return prefix / "bin" / "postgres"

    def is_step(self, line: str) -> bool:
        return PostgresRecipe().is_step(line)

    def rebuilt_objects(self, tree: Path, since_ns: int, output: str) -> int:
        return compiles_in(output, self.is_step)

    def clean_commands(self, tree: Path) -> list[list[str]]:
        return [["make", "clean"]]

    def objects_root(self, tree: Path) -> Path:
        return tree  # where a kept-tree build digests its objects (incremental.objects)


def _lab(where: Path, monkeypatch: pytest.MonkeyPatch, fetches: list[Path]) -> MakeRecipe:
    """The build lab with a stand-in archive (its source: the small Makefile tree) and MakeRecipe."""
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(where / "servers"))
    recipe = MakeRecipe()
    recipe.launchers = []
    monkeypatch.setitem(recipes(), "postgres", recipe)
    monkeypatch.setattr(server_build, "check_can_build", lambda spec: (recipe, find_compiler()))
    monkeypatch.setattr(debian, "candidate_versions", lambda engine: (None, "postgresql-15", ["15.18-0"]))

    def unpacked(apt: Any, package: str, engine: str, version: str, work: Path, skipped: list[str],
                 announce: Any = None) -> DebianSource:
        src = work / "src"
        src.mkdir()
        makefile = MAKEFILE.replace("gcc -O1 -c", "$(CCLAUNCH) -O1 -c") + "clean:\n\trm -f *.o server\n"
        for name, text in (("Makefile", makefile), ("a.c", A), ("b.c", B)):
            (src / name).write_text(text)
        fetches.append(src)
        return DebianSource(engine, package, version, src, {"origin": "debian-src", "package": package,
                                                            "version": version})

    monkeypatch.setattr(debian, "fetch_debian_source", unpacked)
    return recipe


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None, reason="needs gcc and make")
@pytest.mark.parametrize("ccache", [True, False])
def test_a_server_build_reuses_its_kept_tree_and_its_manifest_says_so(where, monkeypatch, tmp_path, ccache):
    fetches: list[Path] = []
    recipe = _lab(where, monkeypatch, fetches)
    if not ccache:
        monkeypatch.setattr(kept_build, "find_ccache", lambda *a: None)  # no ccache (shutil.which is every module's)
    elif shutil.which("ccache") is None:
        pytest.skip("needs ccache")
    first = server_build.build_server(ServerBuildSpec("postgres"), _no_training)
    one = _patch(tmp_path, "one.patch", ONE)
    patched = server_build.build_server(ServerBuildSpec("postgres", patches=(one,)), _no_training)
    plain_again = server_build.build_server(ServerBuildSpec("postgres"), _no_training)
    assert len(fetches) == 1 and first.manifest["key"] != patched.manifest["key"]
    assert plain_again.cached and plain_again.manifest == first.manifest
    m, p = first.manifest["incremental"], patched.manifest["incremental"]
    assert (m["reused"], m["configured"], m["objects_rebuilt"]) == (False, True, 2)
    assert (p["reused"], p["configured"], p["objects_rebuilt"], p["files_switched"]) == (True, False, 1, 1)
    assert m["tree"] == p["tree"] and (Path(p["tree"]) / "src" / "configure.count").read_text() == "configured\n"
    assert subprocess.run([patched.binaries / "postgres"]).returncode == 2
    assert subprocess.run([first.binaries / "postgres"]).returncode == 1
    assert patched.manifest["source"]["patches"] == [{"name": "one.patch", "path": one.path, "sha256": one.sha256}]
    said = server_cache_listing.how_built(patched.manifest)
    assert "; 1 object rebuilt in its kept tree" in said and len(said.splitlines()) == 1
    if ccache:
        assert recipe.launchers[-1] == shutil.which("ccache")
        assert (m["ccache"]["hits"], m["ccache"]["misses"]) == (0, 2) and p["ccache"]["misses"] == 1
        assert Path(m["ccache"]["dir"]) == where / "servers" / "ccache"
    else:
        assert recipe.launchers[-1] == "" and p["ccache"] == {"missing": MISSING}
        assert said.endswith(f"; {MISSING}")
        assert f"# {MISSING}" in (patched.root.parent / "build.log").read_text()


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None, reason="needs gcc and make")
def test_a_build_that_fails_to_compile_leaves_its_tree_whole_and_one_interrupted_has_it_cleaned(where, monkeypatch,
                                                                                              tmp_path):
    recipe = _lab(where, monkeypatch, [])
    monkeypatch.setattr(kept_build, "find_ccache", lambda *a: None)  # no ccache (shutil.which is every module's)
    server_build.build_server(ServerBuildSpec("postgres"), _no_training)
    broken = _patch(tmp_path, "broken.patch", ONE.replace("return 2; }", "return 2 }"))
    with pytest.raises(UserError, match="failed at `make"):
        server_build.build_server(ServerBuildSpec("postgres", patches=(broken,)), _no_training)
    one = server_build.build_server(ServerBuildSpec("postgres", patches=(_patch(tmp_path, "one.patch", ONE),)),
                                    _no_training).manifest["incremental"]
    assert (one["cleaned"], one["objects_rebuilt"]) == (False, 1)  # b.o of the first build kept

    def interrupt(phase: str, done: int, expected: int) -> None:
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        server_build.build_server(ServerBuildSpec("postgres", cflags=("-DX=1",)), _no_training, interrupt)
    # another tree (other flags) was interrupted; this one is whole
    two = server_build.build_server(ServerBuildSpec("postgres", patches=(_patch(tmp_path, "two.patch", TWO),)),
                                    _no_training).manifest["incremental"]
    assert (two["cleaned"], two["objects_rebuilt"]) == (False, 0)
    again = server_build.build_server(ServerBuildSpec("postgres", cflags=("-DX=1",)), _no_training)
    assert again.manifest["incremental"]["cleaned"] and again.manifest["incremental"]["objects_rebuilt"] == 2
    assert recipe.launchers == [""] * len(recipe.launchers)


def _no_training(*args: Any) -> dict[str, Any]:
    raise AssertionError("a plain build trains nothing")
