"""Server targets from a user's tree (buildlab/server_tree.py, source_sync.py): `tree` and `rev` on a server target
as the parser reads them, a tree that is not the engine's, a revision of a folder that is not a checkout and an
unknown revision, one line each; a kept tree brought from one revision to another keeps the mtimes of what did not
change (a small make project); and the pipeline of a server build from a checkout of that project, its revisions
and its uncommitted change each a build of the same kept tree, the checkout untouched. `dbperf bisect --tree
--engine postgres`'s candidates, and its search over a checkout with the counts faked. A real PostgreSQL tree:
tests/test_server_tree_builds.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import tomllib
from pathlib import Path
from typing import Any, ClassVar

import pytest

from dbperf.buildlab import server_build
from dbperf.buildlab.recipes import recipes
from dbperf.buildlab.recipes.mariadb import MariadbRecipe
from dbperf.buildlab.recipes.postgres import PostgresRecipe
from dbperf.buildlab.source_sync import sync_source
from dbperf.buildlab.sources import source_words
from dbperf.buildlab.sources.tree import resolve_server_tree
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.experiment.spec import parse_experiment
from dbperf.experiment.user_source import UserTree
from dbperf.metrics import SIMULATED, WALL
from dbperf.storage.bisect_path import StepSettings
from dbperf.usecases.bisect import bisect, spread_warning
from dbperf.usecases.bisect_candidates import Commits
from dbperf.usecases.bisect_work import count_experiment
from dbperf.usecases.build import cache_listings
from tests.test_bisect_tree import FakeCounts, fake_counts, write  # noqa: F401 (a fixture)
from tests.test_build_tree import MAKEFILE, ONE, A, B, MakeRecipe, _patch
from tests.test_user_tree import git, snapshot

pytestmark = pytest.mark.unit

RUN = '[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\nengine = "postgres"\n'
MAKES = shutil.which("gcc") is not None and shutil.which("make") is not None


def _pg_like(folder: Path) -> Path:
    """A folder whose top is what PostgreSQL's recipe looks for in a tree."""
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "Makefile").write_text("#\n")
    for name in ("configure", "GNUmakefile.in"):
        (folder / name).write_text("#\n")
    return folder


def test_a_server_target_takes_a_tree_and_a_revision(write_experiment, tmp_path: Path):
    _pg_like(tmp_path / "postgresql")
    t = parse_experiment(write_experiment(RUN + 'tree = "postgresql"\nrev = "REL_16_4"\ncflags = ["-O1"]')).targets[0]
    spec = t.server_build
    assert spec is not None and t.release is None and spec.origin == "tree" and spec.engine == "postgres"
    assert spec.tree == UserTree(str((tmp_path / "postgresql").resolve()), "REL_16_4")
    assert spec.label() == "postgres@tree:postgresql:REL_16_4 [O2 -O1]"
    plain = parse_experiment(write_experiment(RUN + 'tree = "postgresql"')).targets[0].server_build
    assert plain is not None and plain.label() == "postgres@tree:postgresql [O2]"


def test_a_tree_of_another_engine_a_revision_of_a_plain_folder_and_an_unknown_revision_are_one_line(tmp_path: Path):
    sqlite = tmp_path / "sqlite"
    sqlite.mkdir()
    (sqlite / "sqlite3.c").write_text("int x;\n")
    with pytest.raises(UserError, match=r"^tree .*/sqlite: not a PostgreSQL source tree \(its top has no configure, "
                                        r"GNUmakefile.in, src\)$"):
        resolve_server_tree("postgres", PostgresRecipe(), UserTree(str(sqlite)))
    pg = _pg_like(tmp_path / "pg")
    with pytest.raises(UserError, match=r"^tree .*/pg: not a MariaDB source tree \(its top has no CMakeLists.txt, "):
        resolve_server_tree("mariadb", MariadbRecipe(), UserTree(str(pg)))
    with pytest.raises(UserError, match=r"^tree .*/pg: rev = 'main' needs a git checkout, and this folder is not one"):
        resolve_server_tree("postgres", PostgresRecipe(), UserTree(str(pg), "main"))
    git(pg, "init", "-q", "-b", "main")
    git(pg, "add", "-A")
    git(pg, "commit", "-q", "-m", "first")
    with pytest.raises(UserError, match=r"^tree .*/pg: rev = 'nope' is not a commit of "):
        resolve_server_tree("postgres", PostgresRecipe(), UserTree(str(pg), "nope"))
    (pg / "configure").unlink()
    git(pg, "commit", "-q", "-am", "configure gone")
    with pytest.raises(UserError, match=r"^tree .*/pg at rev = 'main': not a PostgreSQL source tree \(its top has no "
                                        r"configure\)$"):
        resolve_server_tree("postgres", PostgresRecipe(), UserTree(str(pg), "main"))
    found = resolve_server_tree("postgres", PostgresRecipe(), UserTree(str(pg), "main~1"))
    assert found.snapshot.subject == "first"
    assert found.kept_identity(found.snapshot.content)["tree"] == str(pg.resolve())


