"""Turning an experiment's targets into runnable ones: build the `source` targets (in parallel, cached), then check
every library is a library of its engine, before anything is measured."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from dbperf.buildlab.builder import Build, build_all
from dbperf.buildlab.server_build import ServerBuild, build_server
from dbperf.buildlab.server_build_checks import check_can_build
from dbperf.buildlab.server_cache_listing import how_built
from dbperf.buildlab.server_releases import ServerInstall, fetch_release
from dbperf.buildlab.sources import origin_of, source_words
from dbperf.buildlab.sources.base import ServerOrigin
from dbperf.errors import UserError
from dbperf.experiment.build_variants import BuildSpec, ServerBuildSpec
from dbperf.experiment.model import Experiment
from dbperf.experiment.user_source import UserTree
from dbperf.host.driver import library_info
from dbperf.host.facts import sha256_of
from dbperf.runner.server_pgo_guard import count_server_guard
from dbperf.runner.server_training import train_server


def fetch_releases(e: Experiment, console: Console) -> tuple[Experiment, dict[str, dict[str, Any]]]:
    """The experiment with every released-server target's binaries set (fetched once, then cached), and each such
    target's release manifest."""
    wanted = [t for t in e.targets if t.release is not None]
    if not wanted:
        return e, {}
    installs: dict[tuple[str, str], ServerInstall] = {}
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), console=console,
                  transient=True) as progress:
        for t in wanted:
            assert t.release is not None
            key = (t.engine, t.release)
            if key in installs:
                continue
            task = progress.add_task(f"{t.engine}@{t.release}", total=None)
            installs[key] = install = fetch_release(
                t.engine, t.release, lambda done, total, task=task: progress.update(task, completed=done,
                                                                                   total=total or None))
            progress.remove_task(task)
            console.print(f"  {'cached ' if install.cached else 'fetched'} {t.engine}@{install.version}  "
                          f"{install.root}", highlight=False, markup=False)
    targets = tuple(replace(t, binaries=str(installs[(t.engine, t.release)].binaries)) if t.release else t
                    for t in e.targets)
    manifests = {t.name: {"release": installs[(t.engine, t.release)].manifest}
                 for t in e.targets if t.release is not None}
    return replace(e, targets=targets), manifests


def _checked(specs: list[ServerBuildSpec]) -> dict[ServerBuildSpec, ServerOrigin]:
    """Every build's tools checked before the first build (each takes minutes, some an hour), and each build's
    origin resolved once (buildlab/sources/), as SQLite's are (buildlab/sqlite_origin.py): every build of a user's
    tree, a PGO build's base included, is of one read of it, whatever the checkout holds by the time the build starts;
    the builds of an engine's Debian source ask its archive once."""
    read: dict[tuple[str, UserTree | None], ServerOrigin] = {}
    origins = {}
    for spec in specs:
        recipe, _ = check_can_build(spec)
        where = (spec.engine, spec.tree)
        if where not in read:
            read[where] = origin_of(spec, recipe)
        origins[spec] = read[where]
    return origins


def build_servers(e: Experiment, console: Console) -> tuple[Experiment, dict[str, dict[str, Any]]]:
    """The experiment with every server-from-source target's binaries set (built once, then cached), and each
    such target's build manifest. Server builds run one after another: each uses every core."""
    builds: dict[ServerBuildSpec, ServerBuild] = {}
    origins = _checked(list(dict.fromkeys(t.server_build for t in e.targets if t.server_build is not None)))
    for t in e.targets:
        spec = t.server_build
        if spec is None or spec in builds:
            continue
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=console, transient=True) as progress:
            origin = origins[spec]
            task = progress.add_task(f"{spec.label()}: {origin.first_step}", total=None)

            def step(phase: str, done: int, expected: int, task: TaskID = task, label: str = spec.label()) -> None:
                progress.update(task, description=f"{label}: {phase}", completed=done, total=max(done, expected))

            builds[spec] = b = build_server(spec, train_server, step, count_server_guard, origin)
        how = "cached" if b.cached else how_built(b.manifest)
        console.print(f"  {how} {spec.label()} from {source_words(b.manifest['source'])}  {b.root}",
                      highlight=False, markup=False)
        said = guard_line(spec.label(), b.manifest)
        if said:
            console.print(said, highlight=False, markup=False)
    if not builds:
        return e, {}
    _one_version_per_engine(builds)
    targets = tuple(replace(t, binaries=str(builds[t.server_build].binaries)) if t.server_build else t
                    for t in e.targets)
    manifests = {t.name: {**builds[t.server_build].manifest, "cached": builds[t.server_build].cached}
                 for t in e.targets if t.server_build is not None}
    return replace(e, targets=targets), manifests


