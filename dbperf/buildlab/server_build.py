"""Servers built from source by the lab, cached by what determines the result.

Where a build's code comes from is its origin (sources/: Debian's source package, a user's tree), asked and never
told apart: build_server tries the origin's candidates newest first, each under its key, and makes the first it gives
in one of two places: the kept build tree of its source (kept_build.py), or for PGO and BOLT a fresh folder, the code
fetched or exported into it. Its commands run through build_runner.py; what it needs is checked first
(server_build_checks.py); the cache's listings are server_cache_listing.py's.

Cache: the server cache's build/<key>/ holds install/ (bin, lib, share), build.log and manifest.json (typed:
server_manifest.py). The key hashes the engine, the origin's package and version (a tree's: its content), the compiler
flags, the compiler's version and the recipe's own options. A build runs in a staging directory beside its final
place and is renamed into it only when installed and its manifest written: an interrupted or failed build leaves no
entry (its log is kept in the build/failed/ folder), and its staging directory is removed, or swept by the next
build if the process was killed outright (staging.py).

A build whose recipe is `resumable` (ninja's) and is interrupted or killed is kept and resumed by the next build of
its key (resume.py: its time then sums the segments', wall clock and CPU).

A PGO build proves its profile (profile_proof.py), then passes its deterministic guard before it is cached: fewer
instructions per query than its base (the same spec without PGO, from the cache or built now) on the training
workload, counted by the runner's callback (runner/server_pgo_guard.py) and judged as SQLite's (pgo_guard.py). A
refused build is never moved into the cache. PGO builds cached before servers had a guard pass it when first used,
and their manifest gains its figures (or the refusal). A PGO build instruments and re-optimises every object, or
with `pgo_scope = "query-path"` only those of its recipe's query-path directories (profile_scope.py): its base is
then built first, and every other object is the base's own, from ccache.

How each engine is configured, built and installed is its recipe, one file each in recipes/ (found there: a new
engine's recipe is a new file); this module is the pipeline that runs them. Parallel compile on all cores; progress
is the build's own compile steps counted against the sources.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dbperf import engines
from dbperf.buildlab.build_runner import BuildRunner, Progress, keep_log
from dbperf.buildlab.build_tree import TREES, kept_tree, tree_identity
from dbperf.buildlab.kept_build import build_kept
from dbperf.buildlab.key_lock import key_held
from dbperf.buildlab.patches import apply_patches, with_patches
from dbperf.buildlab.paths import open_to_service_users, server_cache
from dbperf.buildlab.pgo_guard import GuardCannotRun, GuardCounts, figures, refusal
from dbperf.buildlab.profile_proof import NOTES_FLAG, PROOF_VERSION, fresh_profile_dir, missing_profiles, prove
from dbperf.buildlab.profile_proof import Training as TrainingFacts
from dbperf.buildlab.profile_scope import Stage, scope_kind
from dbperf.buildlab.recipes import Recipe
from dbperf.buildlab.resume import STATE, BuildState
from dbperf.buildlab.server_bolt import Training, bolt_identity, bolt_server
from dbperf.buildlab.server_build_checks import check_can_build
from dbperf.buildlab.sources import origin_of
from dbperf.buildlab.sources.base import ServerOrigin, Unserved, in_kept_tree
from dbperf.buildlab.staging import LOCK, Staging, sweep_abandoned
from dbperf.buildlab.training import training_identity, training_workloads
from dbperf.engines.descriptor import ProfileProof
from dbperf.errors import UserError
from dbperf.experiment.build_variants import (
    DEFAULT_TRAIN_SECONDS,
    SERVER_TRAINING,
    WHOLE_PROGRAM,
    ServerBuildSpec,
    linked_files,
)
from dbperf.host.compiler import Compiler
from dbperf.host.facts import sha256_of
from dbperf.run_meta import MetaError
from dbperf.server_manifest import ServerManifest, manifest_record, read_server_manifest, server_manifest

# Counts a PGO build's guard: (engine, the PGO build's binaries, what gives its base's binaries) -> instructions per
# query of each on the training workload; GuardCannotRun where it cannot count. The base is asked for once the PGO
# build is counted: where valgrind cannot run the PGO build, no base is built for nothing (a -march=native base
# without PGO is no rung of the tuning ladder: 20 minutes). runner/server_pgo_guard.py, handed in by the caller (the
# build lab starts no server).
Guard = Callable[[str, Path, Callable[[], Path]], GuardCounts]
# A guard record with this version is final: one without (a PGO build cached before servers had a guard, its
# `not_run` saying so) is run once when the build is next used.
GUARD_VERSION = 1
# The manifest's `pgo.profile_consumed`: which objects the build that used the profile compiled with it.
CONSUMED = ("the -fprofile-use build compiled every object with the directory of these .gcda; objects without one "
            "(code the training never reached, tools it never ran) were built without a profile, each a "
            "-Wmissing-profile warning, counted above")
CONSUMED_IN_SCOPE = ("the -fprofile-use build compiled the objects of pgo.scope.directories (of pgo.scope.sources "
                     "where it lists them) with the directory of "
                     "these .gcda (those without one, each a -Wmissing-profile warning, counted above); every other "
                     "object is the build without PGO's, from ccache")


@dataclass(frozen=True)
class ServerBuild:
    root: Path  # the install prefix
    binaries: Path  # what a target's `binaries` names
    manifest: dict[str, Any]
    cached: bool


LOCKS = "build-locks"  # beside build/, whose dot-folders are builds' staging directories


def _key(spec: ServerBuildSpec, package: str, version: str, cc: Compiler, recipe: Recipe) -> str:
    identity: dict[str, Any] = {"engine": spec.engine, "origin": spec.origin, "package": package, "version": version,
                "flags": spec.flags(), "compiler": cc.version, "recipe": list(recipe.options),
                "pgo": training_identity(training_workloads(SERVER_TRAINING), spec.pgo_train_seconds) if spec.pgo
                else None}
    if spec.compiler:  # only then, as bolt below: the keys of builds with the user's CC stay as they were
        identity["compiler_named"] = {"name": spec.compiler, "cxx": cc.cxx}
    if spec.pgo_partial_training:  # only then, as bolt below
        identity["pgo_partial_training"] = True
    scope = scope_kind(spec.pgo_scope).identity(recipe, version) if spec.pgo else None
    if scope is not None:  # only then, as bolt below; the recipe's directories (and list)
        identity["pgo_scope"] = scope
    if spec.pgo:  # PGO builds made before their profile was proven are made again
        identity["pgo_proof"] = PROOF_VERSION
    if spec.bolt:  # only then: the keys of builds without BOLT stay as they were
        identity["bolt"] = {**bolt_identity(spec.engine),
                            "training": training_identity(training_workloads(SERVER_TRAINING))}
    if spec.patches:  # only then, as bolt above
        identity["patches"] = [p.sha256 for p in spec.patches]
    if spec.ldflags:  # only then, as bolt above
        identity["ldflags"] = list(spec.ldflags)
        if files := linked_files(spec.ldflags):  # a changed linker script is a new build
            identity["ldflags_files"] = files
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]


def _cached(entry: Path, recipe: Recipe) -> ServerBuild | None:
    manifest_path = entry / "manifest.json"
    if not manifest_path.is_file():
        return None
    manifest = manifest_record(read_server_manifest(manifest_path, ServerManifest))
    return ServerBuild(entry / "install", recipe.binaries(entry / "install"), manifest, cached=True)


def build_server(spec: ServerBuildSpec, train: Training, on_progress: Progress | None = None,
                 guard: Guard | None = None, origin: ServerOrigin | None = None) -> ServerBuild:
    """The server build `spec` names, from the cache or built now; `train` runs the training set against an
    instrumented build for PGO and BOLT (runner/server_training.py: the build lab does not start servers itself),
    `guard` counts a PGO build's guard (runner/server_pgo_guard.py; needed by PGO builds only). `origin`: where the
    code comes from (sources/), as resolved before (an experiment resolves each once, so that its builds of one tree,
    and a PGO build's base, are of one content), else resolved here. The origin's candidates are tried newest first:
    the first it gives is built, in its kept tree or in a fresh folder (sources.base.in_kept_tree)."""
    recipe, cc = check_can_build(spec)
    origin = origin or origin_of(spec, recipe)
    # a relink: its base first (from the cache or built now), in the kept tree the relink shares
    base = build_server(spec.relink_base(), train, on_progress, guard, origin) if spec.ldflags else None
    (server_cache() / "build").mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    for version in origin.candidates(spec, recipe, skipped):
        if skipped and on_progress:  # a newer version passed over is said, not skipped silently
            on_progress(f"{origin.word} {skipped[-1][:240]}; trying {version}", 0, 0)
        key = build_key(spec, origin, version, cc, recipe)
        # the second of two builds of one key waits, then reuses the first's entry
        with key_held(server_cache() / LOCKS, key, _said_as_progress(on_progress)):
            try:
                return _build_key(Attempt(origin.pinned(spec, version), recipe, cc, origin, version, key, skipped),
                                  on_progress, train, guard, base)
            except Unserved as e:
                skipped.append(f"{version}: {e}")
    raise origin.none_left(spec, skipped)


def build_key(spec: ServerBuildSpec, origin: ServerOrigin, version: str, cc: Compiler, recipe: Recipe) -> str:
    """The cache key of the build of `spec` from `version` of its origin."""
    return _key(spec, *origin.key_source(version), cc, recipe)


@dataclass(frozen=True)
class Attempt:
    """One candidate of an origin being built under its key (its lock held)."""
    spec: ServerBuildSpec  # held to the candidate (origin.pinned)
    recipe: Recipe
    cc: Compiler
    origin: ServerOrigin
    version: str
    key: str
    skipped: list[str]  # the candidates passed over before it, for the manifest


def _said_as_progress(on_progress: Progress | None) -> Callable[[str], None] | None:
    """A line to say (a wait, a download) as a progress line of its own."""
    return (lambda said: on_progress(said, 0, 0)) if on_progress else None


def _build_key(a: Attempt, on_progress: Progress | None, train: Training, guard: Guard | None,
               base: ServerBuild | None) -> ServerBuild:
    """The build of the attempt's candidate, from the cache or made now: in the kept tree of its source, or for PGO
    and BOLT in a fresh folder, its code fetched or exported into it (Unserved when the origin cannot give it). A
    relink (`base` the build it relinks) only links, in the kept tree it shares with its base."""
    spec, builds = a.spec, server_cache() / "build"
    found = _cached(builds / a.key, a.recipe)
    if found:
        return _guarded_cached(spec, found, train, on_progress, guard, a.origin) if spec.pgo else found
    sweep_abandoned(builds)  # staging directories of builds killed outright
    said = _said_as_progress(on_progress)
    if in_kept_tree(spec):
        identity = tree_identity(a.origin.kept_identity(a.version), spec.flags(), a.cc, a.recipe.options)
        with kept_tree(server_cache() / TREES, identity, said) as tree:
            refresh = a.origin.into_kept(a.version, tree, a.skipped, said)
            # The tree keeps the objects of a build that did not finish; a resumable one's staging keeps its time.
            with _staged(builds, a.key, a.recipe, spec) as (work, state):
                changed = tree.switch(spec.patches, work / "build.log", spec.label(), refresh)
                made = build_kept(spec, a.recipe, a.cc, tree, changed, work, on_progress, state,
                                  base.manifest if base else None)
                return _enter(spec, a.recipe, a.cc, made.provenance, a.key, work, builds / a.key, made.commands,
                              made.jobs, made.runner, state, made.variants)
    with _staged(builds, a.key, a.recipe, spec) as (work, state):
        fetched = state.source()
        if fetched is None:
            _clear_partial_fetch(work)
            src, provenance = a.origin.fetch(a.version, work, a.skipped, said)
            apply_patches(spec.patches, src, work / "build.log", spec.label())  # after Debian's own
            fetched = src, with_patches(provenance, spec.patches)
            state.set_source(*fetched)
        return _build(spec, a.recipe, a.cc, *fetched, a.key, work, builds / a.key, on_progress, train, state, guard,
                      a.origin)


@contextmanager
def _staged(builds: Path, key: str, recipe: Recipe, spec: ServerBuildSpec) -> Iterator[tuple[Path, BuildState]]:
    """A build's staging folder and its state: kept for the next build of this key when a resumable build is
    interrupted (Ctrl-C or SIGTERM), else removed (after a completed build it is the entry already)."""
    staging = Staging(builds, key, resumable=recipe.resumable)
    try:
        state = BuildState(staging.path, persist=recipe.resumable, label=spec.label())
    except UserError:
        staging.release()  # a state it cannot read: the folder stays for the user to look at or remove
        raise
    keep = False
    try:
        yield staging.path, state
    except KeyboardInterrupt:
        keep = recipe.resumable
        raise
    finally:
        if keep:
            staging.release()
        else:
            staging.remove()


def _clear_partial_fetch(work: Path) -> None:
    """What a fetch killed before it finished left in a resumable build's directory."""
    for leftover in [work / "src", *work.glob("download-*")]:
        shutil.rmtree(leftover, ignore_errors=True)


def _build(spec: ServerBuildSpec, recipe: Recipe, cc: Compiler, tree: Path, provenance: dict[str, Any], key: str,
           work: Path, final: Path, on_progress: Progress | None, train: Training, state: BuildState,
           guard: Guard | None = None, origin: ServerOrigin | None = None) -> ServerBuild:
    """Configures, builds and installs into work/install (for pgo: an instrumented build, its training, and the
    build that uses the profile), then moves work into `final`; what `state` says an earlier segment finished is not
    done again. `origin`: where this build's code came from, for its PGO base."""
    prefix = work / "install"
    runner = BuildRunner(spec, recipe, tree, work / "build.log", on_progress, state)
    jobs = os.cpu_count() or 1
    pgo = None
    if spec.pgo:
        pgo, commands = _build_pgo(spec, recipe, cc, runner, work, prefix, jobs, train, guard, origin)
    else:
        commands = recipe.commands(tree, prefix, cc, spec.flags(), jobs)
        runner.run(commands, "compiling")
    bolt = None
    if spec.bolt:
        bolt = state.result("bolt")
        if bolt is None:
            if state.started("bolt"):  # BOLT rewrites the installed server: an interrupted rewrite is installed anew
                runner.run(commands[-1:], f"installing again before BOLT ({state.earlier_segments})")
            state.begin("bolt")
            bolt = _bolt(spec, recipe, prefix, work, runner, train)
            state.finish("bolt", bolt)
    shutil.rmtree(tree, ignore_errors=True)  # the sources: only the install and the log are kept
    return _enter(spec, recipe, cc, provenance, key, work, final, commands, jobs, runner, state,
                  {"pgo": pgo, "bolt": bolt})


def _enter(spec: ServerBuildSpec, recipe: Recipe, cc: Compiler, provenance: dict[str, Any], key: str, work: Path,
           final: Path, commands: list[list[str]], jobs: int, runner: BuildRunner, state: BuildState,
           variants: dict[str, Any]) -> ServerBuild:
    """The build's manifest written beside its install in `work`, and `work` moved into `final`, its cache entry."""
    prefix = work / "install"
    manifest = {
        "key": key, "label": spec.label(), "engine": spec.engine, "source": provenance,
        "variants": list(spec.variants), "cflags": list(spec.cflags), "flags": spec.flags(),
        "compiler": {"path": cc.path, "version": cc.version, "cxx": cc.cxx, "named": spec.compiler},
        "commands": commands, "jobs": jobs,
        "compile_steps": runner.steps, **variants,
        **({"differs_from_debian": [d.record() for d in recipe.departures]} if recipe.departures else {}),
        "server_binary_sha256": sha256_of(str(recipe.server_binary(prefix))),
        **state.totals(),  # build_seconds, build_cpu_seconds and the segments
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "install": str(final / "install"),
    }
    manifest = _checked_manifest(manifest)
    (work / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (work / STATE).unlink(missing_ok=True)  # its figures are the manifest's now
    open_to_service_users(work)
    (work / LOCK).unlink(missing_ok=True)  # the entry needs no lock; it is still held until the staging is removed
    if final.exists():
        shutil.rmtree(final)  # a leftover without a manifest
    os.replace(work, final)
    return ServerBuild(final / "install", recipe.binaries(final / "install"), manifest, cached=False)


def profile_use_flags(spec: ServerBuildSpec, profile: Path) -> list[str]:
    """The flags of the build that uses the profile: objects the training never reached have none, and gcc says so
    (-Wmissing-profile; the lab counts those of the server's own objects); with partial training, code the training
    never ran keeps the variant's optimisation level instead of being optimised for size."""
    return [*spec.flags(), *_profile_use_only(spec, profile)]


def _profile_use_only(spec: ServerBuildSpec, profile: Path) -> list[str]:
    """profile_use_flags without the variant's own."""
    return [f"-fprofile-use={profile}", "-fprofile-correction", "-Wmissing-profile",
            *(["-fprofile-partial-training"] if spec.pgo_partial_training else [])]


def _proof_of(spec: ServerBuildSpec) -> ProfileProof:
    proof = engines.engine(spec.engine).profile_proof
    if proof is None:
        raise UserError(f"{spec.label()}: {spec.engine} declares no profile proof (engines/{spec.engine}.py)")
    return proof


def _train_and_prove(spec: ServerBuildSpec, recipe: Recipe, runner: BuildRunner, work: Path, instrumented: Path,
                     profile: Path, train: Training, directories: tuple[str, ...]) -> dict[str, Any]:
    """The training of the instrumented install, as the service user, into a profile folder emptied and handed to
    that user first; then the profile's proof (profile_proof.py: `directories`, those of a partial profile, each
    with .gcda), a UserError when it fails."""
    user = pwd.getpwnam(engines.engine(spec.engine).service_user)
    proof = _proof_of(spec)
    # `make install` and the build's generators ran instrumented tools as root: their .gcda go before training.
    started = fresh_profile_dir(profile, user.pw_uid, user.pw_gid)
    logs = work / "training-logs"
    training = train(spec.engine, recipe.binaries(instrumented), logs, spec.pgo_train_seconds)
    training.pop("server_pid", None)  # BOLT's business, not PGO's
    facts = TrainingFacts(spec.label(), profile, recipe.objects_root(runner.tree), proof, user.pw_uid, started,
                          tuple(sorted(logs.rglob("*.log"))), directories)
    try:
        return {**training, "proof": prove(facts)}
    except UserError as e:
        raise UserError(f"{e} (log {keep_log(runner.log)})") from None


def _build_pgo(spec: ServerBuildSpec, recipe: Recipe, cc: Compiler, runner: BuildRunner, work: Path, prefix: Path,
               jobs: int, train: Training, guard: Guard | None, origin: ServerOrigin | None = None
               ) -> tuple[dict[str, Any], list[list[str]]]:
    """Instrumented build, training against the instrumented server, the profile's proof, then the build that uses
    the profile, in the same tree (gcc names each profile after its object's path), and its guard. What the two
    builds compile with the profile is the spec's scope (profile_scope.py): a partial one has the base built first,
    whose objects it takes for the rest."""
    work.chmod(0o755)  # the instrumented server runs as the service user, inside the staging directory
    profile = work / "profile"
    instrumented = work / "instrumented"
    state = runner.state
    scope = scope_kind(spec.pgo_scope).scope(recipe, work)
    generate = Stage("instrumented", [f"-fprofile-generate={profile}", "-fprofile-update=atomic", NOTES_FLAG])
    use = Stage("profile-use", _profile_use_only(spec, profile))
    commands = scope.commands(recipe, runner.tree, instrumented, cc, spec.flags(), generate, jobs)
    use_commands = [*recipe.clean_commands(runner.tree),
                    *scope.commands(recipe, runner.tree, prefix, cc, spec.flags(), use, jobs)]
    trained, used = state.result("training"), state.result("profile-use")
    if trained is None:
        if scope.reuses_base:
            if runner.on_progress:
                runner.on_progress("the build without PGO first (the objects outside the profile's directories)", 0, 0)
            build_server(base_spec(spec), train, runner.on_progress, origin=origin)
        runner.env = scope.environment(generate)
        runner.run(commands, "compiling (instrumented)")
        open_to_service_users(instrumented)
        trained = _train_and_prove(spec, recipe, runner, work, instrumented, profile, train, scope.directories)
        state.finish("training", trained)
    if used is None:
        shutil.rmtree(instrumented, ignore_errors=True)
        runner.env = scope.environment(use)
        used = _use_profile(spec, recipe, runner, profile, use_commands)
        state.finish("profile-use", used)
    shutil.rmtree(profile, ignore_errors=True)
    open_to_service_users(prefix)  # the guard runs it as the service user, still in the staging directory
    checked, refused = _guard(spec, recipe.binaries(prefix), train, runner.on_progress, guard, origin)
    if refused:
        raise UserError(f"{refused} (log {keep_log(runner.log)})")
    scoped = scope.record()
    return {**trained, **used, "profile_consumed": CONSUMED if scoped is None else CONSUMED_IN_SCOPE,
            **({"scope": scoped} if scoped is not None else {}),
            "guard": checked, "profile_use_flags": [*spec.flags(), *use.flags]}, [*commands, *use_commands]


def _use_profile(spec: ServerBuildSpec, recipe: Recipe, runner: BuildRunner, profile: Path,
                 use_commands: list[list[str]]) -> dict[str, Any]:
    """The build that uses the profile, and what the manifest says of it: the profile's files and the objects gcc
    found none for (-Wmissing-profile, read from every segment of that build's log)."""
    state = runner.state
    gcda = sorted(profile.rglob("*.gcda"))
    if state.result("profile-use-log-start") is None:
        state.finish("profile-use-log-start", runner.log.stat().st_size)
    compiled = runner.run(use_commands, "compiling (with the profile)")
    with open(runner.log, errors="replace") as f:
        f.seek(state.result("profile-use-log-start"))
        missing = missing_profiles(f.read(), profile, recipe.objects_root(runner.tree), _proof_of(spec))
    return {"profile_files": len(gcda), "profile_bytes": sum(p.stat().st_size for p in gcda),
            "objects_compiled_with_profile_use": compiled,
            "profiled_objects": [p.name.replace("#", "/").split("/src/", 1)[-1] for p in gcda],
            "missing_profile_warnings": missing}


def base_spec(spec: ServerBuildSpec) -> ServerBuildSpec:
    """A PGO build's base: the same source, flags and compiler without PGO (nor its partial training, its scope or
    BOLT), what its guard compares it with, and where a partial profile takes its other objects."""
    return replace(spec, variants=tuple(v for v in spec.variants if v not in ("pgo", "bolt")),
                   pgo_partial_training=False, pgo_train_seconds=DEFAULT_TRAIN_SECONDS, pgo_scope=WHOLE_PROGRAM)


def _guard(spec: ServerBuildSpec, binaries: Path, train: Training, on_progress: Progress | None,
           guard: Guard | None, origin: ServerOrigin | None = None) -> tuple[dict[str, Any], str | None]:
    """The PGO build at `binaries` against its base (from the cache or built now, of the same `origin`: a user's
    tree's same read, Debian's same version): the manifest's `pgo.guard`, and the one line that refuses the build
    (None when it passes, or when the guard cannot count here: `not_run`)."""
    if guard is None:
        raise UserError(f"{spec.label()}: a PGO build needs its guard (build_server's `guard`)")
    phase = "PGO guard (instructions per query against the build without PGO)"
    record: dict[str, Any] = {}

    def base() -> Path:
        built = build_server(base_spec(spec), train, on_progress, origin=origin)
        record["base_key"] = built.manifest["key"]
        if on_progress:
            on_progress(phase, 0, 0)
        return built.binaries

    if on_progress:
        on_progress(phase, 0, 0)
    try:
        counts = guard(spec.engine, binaries, base)
    except GuardCannotRun as e:
        return {"not_run": str(e), **record, "version": GUARD_VERSION}, None
    return {**figures(counts), **record, "version": GUARD_VERSION}, refusal(spec.label(), counts)


def guard_pending(manifest: dict[str, Any]) -> bool:
    """Whether a PGO build's guard has not been run yet (a build cached before servers had a guard)."""
    guard = (manifest.get("pgo") or {}).get("guard") or {}
    return "version" not in guard


def _guarded_cached(spec: ServerBuildSpec, found: ServerBuild, train: Training, on_progress: Progress | None,
                    guard: Guard | None, origin: ServerOrigin | None = None) -> ServerBuild:
    """A cached PGO build, its guard run once if it never was (its manifest then gains the figures); a UserError
    when the guard refuses it, now or when it ran before."""
    pgo = found.manifest.get("pgo") or {}
    if not guard_pending(found.manifest):
        refused = pgo["guard"].get("refused")
        if refused:
            raise UserError(f"{refused} (recorded in {found.root.parent / 'manifest.json'}; remove that build to "
                            "make it again)")
        return found
    checked, refused = _guard(spec, found.binaries, train, on_progress, guard, origin)
    after: dict[str, Any] = {"counted_after_the_build": True}
    if spec.bolt:  # a new build's guard counts it before BOLT rewrites the server
        after["counted"] = "the installed server, BOLT's rewrite included"
    manifest = {**found.manifest, "pgo": {**pgo, "guard": {**checked, **({"refused": refused} if refused else {}),
                                                         **after}}}
    manifest = _write_manifest(found.root.parent, manifest)
    if refused:
        raise UserError(refused)
    return replace(found, manifest=manifest)


def _checked_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest as its reader reads it back (ServerManifest: every key, those without a value empty), so that a
    build's manifest is the same dict made now or found in the cache; a shape the reader refuses is never written."""
    try:
        return manifest_record(server_manifest(manifest, ServerManifest))
    except MetaError as e:
        raise UserError(f"{manifest.get('label')}: the build's manifest is not one the lab reads ({e})") from None


def _write_manifest(entry: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """A cached build's manifest replaced in one step (readers see the old one or the new one); as written."""
    manifest = _checked_manifest(manifest)
    tmp = entry / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    tmp.chmod(0o644)
    os.replace(tmp, entry / "manifest.json")
    return manifest


def _bolt(spec: ServerBuildSpec, recipe: Recipe, prefix: Path, work: Path, runner: BuildRunner,
          train: Training) -> dict[str, Any]:
    if runner.on_progress:
        runner.on_progress("BOLT (instrument, train, optimize)", 0, 0)
    try:
        return bolt_server(spec.engine, spec.label(), prefix, recipe.server_binary(prefix), recipe.binaries, work,
                           runner.log, engines.engine(spec.engine).service_user, train)
    except UserError as e:
        raise UserError(f"{e} (log {keep_log(runner.log)})") from None


