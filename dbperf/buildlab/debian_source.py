"""A server's Debian source package, fetched through the lab's own apt configuration and state directory.

apt reads a `deb-src` list for the release this machine runs (from /etc/os-release) and the Debian archive keyring,
never the system's apt configuration or state: `apt-get update` verifies the Sources indexes' signatures, `apt-get
source --download-only` the files' checksums against them, and `dpkg-source -x` the .dsc's checksums again while it
unpacks and applies Debian's patches. The newest version is tried first; when the archive does not serve it (a
security pool that is not mirrored), the next one is taken and the manifest says which and why.

An engine whose source package this host's release does not carry names the suite that does (MySQL: `unstable`):
that suite's list alone, in an apt state directory of its own, for that one package. A development suite's Release
file carries a Valid-Until a week ahead; a mirror or proxy serving an older copy makes apt refuse it as expired. The
lab then updates again without the freshness check, and the manifest says the index was past its Valid-Until and
that its signature was still verified (what is checked is who signed the files, not that they are the newest).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbperf import engines
from dbperf.buildlab.paths import server_cache
from dbperf.errors import UserError
from dbperf.tools import run_tool

ARCHIVE = "http://deb.debian.org/debian"
SECURITY = "http://deb.debian.org/debian-security"
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
# Which source package holds each engine's server (Debian 12 names), as its descriptor says.
SOURCE_PACKAGES = {e.name: e.debian_source_package for e in engines.ENGINES.values() if e.debian_source_package}
SOURCE_SUITES = {e.name: e.debian_source_suite for e in engines.ENGINES.values() if e.debian_source_suite}


Announce = Callable[[str], None]  # told of a download before it starts


@dataclass(frozen=True)
class DebianSource:
    engine: str
    package: str
    version: str  # Debian's, e.g. 15.18-0+deb12u1
    tree: Path  # unpacked, patches applied
    provenance: dict[str, Any]


def _codename() -> str:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError as e:
        raise UserError(f"/etc/os-release: cannot read: {e.strerror} (Debian source packages need a Debian host)") \
            from None
    m = re.search(r"^VERSION_CODENAME=\"?(\w+)", text, re.M)
    if not m:
        raise UserError("/etc/os-release names no VERSION_CODENAME: Debian source packages need a Debian release")
    return m.group(1)


class PrivateApt:
    """apt-get and apt-cache with every directory they read or write under `root`; this host's release's suites, or
    `suite` alone."""

    def __init__(self, root: Path, suite: str | None = None) -> None:
        self.root = root
        self.suite = suite
        self.stale_index: str | None = None  # why the freshness check was dropped, when it was
        if not KEYRING.is_file():
            raise UserError(f"{KEYRING} not found (apt install debian-archive-keyring)")
        for d in ("state/lists/partial", "cache/archives/partial", "etc"):
            (root / d).mkdir(parents=True, exist_ok=True)
        signed = f"[signed-by={KEYRING}]"
        if suite:
            lines = f"deb-src {signed} {ARCHIVE} {suite} main\n"
        else:
            codename = _codename()
            lines = (f"deb-src {signed} {ARCHIVE} {codename} main\n"
                     f"deb-src {signed} {ARCHIVE} {codename}-updates main\n"
                     f"deb-src {signed} {SECURITY} {codename}-security main\n")
        (root / "etc" / "sources.list").write_text(lines)
        self.options = [
            "-o", f"Dir::Etc::sourcelist={root / 'etc' / 'sources.list'}", "-o", "Dir::Etc::sourceparts=-",
            "-o", f"Dir::State={root / 'state'}", "-o", f"Dir::Cache={root / 'cache'}",
            "-o", "Dir::State::status=/var/lib/dpkg/status", "-o", "Debug::NoLocking=1",
            "-o", "APT::Sandbox::User=root", "-q"]

    def update(self) -> None:
        try:
            run_tool(["apt-get", *self.options, "update"], "apt-get update (the lab's deb-src list)", timeout=600)
        except UserError as e:
            expired = re.search(r"Release file for (\S+) is expired \(invalid since ([^)]*)\)", str(e))
            if not self.suite or not expired:
                raise
            # A development suite's week-long Valid-Until, past on a stale mirror: its signature is still checked.
            self.stale_index = (f"the {self.suite} Release file was past its Valid-Until ({expired.group(2)}): "
                                "updated without the freshness check; its signature was verified")
            self.options += ["-o", "Acquire::Check-Valid-Until=false"]
            run_tool(["apt-get", *self.options, "update"], "apt-get update (the lab's deb-src list, stale index)",
                     timeout=600)

    def versions(self, package: str) -> list[str]:
        out = run_tool(["apt-cache", *self.options, "showsrc", package], f"apt-cache showsrc {package}",
                       timeout=120).stdout
        found = re.findall(r"^Version: (\S+)$", out, re.M)
        if not found:
            raise UserError(f"no Debian source package {package} in the archive's Sources")
        return sorted(set(found), key=_debian_version_key, reverse=True)

    def download_size(self, package: str, version: str) -> tuple[int, int]:
        """(bytes, files) of the source package's files, as the Sources index lists them (nothing is fetched)."""
        out = run_tool(["apt-get", *self.options, "--print-uris", "source", "--download-only", f"{package}={version}"],
                       f"apt-get --print-uris source {package}={version}", timeout=120).stdout
        sizes = [int(m) for m in re.findall(r"^'[^']+' \S+ (\d+)", out, re.M)]
        return sum(sizes), len(sizes)

    def download(self, package: str, version: str, into: Path, announce: Announce | None = None,
                 kept: str = "") -> None:
        """The package's files into `into`; `announce` is told first what, how large and (`kept`) where it stays."""
        if announce is not None:
            size, files = self.download_size(package, version)
            announce(f"downloading Debian's source package {package} {version} ({size / 1e6:.1f} MB in {files} "
                     f"files) from Debian's archive{'; ' + kept if kept else ''}")
        run_tool(["apt-get", *self.options, "source", "--download-only", f"{package}={version}"],
                 f"apt-get source {package}={version}", timeout=1800, cwd=into)


