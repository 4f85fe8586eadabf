"""Where a SQLite build's source comes from: a released version (sqlite_source.py, the amalgamation a crate bundles)
or the user's tree (sqlite_tree.py, with `rev` one commit of it). Both answer the builder's questions (SqliteOrigin);
`origins` reads each once, before any build starts, so that a bad revision or a version no crate bundles is one line
before the first compile."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from dbperf.buildlab.sqlite_source import Announce, resolve
from dbperf.buildlab.sqlite_tree import resolve_tree
from dbperf.experiment.build_variants import BuildSpec
from dbperf.experiment.user_source import UserTree


class SqliteOrigin(Protocol):
    @property
    def word(self) -> str:
        """How a build's label names the source: "3.54.1", "tree:abc1234"."""
        ...

    def identity(self) -> dict[str, Any]:
        """What of the source the build's key hashes."""
        ...

    def ready(self) -> Path | None:
        """A folder holding the amalgamation to compile in place, or None: the lab's copy is always made."""
        ...

    def export(self, into: Path) -> None:
        """The source into `into`, a new folder of the lab's, to patch and, for a source tree, amalgamate."""
        ...

    def provenance(self, folder: Path | None = None) -> dict[str, Any]:
        """The manifest's `source`; `folder`: the amalgamation that was compiled."""
        ...


def origin_of(spec: BuildSpec, announce: Announce | None = None) -> SqliteOrigin:
    if spec.tree is not None:
        return resolve_tree(spec.tree)
    return resolve(spec.sqlite_version, announce)


def origins(specs: list[BuildSpec], announce: Announce | None = None) -> dict[BuildSpec, SqliteOrigin]:
    """Each spec's source, each version fetched (`announce` told of a download first) and each tree read once."""
    read: dict[str | UserTree, SqliteOrigin] = {}
    for spec in specs:
        where = spec.tree or spec.sqlite_version
        if where not in read:
            read[where] = origin_of(spec, announce)
    return {spec: read[spec.tree or spec.sqlite_version] for spec in specs}
