"""Building SQLite shared libraries from an amalgamation, cached by what determines the result.

Cache: $DBPERF_CACHE/builds/<key>/ with libsqlite3.so, the object it was linked from (sqlite3.o), build.log and
manifest.json (written last: a build without a manifest is incomplete and is rebuilt). The key hashes the source (a
released version: its SQLite version and amalgamation sha256; a user's tree: its content, sqlite_tree.py), the
patches' sha256 in their order, the flags, the compiler's version, for PGO the training set and the version of the
profile's proof, and a relink's ldflags.

A released amalgamation is compiled where cargo keeps it; with patches, and always for a user's tree, the lab
compiles its own copy in work/src (exported, patched, and made into an amalgamation when the tree is a source tree),
removed once the library is built.

A target with `ldflags` (linker options alone, such as the fragment of `dbperf layout --fix`) is a relink: its base
(the same build without them) from the cache with its object, or built now, and that object linked again with the
base's own link command and the ldflags. Its manifest says the base's key and that the object linked is the one
the base lists (sha256 before and after the link): the two libraries differ by their link alone.

A PGO build proves its profile before it is cached (profile_proof.py), then passes the guard (pgo_guard.py): fewer
instructions per query than its base on its own training workload. A build that fails either is refused in one line
and leaves no manifest, so it is never used nor cached as good.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from msgspec import structs

from dbperf.build_manifest import BuildManifest, CompilerInfo, ObjectFile, Relink, build_manifest
from dbperf.buildlab.build_pool import run_at_once
from dbperf.buildlab.key_lock import key_held
from dbperf.buildlab.patches import apply_patches, with_patches
from dbperf.buildlab.paths import cache_root
from dbperf.buildlab.pgo_guard import guard
from dbperf.buildlab.profile_proof import NOTES_FLAG, PROOF_VERSION, Training, fresh_profile_dir, prove
from dbperf.buildlab.sqlite_origin import SqliteOrigin, origins
from dbperf.buildlab.sqlite_tree import amalgamate
from dbperf.buildlab.training import run_training, training_identity, training_workloads
from dbperf.engines.descriptor import ProfileProof
from dbperf.engines.sqlite import SQLITE
from dbperf.errors import UserError
from dbperf.experiment.build_variants import DEFAULT_TRAIN_SECONDS, BuildSpec, linked_files
from dbperf.host.compiler import Compiler, find_compiler
from dbperf.host.facts import sha256_of
from dbperf.records import to_builtins
from dbperf.run_meta import MetaError, encode_file

LIBS = ["-lpthread", "-ldl", "-lm"]
OBJECT = "sqlite3.o"  # kept in the cache entry beside the library: what a relink links again
TAIL_LINES = 6


@dataclass(frozen=True)
class Build:
    library: Path
    manifest: dict[str, Any]
    cached: bool


def builds_dir() -> Path:
    d = cache_root() / "builds"
    d.mkdir(parents=True, exist_ok=True)
    return d


def build_key(spec: BuildSpec, source: SqliteOrigin, compiler: Compiler, base_dir: Path | None = None) -> str:
    identity = {
        **source.identity(),
        "flags": spec.flags(),
        "compiler": compiler.version,
        "pgo": {"train": training_identity(training_workloads(spec.pgo_train, base_dir), spec.pgo_train_seconds),
                "partial_training": spec.pgo_partial_training, "proof": PROOF_VERSION} if spec.pgo else None,
    }
    if spec.patches:  # only then: the keys of builds without patches stay as they were
        identity["patches"] = [p.sha256 for p in spec.patches]
    if spec.ldflags:  # only then, as patches
        identity["ldflags"] = list(spec.ldflags)
        if files := linked_files(spec.ldflags):  # a changed linker script is a new build
            identity["ldflags_files"] = files
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]


def _source_folder(spec: BuildSpec, source: SqliteOrigin, work: Path, log: Path) -> Path:
    """The folder of the sqlite3.c to compile: the source's own where nothing changes it, else the lab's copy
    (work/src), patched in order and made into an amalgamation when it is a source tree."""
    ready = source.ready()
    if ready is not None and not spec.patches:
        return ready
    folder = work / "src"
    source.export(folder)
    apply_patches(spec.patches, folder, log, spec.label(source.word))
    amalgamate(folder, log, spec.label(source.word))
    return folder


def _compile(cc: Compiler, flags: list[str], folder: Path, work: Path, log: Path,
             extra: list[str], spec: BuildSpec) -> list[list[str]]:
    """Compiles folder/sqlite3.c to work/sqlite3.o and links work/libsqlite3.so. The object path is the same for
    the instrumented and the profile-using build, because gcc names the profile after it."""
    obj = work / OBJECT
    compile_cmd = [cc.path, *flags, *extra, "-fPIC", "-c", str(folder / "sqlite3.c"), "-o", str(obj)]
    link_cmd = link_command(cc, [*flags, *extra], obj, work / "libsqlite3.so")
    for cmd in (compile_cmd, link_cmd):
        _run(cmd, log, work, spec)
    return [compile_cmd, link_cmd]


def link_command(cc: Compiler, flags: list[str], obj: Path, lib: Path) -> list[str]:
    """The link of the library from its object: the build's and, with ldflags after it, a relink's."""
    return [cc.path, *flags, "-shared", "-o", str(lib), str(obj), *LIBS]


def _run(cmd: list[str], log: Path, cwd: Path, spec: BuildSpec) -> None:
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd)
    if proc.returncode != 0:
        tail = " | ".join(log.read_text().strip().splitlines()[-TAIL_LINES:])
        raise UserError(f"build of {spec.label()} failed (log {log}): {tail}")


def _profile_files(profile_dir: Path) -> list[dict[str, Any]]:
    return [{"file": p.name, "bytes": p.stat().st_size, "sha256": sha256_of(str(p))}
            for p in sorted(profile_dir.rglob("*.gcda"))]


def base_spec(spec: BuildSpec) -> BuildSpec:
    """A PGO build's base: the same version, variants and flags without PGO (what its guard compares it with)."""
    return replace(spec, variants=tuple(v for v in spec.variants if v != "pgo"), pgo_train=(),
                   pgo_partial_training=False, pgo_train_seconds=DEFAULT_TRAIN_SECONDS)