def _one_version_per_engine(builds: dict[ServerBuildSpec, ServerBuild]) -> None:
    """Builds of Debian's source take the newest version the archive serves, but a hot-path PGO build the version its
    list was made on: refused when the two differ, since the experiment would compare two versions, not two builds."""
    seen: dict[str, tuple[str, str]] = {}
    for spec, built in builds.items():
        version = built.manifest["source"].get("version")  # Debian's; a tree's source names a revision instead
        if version is None:
            continue
        first = seen.setdefault(spec.engine, (version, spec.label()))
        if first[0] != version:
            raise UserError(f"{first[1]} is of {first[0]}, {spec.label()} of {version}: an experiment's builds of "
                            "Debian's source must be of one version (a hot-path list is of one version: "
                            "scripts/hot_sources.py makes one for the other)")


def guard_line(label: str, manifest: dict[str, Any]) -> str:
    """What a server PGO build's guard found, for the build's line on stderr: its two counts, or a warning where it
    could not run (never silently); empty without PGO."""
    guard = (manifest.get("pgo") or {}).get("guard")
    if not guard:
        return ""
    if "not_run" in guard:
        return f"dbperf: warning: {label}: the PGO guard did not run: {guard['not_run']}"
    pgo, base = guard["pgo_instructions_per_query"], guard["base_instructions_per_query"]
    return (f"    PGO guard: {pgo:,.0f} instructions per query against {base:,.0f} without PGO (×{pgo / base:.3f}) on "
            f"{', '.join(guard['workloads'])}")


def build_targets(e: Experiment, console: Console) -> tuple[Experiment, dict[str, dict[str, Any]]]:
    """The experiment with every `source` target's library or binaries set, and each such target's build or
    release manifest."""
    e, releases = fetch_releases(e, console)
    e, server_builds = build_servers(e, console)
    servers = {**releases, **server_builds}
    specs = [t.build for t in e.targets if t.build is not None]
    if not specs:
        return e, servers
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                  transient=True) as progress:
        task = progress.add_task(f"building {len(set(specs))} SQLite variant(s) (cached builds are reused)")

        def done(spec: BuildSpec, b: Build) -> None:
            console.print(f"  {'cached' if b.cached else 'built '} {b.manifest['label']}  {b.library}", highlight=False,
                          markup=False)
            progress.advance(task)

        builds = build_all(specs, e.path.parent, on_done=done,
                           announce=lambda said: console.print(f"dbperf: {said}", highlight=False, markup=False))
    targets = tuple(replace(t, library=str(builds[t.build].library)) if t.build else t for t in e.targets)
    manifests = {t.name: {**builds[t.build].manifest, "cached": builds[t.build].cached}
                 for t in e.targets if t.build}
    return replace(e, targets=targets), {**servers, **manifests}


def inspect_targets(e: Experiment) -> dict[str, dict[str, Any]]:
    """Engine version and sha256 of every target's library; a UserError before anything runs if one is not a
    library of its engine."""
    infos: dict[str, dict[str, Any]] = {}
    for t in e.targets:
        if t.is_server:
            infos[t.name] = {}  # the version is read from the running server
            continue
        try:
            info = library_info(t.engine, t.library)
        except UserError as err:
            raise UserError(f"{e.path} target {t.name!r}: {err}") from None
        infos[t.name] = {"engine_version": info.engine_version, "library_sha256": sha256_of(t.library),
                         "threadsafe": info.threadsafe}
    return infos
