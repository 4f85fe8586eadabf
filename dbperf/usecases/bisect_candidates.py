"""What a `dbperf bisect` searches over, asked rather than branched on: the published releases of a server
(`dbperf bisect ENGINE FIRST LAST`), the SQLite releases the lab builds from source (`dbperf bisect sqlite FIRST
LAST`) or the commits of a user's checkout (`dbperf bisect --tree PATH --engine E GOOD BAD`,
buildlab/commit_range.py). Each kind checks the settings, lists its candidates oldest first, and gives a candidate
as a target table of the experiments the steps run (usecases/bisect_step.py, bisect_work.py; written by
experiment/toml_text.py): a release as `source = "ENGINE@VERSION"`, a commit as `tree = PATH, rev = HASH`, built
through the build lab's user-tree source (its cache key the commit's tree, its manifest the commit): SQLite's in the
build cache, PostgreSQL's in the kept build tree of the checkout (buildlab/sources/tree.py), where a commit rebuilds
what it changed since the last one built there."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from dbperf import engines
from dbperf.buildlab.commit_range import commit_of, commit_range
from dbperf.buildlab.recipes import recipe_for, recipes
from dbperf.buildlab.server_releases import available_versions
from dbperf.buildlab.sources.tree import resolve_server_tree
from dbperf.buildlab.sqlite_source import known_versions, semver
from dbperf.errors import UserError
from dbperf.experiment.build_variants import FLAG
from dbperf.experiment.spec import sqlite_settings
from dbperf.experiment.user_source import UserTree
from dbperf.storage.bisect_path import CommitFacts, StepSettings
from dbperf.usecases.bisect_settings import (
    check_config_names,
    check_server_settings,
    check_settings,
    check_step_options,
    release_range,
)


class Candidates(Protocol):
    noun: str  # "releases" or "commits", as lines say them
    how: str  # how the candidates were listed, for the bisect's first line
    skips: bool  # a candidate that cannot be built or counted is skipped (else it ends the bisect)

    def check(self) -> None: ...

    def span(self, first: str, last: str) -> list[str]: ...

    def name(self, candidate: str) -> str: ...

    def word(self, candidate: str) -> str: ...

    def target(self, candidate: str) -> dict[str, Any]: ...

    def facts(self, candidate: str) -> CommitFacts | None: ...


def _check_cflags(cflags: list[str]) -> None:
    for flag in cflags:
        if not FLAG.match(flag):
            raise UserError(f"--cflag: expected a compiler option such as -O0 or -DSQLITE_DEBUG, got {flag!r}")


def target_name(engine: str, version: str) -> str:
    return f"{engine}-{version}"


@dataclass
class Releases:
    """A server's published releases (released binaries, fetched or cached)."""
    settings: StepSettings
    noun = "releases"
    how = "one per release, the newest rebuild of each"
    skips = False  # a release that cannot be fetched is the lab's problem, not the range's: said, not passed over

    def check(self) -> None:
        if self.settings.cflags:
            raise UserError("--cflag goes with --tree or sqlite's releases (a server's releases are built by their "
                            "publishers)")
        check_settings(self.settings)

    def span(self, first: str, last: str) -> list[str]:
        engine = self.settings.engine
        versions = release_range(engine, first, last, available_versions(engine))
        check_config_names(self.settings, versions)
        return versions

    def name(self, candidate: str) -> str:
        return target_name(self.settings.engine, candidate)

    def word(self, candidate: str) -> str:
        return candidate

    def target(self, candidate: str) -> dict[str, Any]:
        cflags = {"cflags": list(self.settings.cflags)} if self.settings.cflags else {}  # SQLite's: built here
        return {"name": self.name(candidate), "source": f"{self.settings.engine}@{candidate}", **cflags}

    def facts(self, candidate: str) -> CommitFacts | None:
        return None


