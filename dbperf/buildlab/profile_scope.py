"""What a server's PGO build instruments and re-optimises (`pgo_scope`): every object, or the recipe's query path.

`whole` (the default) compiles every object twice more, instrumented and then with the profile, as Oracle's PGO
build of MySQL does. MySQL's lean recipe has about 2,100 objects: on 2 cores that is the -O2 base's 40 minutes, then
two builds of the same size with the training between them, past the three hours a PGO study may take from an empty
cache. `query-path` instruments and re-optimises only the objects whose source lies in the recipe's `profile_dirs`
(MySQL's and MariaDB's sql/, storage/innobase/, mysys/, strings/, vio/): the code the measured queries run through.
Every other object is the base build's (the same spec without PGO, which the guard needs anyway and which is
therefore built first): the stages compile through profile_launcher.py, cmake's compiler launcher, which gives a
compile in those directories the stage's profile flags and runs every other as the base build ran it, through
ccache, which serves the base's object, byte for byte.

Byte for byte, although the base was built in its kept tree (trees/KEY/src) and the PGO build in its staging folder
(build/.KEY/src): ccache's base directory is the server cache itself, above both, so that ccache rewrites every
absolute path under it (the source, -I folders, the dependency file) relative to the compile's folder
(lab-build/), the same in both trees; the compiler then sees ../sql/x.cc in either, and __FILE__ and the object's
file symbol agree. What still differs between the two trees are the generated headers that hold the install prefix
(MySQL's my_config.h: DEFAULT_BASEDIR and the like): ccache's direct mode misses on a file that includes them, then
its preprocessed mode finds the base's object unless the file expands one of those macros (those are mostly in
sql/ and mysys/, profiled anyway). The manifest's `pgo.scope.ccache` counts each stage's hits and misses.

`hot-path` narrows the same to the sources of those directories a first training profile showed hot, the recipe's
`hot_sources` list (hot_sources.py): the launcher matches a listed file as it matches a directory, by whole path.

The instrumented stage's links take -fprofile-generate (gcc links libgcov with it); the profile-use stage's links
take no profile flag. The manifest's `pgo.scope` names the directories with a profile; the proof checks that each
got .gcda files (profile_proof.py).
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import msgspec

from dbperf.buildlab import hot_sources, profile_launcher
from dbperf.buildlab.compiler_cache import CompilerCache, find_ccache, stats_of
from dbperf.buildlab.paths import server_cache
from dbperf.buildlab.recipes.base import Recipe
from dbperf.errors import UserError
from dbperf.experiment.build_variants import HOT_PATH, QUERY_PATH, WHOLE_PROGRAM
from dbperf.host.compiler import Compiler

# What the objects outside the profile's directories are, for the manifest.
ELSEWHERE = ("the base build's objects (the same source, flags and compiler without PGO), served by ccache: code "
             "outside these directories has the base's layout and inlining, no profile")


@dataclass(frozen=True)
class Stage:
    """One of PGO's two builds: its name (the manifest's and its files') and the profile flags its compiles add to
    the variant's (-fprofile-generate=..., or -fprofile-use=... and the lab's warnings)."""
    name: str
    flags: list[str]


class LauncherStage(msgspec.Struct, frozen=True):
    """STAGE.json, what profile_launcher.py reads (the standard library's json: it runs without msgspec)."""
    source: str  # the source tree, absolute
    build: str  # the build folder, where the build's generated sources are
    directories: list[str]  # relative to either
    flags: list[str]  # added to a compile of those directories' sources
    ccache: str  # what runs every other compile, before the compiler


class ScopeRecord(msgspec.Struct, frozen=True, kw_only=True):
    """The manifest's `pgo.scope` of a partial profile."""
    scope: str
    directories: list[str]  # the directories with a profile, relative to the top of the source
    sources: list[str] | None = None  # hot-path: the sources with a profile, within those directories
    elsewhere: str
    ccache: dict[str, dict[str, int]]  # stage -> hits and misses of the compiles sent through ccache


class ProfileScope(ABC):
    """What the two builds of a PGO build compile with the profile's flags."""
    reuses_base: ClassVar[bool]  # whether the base build must be in the compiler cache first

    @abstractmethod
    def commands(self, recipe: Recipe, tree: Path, prefix: Path, cc: Compiler, flags: list[str], stage: Stage,
                 jobs: int) -> list[list[str]]:
        """The recipe's commands of `stage` (`flags`: the variant's, without the profile's)."""
        ...

    @abstractmethod
    def environment(self, stage: Stage) -> dict[str, str]:
        """What the stage's commands run with, beside the build environment."""
        ...

    @abstractmethod
    def record(self) -> dict[str, Any] | None:
        """The manifest's `pgo.scope`; None for the whole program (the manifests of builds before scopes)."""
        ...

    @property
    def directories(self) -> tuple[str, ...]:
        """The directories the profile's proof checks; () for all."""
        return ()


class WholeProgram(ProfileScope):
    reuses_base: ClassVar[bool] = False

    def commands(self, recipe: Recipe, tree: Path, prefix: Path, cc: Compiler, flags: list[str], stage: Stage,
                 jobs: int) -> list[list[str]]:
        return recipe.commands(tree, prefix, cc, [*flags, *stage.flags], jobs)

    def environment(self, stage: Stage) -> dict[str, str]:
        return {}

    def record(self) -> dict[str, Any] | None:
        return None


class QueryPath(ProfileScope):
    """The recipe's profile_dirs, or the hot sources within them (`sources`), every other object from ccache (module
    docstring)."""
    reuses_base: ClassVar[bool] = True

    def __init__(self, name: str, dirs: tuple[str, ...], ccache: CompilerCache, work: Path,
                 sources: tuple[str, ...] = ()) -> None:
        self.name, self.dirs, self.ccache, self.work, self.sources = name, dirs, ccache, work, sources

    @property
    def directories(self) -> tuple[str, ...]:
        return self.dirs

    def commands(self, recipe: Recipe, tree: Path, prefix: Path, cc: Compiler, flags: list[str], stage: Stage,
                 jobs: int) -> list[list[str]]:
        """The stage's launcher config written into the build's folder, and the recipe's commands through it."""
        config = self.work / f"launcher-{stage.name}.json"
        config.write_bytes(msgspec.json.encode(LauncherStage(
            str(tree.resolve()), str(recipe.objects_root(tree).resolve()), list(self.sources or self.dirs), stage.flags,
            self.ccache.program)))
        link = [f.split("=", 1)[0] for f in stage.flags if f.startswith("-fprofile-generate")]
        return recipe.launched_commands(tree, prefix, cc, flags, launcher_argv(config), link, jobs)

    def _cache(self, stage: str) -> CompilerCache:
        return replace(self.ccache, stats_log=self.work / f"ccache-{stage}.log")

    def environment(self, stage: Stage) -> dict[str, str]:
        return self._cache(stage.name).environment()

    def record(self) -> dict[str, Any] | None:
        logs = {p.stem.removeprefix("ccache-"): p for p in sorted(self.work.glob("ccache-*.log"))}
        said: dict[str, Any] = msgspec.to_builtins(ScopeRecord(
            scope=self.name, directories=list(self.dirs), sources=list(self.sources) or None, elsewhere=ELSEWHERE,
            ccache={stage: stats_of(log.read_text(errors="replace")) for stage, log in logs.items()}))
        return said


def launcher_argv(config: Path) -> list[str]:
    """How cmake runs profile_launcher.py: this Python without site or the user's environment (it imports only the
    standard library: a compile's start-up stays short), the stage's config."""
    return [sys.executable, "-S", "-I", str(Path(profile_launcher.__file__).resolve()), str(config)]


class ScopeKind(ABC):
    """A value of `pgo_scope`, asked what it needs of a recipe, what it puts in the build's key and what it builds."""
    name: ClassVar[str]

    def refusal(self, recipe: Recipe) -> str | None:
        """Why a build of `recipe` cannot have this scope here (None when it can), checked before any build."""
        return None

    def version_refusal(self, recipe: Recipe, version: str) -> str | None:
        """Why a build of Debian's `version` cannot have it (None when it can): the build lab passes such a version
        over as one the archive does not serve, and says so."""
        return None

    def identity(self, recipe: Recipe, version: str) -> dict[str, Any] | None:
        """What the build's key holds of the scope; None for the whole program (the keys of builds before scopes)."""
        return None

    @abstractmethod
    def scope(self, recipe: Recipe, work: Path) -> ProfileScope:
        """The scope of a build in `work` (refusal said it can be had)."""
        ...


class Whole(ScopeKind):
    name: ClassVar[str] = WHOLE_PROGRAM

    def scope(self, recipe: Recipe, work: Path) -> ProfileScope:
        return WholeProgram()


class QueryPathKind(ScopeKind):
    """The recipe's profile_dirs; every other object the base's, from ccache."""
    name: ClassVar[str] = QUERY_PATH

    def refusal(self, recipe: Recipe) -> str | None:
        if not recipe.profile_dirs:
            return (f"pgo_scope = \"{self.name}\" needs a recipe that names its profile directories ({recipe.engine}'s "
                    "does not)")
        needs = self._needs(recipe)
        if needs:
            return needs
        if find_ccache(server_cache() / "ccache", server_cache(), Path("/dev/null")) is None:
            return f"pgo_scope = \"{self.name}\" takes the other objects from ccache (apt install ccache)"
        return None

    def _needs(self, recipe: Recipe) -> str | None:
        """What else the kind needs of the recipe."""
        return None

    def identity(self, recipe: Recipe, version: str) -> dict[str, Any] | None:
        refused = self.version_refusal(recipe, version)
        if refused:
            raise UserError(refused)
        return {"scope": self.name, "directories": list(recipe.profile_dirs)}

    def scope(self, recipe: Recipe, work: Path) -> ProfileScope:
        return QueryPath(self.name, recipe.profile_dirs, self._ccache(work), work)

    @staticmethod
    def _ccache(work: Path) -> CompilerCache:
        # The server cache as ccache's base directory: the base's kept tree and this build's folder both lie under it.
        ccache = find_ccache(server_cache() / "ccache", server_cache(), work / "ccache.log")
        assert ccache is not None
        return ccache


class HotPathKind(QueryPathKind):
    """The recipe's hot sources (its `hot_sources` list, made on one version) within its profile_dirs."""
    name: ClassVar[str] = HOT_PATH

    def _needs(self, recipe: Recipe) -> str | None:
        if recipe.hot_sources is None:
            return f"pgo_scope = \"{self.name}\" needs a recipe with a list of hot sources ({recipe.engine}'s has none)"
        return None

    def version_refusal(self, recipe: Recipe, version: str) -> str | None:
        hot = recipe_hot_sources(recipe)
        if version.split("-", 1)[0] == hot.version:
            return None
        return (f"pgo_scope = \"{self.name}\": {recipe.engine}'s hot sources were found on {hot.version}'s profile, "
                f"not {version}'s (scripts/hot_sources.py makes a list; or use query-path)")

    def identity(self, recipe: Recipe, version: str) -> dict[str, Any] | None:
        identity = super().identity(recipe, version)
        assert identity is not None
        return {**identity, "hot": recipe_hot_sources(recipe).identity()}

    def scope(self, recipe: Recipe, work: Path) -> ProfileScope:
        listed = tuple(recipe_hot_sources(recipe).sources)
        # the proof's directories: those of the recipe's that hold a listed source
        dirs = tuple(d for d in recipe.profile_dirs if any(profile_launcher.profiled(s, [d]) for s in listed))
        return QueryPath(self.name, dirs, self._ccache(work), work, listed)


KINDS: dict[str, ScopeKind] = {k.name: k for k in (Whole(), QueryPathKind(), HotPathKind())}


def scope_kind(name: str) -> ScopeKind:
    """The kind a spec's `pgo_scope` names (build_variants.py checked it is one of PGO_SCOPES)."""
    return KINDS[name]


def recipe_hot_sources(recipe: Recipe) -> hot_sources.HotSources:
    """The recipe's hot-sources list (HotPathKind.refusal has said it has one)."""
    assert recipe.hot_sources is not None
    return hot_sources.read(hot_sources.DATA / recipe.hot_sources)