def _train(cc: Compiler, spec: BuildSpec, folder: Path, work: Path, log: Path,
           base_dir: Path | None) -> tuple[dict[str, Any], list[list[str]]]:
    """The instrumented build (with its notes, for the proof), its training, and the proof of its profile."""
    profile = work / "profile"
    shutil.rmtree(profile, ignore_errors=True)
    instrumented = _compile(cc, spec.flags(), folder, work, log,
                            [f"-fprofile-generate={profile}", "-fprofile-update=atomic", NOTES_FLAG], spec)
    trained_lib = work / "libsqlite3-instrumented.so"
    os.replace(work / "libsqlite3.so", trained_lib)
    workloads = training_workloads(spec.pgo_train, base_dir)
    # The trainer is this process's user: the driver loads the library and writes the profile at its exit.
    training_log = work.parent / "training.log"
    started = fresh_profile_dir(profile, os.geteuid(), os.getegid())
    began = time.monotonic()
    runs = run_training(trained_lib, workloads, spec.pgo_train_seconds, training_log)
    training_s = time.monotonic() - began
    proof = prove(Training(spec.label(), profile, work, _proof(), os.geteuid(), started, (training_log,)))
    trained_lib.unlink()
    (work / "sqlite3.gcno").unlink()  # the notes served the proof only
    return {"training_set": list(spec.pgo_train), "training_runs": runs, "training_seconds": round(training_s, 1),
            "seconds_per_workload": spec.pgo_train_seconds, "profile_files": _profile_files(profile),
            "proof": proof}, instrumented


def _proof() -> ProfileProof:
    proof = SQLITE.profile_proof
    assert proof is not None  # declared in engines/sqlite.py
    return proof


