"""PGO and BOLT variants of a server target built from the user's tree (buildlab/server_build.py, server_tree.py),
without building PostgreSQL (8 minutes a build): their keys (the tree's content with the variant: another `rev`,
new keys for the PGO build and for its base), their plan as `run --dry-run` says it (whole in a fresh folder; the
base, without pgo, in the checkout's kept tree), and the base of a PGO build made from the same read of the tree as
the PGO build, after the checkout's branch moved on or its files changed (a small make project stands for
PostgreSQL's tree, as in tests/test_server_tree.py). BOLT on a SQLite tree is one line. A SQLite tree's PGO build,
built: tests/test_tree_pgo_builds.py."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from dbperf.buildlab import server_build
from dbperf.buildlab.pgo_guard import GuardCounts
from dbperf.buildlab.recipes import recipes
from dbperf.buildlab.recipes.postgres import PostgresRecipe
from dbperf.buildlab.server_bolt import bolt_tools
from dbperf.buildlab.sources.tree import resolve_server_tree
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.experiment.spec import parse_experiment
from dbperf.experiment.user_source import UserTree
from dbperf.host.compiler import find_compiler
from dbperf.runner.preflight import target_checks
from tests.test_build_tree import A, B
from tests.test_server_tree import MAKES, TreeMakeRecipe, _checkout, _no_training, _pg_like
from tests.test_user_tree import git

pytestmark = pytest.mark.unit

RUN = '[run]\nbenchmarks = ["point-query"]\n'


def _bolt_missing() -> str | None:
    try:
        bolt_tools()
    except UserError as e:
        return str(e)
    return None


def _pg_checkout(tmp_path: Path) -> Path:
    """A checkout whose top is a PostgreSQL tree's, two commits: `main~1` and `main`."""
    checkout = _pg_like(tmp_path / "postgresql")
    git(checkout, "init", "-q", "-b", "main")
    for subject in ("first", "second"):
        (checkout / "src" / "Makefile").write_text(f"# {subject}\n")
        git(checkout, "add", "-A")
        git(checkout, "commit", "-q", "-m", subject)
    return checkout


def _keys(checkout: Path, rev: str, *variants: tuple[str, ...]) -> list[str]:
    """The build keys of the tree at `rev` with each of `variants`."""
    recipe, cc = PostgresRecipe(), find_compiler()
    read = resolve_server_tree("postgres", recipe, UserTree(str(checkout), rev))
    return [server_build.build_key(ServerBuildSpec("postgres", "tree", v, tree=UserTree(str(checkout), rev)),
                                   read, read.snapshot.content, cc, recipe) for v in variants]


def test_a_trees_pgo_build_and_its_base_are_keyed_by_the_trees_content_and_another_rev_moves_both(tmp_path: Path):
    checkout = _pg_checkout(tmp_path)
    plain = ServerBuildSpec("postgres", "tree", tree=UserTree(str(checkout), "main"))
    pgo = ServerBuildSpec("postgres", "tree", ("O2", "pgo"), tree=UserTree(str(checkout), "main"))
    # the guard's base is the plain target of the same tree (one key, built once), made in the kept tree
    assert server_build.base_spec(pgo) == plain
    assert server_build.in_kept_tree(plain) and not server_build.in_kept_tree(pgo)
    head, older = _keys(checkout, "main", ("O2",), ("O2", "pgo")), _keys(checkout, "main~1", ("O2",), ("O2", "pgo"))
    assert len({*head, *older}) == 4
    # a commit by another name is the same build; partial training is a PGO build of its own, with the same base
    full = git(checkout, "rev-parse", "main").strip()
    assert _keys(checkout, full, ("O2",), ("O2", "pgo")) == head
    partial = replace(pgo, pgo_partial_training=True)
    read = resolve_server_tree("postgres", PostgresRecipe(), UserTree(str(checkout), "main"))
    assert server_build.build_key(partial, read, read.snapshot.content, find_compiler(), PostgresRecipe()) not in head
    assert server_build.base_spec(partial) == plain
    # every revision's base goes to the checkout's one kept tree
    earlier = resolve_server_tree("postgres", PostgresRecipe(), UserTree(str(checkout), "main~1"))
    assert read.kept_identity(read.snapshot.content) == earlier.kept_identity(earlier.snapshot.content)


@pytest.mark.skipif(_bolt_missing() is not None, reason=f"the bolt variant's key holds llvm-bolt's version: "
                                                         f"{_bolt_missing()}")
def test_a_trees_bolt_build_has_a_key_of_its_own_and_is_not_made_in_the_kept_tree(tmp_path: Path):
    checkout = _pg_checkout(tmp_path)
    keys = _keys(checkout, "main", ("O2",), ("O2", "bolt"), ("O2", "pgo", "bolt"))
    assert len(set(keys)) == 3 and set(keys).isdisjoint(_keys(checkout, "main~1", ("O2", "bolt")))
    assert not server_build.in_kept_tree(ServerBuildSpec("postgres", "tree", ("O2", "bolt")))