def test_a_dry_run_names_a_bad_server_tree_in_one_line(write_experiment, tmp_path: Path, run_cli_here):
    (tmp_path / "other").mkdir()
    proc = run_cli_here("run", str(write_experiment(RUN + 'tree = "other"')), "--dry-run")
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "other: not a PostgreSQL source tree" in line


def _stamp(path: Path, ns: int) -> None:
    os.utime(path, ns=(ns, ns))


def test_a_sync_moves_in_what_changed_stamped_now_and_keeps_the_rest_and_the_builds_own_files(tmp_path: Path):
    src, incoming, listing = tmp_path / "src", tmp_path / "incoming", tmp_path / "source-files"
    old = 1_000_000_000_000_000_000  # 2001: as old as an exported file can look
    for folder, files in ((src, {"a.c": "a", "b.c": "b", "gone.c": "g", "d/e.h": "e"}),
                          (incoming, {"a.c": "a", "b.c": "B", "new.c": "n", "d/e.h": "e"})):
        for rel, text in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
            _stamp(folder / rel, old)
    (src / "a.o").write_text("object")  # the build's: never listed, never touched
    listing.write_text("\0".join(["a.c", "b.c", "gone.c", "d/e.h"]))
    (incoming / "run.sh").write_text("#!/bin/sh\n")
    (incoming / "run.sh").chmod(0o755)
    (src / "run.sh").write_text("#!/bin/sh\n")  # the same bytes, not executable: changed
    started = time.time_ns()
    assert sync_source(incoming, src, listing) == {"b.c", "gone.c", "new.c", "run.sh"}
    assert not incoming.exists() and not (src / "gone.c").exists() and (src / "a.o").read_text() == "object"
    assert (src / "b.c").read_text() == "B" and (src / "run.sh").stat().st_mode & 0o100
    assert (src / "a.c").stat().st_mtime_ns == old and (src / "d/e.h").stat().st_mtime_ns == old
    assert all((src / rel).stat().st_mtime_ns >= started - 10**9 for rel in ("b.c", "new.c", "run.sh"))
    assert set(listing.read_text().split("\0")) == {"a.c", "b.c", "new.c", "d/e.h", "run.sh"}


class TreeMakeRecipe(MakeRecipe):
    """The small make project's recipe, taking a checkout of it as its tree."""
    tree_files: ClassVar[tuple[str, ...]] = ("Makefile", "a.c", "b.c")


STEPS = [("first", "a.c", A), ("a returns 2", "a.c", A.replace("1;", "2;")), ("a comment in b", "b.c", B + "/* b */\n")]


def _checkout(tmp_path: Path, steps: list[tuple[str, str, str]] = STEPS) -> tuple[Path, list[str]]:
    """A checkout of the make project, a commit per step (its subject, the file it writes and the text): by default
    a.c returning 1; then returning 2; then b.c changed (a comment)."""
    project = tmp_path / "project"
    project.mkdir()
    makefile = MAKEFILE.replace("gcc -O1 -c", "$(CCLAUNCH) -O1 -c") + "clean:\n\trm -f *.o server\n"
    for name, text in (("Makefile", makefile), ("a.c", A), ("b.c", B)):
        (project / name).write_text(text)
    git(project, "init", "-q", "-b", "main")
    hashes = []
    for subject, name, text in steps:
        (project / name).write_text(text)
        git(project, "add", "-A")
        git(project, "commit", "-q", "-m", subject)
        hashes.append(git(project, "rev-parse", "HEAD").strip())
    return project, hashes