def _debian_version_key(v: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", v.split(":", 1)[-1])]


def candidate_versions(engine: str) -> tuple[PrivateApt, str, list[str]]:
    """The lab's apt, the engine's source package, and its versions in the archive, newest first."""
    package = SOURCE_PACKAGES[engine]
    suite = SOURCE_SUITES.get(engine)
    apt = PrivateApt(server_cache() / (f"apt-{suite}" if suite else "apt"), suite)
    apt.update()
    return apt, package, apt.versions(package)


def fetch_debian_source(apt: PrivateApt, package: str, engine: str, version: str, work: Path,
                        skipped: list[str], announce: Announce | None = None) -> DebianSource:
    """That version of the source package, unpacked with Debian's patches into work/src; a UserError when the
    archive does not serve it. `announce` is told of the download before it starts."""
    download = Path(tempfile.mkdtemp(prefix="download-", dir=work))
    try:
        apt.download(package, version, download, announce, f"unpacked and built in {work}")
        (dsc,) = download.glob("*.dsc")
        files = sorted(p for p in download.iterdir() if p.is_file())
        # Unpacked beside the downloads (dpkg-source copies the tarballs next to the tree it makes), then moved.
        # MySQL 9.7's source (59105 files unpacked) took over 600 s on a loaded 2-core machine (2026-11-27).
        run_tool(["dpkg-source", "-x", dsc, download / "src"], f"dpkg-source -x {dsc.name}", timeout=3600)
        tree = work / "src"
        shutil.move(download / "src", tree)
        provenance = {
            "origin": "debian-src", "package": package, "version": version,
            "upstream_version": version.split(":", 1)[-1].split("-")[0],
            "files": [{"name": p.name, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()} for p in files],
            "verified_by": "apt (signed Sources index, file checksums) and dpkg-source -x (.dsc checksums)",
            "skipped_versions": skipped,
            **({"suite": apt.suite} if apt.suite else {}),
            **({"stale_index": apt.stale_index} if apt.stale_index else {}),
        }
        return DebianSource(engine, package, version, tree, provenance)
    finally:
        shutil.rmtree(download, ignore_errors=True)