def _build_pgo(cc: Compiler, spec: BuildSpec, source: SqliteOrigin, folder: Path, work: Path, log: Path,
               base_dir: Path | None) -> dict[str, Any]:
    if not cc.is_gcc:
        raise UserError(f"{spec.label()}: the pgo variant needs gcc (found {cc.version})")
    trained, instrumented = _train(cc, spec, folder, work, log, base_dir)
    profile = work / "profile"
    use = [f"-fprofile-use={profile}", "-fprofile-correction", "-Werror=missing-profile"]
    if spec.pgo_partial_training:
        use.append("-fprofile-partial-training")
    log_before = log.read_text()
    used = _compile(cc, spec.flags(), folder, work, log, use, spec)
    # -Werror=missing-profile fails the build if the profile was not found; say so in the manifest as well.
    warnings = [line for line in log.read_text()[len(log_before):].splitlines()
                if not line.startswith("$ ") and "profile" in line and ("warning" in line or "error" in line)]
    base = build(base_spec(spec), source, base_dir)
    checked = guard(spec.label(), work / "libsqlite3.so", base.library, training_workloads(spec.pgo_train, base_dir))
    return {**trained, "profile_use_flags": use, "profile_warnings": warnings,
            "profile_consumed": "the -fprofile-use build passed -Werror=missing-profile with the .gcda above",
            "guard": {**checked, "base_key": base.manifest["key"]}, "commands": instrumented + used}


def build(spec: BuildSpec, source: SqliteOrigin, base_dir: Path | None = None, need_object: bool = False) -> Build:
    """The build of `spec`, from the cache or made now; `need_object`: a cached build whose object is not kept
    (cached before objects were) is made again."""
    if spec.ldflags:
        return _relink(spec, source, base_dir)
    cc = find_compiler()
    key = build_key(spec, source, cc, base_dir)
    with _key_held(key):
        return _build(spec, source, base_dir, cc, key, need_object)


def _key_held(key: str) -> contextlib.AbstractContextManager[None]:
    """One build of `key` at a time, across threads (a PGO build builds its base too, which the experiment may be
    building in another thread) and processes (two runs started together)."""
    return key_held(builds_dir() / ".locks", key)


def _kept_objects(out: Path, manifest: BuildManifest) -> bool:
    """Whether the cache entry `out` holds the objects its manifest lists, unchanged."""
    return bool(manifest.objects) and all((out / o.file).is_file() and sha256_of(str(out / o.file)) == o.sha256
                                          for o in manifest.objects)


def _cached_build(out: Path, need_object: bool = False) -> Build | None:
    """The build in the cache entry `out`, when it is whole (its manifest, and its library unchanged)."""
    cached = _cached_manifest(out / "manifest.json")
    library = out / "libsqlite3.so"
    if cached is None or not library.is_file() or sha256_of(str(library)) != cached.library_sha256:
        return None
    return Build(library, to_builtins(cached), cached=True) if not need_object or _kept_objects(out, cached) else None


