"""Where a server build's code comes from (dbperf/buildlab/sources/): each origin kind asked the pipeline's questions
without a build (its word and identity, its candidates, its provenance in a manifest, its kept tree's identity), and
what it refuses said in one line. Debian's archive is stood in for (candidate_versions, fetch_debian_source); a
user's tree is a small git checkout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dbperf.buildlab.build_tree import kept_tree, tree_identity
from dbperf.buildlab.debian_source import DebianSource
from dbperf.buildlab.recipes.postgres import PostgresRecipe
from dbperf.buildlab.server_build import build_key
from dbperf.buildlab.sources import debian, origin_of, source_words
from dbperf.buildlab.sources.base import ServerOrigin, Unserved, in_kept_tree
from dbperf.buildlab.sources.debian import DebianOrigin
from dbperf.buildlab.sources.tree import TreeOrigin
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.experiment.user_source import UserTree
from dbperf.host.compiler import Compiler
from tests.test_server_tree import _pg_like
from tests.test_user_tree import git

pytestmark = pytest.mark.unit

VERSIONS = ["15.20-0+deb12u1", "15.18-0+deb12u1"]
CC = Compiler(path="/usr/bin/cc", version="cc 12", is_gcc=True)
RECIPE = PostgresRecipe()


@pytest.fixture
def archive(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Debian's archive listing VERSIONS of postgresql-15 and serving only the older; the apt updates asked."""
    asked: list[str] = []

    def listed(engine: str) -> tuple[Any, str, list[str]]:
        asked.append(engine)
        return "apt", "postgresql-15", list(VERSIONS)

    def fetch(apt: Any, package: str, engine: str, version: str, work: Path, skipped: list[str],
              announce: Any = None) -> DebianSource:
        if version == VERSIONS[0]:
            raise UserError(f"apt-get source {package}={version} failed: 404  Not Found")
        (work / "src").mkdir()
        return DebianSource(engine, package, version, work / "src",
                            {"origin": "debian-src", "package": package, "version": version,
                             "skipped_versions": list(skipped)})

    monkeypatch.setattr(debian, "candidate_versions", listed)
    monkeypatch.setattr(debian, "fetch_debian_source", fetch)
    return asked


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    pg = _pg_like(tmp_path / "postgresql")
    git(pg, "init", "-q", "-b", "main")
    git(pg, "add", "-A")
    git(pg, "commit", "-q", "-m", "first")
    (pg / "configure").write_text("# two\n")
    git(pg, "commit", "-q", "-am", "second")
    return pg


def test_a_spec_without_a_tree_is_debians_and_with_one_the_trees(checkout: Path) -> None:
    assert isinstance(origin_of(ServerBuildSpec("postgres"), RECIPE), DebianOrigin)
    tree = origin_of(ServerBuildSpec("postgres", "tree", tree=UserTree(str(checkout), "main")), RECIPE)
    assert isinstance(tree, TreeOrigin) and tree.snapshot.subject == "second"
    both: list[ServerOrigin] = [DebianOrigin("postgres"), tree]  # both answer the protocol's questions (mypy)
    assert [o.first_step for o in both] == ["fetching Debian's source", "reading the tree"]


def test_debians_word_identity_and_candidates(archive: list[str]) -> None:
    origin = DebianOrigin("postgres")
    assert origin.word == "postgresql-15" and origin.first_step == "fetching Debian's source" and archive == []
    assert origin.known_version() is None  # only the archive knows: nothing asked of it yet
    skipped: list[str] = []
    assert list(origin.candidates(ServerBuildSpec("postgres"), RECIPE, skipped)) == VERSIONS and skipped == []
    assert origin.key_source(VERSIONS[1]) == ("postgresql-15", VERSIONS[1])
    assert origin.kept_identity(VERSIONS[1]) == {"engine": "postgres", "origin": "debian-src",
                                                 "package": "postgresql-15", "version": VERSIONS[1]}
    pinned = origin.pinned(ServerBuildSpec("postgres", variants=("O2", "pgo")), VERSIONS[1])
    assert pinned.version == VERSIONS[1]
    assert list(origin.candidates(pinned, RECIPE, skipped)) == [VERSIONS[1]]
    assert archive == ["postgres"]  # the archive asked once for every question of this origin
    assert build_key(ServerBuildSpec("postgres"), origin, VERSIONS[0], CC, RECIPE) != \
        build_key(ServerBuildSpec("postgres"), origin, VERSIONS[1], CC, RECIPE)


