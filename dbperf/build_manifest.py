"""manifest.json of a cached SQLite build ($DBPERF_CACHE/builds/<key>/, buildlab/builder.py), typed and versioned
like a results directory's meta.json (run_meta.py): checked where it is written and where the cache reads it back.

`manifest_version` is its format's version; the manifests written before it existed carry none and are version 1.
An older version is upgraded (MANIFEST_UPGRADES, asv's update_to_N, as run_meta.UPGRADES); a manifest this dbperf
cannot read (newer, or damaged) makes its build a cache miss: the build is made again, nothing measured is lost.
"""

from __future__ import annotations

from typing import Any

import msgspec

from dbperf.run_meta import Upgrade, decode_versioned, upgraded

MANIFEST_VERSION = 1
VERSION_KEY = "manifest_version"
MANIFEST_UPGRADES: dict[int, Upgrade] = {}


class CompilerInfo(msgspec.Struct, kw_only=True):
    path: str
    version: str


class ObjectFile(msgspec.Struct, kw_only=True):
    """An object file a build keeps beside its library (what a relink links again)."""
    file: str
    sha256: str


class Relink(msgspec.Struct, kw_only=True):
    """A build that is its base's objects linked again with `ldflags`: the base's key, the objects linked (in the
    base's entry) and whether they are the ones the base's manifest lists (their sha256 before and after the link)."""
    base_key: str
    ldflags: list[str]
    objects: list[ObjectFile]
    object_count: int
    objects_equal: bool


class BuildManifest(msgspec.Struct, kw_only=True):
    """What one cached build is: its key, the source it was built from, the flags and compiler, the commands run,
    PGO's training and profile (None without PGO), the library and its sha256, the object it was linked from, and
    for a relink (`ldflags`) what it relinked."""
    manifest_version: int = MANIFEST_VERSION
    key: str
    label: str
    source: dict[str, Any]  # buildlab/sqlite_origin.py: provenance(), with the patches applied (patches.py)
    variants: list[str] = []
    cflags: list[str] = []
    flags: list[str] = []
    compiler: CompilerInfo
    commands: list[list[str]] = []
    pgo: dict[str, Any] | None = None
    library: str
    library_sha256: str
    objects: list[ObjectFile] = []  # kept in the entry; none in builds cached before they were kept
    ldflags: list[str] = []
    relink: Relink | None = None
    build_seconds: float | None = None
    built_at: str | None = None


def build_manifest(raw: Any) -> BuildManifest:
    """A manifest.json's JSON value, upgraded to the current version and decoded; a MetaError says what is wrong."""
    return decode_versioned(raw, BuildManifest, lambda raw: upgraded(
        {VERSION_KEY: 1, **raw}, MANIFEST_VERSION, MANIFEST_UPGRADES, VERSION_KEY, "build manifest"))