def _build(spec: BuildSpec, source: SqliteOrigin, base_dir: Path | None, cc: Compiler, key: str,
           need_object: bool = False) -> Build:
    out = builds_dir() / key
    found = _cached_build(out, need_object)
    if found is not None:
        return found
    shutil.rmtree(out, ignore_errors=True)
    work = out / "work"
    work.mkdir(parents=True)
    log = out / "build.log"
    started = time.monotonic()
    try:
        folder = _source_folder(spec, source, work, log)
        pgo = None
        if spec.pgo:
            pgo = _build_pgo(cc, spec, source, folder, work, log, base_dir)
            commands = pgo.pop("commands")
        else:
            commands = _compile(cc, spec.flags(), folder, work, log, [], spec)
    except BaseException:
        # a failed (or interrupted) build keeps its log, not the lab's copy of the source (megabytes no command
        # lists): the entry is not whole, and the next build of the key starts it again
        shutil.rmtree(work, ignore_errors=True)
        raise
    library = out / "libsqlite3.so"
    os.replace(work / "libsqlite3.so", library)
    os.replace(work / OBJECT, out / OBJECT)
    facts = with_patches(source.provenance(folder), spec.patches)
    shutil.rmtree(work / "src", ignore_errors=True)  # the lab's copy of the source, when it made one
    manifest = BuildManifest(
        key=key,
        label=spec.label(source.word),
        source=facts,
        variants=list(spec.variants),
        cflags=list(spec.cflags),
        flags=spec.flags(),
        compiler=CompilerInfo(path=cc.path, version=cc.version),
        commands=commands,
        pgo=pgo,
        library=str(library),
        library_sha256=sha256_of(str(library)),
        objects=[ObjectFile(file=OBJECT, sha256=sha256_of(str(out / OBJECT)))],
        build_seconds=round(time.monotonic() - started, 1),
        built_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    return _enter(out, manifest)


def _enter(out: Path, manifest: BuildManifest) -> Build:
    """The manifest written last, in one step: the entry is whole."""
    tmp = out / "manifest.json.tmp"
    tmp.write_bytes(encode_file(manifest))
    os.replace(tmp, out / "manifest.json")
    return Build(Path(manifest.library), to_builtins(manifest), cached=False)


def _relink(spec: BuildSpec, source: SqliteOrigin, base_dir: Path | None) -> Build:
    """`spec`'s base (from the cache with its object, or built now) linked again: the base's link command (its
    flags, and a PGO build's profile flags) with `spec.ldflags` after it, the object read from the base's entry."""
    cc = find_compiler()
    key = build_key(spec, source, cc, base_dir)
    base = build(spec.relink_base(), source, base_dir, need_object=True)
    with _key_held(key):
        out = builds_dir() / key
        found = _cached_build(out)
        if found is not None:
            return found
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        started = time.monotonic()
        based = build_manifest(base.manifest)
        objects = [base.library.parent / o.file for o in based.objects]
        before = [sha256_of(str(o)) for o in objects]
        library = out / "libsqlite3.so"
        extra = list((based.pgo or {}).get("profile_use_flags", []))
        link = [*link_command(cc, [*spec.flags(), *extra], objects[0], library), *spec.ldflags]
        _run(link, out / "build.log", out, spec)
        after = [sha256_of(str(o)) for o in objects]
        recorded = [o.sha256 for o in based.objects]
        if before != recorded or after != recorded:  # another dbperf rebuilt the base meanwhile: nothing proven
            raise UserError(f"{spec.label()}: the base's object changed during the relink ({objects[0]}); "
                            "build again")
        return _enter(out, structs.replace(
            based, key=key, label=spec.label(source.word), ldflags=list(spec.ldflags), commands=[link],
            library=str(library), library_sha256=sha256_of(str(library)),
            objects=[], relink=Relink(base_key=based.key, ldflags=list(spec.ldflags), objects=[
                ObjectFile(file=str(o), sha256=h) for o, h in zip(objects, after, strict=True)],
                object_count=len(objects), objects_equal=True),
            build_seconds=round(time.monotonic() - started, 1),
            built_at=datetime.now(UTC).isoformat(timespec="seconds")))


def _cached_manifest(path: Path) -> BuildManifest | None:
    """A cached build's manifest, or None (none yet, or one this dbperf cannot read: the build is made again)."""
    try:
        return build_manifest(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, MetaError):
        return None


def build_all(specs: list[BuildSpec], base_dir: Path | None = None,
              on_done: Callable[[BuildSpec, Build], None] | None = None,
              announce: Callable[[str], None] | None = None) -> dict[BuildSpec, Build]:
    """Builds distinct specs at once, one compiler per core (build_pool.py), each reported as it finishes. Sources
    are fetched (or read) first, once each. A PGO build takes longest (two compiles, a training run and its guard)
    and is started first; its base is usually one of the other specs (one key, built once: build()'s lock)."""
    unique = list(dict.fromkeys(specs))
    sources = origins(unique, announce)  # a crate not yet downloaded is said first
    ordered = sorted(unique, key=lambda s: not s.pgo)
    return run_at_once(ordered, lambda s: build(s, sources[s], base_dir), on_done)


def cached_builds() -> list[dict[str, Any]]:
    """The manifests of the cached builds this dbperf can read, oldest first."""
    out = [to_builtins(m) for path in sorted(builds_dir().glob("*/manifest.json"))
           if (m := _cached_manifest(path)) is not None]
    return sorted(out, key=lambda m: m.get("built_at") or "")