def _no_training(*args: Any) -> dict[str, Any]:
    raise AssertionError("a plain build trains nothing")


@pytest.mark.skipif(not MAKES, reason="needs gcc and make")
def test_revisions_of_one_checkout_are_built_in_one_kept_tree_rebuilding_only_what_changed(where, tmp_path,
                                                                                           monkeypatch):
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(where / "servers"))
    recipe = TreeMakeRecipe()
    recipe.launchers = []
    monkeypatch.setitem(recipes(), "postgres", recipe)
    project, hashes = _checkout(tmp_path)
    before = snapshot(project)

    def build(rev: str | None) -> dict[str, Any]:
        built = server_build.build_server(ServerBuildSpec("postgres", "tree", tree=UserTree(str(project), rev)),
                                          _no_training)
        time.sleep(0.02)  # file times tick coarsely: a file synced next is newer than these objects
        code = subprocess.run([built.binaries / "postgres"]).returncode
        return {**built.manifest, "code": code, "cached": built.cached}

    first, second, third = build(hashes[0]), build(hashes[1]), build(hashes[2])
    assert [m["incremental"]["objects_rebuilt"] for m in (first, second, third)] == [2, 1, 1]
    assert [m["code"] for m in (first, second, third)] == [1, 2, 2]
    assert [m["incremental"]["reused"] for m in (first, second, third)] == [False, True, True]
    assert len({m["incremental"]["tree"] for m in (first, second, third)}) == 1  # keyed by the checkout
    assert len({m["key"] for m in (first, second, third)}) == 3  # a build per revision
    tree = Path(first["incremental"]["tree"])
    assert (tree / "src" / "configure.count").read_text() == "configured\n"  # configured once, kept by every sync
    s = second["source"]
    assert (s["origin"], s["revision"], s["subject"], s["dirty"], s["rev"]) == ("tree", hashes[1], "a returns 2",
                                                                               False, hashes[1])
    assert s["repository"] == str(project) and source_words(s) == f"{project} at {hashes[1][:12]} (a returns 2)"
    assert build(hashes[1])["cached"]  # the same revision again: the build cache's
    (servers,) = [listing for listing in cache_listings() if listing.title == "server builds"]
    subjects = ("first", "a returns 2", "a comment in b")
    assert sorted(row[2] for row in servers.rows) == sorted(f"{project} at {h[:12]} ({subject})"
                                                            for h, subject in zip(hashes, subjects, strict=True))
    # the tree as it is, with an uncommitted change: a build of its own, one object, said dirty
    (project / "a.c").write_text(A.replace("1;", "3;"))
    dirty = build(None)
    assert (dirty["code"], dirty["incremental"]["objects_rebuilt"], dirty["source"]["dirty"]) == (3, 1, True)
    assert dirty["source"]["changes"] == [" M a.c"] and dirty["label"] == "postgres@tree:project [O2]"
    (project / "a.c").write_text(A.replace("1;", "2;"))
    os.utime(project / "a.c", ns=(before["a.c"][2], before["a.c"][2]))
    assert snapshot(project) == before  # the checkout as it was: every file, .git's included


