"""Servers built from source by the lab, cached by what determines the result.

Cache: the server cache's build/<key>/ holds install/ (bin, lib, share), build.log and manifest.json. The key hashes
the engine, Debian's source package and version, the compiler flags, the compiler's version and the recipe's own
options. A build runs in a staging directory beside its final place and is renamed into it only when installed and
its manifest written: an interrupted or failed build leaves no entry (its log is kept in the build/failed/ folder).

How each engine is configured, built and installed is its recipe (PostgresRecipe here; a new engine is a new
recipe). Parallel compile on all cores; progress is the build's own compile steps counted against the sources.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Protocol

from dbperf.buildlab.compiler import Compiler, find_compiler
from dbperf.buildlab.debian_source import candidate_versions, fetch_debian_source
from dbperf.buildlab.paths import open_to_service_users, server_cache
from dbperf.buildlab.variants import ServerBuildSpec
from dbperf.errors import UserError
from dbperf.storage.host import sha256_of
from dbperf.tools import tail

Progress = Callable[[str, int, int], None]  # (phase, steps done, steps expected)


class Recipe(Protocol):
    engine: ClassVar[str]
    options: ClassVar[tuple[str, ...]]  # part of the cache key

    def expected_steps(self, tree: Path) -> int: ...

    def commands(self, tree: Path, prefix: Path, cc: Compiler, flags: list[str], jobs: int) -> list[list[str]]: ...

    def binaries(self, prefix: Path) -> Path: ...

    def server_binary(self, prefix: Path) -> Path: ...

    def is_step(self, line: str) -> bool:
        """Whether a line of the build's output is one compile step."""
        ...


class PostgresRecipe:
    """configure + make: the server, its libraries and tools; no readline or ICU (the lab needs neither), no LLVM
    JIT. PostgreSQL finds share/ and lib/ relative to its binaries, so the install can be moved into place."""
    engine: ClassVar[str] = "postgres"
    options: ClassVar[tuple[str, ...]] = ("--without-readline", "--without-icu", "--without-llvm")
    COMPILE = re.compile(r"\s-c\s")

    def expected_steps(self, tree: Path) -> int:
        skip = ("test", "tutorial", "pl/plperl", "pl/plpython", "pl/tcl", "makefiles", "tools")
        return sum(1 for p in (tree / "src").rglob("*.c")
                   if not any(part in str(p.relative_to(tree / "src")) for part in skip))

    def commands(self, tree: Path, prefix: Path, cc: Compiler, flags: list[str], jobs: int) -> list[list[str]]:
        ldflags = [f for f in flags if f.startswith("-flto") or f.startswith("-fprofile")]
        return [["./configure", f"--prefix={prefix}", *self.options, f"CC={cc.path}", f"CFLAGS={' '.join(flags)}",
                 f"LDFLAGS={' '.join(ldflags)}"],
                ["make", f"-j{jobs}"],
                ["make", "install"]]

    def binaries(self, prefix: Path) -> Path:
        return prefix / "bin"

    def server_binary(self, prefix: Path) -> Path:
        return prefix / "bin" / "postgres"

    def is_step(self, line: str) -> bool:
        return bool(self.COMPILE.search(line))


RECIPES: dict[str, Recipe] = {"postgres": PostgresRecipe()}


@dataclass(frozen=True)
class ServerBuild:
    root: Path  # the install prefix
    binaries: Path  # what a target's `binaries` names
    manifest: dict[str, Any]
    cached: bool


def _key(spec: ServerBuildSpec, package: str, version: str, cc: Compiler, recipe: Recipe) -> str:
    identity = {"engine": spec.engine, "origin": spec.origin, "package": package, "version": version,
                "flags": spec.flags(), "compiler": cc.version, "recipe": list(recipe.options)}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]


def _cached(entry: Path, recipe: Recipe) -> ServerBuild | None:
    manifest_path = entry / "manifest.json"
    if not manifest_path.is_file():
        return None
    manifest = json.loads(manifest_path.read_text())
    return ServerBuild(entry / "install", recipe.binaries(entry / "install"), manifest, cached=True)


