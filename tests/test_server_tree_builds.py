"""`dbperf bisect --tree --engine postgres` end to end: a checkout made here from Debian's PostgreSQL source (fetched
by the build lab's own apt, as `source = "postgres@debian-src"` is), three commits: Debian's source, a comment added
to xact.c, then a loop added to StartTransactionCommand (every statement runs it). Every commit is built by the build
lab from the checkout in one kept build tree (the first build compiles everything: about 8 minutes on 2 cores; each
later commit recompiles xact.c alone) and counted under cachegrind on a small table. The bisect names the commit with
the loop, each later build says it rebuilt one object, and the checkout is left as it was. Needs the archive
(network) and the servers' users (make setup); it uses a server cache of its own."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.conftest import NEEDS_SERVERS, SERVER_DIR_PREFIX, run_cli
from tests.server_checkouts import POSTGRES, commit, debian_checkout
from tests.test_user_tree import git, snapshot

pytestmark = [pytest.mark.network, NEEDS_SERVERS]


@pytest.fixture
def cache():
    """A server cache of the test's own, reachable by the servers' users."""
    base = Path(tempfile.mkdtemp(prefix=SERVER_DIR_PREFIX, dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_the_commit_that_adds_work_to_postgres_is_named_and_each_later_commit_rebuilds_one_object(tmp_path, cache,
                                                                                                  monkeypatch):
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(cache))
    repo = tmp_path / "postgresql"
    said: list[str] = []
    original = debian_checkout(POSTGRES, repo, said)
    # the download was said before it started: what, how large (the Sources index's sizes), where it goes
    assert re.fullmatch(r"downloading Debian's source package postgresql-15 \S+ \(\d+\.\d MB in [3-9] files\) from "
                        r"Debian's archive; unpacked and built in \S+", said[-1]), said
    assert float(said[-1].split("(")[1].split(" MB")[0]) > 10  # PostgreSQL 15's source: over 20 MB
    hashes = [git(repo, "rev-parse", "HEAD").strip(),
              commit(repo, POSTGRES.file, original + b"/* a comment */\n", "a comment"),
              commit(repo, POSTGRES.file, POSTGRES.spin(original, 2000) + b"/* a comment */\n",
                     "StartTransactionCommand: a loop")]
    before = snapshot(repo)
    out = tmp_path / "out"
    proc = run_cli("bisect", "--tree", str(repo), "--engine", "postgres", hashes[0], "main", "--table-size", "1000",
                   "--no-confirm", "--out", str(out), "--format", "json", env={"DBPERF_SERVER_CACHE": str(cache)},
                   timeout=3600)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["outcome"], doc["first_slower"], doc["last_not_slower"]) == ("found", hashes[2], hashes[1])
    assert doc["found"]["subject"] == "StartTransactionCommand: a loop"
    assert doc["work_after"] > doc["work_before"] * 1.02
    assert any("StartTransactionCommand" in row["function"] for row in doc["lead"])
    manifests = [json.loads(p.read_text()) for p in (cache / "build").glob("*/manifest.json")]
    built = {m["source"]["revision"]: m["incremental"] for m in manifests if m["source"].get("origin") == "tree"}
    assert set(built) == set(hashes) and len({i["tree"] for i in built.values()}) == 1
    assert [built[h]["objects_rebuilt"] for h in hashes[1:]] == [1, 1]
    assert snapshot(repo) == before
