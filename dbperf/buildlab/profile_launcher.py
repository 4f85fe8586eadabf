"""The compiler launcher of a partial PGO build's two stages (profile_scope.py): cmake runs every compile as
`python -S -I profile_launcher.py STAGE.json COMPILER ARGS...`. A compile whose source lies under one of the stage's
directories (its path relative to the source tree; a source the build generated, relative to the build folder, so
that sql/'s parser counts as sql/) gets the stage's flags and runs as gcc itself; any other runs exactly as the base
build ran it: `ccache COMPILER ARGS...`, so that ccache serves the base build's object.

A program of its own, run thousands of times: the standard library only (no site, no dbperf, no msgspec), one JSON
file the lab wrote (profile_scope.LauncherStage; never a user's string through a shell), then exec. The path
functions are what tests/test_profile_launcher.py checks."""

from __future__ import annotations

import json
import os
import sys


def source_of(args: list[str]) -> str | None:
    """The source a compile command compiles: the argument after -c (cmake's rule ends `-o OBJECT -c SOURCE`);
    None for anything else cmake sends through a launcher."""
    try:
        i = args.index("-c")
    except ValueError:
        return None
    return args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("-") else None


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def scope_path(source: str, cwd: str, source_root: str, build_root: str) -> str | None:
    """`source` (absolute, or relative to `cwd`, the compile's folder) relative to the source tree, or for a file
    under the build folder (generated: sql_yacc.cc) relative to that folder; None outside both (system headers'
    sources, another tree). Symbolic links are resolved, `..` as the file system does."""
    path = os.path.realpath(os.path.join(cwd, source))
    for root in (os.path.realpath(build_root), os.path.realpath(source_root)):  # the build folder lies inside
        if _under(path, root):
            return os.path.relpath(path, root)
    return None


def profiled(relative: str | None, directories: list[str]) -> bool:
    """Whether a source at `relative` (scope_path) is in one of `directories` ("sql", "storage/innobase"): by whole
    path components, so that sqlx/ is not sql/."""
    return relative is not None and any(_under(relative, d.strip("/")) for d in directories)


def command(stage: dict[str, object], compile_args: list[str], cwd: str) -> list[str]:
    """What runs for one compile: the compiler with the stage's flags, or ccache and the compiler as the base."""
    dirs, flags, ccache = stage["directories"], stage["flags"], stage["ccache"]
    assert isinstance(dirs, list) and isinstance(flags, list) and isinstance(ccache, str)
    source = source_of(compile_args)
    if source is not None and profiled(scope_path(source, cwd, str(stage["source"]), str(stage["build"])), dirs):
        return [*compile_args, *flags]
    return [ccache, *compile_args] if ccache else compile_args


def main(argv: list[str]) -> None:
    with open(argv[1], encoding="utf-8") as f:
        stage = json.load(f)
    run = command(stage, argv[2:], os.getcwd())
    os.execvp(run[0], run)


if __name__ == "__main__":
    main(sys.argv)
