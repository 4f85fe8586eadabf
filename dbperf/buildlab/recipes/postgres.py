"""PostgreSQL's recipe: configure + make."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from dbperf.buildlab.profile_proof import NOTES_FLAG
from dbperf.buildlab.recipes.base import Recipe
from dbperf.engines.postgres import POSTGRES
from dbperf.host.compiler import Compiler


class PostgresRecipe(Recipe):
    """configure + make: the server, its libraries and tools; no readline or ICU (the lab needs neither), no LLVM
    JIT. PostgreSQL finds share/ and lib/ relative to its binaries, so the install can be moved into place."""
    engine: ClassVar[str] = POSTGRES.name
    # --libdir under a "postgresql" directory: Debian's 50-per-version-dirs patch otherwise replaces the modules'
    # directory (pkglibdir) by the system's /usr/lib/postgresql/15/lib, so `make install` wrote the build's modules
    # over Debian's installed ones and the built server loaded whatever was installed there last. Literal
    # ${exec_prefix}, as autoconf's own default, expanded by make.
    options: ClassVar[tuple[str, ...]] = ("--without-readline", "--without-icu", "--without-llvm",
                                          "--libdir=${exec_prefix}/lib/postgresql")
    tools: ClassVar[dict[str, str]] = {"make": "make"}
    headers: ClassVar[dict[str, str]] = {"zlib.h": "zlib1g-dev"}
    language: ClassVar[str] = "c"
    build_time: ClassVar[str] = "about 5 minutes on 2 cores"
    tree_files: ClassVar[tuple[str, ...]] = ("configure", "GNUmakefile.in", "src")
    resumable: ClassVar[bool] = False  # make: an object killed mid-write looks up to date
    COMPILE = re.compile(r"\s-c\s")

    def expected_steps(self, tree: Path) -> int:
        skip = ("test", "tutorial", "pl/plperl", "pl/plpython", "pl/tcl", "makefiles", "tools")
        return sum(1 for p in (tree / "src").rglob("*.c")
                   if not any(part in str(p.relative_to(tree / "src")) for part in skip))

    def commands(self, tree: Path, prefix: Path, cc: Compiler, flags: list[str], jobs: int) -> list[list[str]]:
        # Profile flags go to make's PROFILE (added to CFLAGS and LDFLAGS of every object PostgreSQL builds), not
        # to configure: configure's test programs would otherwise write and then mismatch profiles of their own.
        profile = [f for f in flags if f.startswith("-fprofile") or f == NOTES_FLAG]
        link_only = [f for f in flags if f.startswith("-Wl,")]  # bolt's -Wl,-q: for the linker alone
        plain = [f for f in flags if f not in profile and f not in link_only]
        ldflags = [f for f in plain if f.startswith("-flto")] + link_only
        make_vars = [f"PROFILE={' '.join(profile)}"] if profile else []
        if any(f.startswith("-fprofile-generate") for f in profile):
            # libpq's build refuses a library that can call exit(); gcov's runtime does, so the instrumented build
            # skips that check the way PostgreSQL's own coverage builds do.
            make_vars.append("enable_coverage=yes")
        # --enable-depend: make then rebuilds the objects of a changed header too, which a kept build tree needs
        # (buildlab/build_tree.py); it changes no object, so it is not among the keyed `options`.
        return [["./configure", f"--prefix={prefix}", *self.options, "--enable-depend", f"CC={cc.command}",
                 f"CFLAGS={' '.join(plain)}", f"LDFLAGS={' '.join(ldflags)}"],
                ["make", f"-j{jobs}", *make_vars],
                ["make", "install", *make_vars]]

    def binaries(self, prefix: Path) -> Path:
        return prefix / "bin"

    def server_binary(self, prefix: Path) -> Path:
        return prefix / "bin" / "postgres"

    def is_step(self, line: str) -> bool:
        return bool(self.COMPILE.search(line))

    def relink_outputs(self, tree: Path) -> tuple[Path, ...]:
        return (tree / "src" / "backend" / "postgres",)  # make does not relink when only LDFLAGS changed

    def clean_commands(self, tree: Path) -> list[list[str]]:
        return [["make", "clean"]]

    def objects_root(self, tree: Path) -> Path:
        return tree  # in-tree objects: src/backend/...


RECIPE = PostgresRecipe()
