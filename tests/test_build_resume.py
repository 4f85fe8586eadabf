"""A resumable server build (ninja's recipes) interrupted by Ctrl-C or SIGTERM, or killed outright, is kept and
resumed by the next build of its key: the source is not fetched again, finished commands are not run again, only
the objects not yet compiled are, and the build's time sums every segment's (wall clock and CPU). A build whose
recipe cannot resume starts over as before. The build tool is a stand-in for ninja (it skips outputs it already
wrote, as ninja does with its log); the archive is a stand-in too: this is the build lab's bookkeeping, the real
builds are tests/test_server_build.py's and test_mysql.py's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

from dbperf.buildlab import server_build, server_cache_listing, staging
from dbperf.buildlab.debian_source import DebianSource
from dbperf.buildlab.recipes import recipes
from dbperf.buildlab.resume import STATE, BuildState, read_resume
from dbperf.buildlab.sources import debian
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.host.compiler import find_compiler

OBJECTS = 6
# The stand-in for ninja: compiles (burns CPU for) each object it has not written yet, announcing it as ninja does;
# `install` copies the "server" into the prefix.
NINJA_LIKE = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    tree, n = Path(sys.argv[1]), int(sys.argv[2])
    if sys.argv[3] == "install":
        bin_dir = Path(sys.argv[4]) / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        (bin_dir / "server").write_text("".join(sorted(p.name for p in tree.glob("*.o"))))
        sys.exit(0)
    for i in range(n):
        obj = tree / f"obj{i}.o"
        if obj.exists():
            continue
        print(f"[{i + 1}/{n}] Building C object obj{i}.o", flush=True)
        end = time.process_time() + 0.15
        while time.process_time() < end:
            pass
        obj.write_text("x")
""")


class NinjaLikeRecipe:
    engine: ClassVar[str] = "mysql"
    options: ClassVar[tuple[str, ...]] = ()
    departures: ClassVar[tuple[object, ...]] = ()
    tools: ClassVar[dict[str, str]] = {}
    resumable: ClassVar[bool] = True
    runs: ClassVar[list[str]] = []  # which commands ran, across builds

    def expected_steps(self, tree: Path) -> int:
        return OBJECTS

    def commands(self, tree, prefix, cc, flags, jobs):
        return [["sh", "-c", "echo configured >> configure.count"],
                [sys.executable, "-c", NINJA_LIKE, str(tree), str(OBJECTS), "build"],
                [sys.executable, "-c", NINJA_LIKE, str(tree), str(OBJECTS), "install", str(prefix)]]

    def binaries(self, prefix: Path) -> Path:
        return prefix

    def server_binary(self, prefix: Path) -> Path:
        return prefix / "bin" / "server"

    def is_step(self, line: str) -> bool:
        return line.startswith("[") and "Building" in line

    def rebuilt_objects(self, tree: Path, since_ns: int, output: str) -> int:
        return sum(1 for p in tree.glob("*.o") if p.stat().st_mtime_ns >= since_ns)

    def clean_commands(self, tree: Path) -> list[list[str]]:
        return [["sh", "-c", "rm -f *.o"]]

    def objects_root(self, tree: Path) -> Path:
        return tree  # where a kept-tree build digests its objects (incremental.objects)


class MakeLikeRecipe(NinjaLikeRecipe):
    resumable: ClassVar[bool] = False


@pytest.fixture
def lab(where, monkeypatch):
    """The build lab with a stand-in archive (one version, counting its fetches) and recipe."""
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(where / "servers"))
    fetches: list[Path] = []

    def fetch(apt, package, engine, version, work, skipped, announce=None):
        tree = work / "src"
        tree.mkdir()
        fetches.append(tree)
        return DebianSource(engine, package, version, tree, {"origin": "debian-src", "package": package,
                                                             "version": version})

    monkeypatch.setattr(debian, "candidate_versions", lambda engine: (None, "mysql-9.7", ["9.7.2-4"]))
    monkeypatch.setattr(debian, "fetch_debian_source", fetch)
    monkeypatch.setattr(server_build, "open_to_service_users", lambda path: None)

    def use(recipe: Any) -> None:
        monkeypatch.setitem(recipes(), "mysql", recipe)
        monkeypatch.setattr(server_build, "check_can_build",
                            lambda spec: (recipe, find_compiler()))
    return fetches, use


