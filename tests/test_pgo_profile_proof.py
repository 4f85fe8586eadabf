"""The proof a PGO profile gives before its build is used (issue 46, buildlab/profile_proof.py): its parts on files
made here (unit), and the failure PostgreSQL's training met, reproduced without PostgreSQL on a small C program
built with -fprofile-generate: run once as root and then trained as the service user, its profile is refused in one
line; with the lab's fix (the profile folder emptied and handed to the trainer, probes run through run_probe) the
trainer's counts arrive (e2e: gcc)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbperf.buildlab import server_bolt
from dbperf.buildlab.profile_proof import (
    NOTES_FLAG,
    Training,
    fresh_profile_dir,
    gcda_object,
    missing_profiles,
    object_key,
    prove,
)
from dbperf.engines.descriptor import ProfileProof
from dbperf.engines.postgres import POSTGRES
from dbperf.errors import UserError
from dbperf.servers.lifecycle import run_setup
from dbperf.servers.process import run_probe
from dbperf.usecases.build import profile_share

unit = pytest.mark.unit
e2e = pytest.mark.e2e

PROOF = ProfileProof(sentinels=("handle_query",), objects=("",), floor=0.10)


@unit
def test_a_gcda_is_matched_to_its_object_whether_gcc_mangled_or_nested_its_path(tmp_path):
    profile = tmp_path / "profile"
    mangled = profile / "#build#src#backend#tcop#postgres.gcda"
    nested = profile / "build" / "sqlite3.gcda"  # an absolute object path (-o /build/sqlite3.o)
    assert gcda_object(profile, mangled) == object_key("/build/src/backend/tcop/postgres.o")
    assert gcda_object(profile, nested) == object_key("/build/sqlite3.o")
    assert gcda_object(profile, profile / "#build#src#^#common#x.gcda") == object_key("/build/common/x.o")


@unit
def test_missing_profile_warnings_are_counted_for_the_engines_own_objects_apart(tmp_path):
    root = tmp_path / "tree"
    profile = tmp_path / "profile"
    own = f"{root}/src/backend/replication/walsender".replace("/", "#")
    tool = f"{root}/src/bin/pg_dump/pg_dump".replace("/", "#")
    log = "\n".join([
        f"walsender.c:1:1: warning: '{profile}/{own}.gcda' profile count data file not found [-Wmissing-profile]",
        f"walsender.c:9:1: warning: '{profile}/{own}.gcda' profile count data file not found [-Wmissing-profile]",
        f"pg_dump.c:1:1: warning: \u2018{profile}/{tool}.gcda\u2019 profile count data file not found "
        "[-Wmissing-profile]",
        "gcc -c heapam.c"])
    found = missing_profiles(log, profile, root, ProfileProof(("x",), ("src/backend/",), 0.05))
    assert found == {"own_objects": 1, "other_objects": 1,
                     "own_examples": ["src/backend/replication/walsender"]}


def _gcda(profile: Path, name: str = "#obj#prog.gcda") -> Path:
    profile.mkdir(exist_ok=True)
    path = profile / name
    path.write_bytes(b"gcda")
    return path


def _training(tmp_path: Path, started: float, logs: tuple[Path, ...] = ()) -> Training:
    return Training("t [O2 pgo]", tmp_path / "profile", tmp_path, PROOF, os.geteuid(), started, logs)


@unit
def test_a_profiling_line_in_any_training_log_refuses_the_profile(tmp_path):
    _gcda(tmp_path / "profile")
    server, client = tmp_path / "server.log", tmp_path / "client.log"
    server.write_text("LOG:  database system is ready to accept connections\n")
    client.write_text("profiling:/p/#obj#prog.gcda:Cannot open\n")
    with pytest.raises(UserError) as refused:
        prove(_training(tmp_path, time.time() - 5, (server, client)))
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("t [O2 pgo]: the PGO profile is not proven, so the build is refused: 1 libgcov")
    assert "client.log: profiling:/p/#obj#prog.gcda:Cannot open" in message


@unit
def test_a_gcda_written_before_the_training_started_refuses_the_profile(tmp_path):
    old = _gcda(tmp_path / "profile")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    with pytest.raises(UserError, match=r"1 of 1 .gcda were written before the training started, e.g. #obj#prog"):
        prove(_training(tmp_path, time.time()))


@unit
@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_gcda_of_another_user_refuses_the_profile(tmp_path):
    foreign = _gcda(tmp_path / "profile")
    os.chown(foreign, 65534, 65534)
    with pytest.raises(UserError, match=r"1 of 1 .gcda are not the trainer's \(uid 0\), e.g. #obj#prog.gcda of "
                                        r"uid 65534"):
        prove(_training(tmp_path, time.time() - 5))


@unit
def test_no_gcda_at_all_refuses_the_profile(tmp_path):
    (tmp_path / "profile").mkdir()
    with pytest.raises(UserError, match=r"the training wrote no \.gcda under"):
        prove(_training(tmp_path, time.time()))


@unit
def test_the_listing_shows_a_pgo_builds_share_and_says_unproven_for_older_builds():
    assert profile_share({"pgo": None}) == "-"
    assert profile_share({"pgo": {"profile_files": 3}}) == "unproven"
    assert profile_share({"pgo": {"proof": {"share": 0.2934, "functions": 17016}}}) == "29.3% of 17,016"


@unit
def test_bolts_profile_is_refused_when_a_sentinel_the_binary_has_has_no_events(tmp_path, monkeypatch):
    fdata = tmp_path / "prof.7.fdata"
    full = ("1 PostgresMain 10 1 PostgresMain 20 0 7\n1 PortalRun/1 4 1 PortalRun/1 9 0 5\n"
            "1 PostgresMain 30 1 palloc0 0 0 3\n")
    fdata.write_text(full)
    said = "BOLT-INFO: 3000 out of 10000 functions in the binary (30.0%) have non-empty execution profile\n"
    # exec_simple_query and exec_execute_message were inlined into PostgresMain: no symbol, no profile of their own
    monkeypatch.setattr(server_bolt, "defined_functions", lambda binary: {"PostgresMain", "PortalRun", "palloc0"})
    facts = server_bolt.check_bolt_profile("pg [O2 bolt]", "postgres", fdata, tmp_path / "postgres", said)
    assert facts["sentinels"] == {"PortalRun": 5, "palloc0": 3}
    assert facts["sentinels_inlined"] == ["exec_simple_query", "exec_execute_message"]
    assert facts["share"] == 0.3
    fdata.write_text("1 PostgresMain 10 1 PostgresMain 20 0 7\n")
    with pytest.raises(UserError, match=r"sentinel function\(s\) PortalRun, palloc0 have no events in prof\.7\.fdata"):
        server_bolt.check_bolt_profile("pg [O2 bolt]", "postgres", fdata, tmp_path / "postgres", said)
    fdata.write_text(full)
    with pytest.raises(UserError, match=r"12 of 10000 functions \(0.1%\) have a profile, at most the floor of 5%"):
        server_bolt.check_bolt_profile("pg [O2 bolt]", "postgres", fdata, tmp_path / "postgres",
                                       said.replace("3000 out", "12 out"))
    with pytest.raises(UserError, match="llvm-bolt did not say how many functions have a profile"):
        server_bolt.check_bolt_profile("pg [O2 bolt]", "postgres", fdata, tmp_path / "postgres", "")


# A server in miniature: answers --version (the probe PostgreSQL's start-up made as root), else serves N "queries",
# each through the sentinel, as a backend would.
PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) long handle_query(long x) { return x * 3 + (x & 7); }
__attribute__((noinline)) long replication(long x) { return x - 1; }
int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--version") == 0) { puts("server (Mini) 1.0"); return 0; }
    long n = argc > 1 ? atol(argv[1]) : 0, s = 0;
    for (long i = 0; i < n; i++) s += handle_query(i);
    if (n < 0) s = replication(s);
    printf("%ld\n", s);
    return 0;
}
"""


