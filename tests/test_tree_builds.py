"""Targets built from the user's change, end to end: a git repository made here from the SQLite amalgamation the lab
fetches (3.54.1 from crates.io, as tests/test_buildlab.py), its second commit adding work to a hot function
(sqlite3VdbeExec, which every statement runs), built by `dbperf build` with the machine's gcc at -O0 (a trailing
cflag overrides the variant's level: what is checked is the lab's behaviour, not speed)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dbperf.buildlab.sqlite_source import resolve
from dbperf.host.driver import library_info
from tests.conftest import run_cli
from tests.test_user_tree import git, snapshot

pytestmark = pytest.mark.e2e

VERSION = "3.54.1"
RUN = '[run]\nbenchmarks = ["point-query"]\ntable_size = 1000\ntime = "0.2s"\nwarmup = "0.1s"\nrepeats = 1\n'


def spin(text: bytes, count: int) -> bytes:
    """sqlite3VdbeExec with a loop of `count` at its start: more work for every statement."""
    head = text.index(b"int sqlite3VdbeExec(\n")
    body = text.index(b"\n){\n", head) + len(b"\n){\n")
    loop = f"  {{ volatile int dbperf_spin; for(dbperf_spin=0; dbperf_spin<{count}; dbperf_spin++){{}} }}\n"
    return text[:body] + loop.encode() + text[body:]


def amalgamation_repo(repo: Path) -> bytes:
    """A new git checkout at `repo` whose one commit is the SQLite amalgamation (sqlite3.c and sqlite3.h of VERSION);
    sqlite3.c's bytes, for commits that change it."""
    repo.mkdir()
    amalgamation = Path(resolve(VERSION).amalgamation)
    for name in ("sqlite3.c", "sqlite3.h"):
        shutil.copyfile(amalgamation / name, repo / name)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"SQLite {VERSION}")
    return (repo / "sqlite3.c").read_bytes()


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DBPERF_CACHE", str(root))
        yield root


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """A folder holding the checkout `sqlite` (two commits: 3.54.1, then the spin) and two patches of the spin:
    one.patch is the second commit, two.patch lengthens its loop (it applies only after one.patch)."""
    base = tmp_path_factory.mktemp("user")
    repo = base / "sqlite"
    original = amalgamation_repo(repo)
    (repo / "sqlite3.c").write_bytes(spin(original, 100))
    git(repo, "commit", "-q", "-am", "sqlite3VdbeExec spins")
    (base / "one.patch").write_text(git(repo, "diff", "HEAD~1", "HEAD"))
    (repo / "sqlite3.c").write_bytes(spin(original, 200))
    (base / "two.patch").write_text(git(repo, "diff", "HEAD"))
    (repo / "sqlite3.c").write_bytes(spin(original, 100))  # clean again
    assert git(repo, "status", "--porcelain") == ""
    return base


def _experiment(base: Path, name: str, targets: dict[str, str]) -> Path:
    path = base / f"{name}.toml"
    path.write_text(RUN + "".join(f'\n[[target]]\nname = "{t}"\n{body}\ncflags = ["-O0"]\n'
                                  for t, body in targets.items()))
    return path


def _manifests(cache: Path) -> dict[str, dict]:
    return {m["key"]: m for m in (json.loads(p.read_text()) for p in (cache / "builds").glob("*/manifest.json"))}


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    return line