@pytest.mark.skipif(not MAKES, reason="needs gcc and make")
def test_a_patch_on_a_tree_leaves_its_files_objects_alone_when_another_file_changes(where, tmp_path, monkeypatch):
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(where / "servers"))
    recipe = TreeMakeRecipe()
    recipe.launchers = []
    monkeypatch.setitem(recipes(), "postgres", recipe)
    project, hashes = _checkout(tmp_path, [("first", "a.c", A), ("a comment in b", "b.c", B + "/* b */\n")])
    one = _patch(tmp_path, "one.patch", ONE)

    def build(rev: str) -> dict[str, Any]:
        built = server_build.build_server(ServerBuildSpec("postgres", "tree", patches=(one,),
                                                          tree=UserTree(str(project), rev)), _no_training)
        time.sleep(0.02)
        return {**built.manifest, "code": subprocess.run([built.binaries / "postgres"]).returncode}

    first, second = build(hashes[0]), build(hashes[1])
    assert [m["code"] for m in (first, second)] == [2, 2]  # a.c patched to return 2 in both
    assert first["source"]["patches"][0]["sha256"] == one.sha256 and first["source"]["revision"] == hashes[0]
    # a.c was put back and patched again alike: its mtime kept, b.o alone rebuilt
    assert (second["incremental"]["objects_rebuilt"], second["incremental"]["files_switched"]) == (1, 1)


def test_a_mariadb_threshold_within_its_counts_measured_spread_is_warned_of():
    """MariaDB's counts of one code differed by 2.8% (docs/studies.md): a 2% threshold is warned of, 5% is not; a
    wall-clock bisect's threshold is no count's; PostgreSQL has no measured spread."""
    def said(engine: str, threshold: float, metric=SIMULATED) -> str | None:
        return spread_warning(StepSettings(engine, "point-query", threshold, 5.0, 1.0, 120.0, metric=metric))
    warned = said("mariadb", 0.02)
    assert warned is not None and warned.startswith("dbperf: warning: two counts of the same MariaDB code")
    assert "differed by 2.8% per query" in warned and "give a threshold above 2.8%" in warned
    assert said("mariadb", 0.05) is None and said("mariadb", 0.02, WALL) is None and said("postgres", 0.02) is None


def test_a_commit_of_a_postgres_tree_is_a_server_target_of_the_count(tmp_path: Path):
    project, hashes = _checkout(tmp_path)
    s = StepSettings("postgres", "point-query", 0.02, 5.0, 1.0, 120.0, table_size=1000, metric=SIMULATED,
                     tree=str(project), cflags=["-O1"], config={"shared_buffers": "64MB"})
    Commits(s).check()
    (counted,) = tomllib.loads(count_experiment(s, hashes[1]))["target"]
    assert counted == {"name": f"postgres-{hashes[1][:12]}", "engine": "postgres", "tree": str(project),
                       "rev": hashes[1], "cflags": ["-O1"], "config": {"shared_buffers": "64MB"}}
    path = tmp_path / "count.toml"
    path.write_text(count_experiment(s, hashes[1]))
    spec = parse_experiment(path).targets[0].server_build
    assert spec is not None and spec.tree == UserTree(str(project), hashes[1]) and spec.cflags == ("-O1",)
    with pytest.raises(UserError, match=r"^tree .*/project at rev = '[0-9a-f]{40}': not a PostgreSQL source tree"):
        Commits(s).span(hashes[0], "main")  # before anything is built
    for engine, title in (("mariadb", "MariaDB"), ("mysql", "MySQL")):  # their trees are bisected as PostgreSQL's
        tree = StepSettings(engine, "point-query", 0.02, 5.0, 1.0, 120.0, metric=SIMULATED, tree=str(project),
                            config={"innodb_buffer_pool_size": "64M"})
        Commits(tree).check()
        assert tomllib.loads(count_experiment(tree, hashes[1]))["target"][0]["engine"] == engine
        with pytest.raises(UserError, match=rf"^tree .*/project at rev = '[0-9a-f]{{40}}': not a {title} source tree"):
            Commits(tree).span(hashes[0], "main")
    for settings, said in ((StepSettings("postgres", "point-query", 0.02, 5.0, 1.0, 120.0, metric=WALL,
                                         tree=str(project)), "--metric wall is not supported"),
                           (StepSettings("postgres", "nope", 0.02, 5.0, 1.0, 120.0, metric=SIMULATED,
                                         tree=str(project)), "--benchmark: 'nope' is not a catalog benchmark")):
        with pytest.raises(UserError, match=said.replace("(", r"\(").replace(")", r"\)")):
            Commits(settings).check()