@pytest.fixture
def instrumented() -> Iterator[tuple[Path, Path]]:
    """The program built as the lab builds a PGO server's instrumented install, in a folder the service user can
    reach (pytest's own tmp is root's alone): (binary, profile folder)."""
    if os.geteuid() != 0:
        pytest.skip("training as the service user needs root")
    try:
        user = pwd.getpwnam(POSTGRES.service_user)
    except KeyError:
        pytest.skip("the postgres user is created by make setup")
    root = Path(tempfile.mkdtemp(prefix="dbperf-test-pgo-", dir="/tmp"))
    try:
        root.chmod(0o755)
        profile, obj = root / "profile", root / "obj"
        profile.mkdir()
        obj.mkdir()
        os.chown(profile, user.pw_uid, user.pw_gid)
        (root / "server.c").write_text(PROGRAM)
        # An object with no function, only data (PostgreSQL has such: generated keyword tables): gcov says "no
        # functions found" of it, which is no reason to refuse a profile.
        (root / "table.c").write_text("const int keywords[] = {1, 2, 3};\n")
        generate = ["-O2", f"-fprofile-generate={profile}", "-fprofile-update=atomic"]
        for name in ("server", "table"):
            subprocess.run(["gcc", *generate, NOTES_FLAG, "-c", f"{name}.c", "-o", str(obj / f"{name}.o")], cwd=root,
                           check=True, timeout=120)
        subprocess.run(["gcc", *generate, str(obj / "server.o"), str(obj / "table.o"), "-o", str(obj / "server")],
                       check=True, timeout=120)
        yield obj / "server", profile
    finally:
        shutil.rmtree(root)


