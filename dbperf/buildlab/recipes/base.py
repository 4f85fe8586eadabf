"""What a server recipe is: how one engine is configured, built and installed from Debian's source (the build
pipeline, buildlab/server_build.py, runs it; buildlab/recipes/__init__.py finds each recipe by its module's RECIPE)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from dbperf.buildlab.rebuilt import compiles_in
from dbperf.host.compiler import Compiler


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
    # What the top of a checkout of the engine's source holds (a `tree` is refused without it: server_tree.py); ()
    # for a recipe that builds no user's tree.
    tree_files: ClassVar[tuple[str, ...]] = ()
    # Whether `dbperf bisect --tree` takes the engine's trees (every commit a build in one kept tree, then counted
    # under valgrind): PostgreSQL's; not MariaDB's nor MySQL's, whose first builds take 10 to 60 minutes and whose
    # tree bisect has not been run.
    bisects_trees: ClassVar[bool] = False

    @abstractmethod
    def expected_steps(self, tree: Path) -> int: ...

    @abstractmethod
    def commands(self, tree: Path, prefix: Path, cc: Compiler, flags: list[str], jobs: int) -> list[list[str]]:
        """Configure, build, install: the first command configures (run once in a kept build tree, whose later
        builds start at the second), the last installs into `prefix`."""
        ...

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

    @abstractmethod
    def clean_commands(self, tree: Path) -> list[list[str]]:
        """What removes the objects of a build (between PGO's instrumented and profile-use builds)."""
        ...

    @abstractmethod
    def objects_root(self, tree: Path) -> Path:
        """Where the build writes its objects (and PGO's notes beside them): what the engine's ProfileProof.objects
        are relative to."""
        ...