def test_debians_provenance_says_the_version_it_passed_over(archive: list[str], tmp_path: Path) -> None:
    origin, skipped = DebianOrigin("postgres"), []
    (tmp_path / "a").mkdir()
    with pytest.raises(Unserved, match="404"):  # a version the archive does not serve: the next is tried
        origin.fetch(VERSIONS[0], tmp_path / "a", skipped, None)
    skipped.append(f"{VERSIONS[0]}: 404")
    (tmp_path / "b").mkdir()
    src, provenance = origin.fetch(VERSIONS[1], tmp_path / "b", skipped, None)
    assert src == tmp_path / "b" / "src" and src.is_dir()
    assert provenance["version"] == VERSIONS[1] and provenance["skipped_versions"] == [f"{VERSIONS[0]}: 404"]
    assert source_words(provenance) == f"postgresql-15 {VERSIONS[1]}"


def test_debians_kept_tree_is_fetched_once(archive: list[str], tmp_path: Path) -> None:
    origin = DebianOrigin("postgres")
    identity = tree_identity(origin.kept_identity(VERSIONS[1]), ["-O2"], CC, RECIPE.options)
    for _ in range(2):
        with kept_tree(tmp_path / "trees", identity) as tree:
            assert origin.into_kept(VERSIONS[1], tree, [], None) is None  # nothing to sync: only patches switch
            assert tree.record.provenance is not None and tree.record.provenance["version"] == VERSIONS[1]


def test_debian_refuses_a_pinned_version_the_archive_no_longer_lists_in_one_line(archive: list[str]) -> None:
    spec = ServerBuildSpec("postgres", version="15.1-1")
    with pytest.raises(UserError) as e:
        list(DebianOrigin("postgres").candidates(spec, RECIPE, []))
    assert str(e.value) == ("postgres@debian-src [O2]: Debian's archive no longer lists postgresql-15 15.1-1, the "
                            "version of the PGO build this is the base of")
    said = str(DebianOrigin("postgres").none_left(ServerBuildSpec("postgres"), ["15.20: 404"]))
    assert said == "postgres@debian-src [O2]: no version of Debian's postgresql-15 could be fetched (15.20: 404)"


def test_a_trees_word_identity_and_one_candidate(checkout: Path) -> None:
    spec = ServerBuildSpec("postgres", "tree", tree=UserTree(str(checkout), "main~1"))
    origin = origin_of(spec, RECIPE)
    content = origin.known_version()
    assert content is not None and content.startswith("git-tree:")
    assert origin.word.startswith("tree:") and origin.first_step == "reading the tree"
    assert list(origin.candidates(spec, RECIPE, [])) == [content]
    assert origin.key_source(content) == ("tree", content)
    assert origin.pinned(spec, content) == spec
    head = origin_of(ServerBuildSpec("postgres", "tree", tree=UserTree(str(checkout), "main")), RECIPE)
    # another revision: another build, in the same kept tree (keyed by the checkout)
    assert head.known_version() != content
    assert head.kept_identity("") == origin.kept_identity(content) == {
        "engine": "postgres", "origin": "tree", "tree": str(checkout.resolve())}
    assert build_key(spec, origin, content, CC, RECIPE) != build_key(spec, head, str(head.known_version()), CC,
                                                                     RECIPE)


