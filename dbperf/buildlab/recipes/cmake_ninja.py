"""What the cmake + ninja recipes share (MariaDB's and MySQL's): no RECIPE of its own."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from dbperf.buildlab.rebuilt import ninja_rebuilt
from dbperf.buildlab.recipes.base import Recipe
from dbperf.host.compiler import Compiler


class CmakeNinjaRecipe(Recipe):
    """What MariaDB's and MySQL's recipes share: cmake into lab-build/ with ninja, the variant's flags for every
    compile (and its LTO, profile and linker flags for every link), compile steps counted from ninja's lines. A
    subclass gives its engine, cmake `options`, the source folders it leaves out (SKIPPED), tools, headers and
    where its install keeps the server."""
    options: ClassVar[tuple[str, ...]] = ()
    SKIPPED: ClassVar[tuple[str, ...]] = ()
    language: ClassVar[str] = "c++"
    resumable: ClassVar[bool] = True  # ninja rebuilds every output its log does not list as finished
    STEP = re.compile(r"^\[\d+/\d+\] Building (C|CXX) object ")
    BUILD_DIR = "lab-build"

    def expected_steps(self, tree: Path) -> int:
        return sum(1 for p in tree.rglob("*") if p.suffix in (".c", ".cc", ".cpp")
                   and not any(s in str(p.relative_to(tree)).lower() for s in self.SKIPPED))

    def commands(self, tree: Path, prefix: Path, cc: Compiler, flags: list[str], jobs: int) -> list[list[str]]:
        """cmake, ninja, ninja install."""
        link_only = [f for f in flags if f.startswith("-Wl,")]
        link = [f for f in flags if f.startswith(("-flto", "-fprofile")) or f in link_only]
        return self._commands(tree, prefix, cc, [f for f in flags if f not in link_only], link,
                              [cc.launcher] if cc.launcher else [], jobs)

    def launched_commands(self, tree: Path, prefix: Path, cc: Compiler, flags: list[str], launcher: list[str],
                          link: list[str], jobs: int) -> list[list[str]]:
        """`commands` with `launcher` (a program and its arguments: cmake's list) before every compile and `link`
        after the variant's link flags."""
        base = [f for f in flags if f.startswith(("-flto", "-Wl,"))]
        return self._commands(tree, prefix, cc, [f for f in flags if not f.startswith("-Wl,")], [*base, *link],
                              launcher, jobs)

    def _commands(self, tree: Path, prefix: Path, cc: Compiler, compile_flags: list[str], link: list[str],
                  launcher: list[str], jobs: int) -> list[list[str]]:
        build = tree / self.BUILD_DIR
        return [["cmake", "-S", str(tree), "-B", str(build), *self.options, f"-DCMAKE_INSTALL_PREFIX={prefix}",
                 f"-DCMAKE_C_COMPILER={cc.path}", f"-DCMAKE_CXX_COMPILER={cc.cxx}",
                 *([f"-DCMAKE_{lang}_COMPILER_LAUNCHER={';'.join(launcher)}" for lang in ("C", "CXX")]
                   if launcher else []),
                 f"-DCMAKE_C_FLAGS={' '.join(compile_flags)}", f"-DCMAKE_CXX_FLAGS={' '.join(compile_flags)}",
                 *(f"-DCMAKE_{kind}_LINKER_FLAGS={' '.join(link)}" for kind in ("EXE", "SHARED", "MODULE"))],
                ["ninja", "-C", str(build), f"-j{jobs}"],
                # cmake's install skips a file whose time and size match the installed one: a relink within the
                # same second as the build before it would leave the old binary installed
                ["cmake", "-E", "env", "CMAKE_INSTALL_ALWAYS=1", "ninja", "-C", str(build), "install"]]

    def is_step(self, line: str) -> bool:
        return bool(self.STEP.match(line))

    def rebuilt_objects(self, tree: Path, since_ns: int, output: str) -> int:
        """The objects .ninja_log says were written since the build started."""
        log = tree / self.BUILD_DIR / ".ninja_log"
        return ninja_rebuilt(log.read_text(errors="replace"), since_ns) if log.is_file() else 0

    def clean_commands(self, tree: Path) -> list[list[str]]:
        return [["ninja", "-C", str(tree / self.BUILD_DIR), "clean"]]

    def objects_root(self, tree: Path) -> Path:
        return tree / self.BUILD_DIR  # cmake's: sql/CMakeFiles/sql.dir/...
