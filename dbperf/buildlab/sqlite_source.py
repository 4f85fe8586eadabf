"""SQLite sources by version, from the amalgamation that the crates.io crate libsqlite3-sys bundles.

The crate is fetched through cargo with an exact version pin (`=X.Y.Z`), so cargo verifies its checksum against the
registry index and records it in Cargo.lock; nothing of SQLite's code is kept in this repository. Which crate
version carries which SQLite version is read from the amalgamation's own SQLITE_VERSION.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from dbperf.buildlab.paths import cache_root
from dbperf.errors import UserError
from dbperf.tools import run_tool

CRATE = "libsqlite3-sys"
INDEX_URL = "https://index.crates.io/li/bs/libsqlite3-sys"
HINTS = Path(__file__).with_name("sqlite_versions.toml")
INDEX_MAX_AGE_S = 24 * 3600
MAX_SCAN = 12
SQLITE_VERSION = re.compile(r'#define SQLITE_VERSION\s+"([\d.]+)"')


@dataclass(frozen=True)
class SqliteSource:
    sqlite_version: str
    crate: str
    crate_version: str
    crate_checksum: str
    amalgamation: str  # the directory holding sqlite3.c and sqlite3.h
    sqlite3_c_sha256: str

    @property
    def word(self) -> str:
        """How a build's label names it."""
        return self.sqlite_version

    def identity(self) -> dict[str, str]:
        """What of it a build's key hashes (the keys of builds cached before trees existed stay as they were)."""
        return {"sqlite_version": self.sqlite_version, "sqlite3_c_sha256": self.sqlite3_c_sha256}

    def ready(self) -> Path | None:
        """The crate's amalgamation, compiled where cargo keeps it unless a patch changes it."""
        return Path(self.amalgamation)

    def export(self, into: Path) -> None:
        """A copy of the amalgamation to patch, writable by its owner: the crate cargo keeps is never changed."""
        shutil.copytree(self.amalgamation, into)
        for path in [into, *into.rglob("*")]:
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o200)

    def provenance(self, folder: Path | None = None) -> dict[str, str]:
        return asdict(self)


