"""A SQLite target's PGO variant built from the user's tree (buildlab/builder.py, sqlite_tree.py), end to end: a
checkout made here from the amalgamation the lab fetches (tests/test_tree_builds.py's), `main` built by `dbperf
build` as `[O2]` and as `[O2 pgo]`: the PGO build's profile proven, its guard's base the plain build, both manifests
naming the same commit, the checkout untouched; another `rev` gives both new keys, which the dry run finds not
cached and says how it would build. At -O1 (a trailing cflag) with partial training and one second of training per
workload, as tests/test_buildlab.py's PGO build: what is checked is the lab's behaviour, not speed. The server's:
unit tests in tests/test_server_tree_pgo.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbperf.buildlab.builder import build_key
from dbperf.buildlab.sqlite_tree import resolve_tree
from dbperf.experiment.spec import parse_experiment
from dbperf.host.compiler import find_compiler
from dbperf.host.driver import library_info
from tests.conftest import run_cli
from tests.test_tree_builds import VERSION, amalgamation_repo
from tests.test_user_tree import git, snapshot

pytestmark = pytest.mark.e2e

RUN = '[run]\nbenchmarks = ["point-query"]\ntable_size = 1000\ntime = "0.2s"\nwarmup = "0.1s"\nrepeats = 1\n'
PGO = "O2 pgo -O1 partial-training trained 1s per workload"  # the PGO target's label
TARGETS = ('\n[[target]]\nname = "plain"\ntree = "sqlite"\nrev = "{rev}"\ncflags = ["-O1"]\n'
           '\n[[target]]\nname = "pgo"\ntree = "sqlite"\nrev = "{rev}"\nbuild = ["O2", "pgo"]\ncflags = ["-O1"]\n'
           'pgo_train_seconds = 1\npgo_partial_training = true\n')
SUBJECT = "a comment at the end of sqlite3.c"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DBPERF_CACHE", str(root))
        yield root


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """The checkout `sqlite`: the amalgamation (main~1), then a comment added (main)."""
    repo = tmp_path_factory.mktemp("user") / "sqlite"
    original = amalgamation_repo(repo)
    (repo / "sqlite3.c").write_bytes(original + b"/* a comment */\n")
    git(repo, "commit", "-q", "-am", SUBJECT)
    return repo


def _experiment(repo: Path, rev: str) -> Path:
    path = repo.parent / f"at-{rev.replace('~', '-')}.toml"
    path.write_text(RUN + TARGETS.format(rev=rev))
    return path


def _manifests(cache: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in (cache / "builds").glob("*/manifest.json")]


def test_a_trees_pgo_build_is_proven_guarded_by_its_plain_build_and_names_the_same_commit(repo: Path, cache: Path):
    before, status = snapshot(repo), git(repo, "status", "--porcelain")
    exp = _experiment(repo, "main")
    proc = run_cli("build", str(exp), timeout=1800)
    assert proc.returncode == 0, proc.stderr
    head = git(repo, "rev-parse", "main").strip()
    built = {"pgo" in m["variants"]: m for m in _manifests(cache)}
    assert len(_manifests(cache)) == 2 and set(built) == {False, True}  # the plain build is the guard's base
    plain, pgo = built[False], built[True]
    assert plain["label"] == f"sqlite@tree:{head[:7]} [O2 -O1]"
    assert pgo["label"] == f"sqlite@tree:{head[:7]} [{PGO}]"
    content = f"git-tree:{git(repo, 'rev-parse', 'main^{tree}').strip()}"
    for m in (plain, pgo):
        s = m["source"]
        assert (s["origin"], s["repository"], s["rev"], s["revision"], s["subject"], s["dirty"], s["content"]) == (
            "tree", str(repo), "main", head, SUBJECT, False, content)
        assert s["sqlite_version"] == VERSION and library_info("sqlite", m["library"]).engine_version == VERSION
        assert not (Path(m["library"]).parent / "work" / "src").exists()  # the lab's copy went with the build
    assert plain["source"]["sqlite3_c_sha256"] == pgo["source"]["sqlite3_c_sha256"]
    assert plain.get("pgo") is None and plain["library_sha256"] != pgo["library_sha256"]
    proof = pgo["pgo"]["proof"]
    assert proof["sentinels"]["sqlite3VdbeExec"] > 0 and proof["share"] > proof["share_floor"]
    assert proof["functions_run"] > 0 and proof["objects_with_profile"] == proof["objects"] == 1
    guard = pgo["pgo"]["guard"]
    assert guard["base_key"] == plain["key"]
    assert guard["pgo_instructions_per_query"] < guard["base_instructions_per_query"]
    assert pgo["pgo"]["profile_warnings"] == [] and pgo["pgo"]["profile_files"]
    assert snapshot(repo) == before and git(repo, "status", "--porcelain") == status
    # the dry run finds both cached, by the key of the tree read again
    dry = run_cli("run", str(exp), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "sqlite@tree:main [O2 -O1]: cached, SQLite 3.54.1" in dry.stdout
    assert f"sqlite@tree:main [{PGO}]: cached, SQLite 3.54.1" in dry.stdout


def test_another_rev_gives_the_pgo_build_and_its_base_new_keys(repo: Path, cache: Path):
    cc = find_compiler()
    keys = {}
    for rev in ("main", "main~1"):
        exp = _experiment(repo, rev)
        for t in parse_experiment(exp).targets:
            assert t.build is not None and t.build.tree is not None
            keys[(rev, t.name)] = build_key(t.build, resolve_tree(t.build.tree), cc, exp.parent)
    assert len(set(keys.values())) == 4
    if _manifests(cache):  # built by the test above: those are main's keys
        assert {m["key"] for m in _manifests(cache)} == {keys[("main", "plain")], keys[("main", "pgo")]}
    dry = run_cli("run", str(_experiment(repo, "main~1")), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert ("sqlite@tree:main~1 [O2 -O1]: not cached, would be built (the tree copied into the cache, then "
            "compiled)") in dry.stdout
    assert (f"sqlite@tree:main~1 [{PGO}]: not cached, would be built (the tree copied into the cache, then compiled "
            "instrumented, trained on train-mix, compiled with the proven profile and checked against the same build "
            "without pgo, built too unless cached)") in dry.stdout
