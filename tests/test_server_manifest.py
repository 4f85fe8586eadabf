"""A server's manifest.json typed (dbperf/server_manifest.py): every shape the lab has written reads through its one
reader, what the lab writes reads back equal, and a manifest it cannot read is one UserError line.

tests/data/server-manifests/: build-v1-first.json is the first writer's shape (2026-11-22: no pgo or bolt, a
compiler without cxx, build_seconds alone); build-pgo-bolt-segments.json a PGO and BOLT build with Debian's
departures and resumed segments; build-tree-relink.json a relink of a user's tree in its kept tree; the *-real.json
files are the manifests this machine's server cache held (a PostgreSQL build in a kept tree, two releases)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from dbperf.buildlab import server_cache_listing, server_releases
from dbperf.errors import UserError
from dbperf.server_manifest import (
    MANIFEST_VERSION,
    ReleaseManifest,
    ServerManifest,
    encode_manifest,
    manifest_record,
    read_server_manifest,
)

pytestmark = pytest.mark.unit

DATA = Path(__file__).parent / "data" / "server-manifests"
BUILDS = sorted(DATA.glob("build-*.json"))
RELEASES = sorted(DATA.glob("release-*.json"))


def test_every_shape_is_there() -> None:
    assert len(BUILDS) == 4 and len(RELEASES) == 2


@pytest.mark.parametrize("path", BUILDS, ids=lambda p: p.stem)
def test_every_build_manifest_the_lab_wrote_reads_with_its_values(path: Path, tmp_path: Path) -> None:
    raw = json.loads(path.read_text())
    m = read_server_manifest(path, ServerManifest)
    assert m.manifest_version == MANIFEST_VERSION == 1
    assert (m.key, m.label, m.engine, m.install) == (raw["key"], raw["label"], raw["engine"], raw["install"])
    assert m.source == raw["source"] and m.compiler.version == raw["compiler"]["version"]
    assert m.pgo == raw.get("pgo") and m.bolt == raw.get("bolt") and m.incremental == raw.get("incremental")
    record = manifest_record(m)
    said = {k: record[k] for k in raw}
    if "cxx" not in raw["compiler"]:  # the first shape's compiler: the later keys read as None
        said["compiler"] = {k: v for k, v in said["compiler"].items() if k in raw["compiler"]}
    assert said == raw  # nothing the file says is lost or changed
    rewritten = tmp_path / "manifest.json"
    rewritten.write_text(encode_manifest(m))
    assert read_server_manifest(rewritten, ServerManifest) == m


def test_the_first_shape_has_its_later_keys_empty() -> None:
    m = read_server_manifest(DATA / "build-v1-first.json", ServerManifest)
    assert m.pgo is None and m.bolt is None and m.compiler.cxx is None and m.compiler.named is None
    assert m.build_cpu_seconds is None and m.segments == [] and m.relink is None and m.differs_from_debian == []
    assert server_cache_listing.how_built(manifest_record(m)) == "built in 512.3 s"


@pytest.mark.parametrize("path", RELEASES, ids=lambda p: p.stem)
def test_every_release_manifest_reads(path: Path) -> None:
    raw = json.loads(path.read_text())
    m = read_server_manifest(path, ReleaseManifest)
    assert manifest_record(m) == raw


@pytest.mark.parametrize("text, says", [
    ("{", "Expecting"),
    ("[1]", "expected a JSON object"),
    (json.dumps({"key": "k"}), "missing required field"),
    (json.dumps({**json.loads((DATA / "build-v1-first.json").read_text()), "manifest_version": 2}), "newer"),
    (json.dumps({**json.loads((DATA / "build-v1-first.json").read_text()), "compiler": "gcc"}), "Expected `object`"),
])
def test_a_manifest_it_cannot_read_is_one_line_naming_it(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "manifest.json"
    path.write_text(text)
    with pytest.raises(UserError) as e:
        read_server_manifest(path, ServerManifest)
    said = str(e.value)
    assert "\n" not in said and str(path) in said and says in said and "remove its folder" in said


def test_a_release_manifest_is_not_a_build_one() -> None:
    with pytest.raises(UserError, match="not a server manifest this dbperf reads"):
        read_server_manifest(RELEASES[0], ServerManifest)


def test_the_cache_listings_read_through_it(where: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(where / "servers"))
    entry = where / "servers" / "build" / "0f3c2a1b9d8e7f6a5b4c"
    entry.mkdir(parents=True)
    (entry / "manifest.json").write_text((DATA / "build-v1-first.json").read_text())
    release = where / "servers" / "release" / "mariadb-10.1.23"
    release.mkdir(parents=True)
    (release / "manifest.json").write_text((DATA / "release-mariadb-real.json").read_text())
    assert [m["key"] for m in server_cache_listing.cached_server_builds()] == ["0f3c2a1b9d8e7f6a5b4c"]
    assert [m["version"] for m in server_releases.cached_releases()] == ["10.1.23"]
    (entry / "manifest.json").write_text("{}")
    with pytest.raises(UserError, match=f"{entry}/manifest.json: not a server manifest"):
        server_cache_listing.cached_server_builds()


# The readers of a manifest.json: the server's (this one reader) and SQLite's builder, which decodes its own through
# build_manifest.py.
MANIFEST_READERS = {"server_manifest.py", "buildlab/builder.py"}


def _parses_json(f: ast.expr) -> bool:
    """json.loads, json.load or msgspec.json.decode (a bytes' .decode() is no parse)."""
    if not isinstance(f, ast.Attribute):
        return False
    return f.attr in ("loads", "load") or (f.attr == "decode" and isinstance(f.value, ast.Attribute)
                                           and f.value.attr == "json")


def test_no_module_that_names_manifest_json_parses_json() -> None:
    """A module naming manifest.json parses no JSON: a server's manifest is read through read_server_manifest."""
    package = Path(__file__).resolve().parent.parent / "dbperf"
    found = []
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if where in MANIFEST_READERS or not any(isinstance(n, ast.Constant) and n.value == "manifest.json"
                                                for n in ast.walk(tree)):
            continue
        found += [f"{where}:{n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Call) and _parses_json(n.func)]
    assert not found, f"read a server's manifest.json through server_manifest.read_server_manifest: {found}"