def semver(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def _discovered_path() -> Path:
    return cache_root() / "sqlite-versions.json"


def known_versions() -> dict[str, str]:
    """crate version -> SQLite version, from the shipped hints and what this machine has discovered."""
    known = dict(tomllib.loads(HINTS.read_text()))
    path = _discovered_path()
    if path.is_file():
        known.update(json.loads(path.read_text()))
    return known


def _remember(crate_version: str, sqlite_version: str) -> None:
    path = _discovered_path()
    found = json.loads(path.read_text()) if path.is_file() else {}
    found[crate_version] = sqlite_version
    _replace(path, json.dumps(found, indent=1, sort_keys=True).encode())


def _replace(path: Path, data: bytes) -> None:
    """`path` written whole (beside, then renamed): another dbperf reading it meanwhile reads the old or the new."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def crate_versions() -> list[str]:
    """Non-yanked versions of the crate on crates.io, newest first (the sparse index, cached for a day)."""
    cached = cache_root() / "libsqlite3-sys.index"
    if not cached.is_file() or time.time() - cached.stat().st_mtime > INDEX_MAX_AGE_S:
        try:
            with urllib.request.urlopen(INDEX_URL, timeout=30) as response:
                _replace(cached, response.read())
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            if not cached.is_file():
                raise UserError(f"cannot read the crates.io index for {CRATE}: {e}") from None
    entries = [json.loads(line) for line in cached.read_text().splitlines() if line.strip()]
    return sorted((e["vers"] for e in entries if not e.get("yanked")), key=semver, reverse=True)


def _cargo() -> str:
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    if not Path(cargo).exists():
        raise UserError("cargo not found: it fetches SQLite sources from crates.io (apt install cargo)")
    return cargo


class NoAmalgamation(UserError):
    """An old crate release that links the system's SQLite instead of bundling one: no version to build."""


Announce = Callable[[str], None]  # told of a download before it starts
DOWNLOADS = "https://static.crates.io/crates"  # where cargo downloads crates.io's crates from


def fetch(crate_version: str, announce: Announce | None = None) -> SqliteSource:
    """Fetches one exact crate version through cargo and reads the SQLite version of its amalgamation; `announce` is
    told first when cargo does not hold the crate yet. One fetch of a version at a time, across processes (an flock
    beside its project): two runs started together on an empty cache would write one Cargo.toml and Cargo.lock at
    once, and cargo refuses a half-written one."""
    project = cache_root() / "fetch" / crate_version
    project.mkdir(parents=True, exist_ok=True)
    with open(project.parent / f"{crate_version}.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            if announce is not None and not _held_by_cargo(crate_version):
                announce(f"downloading the crate {CRATE} {crate_version} ({_crate_size(crate_version)}) from "
                         f"crates.io through cargo, for its SQLite amalgamation; kept in {_cargo_home()}/registry")
            return _fetch(crate_version, project)
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


def _cargo_home() -> Path:
    return Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo")


def _held_by_cargo(crate_version: str) -> bool:
    return any(_cargo_home().glob(f"registry/cache/*/{CRATE}-{crate_version}.crate"))


def _crate_size(crate_version: str) -> str:
    """The crate's size as its download server gives it (a HEAD request), or that it did not."""
    request = urllib.request.Request(f"{DOWNLOADS}/{CRATE}/{CRATE}-{crate_version}.crate", method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            size = int(response.headers.get("Content-Length") or 0)
    except (urllib.error.URLError, OSError, ValueError):
        size = 0
    return f"{size / 1e6:.1f} MB" if size else "size not given by crates.io"


def _fetch(crate_version: str, project: Path) -> SqliteSource:
    (project / "src").mkdir(parents=True, exist_ok=True)
    (project / "src" / "lib.rs").write_text("")
    (project / "Cargo.toml").write_text(
        '[package]\nname = "dbperf-sqlite-fetch"\nversion = "0.0.0"\nedition = "2021"\n\n'
        f'[dependencies]\n{CRATE} = {{ version = "={crate_version}", default-features = false }}\n')
    run_tool([_cargo(), "fetch", "--quiet"], f"fetching {CRATE} {crate_version} through cargo", cwd=project)
    meta = json.loads(run_tool([_cargo(), "metadata", "--format-version", "1", "--offline", "--quiet"],
                               f"reading the metadata of {CRATE} {crate_version}", cwd=project).stdout)
    manifest = next(p["manifest_path"] for p in meta["packages"] if p["name"] == CRATE)
    amalgamation = Path(manifest).parent / "sqlite3"
    lock = tomllib.loads((project / "Cargo.lock").read_text())
    checksum = next(p.get("checksum", "") for p in lock["package"] if p["name"] == CRATE)
    header = amalgamation / "sqlite3.h"
    if not header.is_file():
        raise NoAmalgamation(f"{CRATE} {crate_version} bundles no SQLite amalgamation")
    match = SQLITE_VERSION.search(header.read_text(errors="replace"))
    if not match:
        raise UserError(f"{header}: no SQLITE_VERSION")
    sqlite_version = match.group(1)
    _remember(crate_version, sqlite_version)
    digest = hashlib.sha256((amalgamation / "sqlite3.c").read_bytes()).hexdigest()
    return SqliteSource(sqlite_version, CRATE, crate_version, checksum, str(amalgamation), digest)


def resolve(sqlite_version: str, announce: Announce | None = None) -> SqliteSource:
    """The newest crate version that bundles this SQLite version (`announce` told of each crate downloaded)."""
    known = known_versions()
    for crate_version in sorted((c for c, v in known.items() if v == sqlite_version), key=semver, reverse=True):
        source = fetch(crate_version, announce)
        if source.sqlite_version == sqlite_version:
            return source
    # Scan crate versions not yet mapped, newest first, until an older SQLite shows up.
    wanted = semver(sqlite_version)
    scanned = 0
    for crate_version in crate_versions():
        if crate_version in known:
            if semver(known[crate_version]) < wanted:
                break
            continue
        if scanned >= MAX_SCAN:
            break
        scanned += 1
        try:
            source = fetch(crate_version, announce)
        except NoAmalgamation:
            break  # this release and every older one link the system's SQLite
        if source.sqlite_version == sqlite_version:
            return source
        if semver(source.sqlite_version) < wanted:
            break
    available = ", ".join(sorted(set(known_versions().values()), key=semver, reverse=True))
    raise UserError(f"sqlite@{sqlite_version}: no {CRATE} release on crates.io bundles it "
                    f"(known here: {available}; `dbperf build --versions` scans for more)")


def scan_versions(limit: int, announce: Announce | None = None) -> tuple[dict[str, str], str | None]:
    """Maps the newest `limit` crate versions (fetching those not yet known): crate -> SQLite, newest first, and
    the first release that bundles no amalgamation, where the scan stopped (every older one predates the bundling),
    or None."""
    known = known_versions()
    out = {}
    for crate_version in crate_versions()[:limit]:
        try:
            out[crate_version] = known.get(crate_version) or fetch(crate_version, announce).sqlite_version
        except NoAmalgamation:
            return out, crate_version
    return out, None