def test_a_postgres_trees_first_commit_with_more_work_is_found_past_a_broken_one(fake_counts, tmp_path):  # noqa: F811
    """tests/test_bisect_tree.py's 16 commits (work 1000 per query, 1100 from commit 11 on, commit 7 broken) in a
    checkout whose top is a PostgreSQL tree's."""
    checkout = _pg_like(tmp_path / "postgresql")
    git(checkout, "init", "-q", "-b", "main")
    hashes = [write(checkout, f"commit {i}" + (": a loop in the hot path" if i == 11 else ""),
                    ("broken" if i == 7 else str(1000 if i < 11 else 1100)) + f"\ncommit {i}\n") for i in range(16)]
    counts = fake_counts(FakeCounts())
    s = StepSettings("postgres", "point-query", 0.02, 5.0, 1.0, 120.0, table_size=1000, metric=SIMULATED,
                     tree=str(checkout))
    done = bisect(s, hashes[0], hashes[15], tmp_path / "out", tries=1, confirm=False)
    result = done.path.result
    assert (result.outcome, result.first_slower, result.last_not_slower) == ("found", hashes[11], hashes[10])
    assert result.skipped == [hashes[7]] or hashes[7] not in counts.calls
    assert result.found is not None and result.found.subject == "commit 11: a loop in the hot path"
    counted = tomllib.loads((tmp_path / "out" / "simulated" / f"{hashes[11]}.toml").read_text())["target"][0]
    assert counted["engine"] == "postgres" and counted["rev"] == hashes[11] and len(counts.calls) == len(set(
        counts.calls))


class SlowTreeMakeRecipe(TreeMakeRecipe):
    """The make project's recipe, its build taking a few seconds: two builds started together overlap."""

    def commands(self, tree: Path, prefix: Path, cc: Any, flags: list[str], jobs: int) -> list[list[str]]:
        return [["sleep", "4"], *super().commands(tree, prefix, cc, flags, jobs)]


BUILD_ONE = """
import json, sys
from dbperf.buildlab import server_build
from dbperf.buildlab.recipes import recipes
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.experiment.user_source import UserTree
from tests.test_server_tree import SlowTreeMakeRecipe
recipes()["postgres"] = SlowTreeMakeRecipe()
said = []
def train(*args):
    raise AssertionError("a plain build trains nothing")
built = server_build.build_server(ServerBuildSpec("postgres", "tree", tree=UserTree(sys.argv[1], sys.argv[2])), train,
                                  lambda text, done, total: said.append(text))
print(json.dumps({"cached": built.cached, "manifest": built.manifest, "said": said}))
"""


@pytest.mark.skipif(not MAKES, reason="needs gcc and make")
def test_two_processes_building_one_server_key_at_once_share_one_whole_entry(where, tmp_path):
    """Two server builds of one key (a revision of a checkout, in its kept tree) started together in two processes:
    the second waits for the first's lock on the key and takes its entry from the cache; the tree is configured and
    built once, and neither replaces the other's files."""
    import json
    import sys

    from tests.conftest import REPO
    project, hashes = _checkout(tmp_path)
    env = {**os.environ, "DBPERF_SERVER_CACHE": str(where / "servers")}
    procs = [subprocess.Popen([sys.executable, "-c", BUILD_ONE, str(project), hashes[0]], cwd=REPO, env=env,
                              text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    ends = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in ends]
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in ends]
    assert sorted(r["cached"] for r in results) == [False, True]  # one built it, the other found it whole
    built = next(r["manifest"] for r in results if not r["cached"])
    assert {r["manifest"]["key"] for r in results} == {built["key"]}
    tree = Path(built["incremental"]["tree"])
    assert (tree / "src" / "configure.count").read_text() == "configured\n"  # configured and built once
    install = Path(built["install"])
    assert subprocess.run([install / "bin" / "postgres"]).returncode == 1  # the entry whole, its server runs
    assert json.loads((install.parent / "manifest.json").read_text())["built_at"] == built["built_at"]
