"""An interrupted server build leaves nothing in the cache: the build's processes in other process groups (ninja's
compilers) are killed before its staging directory is removed, and a build killed outright is swept by the next."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dbperf.buildlab import staging

# A stand-in for ninja: one "compile step" line, then a compiler in a process group of its own that keeps writing
# objects into the tree, as ninja's are.
NINJA_LIKE = textwrap.dedent("""
    import os, sys, time
    if os.fork() == 0:
        os.setpgid(0, 0)
        os.makedirs("objs", exist_ok=True)
        with open("compiler.pid.tmp", "w") as f:  # renamed whole: the test never reads a half-written file
            f.write(str(os.getpid()))
        os.rename("compiler.pid.tmp", "compiler.pid")
        i = 0
        while True:
            with open(f"objs/{i % 50}.o", "w") as f:
                f.write("x" * 4096)
            i += 1
            time.sleep(0.001)
    print("[1/9] Building C object a.c.o", flush=True)
    time.sleep(600)
""")

# The lab's side: SIGTERM handled as the CLI does, one command run by the build runner in a staging directory.
BUILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    from dbperf.buildlab import build_runner
    from dbperf.buildlab.staging import Staging
    from dbperf.buildlab.resume import BuildState
    from dbperf.experiment.build_variants import ServerBuildSpec
    from dbperf.buildlab.recipes.mariadb import MariadbRecipe
    from dbperf.runner import interrupts

    interrupts.install()
    builds = Path(sys.argv[1])
    stage = Staging(builds, "k")
    tree = stage.path / "src"
    tree.mkdir()
    recipe = MariadbRecipe()
    def progress(phase, done, expected):
        print("STEP", flush=True)
    try:
        build_runner.BuildRunner(ServerBuildSpec("mariadb"), recipe, tree, stage.path / "build.log", progress,
                             BuildState(stage.path, persist=False)).run(
            [[sys.executable, "-c", sys.argv[2]]], "compiling")
    except KeyboardInterrupt:
        print("INTERRUPTED", flush=True)
    finally:
        stage.remove()
""")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.unit
def test_sigterm_during_a_build_kills_its_compilers_and_removes_the_staging_directory(tmp_path):
    builds = tmp_path / "build"
    builds.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", BUILD, str(builds), NINJA_LIKE], stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    compiler = 0
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "STEP"
        (stage,) = builds.glob(".k-*")
        deadline = time.monotonic() + 60
        while not (stage / "src" / "compiler.pid").is_file() and time.monotonic() < deadline:
            time.sleep(0.05)
        compiler = int((stage / "src" / "compiler.pid").read_text())
        assert os.getpgid(compiler) != os.getpgid(proc.pid)  # beyond the reach of a killpg of the build tool
        time.sleep(0.3)  # objects being written
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
        survived = _alive(compiler)
    finally:
        staging.kill_session(proc.pid)
        if compiler and _alive(compiler):  # the test's own clean-up when the lab's failed
            os.kill(compiler, signal.SIGKILL)
    assert "INTERRUPTED" in out
    assert not survived
    assert list(builds.iterdir()) == []


@pytest.mark.unit
def test_kill_session_reaches_every_process_group_of_the_session():
    # Two children, each in a process group of its own, as ninja starts its compilers.
    code = "import os, time\nfor _ in range(2):\n    if os.fork() == 0:\n        os.setpgid(0, 0)\n" \
           "        time.sleep(600)\ntime.sleep(600)"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    deadline = time.monotonic() + 30
    while len(staging.session_members(proc.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    members = staging.session_members(proc.pid)
    assert len(members) == 3 and len({os.getpgid(p) for p in members}) == 3
    killed = staging.kill_session(proc.pid)
    proc.wait(timeout=30)
    assert sorted(killed) == sorted(members)
    assert staging.session_members(proc.pid) == []


@pytest.mark.unit
def test_a_build_killed_outright_is_swept_and_a_running_one_is_not(tmp_path):
    # A build process killed by SIGKILL: no clean-up ran, its lock died with it.
    code = "import sys, time; from pathlib import Path; from dbperf.buildlab.staging import Staging; " \
           "s = Staging(Path(sys.argv[1]), 'dead'); (s.path / 'src').mkdir(); print(s.path, flush=True); " \
           "time.sleep(600)"
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    dead = Path(proc.stdout.readline().strip())
    proc.kill()
    proc.wait(timeout=30)
    running = staging.Staging(tmp_path, "running")
    young_unlocked = tmp_path / ".older-lab-abc"  # made by a lab without locks, moments ago: perhaps running
    young_unlocked.mkdir()
    old_unlocked = tmp_path / ".oldest-lab-def"
    old_unlocked.mkdir()
    long_ago = time.time() - staging.OLD_WITHOUT_LOCK_S - 60
    os.utime(old_unlocked, (long_ago, long_ago))
    entry = tmp_path / "0123abcd"  # a cache entry is never a staging directory
    entry.mkdir()
    try:
        swept = staging.sweep_abandoned(tmp_path)
        assert sorted(swept) == sorted([dead, old_unlocked])
        assert not dead.exists() and not old_unlocked.exists()
        assert running.path.is_dir() and young_unlocked.is_dir() and entry.is_dir()
    finally:
        running.remove()
    assert not running.path.exists()


@pytest.mark.unit
def test_a_key_held_by_another_is_waited_for_and_said_once(tmp_path):
    """The lock of a build key: a second holder waits until the first lets go, and says once that it waits and for
    whom (buildlab/key_lock.py)."""
    import threading

    from dbperf.buildlab.key_lock import key_held
    said: list[str] = []
    order: list[str] = []
    first_in = threading.Event()
    release = threading.Event()

    def first() -> None:
        with key_held(tmp_path / "locks", "k1"):
            order.append("first in")
            first_in.set()
            release.wait(10)
            order.append("first out")

    holder = threading.Thread(target=first)
    holder.start()
    first_in.wait(10)
    threading.Timer(0.3, release.set).start()
    with key_held(tmp_path / "locks", "k1", said.append):
        order.append("second in")
    holder.join(10)
    assert order == ["first in", "first out", "second in"]
    assert said == [f"waiting for another dbperf (pid {os.getpid()}) building the same key (k1)"]
    with key_held(tmp_path / "locks", "k2", said.append):  # another key is not waited for
        pass
    assert len(said) == 1