def _train(binary: Path, log: Path) -> None:
    """The training's processes, started as the lab starts a server's set-up tools: as the service user."""
    run_setup([str(binary), "1000"], log, POSTGRES.service_user, "training")


@e2e
def test_a_root_probe_before_training_loses_the_profile_and_the_proof_refuses_it(instrumented):
    binary, profile = instrumented
    started = time.time()
    # What PostgresServer.launch did before issue 46: the instrumented server's --version, as root.
    subprocess.run([str(binary), "--version"], check=True, capture_output=True, timeout=60)
    log = binary.parent.parent / "server.log"
    _train(binary, log)
    assert "Cannot open" in log.read_text()  # libgcov could not add the trainer's counts to root's file
    user = pwd.getpwnam(POSTGRES.service_user)
    with pytest.raises(UserError) as refused:
        prove(Training("mini [O2 pgo]", profile, binary.parent, PROOF, user.pw_uid, started, (log,)))
    message = str(refused.value)
    assert "\n" not in message and "Traceback" not in message
    assert message.startswith("mini [O2 pgo]: the PGO profile is not proven, so the build is refused: ")
    assert "libgcov message(s) in the training logs, first in server.log: profiling:" in message


@e2e
def test_with_the_fix_the_trainers_counts_arrive(instrumented):
    binary, profile = instrumented
    subprocess.run([str(binary), "--version"], check=True, capture_output=True, timeout=60)  # make install's kind
    user = pwd.getpwnam(POSTGRES.service_user)
    started = fresh_profile_dir(profile, user.pw_uid, user.pw_gid)
    assert list(profile.iterdir()) == []
    # The lab's probes run as the service user, their counts sent to a scratch folder: nothing lands here.
    assert run_probe([binary, "--version"], POSTGRES.service_user, "probing").strip() == "server (Mini) 1.0"
    assert list(profile.iterdir()) == []
    log = binary.parent.parent / "server.log"
    _train(binary, log)
    facts = prove(Training("mini [O2 pgo]", profile, binary.parent, PROOF, user.pw_uid, started, (log,)))
    assert facts["sentinels"] == {"handle_query": 1000}
    assert facts["functions"] == 3 and facts["functions_run"] == 2 and facts["objects_with_profile"] == 1
    assert facts["objects"] == 2  # the data-only object counted, not refused
