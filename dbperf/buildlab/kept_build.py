"""A server build in the kept build tree of its source (build_tree.py; server_build.py decides where a build is
made): configured once, then make or ninja rebuild what the switch of patches (or a user's revision) changed, ccache
serving what went back and forth; a relink only links. Its install is moved into the build's staging directory, and
what it reused is the manifest's `incremental`."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dbperf.buildlab.build_runner import BuildRunner, Progress
from dbperf.buildlab.build_tree import BuildTree
from dbperf.buildlab.compiler_cache import MISSING, find_ccache
from dbperf.buildlab.patches import with_patches
from dbperf.buildlab.paths import server_cache
from dbperf.buildlab.rebuilt import objects_digest
from dbperf.buildlab.recipes import Recipe
from dbperf.buildlab.resume import BuildState
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.host.compiler import Compiler


@dataclass(frozen=True)
class Made:
    """What a build made, for its manifest: its source's provenance, the commands run and how, and the variants'
    records (`incremental` here)."""
    provenance: dict[str, Any]
    commands: list[list[str]]
    jobs: int
    runner: BuildRunner
    variants: dict[str, Any]


def build_kept(spec: ServerBuildSpec, recipe: Recipe, cc: Compiler, tree: BuildTree, changed: int, work: Path,
               on_progress: Progress | None, state: BuildState, base: dict[str, Any] | None = None) -> Made:
    """Configures the kept tree if it is new (or its configure command changed: ccache came or went, or a relink's
    linker flags), builds (make or ninja rebuild what the switch of patches changed, ccache serves what went back
    and forth; a relink, `base` the manifest of the build it relinks, only links) and installs into the tree's
    prefix, which is moved into work/install: what it made, for its manifest."""
    ccache = find_ccache(server_cache() / "ccache", tree.root.parent, work / "ccache-stats.log")
    launcher = ccache.program if ccache else ""
    jobs = os.cpu_count() or 1
    # ldflags are -Wl,... options, which every recipe gives its links alone: the compiles are the base's
    commands = recipe.commands(tree.src, tree.prefix, replace(cc, launcher=launcher), [*spec.flags(), *spec.ldflags],
                               jobs)
    runner = BuildRunner(spec, recipe, tree.src, work / "build.log", on_progress, state)
    runner.env = ccache.environment() if ccache else {}
    reused, configure = tree.reused, tree.record.configured != commands[0]  # new, or another launcher
    with open(runner.log, "a") as f:
        f.write(f"# kept tree {tree.root} ({'reused' if reused else 'new'}; {changed} files switched)\n")
        f.write("" if ccache else f"# {MISSING}\n")
    # make cannot tell an object a killed compiler half wrote from a whole one: after an interruption, a make tree
    # is cleaned (a tree whose configure never finished has nothing to clean, nor the makefiles to do it with)
    clean = tree.begin() and not recipe.resumable and tree.record.configured is not None
    if clean:  # a clean that fails leaves the tree marked
        runner.run(recipe.clean_commands(tree.src), "cleaning after a build that did not finish")
    try:
        if configure:
            runner.run(commands[:1], "configuring")
            tree.configured(commands[0])
        # an empty prefix: cmake's install skips a file whose size and time (to the second) are the installed one's
        shutil.rmtree(tree.prefix, ignore_errors=True)
        since = state.result("tree-build-started")  # a resumed build's objects count from its first segment
        if since is None:
            stamp = tree.root / "build.started"
            stamp.touch()
            since = stamp.stat().st_mtime_ns  # the file system's clock, as the objects' mtimes
            state.finish("tree-build-started", since)
        if spec.ldflags:
            for linked in recipe.relink_outputs(tree.src):
                linked.unlink(missing_ok=True)
        start = runner.log.stat().st_size
        runner.run(commands[1:-1], "compiling")
        end = runner.log.stat().st_size  # the count reads the build's lines, not the install's (`install -c`)
        runner.run(commands[-1:], "installing")
    except UserError:
        # a command that failed: make and ninja wait for the compiles under way, and a compile that fails writes
        # no object, so the tree's objects are whole (only an interruption leaves it marked)
        tree.stopped()
        raise
    with open(runner.log, "rb") as f:
        f.seek(start)
        # the build tools' lines, without the runner's own (`$ command`, `# note`)
        output = "".join(line for line in f.read(end - start).decode(errors="replace").splitlines(keepends=True)
                         if not line.startswith(("$ ", "# ")))
    shutil.rmtree(work / "install", ignore_errors=True)  # a resumed build's, moved before it was cut short
    os.replace(tree.prefix, work / "install")
    tree.finished()
    incremental = {"tree": str(tree.root), "reused": reused, "configured": configure, "cleaned": clean,
                   "files_switched": changed, "objects_rebuilt": recipe.rebuilt_objects(tree.src, since, output),
                   "ccache": ccache.counts() if ccache else {"missing": MISSING},
                   "objects": objects_digest(recipe.objects_root(tree.src))}
    provenance = with_patches(tree.record.provenance or {}, spec.patches)
    relinked = {"ldflags": list(spec.ldflags), "relink": relink_record(spec, base, incremental)} if base else {}
    return Made(provenance, commands, jobs, runner, {"pgo": None, "bolt": None, "incremental": incremental,
                                                     **relinked})


def relink_record(spec: ServerBuildSpec, base: dict[str, Any], incremental: dict[str, Any]) -> dict[str, Any]:
    """What a relink says of its base: the base's key, and whether its objects are the base's (the digest of every
    object in the kept tree after the link against the one the base's manifest records; None for a base built
    before builds recorded it) and how many the relink compiled (none, unless the tree held another patch set)."""
    recorded = (base.get("incremental") or {}).get("objects") or {}
    objects = incremental["objects"]
    return {"base_key": base["key"], "ldflags": list(spec.ldflags),
            "object_count": objects["count"], "objects_sha256": objects["sha256"],
            "objects_equal": recorded.get("sha256") == objects["sha256"] if recorded else None,
            "objects_compiled": incremental["objects_rebuilt"]}
