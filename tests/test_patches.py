"""A target's patches (buildlab/patches.py): applied in order with patch -p1 on the lab's copy, recorded in the
manifest's source with their sha256; one that does not apply is one line naming it and the file. GNU patch on small
files, nothing compiled."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, ClassVar

import pytest

from dbperf.buildlab import server_build
from dbperf.buildlab.debian_source import DebianSource
from dbperf.buildlab.patches import apply_patches, why_not, with_patches
from dbperf.buildlab.recipes import recipes
from dbperf.buildlab.sources import debian
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.experiment.user_source import PatchFile

pytestmark = pytest.mark.unit

LABEL = "sqlite@3.54.1+2 patches [O2]"
FIRST = """--- a/sqlite3.c
+++ b/sqlite3.c
@@ -1,3 +1,3 @@
 int a(void) { return 1; }
-int hot(void) { return 1; }
+int hot(void) { return 2; }
 int z(void) { return 26; }
"""
# applies only after FIRST
SECOND = """--- a/sqlite3.c
+++ b/sqlite3.c
@@ -1,3 +1,3 @@
 int a(void) { return 1; }
-int hot(void) { return 2; }
+int hot(void) { return 3; }
 int z(void) { return 26; }
"""


def patch_file(tmp_path: Path, name: str, text: str) -> PatchFile:
    path = tmp_path / name
    path.write_text(text)
    return PatchFile(name, str(path), hashlib.sha256(text.encode()).hexdigest())


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    tree = tmp_path / "src"
    tree.mkdir()
    (tree / "sqlite3.c").write_text("int a(void) { return 1; }\nint hot(void) { return 1; }\n"
                                   "int z(void) { return 26; }\n")
    return tree


def test_patches_apply_in_order_and_are_recorded(tree: Path, tmp_path: Path):
    patches = (patch_file(tmp_path, "one.patch", FIRST), patch_file(tmp_path, "two.patch", SECOND))
    log = tmp_path / "build.log"
    apply_patches(patches, tree, log, LABEL)
    assert "int hot(void) { return 3; }" in (tree / "sqlite3.c").read_text()
    assert log.read_text().count("$ patch -p1") == 2 and not list(tree.glob("*.orig")) + list(tree.glob("*.rej"))
    recorded = with_patches({"sqlite_version": "3.54.1"}, patches)
    assert recorded["patches"] == [{"name": "one.patch", "path": str(tmp_path / "one.patch"),
                                    "sha256": hashlib.sha256(FIRST.encode()).hexdigest()},
                                   {"name": "two.patch", "path": str(tmp_path / "two.patch"),
                                    "sha256": hashlib.sha256(SECOND.encode()).hexdigest()}]
    assert with_patches({"sqlite_version": "3.54.1"}, ()) == {"sqlite_version": "3.54.1"}


def _refused(patches: tuple[PatchFile, ...], tree: Path, tmp_path: Path) -> str:
    with pytest.raises(UserError) as err:
        apply_patches(patches, tree, tmp_path / "build.log", LABEL)
    assert "\n" not in str(err.value)
    return str(err.value)


def test_a_hunk_that_fails_is_one_line_naming_the_patch_and_the_file(tree: Path, tmp_path: Path):
    # out of order: the second's context is not there yet
    line = _refused((patch_file(tmp_path, "two.patch", SECOND), patch_file(tmp_path, "one.patch", FIRST)), tree,
                    tmp_path)
    assert line == f"{LABEL}: patch two.patch (1 of 2) does not apply: hunk #1 fails on sqlite3.c (at its line 1)"


def test_other_refusals_name_the_patch_and_what_is_wrong(tree: Path, tmp_path: Path):
    missing = FIRST.replace("a/sqlite3.c", "a/src/btree.c").replace("b/sqlite3.c", "b/src/btree.c")
    line = _refused((patch_file(tmp_path, "btree.patch", missing),), tree, tmp_path)
    assert line.startswith(f"{LABEL}: patch btree.patch (1 of 1) does not apply: no file src/btree.c to patch")
    apply_patches((patch_file(tmp_path, "one.patch", FIRST),), tree, tmp_path / "build.log", LABEL)
    line = _refused((patch_file(tmp_path, "again.patch", FIRST),), tree, tmp_path)
    assert line.endswith("does not apply: sqlite3.c has it already (reversed or previously applied)")
    line = _refused((patch_file(tmp_path, "notes.txt", "just words\n"),), tree, tmp_path)
    assert "patch notes.txt (1 of 1) does not apply: no hunk in it" in line
    outside = FIRST.replace("a/sqlite3.c", "a/../outside.c").replace("b/sqlite3.c", "b/../outside.c")
    line = _refused((patch_file(tmp_path, "outside.patch", outside),), tree, tmp_path)
    assert "patch outside.patch (1 of 1) does not apply: " in line and "outside" in line.split("does not apply")[1]
    assert not (tmp_path / "outside.c").exists()


def test_a_patch_changed_after_the_experiment_was_read_is_refused(tree: Path, tmp_path: Path):
    patch = patch_file(tmp_path, "one.patch", FIRST)
    Path(patch.path).write_text(FIRST.replace("return 2", "return 9"))
    assert _refused((patch,), tree, tmp_path) == f"{LABEL}: patch one.patch changed after the experiment was read; " \
                                                 "run again"
    assert "return 1; }\nint z" in (tree / "sqlite3.c").read_text()


def test_why_not_reads_patches_own_words():
    assert why_not("patching file 'a b.c'\nHunk #2 FAILED at 40.\n1 out of 2 hunks FAILED\n") == \
        "hunk #2 fails on a b.c (at its line 40)"
    assert why_not("something unexpected\nand its last line\n") == "something unexpected | and its last line"


class CopyingRecipe:
    """A server recipe that "builds" by installing its source file as the server (no compiler, no package)."""
    engine: ClassVar[str] = "postgres"
    options: ClassVar[tuple[str, ...]] = ()
    tools: ClassVar[dict[str, str]] = {}
    departures: ClassVar[tuple[object, ...]] = ()
    headers: ClassVar[dict[str, str]] = {}
    language: ClassVar[str] = "c"
    resumable: ClassVar[bool] = False

    def expected_steps(self, tree: Path) -> int:
        return 1

    def commands(self, tree: Path, prefix: Path, cc: Any, flags: list[str], jobs: int) -> list[list[str]]:
        return [["true"], ["mkdir", "-p", str(prefix / "bin")], ["cp", "sqlite3.c", str(prefix / "bin" / "postgres")]]

    def binaries(self, prefix: Path) -> Path:
        return prefix / "bin"

    def server_binary(self, prefix: Path) -> Path:
        return prefix / "bin" / "postgres"

    def is_step(self, line: str) -> bool:
        return False

    def rebuilt_objects(self, tree: Path, since_ns: int, output: str) -> int:
        return 0

    def clean_commands(self, tree: Path) -> list[list[str]]:
        return []

    def objects_root(self, tree: Path) -> Path:
        return tree  # where a kept-tree build digests its objects (incremental.objects)


def test_a_server_from_debian_source_takes_the_patches_after_debians_own(where, monkeypatch, tmp_path: Path):
    """The pipeline of a server build with the fetch stood in for: the patches land on the unpacked source before the
    recipe runs, in the key and in the manifest's source; one that fails is one line and leaves no build."""
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(where / "servers"))
    monkeypatch.setitem(recipes(), "postgres", CopyingRecipe())
    monkeypatch.setattr(debian, "candidate_versions", lambda engine: (None, "postgresql-15", ["15.18-0"]))

    def unpacked(apt: Any, package: str, engine: str, version: str, work: Path, skipped: list[str],
                 announce: Any = None) -> DebianSource:
        (work / "src").mkdir()
        (work / "src" / "sqlite3.c").write_text("int a(void) { return 1; }\nint hot(void) { return 1; }\n"
                                                "int z(void) { return 26; }\n")
        return DebianSource(engine, package, version, work / "src", {"origin": "debian-src", "package": package})

    monkeypatch.setattr(debian, "fetch_debian_source", unpacked)
    one = patch_file(tmp_path, "one.patch", FIRST)
    built = server_build.build_server(ServerBuildSpec("postgres", patches=(one,)), _no_training)
    assert (built.binaries / "postgres").read_text().splitlines()[1] == "int hot(void) { return 2; }"
    assert built.manifest["label"] == "postgres@debian-src+1 patch [O2]"
    assert built.manifest["source"] == {"origin": "debian-src", "package": "postgresql-15", "patches": [
        {"name": "one.patch", "path": one.path, "sha256": one.sha256}]}
    plain = server_build.build_server(ServerBuildSpec("postgres"), _no_training)
    assert plain.manifest["key"] != built.manifest["key"] and "patches" not in plain.manifest["source"]
    entries = sorted(p.name for p in (where / "servers" / "build").iterdir())
    with pytest.raises(UserError) as err:
        server_build.build_server(ServerBuildSpec("postgres", patches=(patch_file(tmp_path, "two.patch", SECOND),)),
                                  _no_training)
    assert str(err.value) == ("postgres@debian-src+1 patch [O2]: patch two.patch (1 of 1) does not apply: hunk #1 "
                              "fails on sqlite3.c (at its line 1)")
    assert sorted(p.name for p in (where / "servers" / "build").iterdir()) == entries


def _no_training(*args: Any) -> dict[str, Any]:
    raise AssertionError("a plain build trains nothing")