def _kept_src() -> Path:
    """The source folder of the one kept build tree (build_tree.py): where the objects are."""
    (src,) = (server_build.server_cache() / "trees").glob("*/src")
    return src


def _no_training(*args: Any) -> dict[str, Any]:
    raise AssertionError("a plain build trains nothing")


def _interrupt_after(n: int):
    steps: list[int] = []

    def progress(phase: str, done: int, expected: int) -> None:
        steps.append(done)
        if len(steps) == n:
            raise KeyboardInterrupt
    return progress, steps


@pytest.mark.unit
def test_an_interrupted_ninja_build_is_resumed_and_its_time_sums_the_segments(lab):
    fetches, use = lab
    use(NinjaLikeRecipe())
    spec = ServerBuildSpec("mysql")
    builds = server_build.server_cache() / "build"
    progress, _ = _interrupt_after(3)
    with pytest.raises(KeyboardInterrupt):
        server_build.build_server(spec, _no_training, progress)
    (partial,) = builds.glob(f".*{staging.PARTIAL}")
    state = json.loads((partial / STATE).read_text())
    assert state["commands"] == {"configuring": 1}  # configure finished, the compile did not
    assert state["steps"] == {"compiling": 3} and len(state["segments"]) == 1
    assert state["segments"][0]["cpu_seconds"] >= 0.2  # the two objects compiled before the third was cut short
    compiled_before = sorted(p.name for p in _kept_src().glob("*.o"))
    (listed,) = server_cache_listing.partial_server_builds()  # `dbperf build --list` shows it
    assert listed["label"] == spec.label() and listed["steps"] == 3 and listed["segments"] == 1
    assert listed["path"] == str(partial)
    assert 2 <= len(compiled_before) < OBJECTS

    seen: list[tuple[str, int]] = []
    built = server_build.build_server(spec, _no_training, lambda phase, done, expected: seen.append((phase, done)))
    assert len(fetches) == 1  # the source of the first segment
    assert seen[0] == ("compiling, resumed", 4)  # counted on from where it stopped
    m = built.manifest
    assert len(m["segments"]) == 2 and m["segments"][1]["steps"] == OBJECTS - len(compiled_before)
    assert m["compile_steps"] == 3 + OBJECTS - len(compiled_before)  # the object cut short counts twice
    assert m["build_seconds"] == pytest.approx(sum(s["seconds"] for s in m["segments"]), abs=0.11)
    assert m["build_cpu_seconds"] >= 0.15 * OBJECTS * 0.9  # every object's CPU, in one segment or the other
    assert (built.root / "bin" / "server").read_text() == "".join(f"obj{i}.o" for i in range(OBJECTS))
    assert not list(builds.glob(".*")) and not (built.root.parent / STATE).exists()
    log = (built.root.parent / "build.log").read_text()
    assert log.count("$ sh -c echo configured") == 1 and "# resumed: segment 2" in log
    assert "s of CPU, in 2 segments); " in server_cache_listing.how_built(m)
    assert server_cache_listing.partial_server_builds() == []


