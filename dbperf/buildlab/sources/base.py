"""What every origin of a server build's code answers (ServerOrigin), as SQLite's do (sqlite_origin.py): the build
pipeline (server_build.py) asks it, and never which kind it is.

A candidate is one version of the code the origin offers, newest first: Debian's archive lists several (the newest it
serves is built), a user's tree is one content. The build's key hashes the origin's `key_source` of the candidate;
its kept build tree (build_tree.py) is keyed by `kept_identity`: Debian's package and version, a tree's checkout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from dbperf.buildlab.build_tree import BuildTree
from dbperf.buildlab.recipes.base import Recipe
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec

Announce = Callable[[str], None]  # told of a step that takes time (a download, a sync) before it starts
Refresh = Callable[[Path], set[str]]  # brings a kept tree's src/ to the candidate; the files it changed


class Unserved(UserError):
    """The origin cannot give this candidate (Debian's archive does not serve that version): the next is tried, and
    the manifest says why it was passed over."""


class ServerOrigin(Protocol):
    @property
    def word(self) -> str:
        """How a build's lines name where its code comes from: Debian's source package, the tree's commit."""
        ...

    @property
    def first_step(self) -> str:
        """What a build of it does first, for its progress line."""
        ...

    def candidates(self, spec: ServerBuildSpec, recipe: Recipe, skipped: list[str]) -> Iterator[str]:
        """The versions to build, newest first; one refused for this spec is said in `skipped` and not given."""
        ...

    def known_version(self) -> str | None:
        """The candidate known without the network (a tree's content), None where only the archive knows it."""
        ...

    def key_source(self, version: str) -> tuple[str, str]:
        """(package, version) as the build's key hashes them: Debian's, or the tree's origin and its content."""
        ...

    def kept_identity(self, version: str) -> dict[str, Any]:
        """What its kept build tree is keyed by besides flags, compiler and recipe (build_tree.tree_identity)."""
        ...

    def pinned(self, spec: ServerBuildSpec, version: str) -> ServerBuildSpec:
        """`spec` held to `version`: a PGO build's base is built from the version the PGO build is of."""
        ...

    def fetch(self, version: str, work: Path, skipped: list[str], announce: Announce | None) -> tuple[Path, dict[
            str, Any]]:
        """The code of `version` into work/src, a new folder of the lab's, and its provenance (the manifest's
        `source` before the patches); Unserved when the origin cannot give it."""
        ...

    def into_kept(self, version: str, tree: BuildTree, skipped: list[str], announce: Announce | None
                  ) -> Refresh | None:
        """The kept tree readied for `version`: its source fetched if new (Debian's), or what brings it to this
        revision, given to the tree's switch (a user's tree, whose kept tree is its checkout's)."""
        ...

    def how_made(self, spec: ServerBuildSpec, recipe: Recipe) -> str:
        """How a build of `spec` not cached would be made, for the preflight's line."""
        ...

    def none_left(self, spec: ServerBuildSpec, skipped: list[str]) -> UserError:
        """The one line when no candidate could be built."""
        ...


def in_kept_tree(spec: ServerBuildSpec) -> bool:
    """Whether a build is made in the kept build tree of its source (build_tree.py), whatever its origin: PGO and
    BOLT builds are made whole in a fresh folder (PGO's two builds would need trees of their own agreeing on one path
    for gcc's profile names, and BOLT rewrites what a resumed build installs again: resume.py); a PGO build's base,
    without them, is made in the kept tree."""
    return not (spec.pgo or spec.bolt)
