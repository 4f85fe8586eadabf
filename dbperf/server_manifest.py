"""manifest.json of a server in the lab's server cache, typed as SQLite's (build_manifest.py): a server built from
source (build/<key>/, buildlab/server_build.py) or a released server fetched (release/<engine>-<version>/,
buildlab/server_releases.py). `read_server_manifest` is the one reader of both, checked where the cache reads it back.

Every shape the lab has written reads: the first build manifests (2026-11-22) had neither `pgo` nor `bolt`, a
compiler without `cxx` or `named`, and `build_seconds` alone; later ones added the PGO and BOLT records, Debian's
departures, the kept tree's `incremental`, a relink's `ldflags` and `relink`, and the time of each segment
(resume.py). Those keys are optional here. `manifest_version` is its format's version; the manifests written before
it existed carry none and are version 1. A manifest this dbperf cannot read (newer, damaged, another file's) is one
UserError line naming it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from dbperf.errors import UserError
from dbperf.run_meta import MetaError, Upgrade, decode_versioned, upgraded

MANIFEST_VERSION = 1
VERSION_KEY = "manifest_version"
MANIFEST_UPGRADES: dict[int, Upgrade] = {}


class ServerCompiler(msgspec.Struct, kw_only=True):
    path: str
    version: str
    cxx: str | None = None  # since C++ engines (MariaDB, MySQL) were built
    named: str | None = None  # a named compiler (host/compiler.py); None: the user's CC


class ServerManifest(msgspec.Struct, kw_only=True):
    """What one cached server build is: its key, the source it was built from (buildlab/sources/: the origin's
    provenance, with the patches applied), flags and compiler, the commands run, PGO's and BOLT's records (None
    without), the kept tree's reuse, the installed server's sha256 and the build's time."""
    manifest_version: int = MANIFEST_VERSION
    key: str
    label: str
    engine: str
    source: dict[str, Any]
    variants: list[str] = []
    cflags: list[str] = []
    flags: list[str] = []
    compiler: ServerCompiler
    commands: list[list[str]] = []
    jobs: int | None = None
    compile_steps: int | None = None
    pgo: dict[str, Any] | None = None
    bolt: dict[str, Any] | None = None
    incremental: dict[str, Any] | None = None  # a build in a kept tree (build_tree.py)
    ldflags: list[str] = []
    relink: dict[str, Any] | None = None
    differs_from_debian: list[dict[str, Any]] = []
    server_binary_sha256: str | None = None
    build_seconds: float | None = None
    build_cpu_seconds: float | None = None
    segments: list[dict[str, Any]] = []
    built_at: str | None = None
    install: str


class ReleaseManifest(msgspec.Struct, kw_only=True):
    """A released server's binaries as fetched: where from, the archive's checksums and when."""
    engine: str
    version: str
    published_version: str
    source: str
    url: str
    jar_sha256: str
    jar_sha1: str
    checked_against: str
    fetched_at: str


M = TypeVar("M", ServerManifest, ReleaseManifest)


def server_manifest(raw: Any, kind: type[M]) -> M:
    """A manifest's JSON value, upgraded to the current version and decoded; a MetaError says what is wrong."""
    if kind is ReleaseManifest:
        if not isinstance(raw, dict):
            raise MetaError("expected a JSON object")
        try:
            return msgspec.convert(raw, kind)
        except msgspec.ValidationError as e:
            raise MetaError(str(e)) from None
    return decode_versioned(raw, kind, lambda raw: upgraded(
        {VERSION_KEY: 1, **raw}, MANIFEST_VERSION, MANIFEST_UPGRADES, VERSION_KEY, "server manifest"))


def read_server_manifest(path: Path, kind: type[M]) -> M:
    """The manifest.json at `path`, typed as `kind` (a build's or a release's); a UserError in one line when it
    cannot be read."""
    try:
        return server_manifest(json.loads(path.read_text(encoding="utf-8")), kind)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, MetaError) as e:
        raise UserError(f"{path}: not a server manifest this dbperf reads ({e}); remove its folder to fetch or "
                        "build it again") from None


def manifest_record(manifest: ServerManifest | ReleaseManifest) -> dict[str, Any]:
    """The manifest as JSON builtins (what meta.json and the listings hold)."""
    out: dict[str, Any] = msgspec.to_builtins(manifest)
    return out


def encode_manifest(manifest: ServerManifest | ReleaseManifest) -> str:
    """manifest.json's text: indented, with a newline at the end, as the lab has always written it."""
    return json.dumps(manifest_record(manifest), indent=2) + "\n"