def build_server(spec: ServerBuildSpec, on_progress: Progress | None = None) -> ServerBuild:
    recipe = RECIPES.get(spec.engine)
    if recipe is None:
        raise UserError(f"{spec.label()}: building {spec.engine} from source is not supported yet (PostgreSQL is); "
                        f"use released binaries (source = \"{spec.engine}@VERSION\") or Debian's package")
    cc = find_compiler()
    apt, package, versions = candidate_versions(spec.engine)
    builds = server_cache() / "build"
    builds.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    for version in versions:
        key = _key(spec, package, version, cc, recipe)
        found = _cached(builds / key, recipe)
        if found:
            return found
        work = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=builds))
        try:
            try:
                source = fetch_debian_source(apt, package, spec.engine, version, work, skipped)
            except UserError as e:
                skipped.append(f"{version}: {e}")
                continue
            return _build(spec, recipe, cc, source.tree, source.provenance, key, work, builds / key, on_progress)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    raise UserError(f"{spec.label()}: no version of Debian's {package} could be fetched ({'; '.join(skipped)[-300:]})")


def _build(spec: ServerBuildSpec, recipe: Recipe, cc: Compiler, tree: Path, provenance: dict[str, Any], key: str,
           work: Path, final: Path, on_progress: Progress | None) -> ServerBuild:
    """Configures, builds and installs into work/install, then moves work into `final`."""
    prefix = work / "install"
    log = work / "build.log"
    jobs = os.cpu_count() or 1
    commands = recipe.commands(tree, prefix, cc, spec.flags(), jobs)
    expected = recipe.expected_steps(tree)
    started = time.monotonic()
    steps = 0
    try:
        with open(log, "w") as f:
            for cmd in commands:
                f.write("$ " + " ".join(cmd) + "\n")
                f.flush()
                proc = subprocess.Popen(cmd, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        errors="replace", env={**os.environ, "LC_ALL": "C"})
                assert proc.stdout is not None
                for line in proc.stdout:
                    f.write(line)
                    if recipe.is_step(line):
                        steps += 1
                        if on_progress:
                            on_progress("compiling", steps, expected)
                if proc.wait() != 0:
                    f.flush()
                    raise UserError(f"build of {spec.label()} failed at `{' '.join(cmd)[:60]}` (log {_keep_log(log)}):"
                                    f" {tail(log.read_text(errors='replace'), 3)}")
    except BaseException:
        if "proc" in locals() and proc.poll() is None:
            proc.kill()
        raise
    shutil.rmtree(tree, ignore_errors=True)  # the sources: only the install and the log are kept
    manifest = {
        "key": key, "label": spec.label(), "engine": spec.engine, "source": provenance,
        "variants": list(spec.variants), "cflags": list(spec.cflags), "flags": spec.flags(),
        "compiler": {"path": cc.path, "version": cc.version}, "commands": commands, "jobs": jobs,
        "compile_steps": steps, "server_binary_sha256": sha256_of(str(recipe.server_binary(prefix))),
        "build_seconds": round(time.monotonic() - started, 1),
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "install": str(final / "install"),
    }
    (work / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    open_to_service_users(work)
    if final.exists():
        shutil.rmtree(final)  # a leftover without a manifest
    os.replace(work, final)
    return ServerBuild(final / "install", recipe.binaries(final / "install"), manifest, cached=False)


def _keep_log(log: Path) -> Path:
    failed = server_cache() / "build" / "failed"
    failed.mkdir(exist_ok=True)
    kept = failed / f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{log.parent.name.strip('.')}.log"
    shutil.copyfile(log, kept)
    return kept


def cached_server_builds() -> list[dict[str, Any]]:
    builds = server_cache() / "build"
    return [json.loads(p.read_text()) for p in sorted(builds.glob("*/manifest.json"))] if builds.is_dir() else []
