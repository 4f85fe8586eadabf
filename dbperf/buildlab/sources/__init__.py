"""Where a server build's code comes from, one kind a file, each answering the build pipeline's questions
(base.ServerOrigin): Debian's source package (debian.py) or the user's tree, as it is or at a revision (tree.py). A
released tarball would be one more file. `origin_of` resolves a build spec's origin once, before any build starts
(as RunPlan resolves its Order): an experiment's builds of one tree, a PGO build's base included, are of one read of
it, and its builds of Debian's source of one look at the archive."""

from __future__ import annotations

from typing import Any

from dbperf.buildlab.recipes.base import Recipe
from dbperf.buildlab.sources.base import ServerOrigin
from dbperf.buildlab.sources.debian import DebianOrigin
from dbperf.buildlab.sources.tree import resolve_server_tree
from dbperf.experiment.build_variants import TREE_ORIGIN, ServerBuildSpec


def origin_of(spec: ServerBuildSpec, recipe: Recipe) -> ServerOrigin:
    """Where `spec`'s code comes from; a tree read and checked now (a bad revision, or another engine's tree, is
    one line)."""
    if spec.tree is not None:
        return resolve_server_tree(spec.engine, recipe, spec.tree)
    return DebianOrigin(spec.engine)


def source_words(source: dict[str, Any]) -> str:
    """How a build's line names its source (a manifest's `source`): Debian's package and version, or the tree's
    commit and subject."""
    if source.get("origin") != TREE_ORIGIN:
        return f"{source.get('package')} {source.get('version')}"
    revision = source.get("revision")
    if not revision:
        return f"the folder {source.get('path')}"
    dirty = " with uncommitted changes" if source.get("dirty") else ""
    return f"{source.get('repository')} at {revision[:12]}{dirty} ({source.get('subject')})"