def test_a_trees_provenance_is_its_commit(checkout: Path, tmp_path: Path) -> None:
    origin = origin_of(ServerBuildSpec("postgres", "tree", tree=UserTree(str(checkout), "main~1")), RECIPE)
    assert isinstance(origin, TreeOrigin)
    (tmp_path / "work").mkdir()
    src, provenance = origin.fetch(str(origin.known_version()), tmp_path / "work", [], None)
    assert (src / "configure").read_text() == "#\n"  # the revision's content, not the checkout's
    assert provenance["origin"] == "tree" and provenance["engine"] == "postgres"
    assert provenance["subject"] == "first" and provenance["rev"] == "main~1" and provenance["dirty"] is False
    assert source_words(provenance).endswith("(first)")


def test_a_tree_syncs_its_revision_into_the_kept_tree(checkout: Path, tmp_path: Path) -> None:
    origin = origin_of(ServerBuildSpec("postgres", "tree", tree=UserTree(str(checkout), "main")), RECIPE)
    said: list[str] = []
    with kept_tree(tmp_path / "trees", tree_identity(origin.kept_identity(""), ["-O2"], CC, RECIPE.options)) as tree:
        refresh = origin.into_kept("", tree, [], said.append)
        assert refresh is not None and said == [f"syncing {origin.word} into its kept tree"]
        tree.switch((), tmp_path / "build.log", "label", refresh)
        assert (tree.src / "configure").read_text() == "# two\n"
        assert tree.record.provenance is not None and tree.record.provenance["subject"] == "second"


def test_a_tree_of_another_engine_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(UserError) as e:
        origin_of(ServerBuildSpec("postgres", "tree", tree=UserTree(str(tmp_path / "elsewhere"))), RECIPE)
    assert "\n" not in str(e.value) and "not a PostgreSQL source tree" in str(e.value)


def test_one_placement_decision_for_every_origin() -> None:
    assert in_kept_tree(ServerBuildSpec("postgres")) and in_kept_tree(ServerBuildSpec("postgres", "tree"))
    assert not in_kept_tree(ServerBuildSpec("postgres", variants=("O2", "pgo")))
    assert not in_kept_tree(ServerBuildSpec("postgres", "tree", variants=("O2", "bolt")))


def test_a_revision_is_exported_with_its_submodules_at_the_commits_it_records(tmp_path: Path) -> None:
    """MariaDB's tree holds submodules (libmariadb, wsrep-lib): a revision's export has each at the commit that
    revision records, from the submodule's own checkout; one not there is one line."""
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    (lib / "lib.c").write_text("int v = 1;\n")
    git(lib, "add", "-A")
    git(lib, "commit", "-q", "-m", "one")
    top = _pg_like(tmp_path / "server")
    git(top, "init", "-q", "-b", "main")
    git(top, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(lib), "lib")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "with lib one")
    (top / "lib" / "lib.c").write_text("int v = 2;\n")
    git(top / "lib", "commit", "-q", "-am", "two")
    git(top, "commit", "-q", "-am", "with lib two")
    exported = {}
    for rev in ("main~1", "main"):
        origin = origin_of(ServerBuildSpec("postgres", "tree", tree=UserTree(str(top), rev)), RECIPE)
        (tmp_path / rev).mkdir()
        origin.fetch(str(origin.known_version()), tmp_path / rev, [], None)
        exported[rev] = (tmp_path / rev / "src" / "lib" / "lib.c").read_text()
    assert exported == {"main~1": "int v = 1;\n", "main": "int v = 2;\n"}
    git(top, "-c", "protocol.file.allow=always", "submodule", "-q", "deinit", "-f", "lib")
    origin = origin_of(ServerBuildSpec("postgres", "tree", tree=UserTree(str(top), "main")), RECIPE)
    (tmp_path / "gone").mkdir()
    with pytest.raises(UserError) as e:
        origin.fetch(str(origin.known_version()), tmp_path / "gone", [], None)
    assert "\n" not in str(e.value) and "its submodule lib at " in str(e.value) and "is not in the checkout" in \
        str(e.value)