@pytest.mark.unit
def test_a_build_killed_outright_is_resumed_with_its_last_sampled_time(lab, tmp_path):
    fetches, use = lab
    use(NinjaLikeRecipe())
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
        from tests.test_build_resume import NinjaLikeRecipe
        from dbperf.buildlab import resume, server_build
        from dbperf.buildlab.sources import debian
        from dbperf.buildlab.recipes import recipes
        from dbperf.buildlab.debian_source import DebianSource
        from dbperf.experiment.build_variants import ServerBuildSpec
        from dbperf.host.compiler import find_compiler
        resume.WRITE_EVERY_S = 0  # every step on disk: the test knows what the killed segment had written
        recipe = NinjaLikeRecipe()
        recipes()["mysql"] = recipe
        server_build.check_can_build = lambda spec: (recipe, find_compiler())
        debian.candidate_versions = lambda engine: (None, "mysql-9.7", ["9.7.2-4"])
        server_build.open_to_service_users = lambda path: None
        def fetch(apt, package, engine, version, work, skipped, announce=None):
            (work / "src").mkdir()
            return DebianSource(engine, package, version, work / "src", {{"version": version}})
        debian.fetch_debian_source = fetch
        def progress(phase, done, expected):
            print(done, flush=True)
        server_build.build_server(ServerBuildSpec("mysql"), None, progress)
    """)
    env = {**os.environ, "DBPERF_SERVER_CACHE": os.environ["DBPERF_SERVER_CACHE"]}
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    assert proc.stdout is not None
    while (line := proc.stdout.readline()) and line.strip() != "4":
        pass
    assert line, f"the build ended before its 4th step (exit {proc.wait(timeout=30)})"  # never a loop on EOF
    os.killpg(proc.pid, signal.SIGKILL)  # the lab, its ninja and its compiler: a session cut off
    proc.wait(timeout=30)
    builds = server_build.server_cache() / "build"
    (partial,) = builds.glob(f".*{staging.PARTIAL}")
    assert staging.sweep_abandoned(builds) == []  # unlocked, but kept: it resumes
    built = server_build.build_server(ServerBuildSpec("mysql"), _no_training)
    first, second = built.manifest["segments"]
    assert first["steps"] == 4 and first["seconds"] > 0  # what the killed segment wrote before it died
    assert second["steps"] <= OBJECTS - 3 and not fetches  # the killed segment's source, not a new one
    assert not partial.exists()


@pytest.mark.unit
def test_a_build_that_cannot_resume_starts_over_and_leaves_nothing(lab):
    fetches, use = lab
    use(MakeLikeRecipe())
    progress, _ = _interrupt_after(3)
    builds = server_build.server_cache() / "build"
    with pytest.raises(KeyboardInterrupt):
        server_build.build_server(ServerBuildSpec("mysql"), _no_training, progress)
    assert list(builds.glob(".*")) == []
    built = server_build.build_server(ServerBuildSpec("mysql"), _no_training)
    # the source is kept in its tree, the objects of the interrupted build cleaned: make cannot trust them
    assert len(fetches) == 1 and len(built.manifest["segments"]) == 1 and built.manifest["incremental"]["cleaned"]
    assert built.manifest["compile_steps"] == OBJECTS and built.manifest["build_cpu_seconds"] > 0


@pytest.mark.unit
def test_a_failed_resumable_build_is_not_kept(lab):
    _, use = lab

    class Failing(NinjaLikeRecipe):
        def commands(self, tree, prefix, cc, flags, jobs):
            return [["sh", "-c", "echo '[1/2] Building C object a.o'; echo 'a.c:1: error: expected ;'; exit 3"]]
    use(Failing())
    with pytest.raises(UserError, match="expected ;"):
        server_build.build_server(ServerBuildSpec("mysql"), _no_training)
    assert list((server_build.server_cache() / "build").glob(".*")) == []


@pytest.mark.unit
def test_a_second_build_of_the_same_key_is_refused_while_the_first_runs(tmp_path):
    first = staging.Staging(tmp_path, "k", resumable=True)
    try:
        with pytest.raises(UserError, match=r"another dbperf \(pid \d+\) is building this server"):
            staging.Staging(tmp_path, "k", resumable=True)
    finally:
        first.release()
    again = staging.Staging(tmp_path, "k", resumable=True)  # the first gone: the same directory, taken over
    assert again.path == first.path
    again.remove()


@pytest.mark.unit
def test_a_partial_build_nobody_resumed_for_two_weeks_is_swept(tmp_path):
    kept, old = (staging.Staging(tmp_path, k, resumable=True) for k in ("young", "old"))
    for s in (kept, old):
        BuildState(s.path, persist=True)
        s.release()
    long_ago = time.time() - staging.PARTIAL_KEPT_S - 60
    for p in [old.path, *old.path.iterdir()]:
        os.utime(p, (long_ago, long_ago))
    busy = staging.Staging(tmp_path, "busy", resumable=True)
    for p in [busy.path, *busy.path.iterdir()]:
        os.utime(p, (long_ago, long_ago))
    try:
        assert staging.sweep_abandoned(tmp_path) == [old.path]
        assert kept.path.is_dir() and busy.path.is_dir()  # a running build is never swept, however old
    finally:
        busy.remove()


@pytest.mark.unit
def test_a_state_file_it_cannot_read_is_one_line_and_the_partial_build_is_left_alone(lab):
    _, use = lab
    use(NinjaLikeRecipe())
    progress, _ = _interrupt_after(2)
    with pytest.raises(KeyboardInterrupt):
        server_build.build_server(ServerBuildSpec("mysql"), _no_training, progress)
    (partial,) = (server_build.server_cache() / "build").glob(f".*{staging.PARTIAL}")
    (partial / STATE).write_text("{half a state")
    (listed,) = server_cache_listing.partial_server_builds()
    assert listed["label"].startswith("unreadable resume.json") and listed["steps"] == 0
    with pytest.raises(UserError, match=r"resume.json: unreadable .*: remove .*\.partial to build from scratch"):
        server_build.build_server(ServerBuildSpec("mysql"), _no_training)
    assert _kept_src().is_dir() and partial.is_dir()  # nothing removed: the user decides
    (partial / STATE).write_text('{"version": 99}')
    with pytest.raises(UserError, match=r"written by another dbperf \(version 99"):
        server_build.build_server(ServerBuildSpec("mysql"), _no_training)


# resume.json as a build before `begun` existed wrote it (version 1): a PGO build interrupted in its profile-use build
OLD_STATE = {"version": 1, "label": "mysql@debian-src [O2 pgo]",
             "source": {"tree": "/gone/src", "provenance": {"origin": "debian-src", "version": "9.7.2-4"}},
             "commands": {"compiling (instrumented)": 3}, "steps": {"compiling (instrumented)": 120},
             "phases": {"training": {"proof": {"share": 0.3}}},
             "segments": [{"started_at": "2026-11-20T10:00:00+00:00", "seconds": 61.5, "cpu_seconds": 118.2,
                           "steps": 120}]}


@pytest.mark.unit
@pytest.mark.parametrize("old", [OLD_STATE, {k: v for k, v in OLD_STATE.items() if k != "version"}],
                         ids=["version 1 without begun", "without a version"])
def test_an_old_resume_file_reads_as_a_typed_record(tmp_path, old):
    (tmp_path / STATE).write_text(json.dumps(old))
    record = read_resume(tmp_path / STATE)
    assert record.version == 1 and record.begun == [] and record.label == "mysql@debian-src [O2 pgo]"
    assert record.source is not None and record.source.provenance["version"] == "9.7.2-4"
    assert record.segments[0].cpu_seconds == 118.2 and record.phases["training"]["proof"]["share"] == 0.3
    state = BuildState(tmp_path, persist=True)  # the build goes on from it
    assert state.resumed and state.commands_done("compiling (instrumented)") == 3 and not state.started("bolt")
    assert state.result("training") == {"proof": {"share": 0.3}} and state.all_steps == 120


@pytest.mark.unit
def test_a_resume_file_is_written_whole_and_read_back_the_same(tmp_path):
    state = BuildState(tmp_path, persist=True, label="mariadb@debian-src [O2 bolt]")
    state.set_source(tmp_path / "src", {"origin": "debian-src"})
    state.command_done("compiling")
    state.step("compiling", None)
    state.finish("profile-use", {"profile_files": 3})
    state.begin("bolt")
    written = json.loads((tmp_path / STATE).read_text())
    assert written["version"] == 1 and written["begun"] == ["bolt"] and written["commands"] == {"compiling": 1}
    assert set(written) == {"version", "label", "source", "commands", "steps", "phases", "segments", "begun"}
    again = read_resume(tmp_path / STATE)
    assert again.begun == ["bolt"] and again.steps == {"compiling": 1} and again.segments[0].steps == 1
    assert BuildState(tmp_path, persist=True).started("bolt")  # begun, never finished: redone from the install


@pytest.mark.unit
@pytest.mark.parametrize(("text", "said"), [
    ('{"version": 2, "label": "x"}', r"written by another dbperf \(version 2, this one reads 1\)"),
    ('["not", "a", "record"]', r"unreadable \(expected a JSON object\)"),
    ('{"version": 1, "segments": [{"seconds": 1}]}', r"unreadable \(Object missing required field `started_at`"),
    ('{"version": 1, "commands": {"compiling": "three"}}', r"unreadable \(Expected `int`, got `str`"),
])
def test_a_resume_file_this_dbperf_cannot_read_is_one_line_naming_the_folder(tmp_path, text, said):
    (tmp_path / STATE).write_text(text)
    with pytest.raises(UserError, match=said + r".*: remove " + str(tmp_path) + " to build from scratch$") as e:
        read_resume(tmp_path / STATE)
    assert "\n" not in str(e.value)
