"""A server's code from Debian's source package (debian_source.py: the lab's own apt, the archive's signatures):
its candidates are the versions the archive lists, newest first, and the first it serves is built; a version it
does not serve is passed over, and the manifest says which and why. A PGO build's base is held to the version the
PGO build is of (`spec.version`). Its kept build tree is keyed by the package and version."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from dbperf.buildlab.build_tree import BuildTree
from dbperf.buildlab.debian_source import SOURCE_PACKAGES, PrivateApt, candidate_versions, fetch_debian_source
from dbperf.buildlab.profile_scope import scope_kind
from dbperf.buildlab.recipes.base import Recipe
from dbperf.buildlab.sources.base import Announce, Refresh, Unserved
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec

DEBIAN_ORIGIN = "debian-src"  # a ServerBuildSpec's `origin` for Debian's source package


class DebianOrigin:
    """The engine's Debian source package, its archive asked once (the first time its candidates are)."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self._listed: tuple[PrivateApt, str, list[str]] | None = None

    def _list(self) -> tuple[PrivateApt, str, list[str]]:
        if self._listed is None:
            self._listed = candidate_versions(self.engine)
        return self._listed

    @property
    def word(self) -> str:
        return self._listed[1] if self._listed else SOURCE_PACKAGES.get(self.engine, DEBIAN_ORIGIN)

    @property
    def first_step(self) -> str:
        return "fetching Debian's source"

    def candidates(self, spec: ServerBuildSpec, recipe: Recipe, skipped: list[str]) -> Iterator[str]:
        _, package, versions = self._list()
        if spec.version is not None:
            if spec.version not in versions:
                raise UserError(f"{spec.label()}: Debian's archive no longer lists {package} {spec.version}, the "
                                "version of the PGO build this is the base of")
            versions = [spec.version]
        for version in versions:
            refused = scope_kind(spec.pgo_scope).version_refusal(recipe, version) if spec.pgo else None
            if refused:
                skipped.append(f"{version}: {refused}")
                continue
            yield version

    def known_version(self) -> str | None:
        return None  # only the archive knows its newest version (an apt update)

    def key_source(self, version: str) -> tuple[str, str]:
        return self._list()[1], version

    def kept_identity(self, version: str) -> dict[str, Any]:
        return {"engine": self.engine, "origin": DEBIAN_ORIGIN, "package": self._list()[1], "version": version}

    def pinned(self, spec: ServerBuildSpec, version: str) -> ServerBuildSpec:
        return replace(spec, version=version)

    def fetch(self, version: str, work: Path, skipped: list[str], announce: Announce | None) -> tuple[Path, dict[
            str, Any]]:
        apt, package, _ = self._list()
        try:
            source = fetch_debian_source(apt, package, self.engine, version, work, skipped, announce)
        except UserError as e:
            raise Unserved(str(e)) from None
        return source.tree, source.provenance

    def into_kept(self, version: str, tree: BuildTree, skipped: list[str], announce: Announce | None
                  ) -> Refresh | None:
        if tree.record.provenance is None:  # new, or its fetch did not finish
            tree.clear_source()
            _, provenance = self.fetch(version, tree.root, skipped, announce)
            tree.set_source(provenance)
        return None  # the kept tree is of this version already: only its patches switch

    def how_made(self, spec: ServerBuildSpec, recipe: Recipe) -> str:
        return f"from Debian's source, {recipe.build_time} per build"

    def none_left(self, spec: ServerBuildSpec, skipped: list[str]) -> UserError:
        return UserError(f"{spec.label()}: no version of Debian's {self.word} could be fetched "
                         f"({'; '.join(skipped)[-300:]})")
