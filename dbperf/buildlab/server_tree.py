"""A server build's source from the user's tree (`tree`, `rev` on a PostgreSQL, MariaDB or MySQL target): a checkout
of the engine's source, read by user_tree.py (the checkout is never touched; its key the revision's git tree, or the
content of the tree as it is), checked to be the engine's by what its recipe says the top of one holds
(Recipe.tree_files), and built with that recipe.

The build's key (server_build.py) holds the tree's content; its kept build tree (build_tree.py) is keyed by the
checkout's folder instead, so that every revision of one checkout is built in the same tree: the revision is
exported beside it and synced in (source_sync.py: what did not change keeps its mtime), and make or ninja rebuild
what changed. The manifest's `source` is the tree's record (repository, revision, subject, dirty, the changed files
of a dirty tree) with the patches applied on it."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbperf import engines
from dbperf.buildlab.recipes.base import Recipe
from dbperf.buildlab.source_sync import LISTING, sync_source
from dbperf.buildlab.user_tree import TreeSnapshot, read_tree
from dbperf.errors import UserError
from dbperf.experiment.build_variants import TREE_ORIGIN
from dbperf.experiment.user_source import UserTree

INCOMING = "incoming"  # where a revision is exported beside the kept tree's src/ before it is synced in


@dataclass(frozen=True)
class ServerTree:
    """The user's tree as read for one build of `engine`."""
    engine: str
    snapshot: TreeSnapshot

    def kept_source(self) -> dict[str, Any]:
        """What its kept build tree is keyed by besides flags, compiler and recipe: the checkout, not the revision
        (build_tree.tree_identity)."""
        return {"engine": self.engine, "origin": TREE_ORIGIN, "tree": str(self.snapshot.path.resolve())}

    def provenance(self) -> dict[str, Any]:
        return {"engine": self.engine, **self.snapshot.facts()}

    def refresh(self, root: Path) -> Callable[[Path], set[str]]:
        """What brings the kept tree at `root` to this revision (BuildTree.switch's `refresh`)."""
        def sync(src: Path) -> set[str]:
            incoming = root / INCOMING
            shutil.rmtree(incoming, ignore_errors=True)  # a sync cut short
            self.snapshot.export(incoming)
            return sync_source(incoming, src, root / LISTING)
        return sync


def resolve_server_tree(engine: str, recipe: Recipe, tree: UserTree) -> ServerTree:
    """The tree read and checked to be a source tree of `engine` (before any build starts: a bad revision, or a
    tree of another engine, is one line)."""
    snapshot = read_tree(tree)
    missing = [name for name in recipe.tree_files if name not in snapshot.names]
    if missing or not recipe.tree_files:
        at = f" at rev = {tree.rev!r}" if tree.rev else ""
        title = engines.engine(engine).title
        raise UserError(f"tree {tree.path}{at}: not a {title} source tree (its top has no {', '.join(missing)})"
                        if recipe.tree_files else f"tree {tree.path}: {title} is not built from a user's tree")
    return ServerTree(engine, snapshot)


def source_words(source: dict[str, Any]) -> str:
    """How a build's line names its source: Debian's package and version, or the tree's commit and subject."""
    if source.get("origin") != TREE_ORIGIN:
        return f"{source.get('package')} {source.get('version')}"
    revision = source.get("revision")
    if not revision:
        return f"the folder {source.get('path')}"
    dirty = " with uncommitted changes" if source.get("dirty") else ""
    return f"{source.get('repository')} at {revision[:12]}{dirty} ({source.get('subject')})"
