"""The build lab's use cases without a run: build an experiment's targets, list the caches, list the versions that
exist upstream."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from dbperf import engines
from dbperf.buildlab.builder import cached_builds
from dbperf.buildlab.server_cache_listing import cached_server_builds, how_built, partial_server_builds
from dbperf.buildlab.server_releases import SOURCES as SERVER_RELEASES
from dbperf.buildlab.server_releases import available_versions, cached_releases, release_name
from dbperf.buildlab.sources import source_words
from dbperf.buildlab.sqlite_source import CRATE, scan_versions
from dbperf.engines.sqlite import SQLITE
from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.runner.targets import build_targets
from dbperf.usecases.progress import PROGRESS


@dataclass
class Listing:
    """One cache as a table: `title` None for the SQLite builds (always shown, even empty)."""
    title: str | None
    columns: tuple[str, ...]
    rows: list[tuple[str, ...]]


def profile_share(manifest: dict[str, Any]) -> str:
    """A PGO build's proven profile as its share of the engine's functions with a count (profile_proof.py), "-"
    without PGO, "unproven" for a build made before profiles were proven."""
    pgo = manifest.get("pgo")
    if not pgo:
        return "-"
    proof = pgo.get("proof")
    if not proof:
        return "unproven"
    return f"{100 * proof['share']:.1f}% of {proof['functions']:,}"


def guard_ratio(manifest: dict[str, Any]) -> str:
    """A PGO build's guard (pgo_guard.py) as its instructions per query against its base's, "×0.928"; "not run"
    where it could not count (the manifest says why), "pending" for a server build cached before servers had a guard
    (it runs when the build is next used), "refused" when it failed, "-" without PGO."""
    pgo = manifest.get("pgo")
    if not pgo:
        return "-"
    guard = pgo.get("guard") or {}
    pgo_ipq, base_ipq = guard.get("pgo_instructions_per_query"), guard.get("base_instructions_per_query")
    ratio = f"×{pgo_ipq / base_ipq:.3f}" if pgo_ipq and base_ipq else ""
    if guard.get("refused"):
        return f"refused {ratio}".strip()
    if ratio:
        return ratio
    if "not_run" in guard:
        return "not run" if "version" in guard else "pending"
    return "-"


def sqlite_source(manifest: dict[str, Any]) -> str:
    """A cached SQLite build's source for the listing: its version, and where it is not a release as published, what
    its label names (the tree's commit, the patches)."""
    version = str(manifest["source"]["sqlite_version"])
    origin = str(manifest["label"]).split(" [", 1)[0].removeprefix("sqlite@")
    return version if origin == version else f"{version} ({origin})"


def cache_listings() -> list[Listing]:
    """The SQLite builds, then the server builds and the fetched server releases when there are any."""
    sqlite = Listing(None, ("key", "sqlite", "variants / cflags", "PGO training", "PGO share", "PGO guard", "built",
                            "seconds", "library"), [
        (m["key"], sqlite_source(m), " ".join(m["variants"] + m["cflags"] + m["ldflags"]),
         ", ".join((m.get("pgo") or {}).get("training_set", [])) or "-", profile_share(m), guard_ratio(m),
         m["built_at"], str(m["build_seconds"]), m["library"]) for m in cached_builds()])
    servers = Listing("server builds", ("key", "build", "source", "PGO .gcda", "PGO share", "PGO guard",
                                        "built", "seconds", "CPU seconds", "install"), [
        (m["key"], m["label"], source_words(m["source"]),
         str((m.get("pgo") or {}).get("profile_files", "-")), profile_share(m), guard_ratio(m), m["built_at"],
         str(m["build_seconds"]), str(m.get("build_cpu_seconds", "-")), m["install"])
        for m in cached_server_builds()])
    partial = Listing("server builds interrupted, resumed by the next build of their key",
                      ("key", "build", "compile steps", "segments", "seconds", "CPU seconds", "last started",
                       "folder"), [
        (p["key"], p["label"], str(p["steps"]), str(p["segments"]), str(p["seconds"]), str(p["cpu_seconds"]),
         p["last"], p["path"]) for p in partial_server_builds()])
    releases = Listing("server releases", ("engine", "version", "published as", "jar sha256", "fetched"), [
        (r["engine"], r["version"], r["published_version"], r["jar_sha256"][:16], r["fetched_at"])
        for r in cached_releases()])
    return [sqlite, *(listing for listing in (servers, partial, releases) if listing.rows)]


@dataclass
class Versions:
    heading: str
    lines: list[str]


def upstream_versions(engine: str, scan: int, err: Console = PROGRESS) -> Versions:
    """Which versions exist: SQLite's as bundled by the newest `scan` crate releases (each crate not yet downloaded
    said on `err` first), a server's released binaries."""
    if engine in SERVER_RELEASES:
        published = available_versions(engine)
        names = dict.fromkeys(release_name(engine, p) for p in published)  # rebuilds (-1) once
        return Versions(f"{SERVER_RELEASES[engine].description}: write source = \"{engine}@VERSION\"",
                        ["  " + ", ".join(names)])
    if engine != SQLITE.name:
        raise UserError(f"--versions: expected {', '.join(engines.NAMES)}, got {engine!r}")
    mapping, stopped = scan_versions(scan, lambda said: err.print(f"dbperf: {said}", highlight=False, markup=False))
    passed = ([f"  (scan stopped at {CRATE} {stopped} of the newest {scan}: it bundles no SQLite amalgamation, nor "
               "does any older release)"] if stopped else [])
    return Versions(f"SQLite versions bundled by the newest {len(mapping)} {CRATE} releases on crates.io (read from "
                    "each amalgamation's SQLITE_VERSION):",
                    [f"  sqlite@{sqlite_version}   ({CRATE} {crate_version})"
                     for crate_version, sqlite_version in mapping.items()] + passed)


def build_experiment(experiment: Path, err: Console = PROGRESS) -> list[str]:
    """Builds (or finds cached) every `source` target; a line per target saying what it got."""
    _, builds = build_targets(parse_experiment(experiment), err)
    if not builds:
        raise UserError(f"{experiment}: no target has a 'source' to build")
    lines = []
    for name, manifest in builds.items():
        if "release" in manifest:
            release = manifest["release"]
            lines.append(f"{name}: {release['engine']}@{release['version']} released binaries, jar sha256 "
                         f"{release['jar_sha256']}")
            continue
        how = "cached" if manifest["cached"] else how_built(manifest)
        lines.append(f"{name}: {manifest['label']} -> {manifest.get('library') or manifest['install']} ({how})")
    return lines
