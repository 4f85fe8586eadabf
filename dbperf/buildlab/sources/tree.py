"""A server's code from the user's tree (`tree`, `rev` on a PostgreSQL, MariaDB or MySQL target): a checkout of the
engine's source, read by user_tree.py (the checkout is never touched; its key the revision's git tree, or the content
of the tree as it is), checked to be the engine's by what its recipe says the top of one holds (Recipe.tree_files),
and built with that recipe. Its one candidate is that content.

The build's key (server_build.py) holds the tree's content; its kept build tree (build_tree.py) is keyed by the
checkout's folder instead, so that every revision of one checkout is built in the same tree: the revision is
exported beside it and synced in (source_sync.py: what did not change keeps its mtime), and make or ninja rebuild
what changed. The manifest's `source` is the tree's record (repository, revision, subject, dirty, the changed files
of a dirty tree) with the patches applied on it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbperf import engines
from dbperf.buildlab.build_tree import BuildTree
from dbperf.buildlab.recipes.base import Recipe
from dbperf.buildlab.source_sync import LISTING, sync_source
from dbperf.buildlab.sources.base import Announce, Refresh, in_kept_tree
from dbperf.buildlab.user_tree import TreeSnapshot, read_tree
from dbperf.errors import UserError
from dbperf.experiment.build_variants import TREE_ORIGIN, ServerBuildSpec
from dbperf.experiment.user_source import UserTree

INCOMING = "incoming"  # where a revision is exported beside the kept tree's src/ before it is synced in


@dataclass(frozen=True)
class TreeOrigin:
    """The user's tree as read for the builds of `engine`."""
    engine: str
    snapshot: TreeSnapshot

    @property
    def word(self) -> str:
        return self.snapshot.word

    @property
    def first_step(self) -> str:
        return "reading the tree"

    def candidates(self, spec: ServerBuildSpec, recipe: Recipe, skipped: list[str]) -> Iterator[str]:
        yield self.snapshot.content

    def known_version(self) -> str | None:
        return self.snapshot.content

    def key_source(self, version: str) -> tuple[str, str]:
        return TREE_ORIGIN, version  # the tree's content stands for Debian's package and version

    def kept_identity(self, version: str) -> dict[str, Any]:
        """The checkout, not the revision (build_tree.tree_identity)."""
        return {"engine": self.engine, "origin": TREE_ORIGIN, "tree": str(self.snapshot.path.resolve())}

    def pinned(self, spec: ServerBuildSpec, version: str) -> ServerBuildSpec:
        return spec  # one read of the tree: a PGO build's base is given this origin, so of the same content

    def provenance(self) -> dict[str, Any]:
        return {"engine": self.engine, **self.snapshot.facts()}

    def fetch(self, version: str, work: Path, skipped: list[str], announce: Announce | None) -> tuple[Path, dict[
            str, Any]]:
        self.snapshot.export(work / "src")
        return work / "src", self.provenance()

    def into_kept(self, version: str, tree: BuildTree, skipped: list[str], announce: Announce | None
                  ) -> Refresh | None:
        if announce:
            announce(f"syncing {self.word} into its kept tree")
        root = tree.root

        def sync(src: Path) -> set[str]:
            incoming = root / INCOMING
            shutil.rmtree(incoming, ignore_errors=True)  # a sync cut short
            self.snapshot.export(incoming)
            changed = sync_source(incoming, src, root / LISTING)
            tree.set_source(self.provenance())
            return changed
        return sync

    def how_made(self, spec: ServerBuildSpec, recipe: Recipe) -> str:
        if in_kept_tree(spec):
            return (f"from the tree in its kept build tree (the first build of a checkout: {recipe.build_time}; "
                    "later revisions rebuild what changed)")
        steps = (f"compiled twice around its training (instrumented, then with the proven profile), "
                 f"{recipe.build_time} each, and checked against the same build without pgo, made in the tree's kept "
                 "build tree unless cached" if spec.pgo else f"compiled, {recipe.build_time}")
        bolt = ", then rewritten by BOLT after its own training" if spec.bolt else ""
        whole = "from the tree copied into a fresh folder, whole (no PGO or BOLT build is made in a kept tree)"
        return f"{whole}: {steps}{bolt}"

    def none_left(self, spec: ServerBuildSpec, skipped: list[str]) -> UserError:
        return UserError(f"{spec.label()}: the tree {self.snapshot.path} could not be built ({'; '.join(skipped)})")


def resolve_server_tree(engine: str, recipe: Recipe, tree: UserTree) -> TreeOrigin:
    """The tree read and checked to be a source tree of `engine` (before any build starts: a bad revision, or a
    tree of another engine, is one line)."""
    snapshot = read_tree(tree)
    missing = [name for name in recipe.tree_files if name not in snapshot.names]
    if missing or not recipe.tree_files:
        at = f" at rev = {tree.rev!r}" if tree.rev else ""
        title = engines.engine(engine).title
        raise UserError(f"tree {tree.path}{at}: not a {title} source tree (its top has no {', '.join(missing)})"
                        if recipe.tree_files else f"tree {tree.path}: {title} is not built from a user's tree")
    return TreeOrigin(engine, snapshot)
