"""A few files of a server's Debian source package, fetched by the build lab's apt (signed Sources index, file
checksums) and read from the upstream tarball: the probes time the servers' own functions, so they read them from
the release, never from a copy typed here.

Only the named files are unpacked (a full `dpkg-source -x` of MySQL 9.7 takes over ten minutes on a loaded
machine). Debian's patches are not applied, so a patch that touches one of those files is refused: the text read
would not be the text Debian builds."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from dbperf.buildlab.debian_source import Announce, candidate_versions
from dbperf.buildlab.paths import cache_root
from dbperf.errors import UserError
from dbperf.tools import run_tool


class NotServed(UserError):
    """No registry serves the release (the archive has no version of it, or cannot be reached from here)."""


def _served(engine: str, into: Path, announce: Announce | None = None) -> tuple[str, str, list[str]]:
    """(package, version, skipped): the newest version the archive serves, downloaded into `into` (`announce` told
    before each download starts)."""
    try:
        apt, package, versions = candidate_versions(engine)
    except UserError as e:
        raise NotServed(str(e).splitlines()[0]) from None
    skipped: list[str] = []
    for version in versions:
        try:
            apt.download(package, version, into, announce,
                         f"a few of its files kept in {_root(engine)} for the probes that read them")
            return package, version, skipped
        except UserError as e:
            skipped.append(f"{version}: {str(e).splitlines()[0][:200]}")
            for p in into.iterdir():
                p.unlink()
    raise NotServed(f"no version of the Debian source package {package} is served by the archive "
                    f"(tried {', '.join(versions)})")


def _patched(debian_tar: Path, paths: list[str]) -> list[str]:
    """The Debian patches (debian/patches/*) that change one of `paths`."""
    with tempfile.TemporaryDirectory() as tmp:
        run_tool(["tar", "-xf", debian_tar, "-C", tmp, "debian/patches"], f"unpacking {debian_tar.name}")
        found = []
        for patch in sorted((Path(tmp) / "debian" / "patches").glob("*.patch")):
            touched = set(re.findall(r"^\+\+\+ b/(\S+)", patch.read_text(errors="replace"), re.M))
            found += [f"{patch.name} changes {p}" for p in paths if p in touched]
        return found


def _unpack(download: Path, paths: list[str], into: Path) -> str:
    """The upstream tarball's `paths` (relative to its top directory) into `into`; returns the top directory."""
    (orig,) = [p for p in download.glob("*.orig.tar.*") if not p.name.endswith(".asc")]
    listing = run_tool(["tar", "-tf", orig], f"listing {orig.name}", timeout=900).stdout
    top = listing.split("/", 1)[0]
    run_tool(["tar", "-xf", orig, "-C", into, "--strip-components=1", *(f"{top}/{p}" for p in paths)],
             f"unpacking {len(paths)} files of {orig.name}", timeout=900)
    return top


def _root(engine: str) -> Path:
    return cache_root() / "probes" / "server-source" / engine


def cached_files(engine: str, paths: list[str]) -> tuple[Path, dict[str, Any]] | None:
    """What server_files gives when the cache already holds all of `paths`, else None (nothing is fetched)."""
    manifest = _root(engine) / "source.json"
    if not manifest.is_file():
        return None
    provenance = json.loads(manifest.read_text())
    tree = _root(engine) / provenance["tree"]
    return (tree, provenance) if all((tree / p).is_file() for p in paths) else None


def server_files(engine: str, paths: list[str], announce: Announce | None = None) -> tuple[Path, dict[str, Any]]:
    """(directory holding `paths` as in the source tree, provenance); fetched once (`announce` told before the
    download starts), then read from the cache."""
    if (cached := cached_files(engine, paths)) is not None:
        return cached
    root = _root(engine)
    manifest = root / "source.json"
    root.mkdir(parents=True, exist_ok=True)
    download = Path(tempfile.mkdtemp(prefix="download-", dir=root))
    try:
        package, version, skipped = _served(engine, download, announce)
        (debian_tar,) = download.glob("*.debian.tar.*")
        patched = _patched(debian_tar, paths)
        if patched:
            raise UserError(f"{package} {version}: Debian's patch {patched[0]}: the probe reads the upstream file, "
                            "which is not what Debian builds")
        tree = root / version.replace(":", "_")
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir()
        top = _unpack(download, paths, tree)
        provenance = {"engine": engine, "package": package, "version": version, "top": top,
                      "tree": tree.name, "skipped_versions": skipped,
                      "verified_by": "apt (signed Sources index, file checksums); Debian's patches checked not to "
                                     "touch the files read"}
        manifest.write_text(json.dumps(provenance, indent=1) + "\n")
        return tree, provenance
    finally:
        shutil.rmtree(download, ignore_errors=True)