def test_two_revisions_are_two_builds_named_by_their_commits_and_the_checkout_is_untouched(base: Path, cache: Path):
    repo = base / "sqlite"
    before, status = snapshot(repo), git(repo, "status", "--porcelain")
    exp = _experiment(base, "revs", {"old": 'tree = "sqlite"\nrev = "HEAD~1"', "new": 'tree = "sqlite"\nrev = "main"'})
    proc = run_cli("build", str(exp), timeout=900)
    assert proc.returncode == 0, proc.stderr
    old, new = (git(repo, "rev-parse", rev).strip() for rev in ("HEAD~1", "HEAD"))
    built = {m["source"]["revision"]: m for m in _manifests(cache).values() if m["source"].get("rev")}
    assert set(built) == {old, new}
    for revision, subject in ((old, f"SQLite {VERSION}"), (new, "sqlite3VdbeExec spins")):
        m = built[revision]
        assert m["label"] == f"sqlite@tree:{revision[:7]} [O2 -O0]" and m["label"] in proc.stdout
        assert m["source"]["subject"] == subject and m["source"]["dirty"] is False
        assert m["source"]["repository"] == str(repo) and m["source"]["sqlite_version"] == VERSION
        assert library_info("sqlite", m["library"]).engine_version == VERSION
        assert not (Path(m["library"]).parent / "work" / "src").exists()  # the lab's copy went with the build
    assert built[old]["key"] != built[new]["key"]
    assert built[old]["library_sha256"] != built[new]["library_sha256"]
    assert built[old]["source"]["sqlite3_c_sha256"] == resolve(VERSION).sqlite3_c_sha256
    assert snapshot(repo) == before and git(repo, "status", "--porcelain") == status
    # built once: the dry run finds each cached, by the key of the tree read again
    proc = run_cli("run", str(exp), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "sqlite@tree:HEAD~1 [O2 -O0]: cached, SQLite 3.54.1" in proc.stdout
    assert "sqlite@tree:main [O2 -O0]: cached, SQLite 3.54.1" in proc.stdout
    listed = run_cli("build", "--list", env={"COLUMNS": "300"})
    assert listed.returncode == 0, listed.stderr
    assert f"{VERSION} (tree:{old[:7]})" in listed.stdout and f"{VERSION} (tree:{new[:7]})" in listed.stdout


def test_the_tree_as_it_is_builds_an_uncommitted_change_under_a_new_key(base: Path, cache: Path):
    repo = base / "sqlite"
    committed = (repo / "sqlite3.c").read_bytes()
    (repo / "sqlite3.c").write_bytes(committed.replace(b"dbperf_spin<100", b"dbperf_spin<300"))
    try:
        before = snapshot(repo)
        keys = set(_manifests(cache))
        proc = run_cli("build", str(_experiment(base, "dirty", {"mine": 'tree = "sqlite"'})), timeout=900)
        assert proc.returncode == 0, proc.stderr
        (new,) = set(_manifests(cache)) - keys
        m = _manifests(cache)[new]
        head = git(repo, "rev-parse", "HEAD").strip()
        assert m["label"] == f"sqlite@tree:{head[:7]}-dirty [O2 -O0]"
        assert m["source"]["dirty"] is True and m["source"]["changes"] == [" M sqlite3.c"]
        assert m["source"]["revision"] == head and m["source"]["content"].startswith("sha256:")
        assert snapshot(repo) == before
    finally:
        (repo / "sqlite3.c").write_bytes(committed)


def test_patches_apply_in_order_on_a_release_and_the_manifest_lists_them(base: Path, cache: Path):
    exp = _experiment(base, "patched", {"patched": f'source = "sqlite@{VERSION}"\n'
                                                   'patches = ["one.patch", "two.patch"]'})
    proc = run_cli("build", str(exp), timeout=900)
    assert proc.returncode == 0, proc.stderr
    (m,) = (m for m in _manifests(cache).values() if m["label"] == f"sqlite@{VERSION}+2 patches [O2 -O0]")
    assert [(p["name"], p["sha256"]) for p in m["source"]["patches"]] == [
        (name, hashlib.sha256((base / name).read_bytes()).hexdigest()) for name in ("one.patch", "two.patch")]
    assert m["source"]["crate_version"] and library_info("sqlite", m["library"]).engine_version == VERSION
    # the crate cargo keeps is never patched in place
    assert b"dbperf_spin" not in (Path(resolve(VERSION).amalgamation) / "sqlite3.c").read_bytes()
    wrong_order = _experiment(base, "wrong", {"w": f'source = "sqlite@{VERSION}"\npatches = ["two.patch", '
                                                   '"one.patch"]'})
    line = _one_line(run_cli("build", str(wrong_order)))
    assert line.startswith(f"dbperf: error: sqlite@{VERSION}+2 patches [O2 -O0]: patch two.patch (1 of 2) does not "
                           "apply: hunk #1 fails on sqlite3.c (at its line ")


def test_bad_trees_are_one_line_before_anything_is_built(base: Path, cache: Path):
    plain = base / "plain"
    plain.mkdir(exist_ok=True)
    (plain / "sqlite3.c").write_text("")
    (plain / "sqlite3.h").write_text("")
    keys = set(_manifests(cache))
    for body, message in [('tree = "plain"\nrev = "HEAD"', "rev = 'HEAD' needs a git checkout"),
                          ('tree = "sqlite"\nrev = "no-such"', "rev = 'no-such' is not a commit of"),
                          ('tree = "sqlite"\npatches = ["three.patch"]', "patches: 'three.patch' not found")]:
        # a good target beside it: the bad one stops the build before any compile
        exp = _experiment(base, "bad", {"good": 'tree = "sqlite"\nrev = "HEAD~1"\nbuild = ["O3"]', "bad": body})
        assert message in _one_line(run_cli("build", str(exp)))
    assert set(_manifests(cache)) == keys
    assert sorted(os.listdir(plain)) == ["sqlite3.c", "sqlite3.h"]  # nothing made in the user's folder


def test_two_processes_building_one_tree_at_once_share_one_whole_entry(base: Path, cache: Path):
    """Two `dbperf build` of one tree's key started together: the second waits for the first's lock on the key, then
    takes its entry from the cache; the entry is built once and its log is the build's."""
    from tests.conftest import DBPERF, REPO
    exp = base / "together.toml"
    exp.write_text(RUN + '\n[[target]]\nname = "mine"\ntree = "sqlite"\ncflags = ["-O0", "-DDBPERF_TREE_TWICE=1"]\n')
    env = {**os.environ, "DBPERF_CACHE": str(cache)}
    procs = [subprocess.Popen([*DBPERF, "build", str(exp)], cwd=REPO, env=env, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(2)]
    ends = [p.communicate(timeout=900) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in ends]
    said = "".join(out for out, _ in ends)
    assert said.count("(cached)") == 1, said  # one built it, the other found it whole
    (entry,) = [m for m in _manifests(cache).values() if "-DDBPERF_TREE_TWICE=1" in m["cflags"]]
    assert entry["source"]["origin"] == "tree"
    log = (Path(entry["library"]).parent / "build.log").read_text()
    assert Path(entry["library"]).is_file() and "cannot find" not in log and log.count("-DDBPERF_TREE_TWICE=1") >= 1


def test_a_dry_run_tries_a_source_trees_configure_in_a_copy_and_refuses_one_that_fails(base: Path, cache: Path):
    """A SQLite source tree (a configure, no amalgamation) that does not configure is refused by the dry run in one
    line, before a run would claim its folder; one that configures says so; neither leaves a file in the tree."""
    for name, script, code in (("broken", "echo 'configure: error: no tclsh found' >&2\nexit 1\n", 2),
                               ("fine", "echo 'checking for a C compiler... gcc'\nexit 0\n", 0)):
        tree = base / name
        tree.mkdir()
        (tree / "configure").write_text("#!/bin/sh\n" + script)
        exp = base / f"{name}.toml"
        exp.write_text(RUN + f'\n[[target]]\nname = "t"\ntree = "{name}"\n')
        proc = run_cli("run", str(exp), "--dry-run", "--out", str(base / f"{name}-out"))
        assert proc.returncode == code, proc.stderr
        assert os.listdir(tree) == ["configure"] and not (base / f"{name}-out").exists()
        if code:
            (line,) = [x for x in proc.stderr.splitlines() if "configure" in x]
            assert "the tree's configure fails (exit 1, tried in a temporary copy): configure: error: no tclsh " \
                   "found" in line, proc.stderr
        else:
            assert "its configure ran in a temporary copy" in proc.stdout + proc.stderr
