"""What a server recipe is: how one engine is configured, built and installed from Debian's source (the build
pipeline, buildlab/server_build.py, runs it; buildlab/recipes/__init__.py finds each recipe by its module's RECIPE)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from dbperf.buildlab.rebuilt import compiles_in
from dbperf.host.compiler import Compiler


@dataclass(frozen=True)
class Departure:
    """One way a recipe's server is built otherwise than Debian's own (its debian/rules): the part, the cmake
    options that say it, why the lab's experiments do not need Debian's way, and the compile steps it saves (counted
    in the build.ninja of a configure, not timed)."""
    part: str
    options: tuple[str, ...]
    reason: str
    steps_saved: int

    def record(self) -> dict[str, Any]:
        """What a build's manifest says of it."""
        return {**asdict(self), "options": list(self.options)}


def with_options(base: tuple[str, ...], departures: tuple[Departure, ...]) -> tuple[str, ...]:
    """`base` with each departure's options: one that sets a -D variable `base` sets replaces it in place, the
    others are appended, so that the two recipes share one option list."""
    changed = {o.split("=", 1)[0]: o for d in departures for o in d.options}
    kept = tuple(changed.pop(o.split("=", 1)[0], o) for o in base)
    return kept + tuple(changed.values())


class Recipe(ABC):
    """One engine's recipe: its facts as class data (`options` and `engine` are part of the cache key), its steps as
    methods. A module of this package that holds a RECIPE is found (recipes/__init__.py)."""
    engine: ClassVar[str]
    options: ClassVar[tuple[str, ...]]  # part of the cache key
    tools: ClassVar[dict[str, str]]  # programs the build runs -> the Debian package that has them
    headers: ClassVar[dict[str, str]]  # headers of the libraries it needs -> the Debian package that has them
    language: ClassVar[str]  # what those headers are included from: "c" or "c++"
    build_time: ClassVar[str]  # one build's time on the lab's 2-core VM, as measured (a PGO build: about twice)
    resumable: ClassVar[bool]  # whether a rerun of its interrupted commands safely continues them (resume.py)
    departures: ClassVar[tuple[Departure, ...]] = ()  # what its manifest says differs from Debian's build, and why

    def lean(self) -> Recipe | None:
        """The engine's leaner lab build (`lean = true` of a target), None when it has none."""
        return None
    # What the top of a checkout of the engine's source holds (a `tree` is refused without it: sources/tree.py); ()
    # for a recipe that builds no user's tree. A recipe that builds trees is bisected by `dbperf bisect --tree` too.
    tree_files: ClassVar[tuple[str, ...]] = ()
    # The source folders a partial PGO build (`pgo_scope = "query-path"`, buildlab/profile_scope.py) instruments and
    # re-optimises, relative to the top of the source: those the measured queries run through. () for a recipe
    # whose compiles cannot be launched by source path (launched_commands).
    profile_dirs: ClassVar[tuple[str, ...]] = ()
    # The sources of those directories a first training profile showed hot (`pgo_scope = "hot-path"`): a file of
    # recipes/data/ (buildlab/hot_sources.py), None for a recipe without one.
    hot_sources: ClassVar[str | None] = None
    # Why the recipe's stock build compiles every object with -fdata-sections already (each object a section of its
    # own, what the layout fix's fragment moves; layout/fix.py), None when it does not: the fix's A/B then relinks
    # the stock build itself instead of building a -fdata-sections base.
    data_sections: ClassVar[str | None] = None

    @abstractmethod
    def expected_steps(self, tree: Path) -> int: ...

    @abstractmethod
    def commands(self, tree: Path, prefix: Path, cc: Compiler, flags: list[str], jobs: int) -> list[list[str]]:
        """Configure, build, install: the first command configures (run once in a kept build tree, whose later
        builds start at the second), the last installs into `prefix`."""
        ...

    def launched_commands(self, tree: Path, prefix: Path, cc: Compiler, flags: list[str], launcher: list[str],
                          link: list[str], jobs: int) -> list[list[str]]:
        """A partial PGO stage's commands (profile_dirs): as `commands` with the base's `flags`, every compile run
        through `launcher` (which adds the stage's own flags by source path) and `link` added to every link. Only a
        recipe with profile_dirs has them."""
        raise NotImplementedError(f"{self.engine}'s recipe names no profile_dirs")

    @abstractmethod
    def binaries(self, prefix: Path) -> Path: ...

    @abstractmethod
    def server_binary(self, prefix: Path) -> Path: ...

    @abstractmethod
    def is_step(self, line: str) -> bool:
        """Whether a line of the build's output is one compile step."""
        ...

    def rebuilt_objects(self, tree: Path, since_ns: int, output: str) -> int:
        """How many objects a build compiled: by default its compiler invocations in `output`, the build tool's
        lines from its start (make prints each command it runs); a build tool that logs what it ran says it
        better (ninja: CmakeNinjaRecipe). `since_ns`: the build's start, as the file system's clock read it."""
        return compiles_in(output, self.is_step)

    def relink_outputs(self, tree: Path) -> tuple[Path, ...]:
        """What a relink (a build that differs from its base by `ldflags` alone, in the base's kept tree) removes
        before it builds, so that the build tool links it again: nothing where the build tool relinks an output
        whose command changed (ninja: CmakeNinjaRecipe); the server binary where it does not (make)."""
        return ()

    @abstractmethod
    def clean_commands(self, tree: Path) -> list[list[str]]:
        """What removes the objects of a build (between PGO's instrumented and profile-use builds)."""
        ...

    @abstractmethod
    def objects_root(self, tree: Path) -> Path:
        """Where the build writes its objects (and PGO's notes beside them): what the engine's ProfileProof.objects
        are relative to."""
        ...