@dataclass
class Commits:
    """The first-parent commits of a checkout from GOOD to BAD, each built by the build lab from `tree` at `rev`."""
    settings: StepSettings
    noun = "commits"
    how = "first-parent, oldest first: git rev-list --first-parent --reverse GOOD..BAD"
    skips = True  # as `git bisect skip`: a commit that does not build is left out, a neighbour tried

    def check(self) -> None:
        s = self.settings
        engine = engines.engine(s.engine)
        recipe = recipe_for(s.engine) if engine.server else None
        if engine.server and (recipe is None or not recipe.tree_files):
            takes = [engines.DEFAULT.name, *(r.engine for r in recipes().values() if r.tree_files)]
            raise UserError(f"bisect --tree: {engine.title} is not built from a tree (--engine {', '.join(takes)} "
                            f"are); bisect {engine.title}'s releases with `dbperf bisect {s.engine} FIRST LAST`")
        if not s.metric.trees:
            raise UserError(f"bisect --tree: --metric {s.metric.name} is not supported: a tree's commits are "
                            "bisected by simulated work (the step found is then confirmed by the wall clock)")
        _check_cflags(s.cflags)
        if engine.server:  # as a release bisect's settings: the server's --config names and values among them
            check_server_settings(self.settings)
            return
        check_step_options(s)
        sqlite_settings(s.config, "bisect --config")  # PRAGMAs (journal_mode=WAL): a WAL regression is seen

    def span(self, first: str, last: str) -> list[str]:
        assert self.settings.tree is not None
        commits = [c.hash for c in commit_range(Path(self.settings.tree), first, last)]
        recipe = recipe_for(self.settings.engine)
        if recipe is not None:  # a server's: GOOD is the engine's tree (else one line now, not after a build)
            resolve_server_tree(self.settings.engine, recipe, UserTree(self.settings.tree, commits[0]))
        return commits

    def name(self, candidate: str) -> str:
        return target_name(self.settings.engine, self.word(candidate))

    def word(self, candidate: str) -> str:
        return candidate[:12]

    def target(self, candidate: str) -> dict[str, Any]:
        # a target without a source is SQLite's unless it names its engine
        engine = {"engine": self.settings.engine} if engines.engine(self.settings.engine).server else {}
        cflags = {"cflags": list(self.settings.cflags)} if self.settings.cflags else {}
        return {"name": self.name(candidate), **engine, "tree": self.settings.tree, "rev": candidate, **cflags}

    def facts(self, candidate: str) -> CommitFacts | None:
        assert self.settings.tree is not None
        c = commit_of(Path(self.settings.tree), candidate)
        return CommitFacts(c.hash, c.subject, c.author)


@dataclass
class SqliteReleases(Releases):
    """The SQLite releases the lab builds from source (the amalgamations of the libsqlite3-sys crates it knows:
    buildlab/sqlite_source.py), each a target `source = "sqlite@VERSION"` built -O2 like the demo's (with any
    --cflag appended); named, written and judged as a server's releases are."""
    how = "one per SQLite release the lab builds from its crates (`dbperf build --versions sqlite`)"

    def check(self) -> None:
        check_step_options(self.settings)
        _check_cflags(self.settings.cflags)
        sqlite_settings(self.settings.config, "bisect --config")  # PRAGMAs (journal_mode=WAL)

    def span(self, first: str, last: str) -> list[str]:
        known = sorted(set(known_versions().values()), key=semver)
        for version in (first, last):
            if version not in known:
                raise UserError(f"bisect sqlite: {version!r} is not a SQLite release the lab builds (known: "
                                f"{', '.join(known)}; `dbperf build --versions sqlite --scan N` finds more)")
        if semver(first) > semver(last):
            raise UserError(f"bisect: reversed range: {first} is newer than {last}; give the older version first")
        versions = [v for v in known if semver(first) <= semver(v) <= semver(last)]
        if len(versions) < 2:
            raise UserError(f"bisect: {first}..{last} holds one release ({first}): nothing to bisect")
        return versions


def target_table(settings: StepSettings, candidate: str) -> dict[str, Any]:
    """A candidate as a target of a step's or a count's experiment, with the bisect's settings (--config)."""
    config = {"config": dict(settings.config)} if settings.config else {}
    return {**candidates(settings).target(candidate), **config}


def candidates(settings: StepSettings) -> Candidates:
    """The kind of what `settings` bisects: a tree's commits, SQLite's releases built from source, or a server's
    released binaries."""
    if settings.tree:
        return Commits(settings)
    return Releases(settings) if engines.engine(settings.engine).server else SqliteReleases(settings)