def test_the_dry_run_says_a_trees_pgo_build_is_made_whole_in_a_fresh_folder(write_experiment, tmp_path: Path, where,
                                                                           monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(where / "servers"))
    _pg_checkout(tmp_path)
    body = RUN + "".join(f'[[target]]\nname = "{name}"\nengine = "postgres"\ntree = "postgresql"\nrev = "main"\n'
                         f"build = {build}\n" for name, build in (("plain", '["O2"]'), ("pgo", '["O2", "pgo"]')))
    checks = {c.subject: c for c in target_checks(parse_experiment(write_experiment(body)))}
    plain, pgo = checks["target plain"], checks["target pgo"]
    assert plain.problem is None and pgo.problem is None, (plain.problem, pgo.problem)
    assert plain.found.startswith("postgres@tree:postgresql:main [O2]: not cached, would be built from the tree in its "
                                  "kept build tree (the first build of a checkout: ")
    assert pgo.found.startswith("postgres@tree:postgresql:main [O2 pgo]: not cached, would be built from the tree "
                                "copied into a fresh folder, whole (no PGO or BOLT build is made in a kept tree): "
                                "compiled twice around its training")
    assert pgo.found.endswith("checked against the same build without pgo, made in the tree's kept build tree unless "
                              "cached")


def test_bolt_on_a_sqlite_tree_is_one_line(write_experiment, tmp_path: Path):
    (tmp_path / "sqlite").mkdir()
    (tmp_path / "sqlite" / "sqlite3.c").write_text("int x;\n")
    with pytest.raises(UserError, match=r"\.build: the bolt variant is for servers built from source .*not SQLite$"):
        parse_experiment(write_experiment(RUN + '[[target]]\nname = "a"\ntree = "sqlite"\nbuild = ["O2", "bolt"]\n'))


class _Guard:
    """The guard's counting (runner/server_pgo_guard.py counts under valgrind; here, what the base's server returns):
    it asks for the base, as the real one does once the PGO build is counted."""

    def __init__(self) -> None:
        self.base_codes: list[int] = []

    def __call__(self, engine: str, binaries: Path, base: Callable[[], Path]) -> GuardCounts:
        self.base_codes.append(subprocess.run([base() / "postgres"]).returncode)
        return GuardCounts(pgo=90.0, base=100.0, events=100, queries=100, workloads=("train-mix",), seconds=0.1,
                           method="the base's exit code (a test)")


@pytest.fixture
def make_lab(where: Path, monkeypatch: pytest.MonkeyPatch) -> TreeMakeRecipe:
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(where / "servers"))
    recipe = TreeMakeRecipe()
    recipe.launchers = []
    monkeypatch.setitem(recipes(), "postgres", recipe)
    return recipe


@pytest.mark.skipif(not MAKES, reason="needs gcc and make")
def test_a_pgo_builds_base_is_the_revision_read_before_its_branch_moved_on(make_lab, where: Path, tmp_path: Path):
    project, hashes = _checkout(tmp_path)  # main: a returns 2
    spec = ServerBuildSpec("postgres", "tree", ("O2", "pgo"), tree=UserTree(str(project), "main"))
    read = resolve_server_tree("postgres", make_lab, UserTree(str(project), "main"))
    (project / "a.c").write_text(A.replace("1;", "5;"))  # the branch moves on while the PGO build is made
    git(project, "commit", "-q", "-am", "a returns 5")
    guard = _Guard()
    record, refused = server_build._guard(spec, tmp_path, _no_training, None, guard, read)
    assert refused is None and guard.base_codes == [2]  # the revision read, not the branch as it is now
    base = json.loads((where / "servers" / "build" / record["base_key"] / "manifest.json").read_text())
    assert (base["source"]["revision"], base["source"]["rev"], base["variants"]) == (hashes[2], "main", ["O2"])
    assert "incremental" in base  # made in the checkout's kept tree
    now = resolve_server_tree("postgres", make_lab, UserTree(str(project), "main"))
    cc, base_spec = find_compiler(), server_build.base_spec(spec)
    assert record["base_key"] == server_build.build_key(base_spec, read, read.snapshot.content, cc, make_lab) != \
        server_build.build_key(base_spec, now, now.snapshot.content, cc, make_lab)


@pytest.mark.skipif(not MAKES, reason="needs gcc and make")
def test_a_pgo_builds_base_of_a_tree_as_it_is_edited_since_its_read_is_refused(make_lab, where: Path, tmp_path: Path):
    project, _ = _checkout(tmp_path)
    spec = ServerBuildSpec("postgres", "tree", ("O2", "pgo"), tree=UserTree(str(project)))
    read = resolve_server_tree("postgres", make_lab, UserTree(str(project)))
    (project / "b.c").write_text(B + "/* edited */\n")  # an edit while the PGO build is made
    guard = _Guard()
    with pytest.raises(UserError, match=r"^tree .*/project: its files changed since the lab read them; run again$"):
        server_build._guard(spec, tmp_path, _no_training, None, guard, read)
    assert guard.base_codes == [] and not list((where / "servers" / "build").glob("*/manifest.json"))
