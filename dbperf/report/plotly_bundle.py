"""The plotly.js the HTML report embeds. The `plotly` Python package ships the full bundle (4.8 MB, about 1.9 MB in
the page once compressed); every chart the report draws (bar, scatter, heatmap) is in npm's cartesian bundle of the
same plotly.js version, a quarter of it. That bundle is fetched once (`make setup`, or `python -m
dbperf.report.plotly_bundle`) from the npm registry, checked against the registry's sha512 integrity, and kept in
the package's environment (sys.prefix/share/dbperf); a page without it embeds the full bundle and says why."""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import json
import os
import sys
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from dbperf.errors import UserError

REGISTRY = "https://registry.npmjs.org"
PACKAGE = "plotly.js-cartesian-dist-min"
DRAWN = frozenset({"bar", "scatter", "heatmap"})  # the trace types the report's figures use: all in the bundle
TIMEOUT_S = 60


@dataclass(frozen=True)
class Bundle:
    version: str
    js: bytes
    said: str  # what the page says of it


def _full() -> tuple[str, bytes]:
    try:
        js = (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()
    except (ModuleNotFoundError, OSError) as e:
        raise UserError(f"the HTML report needs the 'plotly' package (pip install plotly): {e}") from None
    head = js[:400].decode("ascii", errors="replace")
    return (head.split("plotly.js v", 1)[1].split()[0] if "plotly.js v" in head else "unknown"), js


def kept_path(version: str) -> Path:
    where = os.environ.get("DBPERF_PLOTLY_DIR")  # tests: a bundle kept elsewhere
    return (Path(where) if where else Path(sys.prefix) / "share" / "dbperf") / f"{PACKAGE}-{version}.js"


@functools.cache
def bundle() -> Bundle:
    """The cartesian bundle when it is kept, else the plotly package's full bundle, said so."""
    version, full = _full()
    kept = kept_path(version)
    if kept.is_file():
        return Bundle(version, kept.read_bytes(), f"plotly.js {version} (npm's {PACKAGE}: the chart types drawn here)")
    return Bundle(version, full, f"plotly.js {version}, the full bundle: the smaller cartesian one is not kept in "
                                 f"{kept.parent} (`make setup`, or `python -m dbperf.report.plotly_bundle`, "
                                 "fetches it)")


def _get(url: str, what: str, announce: Callable[[str], None] | None = None) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            if announce is not None:
                size = int(response.headers.get("Content-Length") or 0)
                announce(f"{size / 1e6:.1f} MB" if size else "size not given")
            return response.read()
    except urllib.error.HTTPError as e:
        raise UserError(f"{what}: {url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        raise UserError(f"{what}: cannot fetch {url}: {getattr(e, 'reason', e)}") from None


def fetch(say: Callable[[str], None]) -> Path:
    """The cartesian bundle of the plotly package's plotly.js version, fetched and kept (once)."""
    version, _ = _full()
    kept = kept_path(version)
    if kept.is_file():
        return kept
    what = f"{PACKAGE} {version}"
    try:
        meta = json.loads(_get(f"{REGISTRY}/{PACKAGE}/{version}", f"{what}: the registry's metadata"))
        tarball, integrity = meta["dist"]["tarball"], meta["dist"]["integrity"]
    except (ValueError, KeyError, TypeError) as e:
        raise UserError(f"{what}: the registry's metadata names no tarball and integrity ({e})") from None
    data = _get(tarball, what, lambda size: say(f"downloading {what} ({size}) from {REGISTRY}; kept in {kept}"))
    algorithm, _, expected = integrity.partition("-")
    if algorithm != "sha512" or base64.b64encode(hashlib.sha512(data).digest()).decode() != expected:
        raise UserError(f"{what}: {tarball} does not match the registry's integrity {integrity[:24]}...; "
                        "refused, nothing kept")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        member = next((m for m in tar.getmembers() if m.isfile() and m.name.endswith(".min.js")), None)
        js = tar.extractfile(member).read() if member is not None else None  # type: ignore[union-attr]
    if not js:
        raise UserError(f"{what}: the tarball holds no .min.js")
    kept.parent.mkdir(parents=True, exist_ok=True)
    staged = kept.with_suffix(".part")
    staged.write_bytes(js)
    staged.replace(kept)  # whole or not at all
    return kept


def main() -> None:
    try:
        path = fetch(lambda said: print(f"dbperf: {said}", file=sys.stderr, flush=True))
    except UserError as e:
        sys.exit(f"dbperf: error: {e}")
    print(f"dbperf: the HTML report embeds {path.name} ({path.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)


if __name__ == "__main__":
    main()
