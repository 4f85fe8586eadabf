"""The deterministic guard of a server PGO build (issue 46): the decision and the manifest's figures from counts
given, the base it is compared with, a refused build left out of the cache, the guard that cannot run (valgrind
cannot decode a -march=native build) said and the build kept, a build cached before servers had a guard that gains
its figures when used, `build --list`'s column (unit, no server); and the guard counted on the cached PostgreSQL
builds (server, skipped when they are not cached)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from dbperf.buildlab import server_build, server_cache_listing
from dbperf.buildlab.pgo_guard import GuardCannotRun, GuardCounts, figures, refusal
from dbperf.buildlab.recipes import recipes
from dbperf.buildlab.resume import BuildState
from dbperf.buildlab.server_build import GUARD_VERSION, ServerBuild, base_spec
from dbperf.buildlab.sources import debian
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.experiment.spec import parse_experiment
from dbperf.host.compiler import find_compiler
from dbperf.runner import server_pgo_guard
from dbperf.runner.targets import guard_line
from dbperf.usecases.build import guard_ratio
from tests.conftest import NEEDS_SERVERS, REPO
from tests.test_server_build import FailingRecipe

PGO = ServerBuildSpec("postgres", variants=("O2", "pgo"))
LEGACY = {"not_run": "the deterministic guard (fewer simulated instructions per query than the base build on the "
                     "training workload) is implemented for SQLite builds only so far"}
EVEX_LOG = ("==4242== Using Valgrind-3.19.0 and LibVEX; rerun with -h for copyright info\n"
            "vex amd64->IR: unhandled instruction bytes: 0x62 0xF1 0xFE 0x28\n"
            "==4242== valgrind: Unrecognised instruction at address 0x4a5b6c.\n"
            "==4242==    at 0x4A5B6C: hash_bytes (hashfn.c:150)\n")


def _counts(pgo: float, base: float) -> GuardCounts:
    return GuardCounts(pgo=pgo, base=base, events=100, queries=1000, workloads=("train-mix",), seconds=61.04,
                       method="the server's instructions (Ir) only: cachegrind of the backend")


@pytest.fixture
def cache(where, monkeypatch):
    """A server cache of the test's own (where the service users could reach it, as the lab asks): its build/
    folder."""
    monkeypatch.setenv("DBPERF_SERVER_CACHE", str(where / "servers"))
    builds = where / "servers" / "build"
    builds.mkdir(parents=True)
    return builds


@pytest.fixture
def base_build(cache, monkeypatch):
    """The base build `_guard` asks build_server for: a cache entry of its own; the specs asked for, recorded."""
    asked: list[ServerBuildSpec] = []
    base = ServerBuild(cache / "base" / "install", cache / "base" / "install" / "bin", {"key": "base-key"}, True)

    def build(spec: ServerBuildSpec, *args: Any, **kwargs: Any) -> ServerBuild:
        asked.append(spec)
        return base

    monkeypatch.setattr(server_build, "build_server", build)
    return asked


def _cached_pgo(cache: Path, guard: dict[str, Any]) -> ServerBuild:
    entry = cache / "pgo-key"
    (entry / "install" / "bin").mkdir(parents=True)
    manifest = {"key": "pgo-key", "label": PGO.label(), "engine": "postgres", "source": {"origin": "debian-src"},
                "compiler": {"path": "/usr/bin/cc", "version": "cc 12"}, "install": str(entry / "install"),
                "pgo": {"proof": {"share": 0.286}, "guard": guard}}
    (entry / "manifest.json").write_text(json.dumps(manifest))
    return ServerBuild(entry / "install", entry / "install" / "bin", manifest, cached=True)


def _never(*args: Any) -> GuardCounts:
    raise AssertionError("the guard ran again")


@pytest.mark.unit
def test_fewer_instructions_pass_and_the_figures_are_the_manifests():
    counts = _counts(36_156.4, 38_982.0)
    assert refusal(PGO.label(), counts) is None
    assert figures(counts) == {
        "pgo_instructions_per_query": 36156.4, "base_instructions_per_query": 38982.0, "ratio": 0.9275,
        "events": 100, "queries": 1000, "workloads": ["train-mix"], "seconds": 61.0,
        "method": "the server's instructions (Ir) only: cachegrind of the backend"}


@pytest.mark.unit
@pytest.mark.parametrize("pgo", [43_357.0, 38_747.0])
def test_a_pgo_build_not_executing_fewer_is_refused_in_one_line_naming_both_counts_and_the_ratio(pgo):
    said = refusal(PGO.label(), _counts(pgo, 38_747.0))
    assert said is not None and "\n" not in said
    assert said.startswith("postgres@debian-src [O2 pgo]: the PGO build is refused")
    assert f"{pgo:,.0f} instructions per query" in said and "its base without PGO 38,747" in said
    assert f"(×{pgo / 38_747:.3f})" in said


@pytest.mark.unit
def test_the_base_is_the_same_build_without_pgo_partial_training_or_bolt():
    spec = ServerBuildSpec("mariadb", variants=("O3", "lto", "pgo", "bolt"), cflags=("-fno-plt",),
                           compiler="gcc-12", pgo_partial_training=True, pgo_train_seconds=30)
    assert base_spec(spec) == ServerBuildSpec("mariadb", variants=("O3", "lto"), cflags=("-fno-plt",),
                                              compiler="gcc-12")
    # the PGO study's: its pgo and pgo-partial targets are guarded against its O2 target's (cached) build
    e = parse_experiment(REPO / "dbperf" / "studies" / "data" / "experiments" / "pgo-postgres.toml")
    specs = {t.name: t.server_build for t in e.targets}
    assert specs["pgo"] is not None and specs["pgo-partial"] is not None
    assert base_spec(specs["pgo"]) == base_spec(specs["pgo-partial"]) == specs["O2"]


@pytest.mark.unit
def test_the_guard_record_names_its_base_and_its_version(base_build, cache):
    seen = []

    def guard(engine: str, pgo: Path, base: Callable[[], Path]) -> GuardCounts:
        seen.append((engine, pgo, base()))
        return _counts(36_156.0, 38_982.0)

    record, refused = server_build._guard(PGO, cache / "p" / "bin", lambda *a: {}, None, guard)
    assert refused is None and base_build == [ServerBuildSpec("postgres", variants=("O2",))]
    assert seen == [("postgres", cache / "p" / "bin", cache / "base" / "install" / "bin")]
    assert record["ratio"] == 0.9275 and record["base_key"] == "base-key" and record["version"] == GUARD_VERSION
    record, refused = server_build._guard(PGO, cache / "p" / "bin", lambda *a: {}, None,
                                          lambda *a: _counts(43_357.0, 38_747.0))
    assert refused is not None and "43,357" in refused and record["ratio"] == 1.119


@pytest.mark.unit
def test_a_pgo_build_without_a_guard_to_count_it_is_refused(base_build, cache):
    with pytest.raises(UserError, match="a PGO build needs its guard"):
        server_build._guard(PGO, cache, lambda *a: {}, None, None)


@pytest.mark.unit
def test_where_valgrind_cannot_decode_the_build_the_guard_is_not_run_said_and_the_build_kept(base_build, cache):
    """A -march=native build on a CPU with AVX-512: the counting side finds valgrind's refusal in the server's log
    and says so; the build lab records it and keeps the build; the build's line on stderr is a warning."""
    log = cache / "server.log"
    log.write_text(EVEX_LOG)
    server = SimpleNamespace(log=log)

    def fails(*args: Any) -> None:
        raise UserError("target 'pgo': its server under valgrind died")

    profiler = SimpleNamespace(profile=fails, servers=SimpleNamespace(servers={"pgo": (server, cache)}))
    target = SimpleNamespace(name="pgo")
    with pytest.raises(GuardCannotRun, match=r"valgrind 3\.19\.0 cannot decode .*0x62 .*AVX-512") as said:
        server_pgo_guard._per_query(profiler, target, SimpleNamespace(name="train-mix"))  # type: ignore[arg-type]
    log.write_text("FATAL: the server did not start\n")  # any other failure stays the error it is
    with pytest.raises(UserError, match="died"):
        server_pgo_guard._per_query(profiler, target, SimpleNamespace(name="train-mix"))  # type: ignore[arg-type]

    def cannot(*args: Any) -> GuardCounts:
        raise GuardCannotRun(str(said.value))

    native = replace(PGO, variants=("O2", "native", "pgo"))
    record, refused = server_build._guard(native, cache / "p" / "bin", lambda *a: {}, None, cannot)
    assert refused is None and record["not_run"] == str(said.value) and record["version"] == GUARD_VERSION
    assert base_build == []  # the PGO build is counted first: no base is built for a guard that cannot run
    line = guard_line(native.label(), {"pgo": {"guard": record}})
    assert line.startswith("dbperf: warning: postgres@debian-src [O2 native pgo]: the PGO guard did not run: "
                           "valgrind 3.19.0 cannot decode") and "\n" not in line
    assert guard_ratio({"pgo": {"guard": record}}) == "not run"


class FakeProfiler:
    """explain/profile.py's Profiler as the guard uses it: each target's server counted, `instructions` per query
    (None: its server died under valgrind of `log`)."""
    instructions: ClassVar[dict[str, float | None]] = {}
    log: ClassVar[str] = ""

    def __init__(self, e: Any, work: Path, **kwargs: Any) -> None:
        self.work, self.servers = work, SimpleNamespace(servers={})

    def profile(self, target: Any, w: Any, mode: str) -> Any:
        assert mode == "simulated" and w.name == "train-mix" and target.binaries.endswith(f"{target.name}/bin")
        counted = self.instructions[target.name]
        if counted is None:
            (self.work / "server.log").write_text(self.log)
            self.servers.servers[target.name] = (SimpleNamespace(log=self.work / "server.log"), self.work)
            raise UserError(f"target {target.name!r}: its server under valgrind died")
        return SimpleNamespace(per_query={"instructions": counted}, method="cachegrind of the backend")

    def close(self) -> None:
        pass


@pytest.mark.unit
def test_the_guard_counts_the_pgo_build_first_and_its_base_only_when_it_could(monkeypatch, tmp_path):
    monkeypatch.setattr(server_pgo_guard, "Profiler", FakeProfiler)
    monkeypatch.setattr(FakeProfiler, "instructions", {"pgo": 225_482.2, "base": 241_379.0})
    asked = []

    def base() -> Path:
        asked.append(1)
        return tmp_path / "base" / "bin"

    counts = server_pgo_guard.count_server_guard("postgres", tmp_path / "pgo" / "bin", base)
    assert (counts.pgo, counts.base, counts.events, counts.queries) == (225_482.2, 241_379.0, 100, 1000)
    assert asked == [1] and counts.workloads == ("train-mix",) and "cachegrind of the backend" in counts.method
    monkeypatch.setattr(FakeProfiler, "instructions", {"pgo": None})
    monkeypatch.setattr(FakeProfiler, "log", EVEX_LOG)
    with pytest.raises(GuardCannotRun, match="AVX-512"):
        server_pgo_guard.count_server_guard("postgres", tmp_path / "pgo" / "bin", lambda: pytest.fail("built"))


@pytest.mark.unit
def test_a_build_refused_by_its_guard_is_never_moved_into_the_cache(base_build, cache, monkeypatch):
    class Recipe(FailingRecipe):  # one that builds: an empty install
        def commands(self, tree, prefix, cc, flags, jobs):
            return [["sh", "-c", f"echo 'cc -c a.c'; mkdir -p {prefix}/bin && touch {prefix}/bin/postgres"]]

        def clean_commands(self, tree: Path) -> list[list[str]]:
            return []

        def objects_root(self, tree: Path) -> Path:
            return tree

    def trained(spec, recipe, runner, work, instrumented, profile, train, directories):
        (profile / "src").mkdir(parents=True)
        (profile / "src" / "a.gcda").write_bytes(b"x")
        return {"proof": {"share": 0.3}}

    monkeypatch.setattr(server_build, "_train_and_prove", trained)
    monkeypatch.setattr(server_build, "missing_profiles", lambda *a: {"own": 0})
    work = cache / ".k-work"
    (work / "src").mkdir(parents=True)
    with pytest.raises(UserError, match=r"the PGO build is refused: .* 43,357 instructions per query, its base "
                                        r"without PGO 38,747 \(×1\.119\), not fewer \(log "):
        server_build._build(PGO, Recipe(), find_compiler(), work / "src", {}, "k", work, cache / "k", None,
                            lambda *a: {}, BuildState(work, persist=False), lambda *a: _counts(43_357.0, 38_747.0))
    assert not (cache / "k").exists() and not (work / "manifest.json").exists()
    assert len(list((cache / "failed").glob("*.log"))) == 1


@pytest.mark.unit
def test_a_build_cached_before_servers_had_a_guard_gains_its_figures_once(base_build, cache):
    found = _cached_pgo(cache, LEGACY)
    assert guard_ratio(found.manifest) == "pending"
    used = server_build._guarded_cached(PGO, found, lambda *a: {}, None, lambda *a: _counts(36_156.0, 38_982.0))
    written = json.loads((found.root.parent / "manifest.json").read_text())
    assert written == used.manifest and written["pgo"]["proof"] == {"share": 0.286}
    guard = written["pgo"]["guard"]
    assert guard["pgo_instructions_per_query"] == 36156.0 and guard["base_instructions_per_query"] == 38982.0
    assert guard["ratio"] == 0.9275 and guard["counted_after_the_build"] and "not_run" not in guard
    assert guard_ratio(written) == "×0.928"
    assert guard_line(PGO.label(), written) == ("    PGO guard: 36,156 instructions per query against 38,982 without "
                                                "PGO (×0.928) on train-mix")
    again = server_build._guarded_cached(PGO, replace(found, manifest=written), lambda *a: {}, None, _never)
    assert again.manifest == written


@pytest.mark.unit
def test_a_cached_build_its_guard_refuses_is_refused_now_and_on_every_later_use(base_build, cache):
    found = _cached_pgo(cache, LEGACY)
    with pytest.raises(UserError, match=r"refused: .* 43,357 instructions per query") as first:
        server_build._guarded_cached(PGO, found, lambda *a: {}, None, lambda *a: _counts(43_357.0, 38_747.0))
    written = json.loads((found.root.parent / "manifest.json").read_text())
    assert written["pgo"]["guard"]["refused"] == str(first.value) and guard_ratio(written) == "refused ×1.119"
    with pytest.raises(UserError, match=r"refused: .*\(recorded in .*manifest.json; remove that build"):
        server_build._guarded_cached(PGO, replace(found, manifest=written), lambda *a: {}, None, _never)


@pytest.mark.unit
def test_build_server_runs_the_guard_of_a_cached_build_once(cache, monkeypatch):
    """Through build_server itself: the cached entry its key names, guarded when first used, then as cached."""
    _cached_pgo(cache, LEGACY)
    base = ServerBuild(cache / "base" / "install", cache / "base" / "install" / "bin", {"key": "base-key"}, True)
    real = server_build.build_server

    def build(spec: ServerBuildSpec, *args: Any, **kwargs: Any) -> ServerBuild:
        return real(spec, *args, **kwargs) if spec.pgo else base

    monkeypatch.setattr(server_build, "build_server", build)
    monkeypatch.setattr(server_build, "check_can_build", lambda spec: (recipes()["postgres"], None))
    monkeypatch.setattr(debian, "candidate_versions", lambda engine: ("apt", "postgresql-15", ["15.18"]))
    monkeypatch.setattr(server_build, "_key", lambda *a: "pgo-key")
    runs = []

    def guard(engine: str, pgo: Path, base: Callable[[], Path]) -> GuardCounts:
        runs.append((pgo, base()))
        return _counts(36_156.0, 38_982.0)

    first = real(PGO, lambda *a: {}, None, guard)
    second = real(PGO, lambda *a: {}, None, guard)
    assert len(runs) == 1 and first.cached and first.manifest == second.manifest
    assert second.manifest["pgo"]["guard"]["base_key"] == "base-key"


@pytest.mark.unit
def test_build_list_shows_the_guard_ratio_beside_the_share():
    assert guard_ratio({"pgo": None}) == "-"
    assert guard_ratio({"pgo": {"proof": {"share": 0.3}}}) == "-"  # a SQLite build made before the guard
    assert guard_ratio({"pgo": {"guard": {"pgo_instructions_per_query": 70202.0, "base_instructions_per_query": 73675.0,
                                          "ratio": 0.9529}}}) == "×0.953"
    assert guard_ratio({"pgo": {"guard": LEGACY}}) == "pending"


@pytest.mark.server
@NEEDS_SERVERS
def test_the_cached_postgres_pgo_build_executes_fewer_instructions_than_its_o2_base():
    """PostgreSQL 15.18 -O2 and -O2 + PGO as the PGO study builds them, when both are cached (they take 20 minutes
    each to build): counted by the lab's counters step under cachegrind, the PGO build executes fewer."""
    builds = server_build.server_cache() / "build"
    e = parse_experiment(REPO / "dbperf" / "studies" / "data" / "experiments" / "pgo-postgres.toml")
    specs = {t.name: t.server_build for t in e.targets if t.server_build is not None}
    recipe = recipes()["postgres"]
    found: dict[str, Path] = {}
    for m in server_cache_listing.cached_server_builds():  # by the key build_server computes: the keys are unchanged
        cc = find_compiler(m["compiler"]["named"])
        for name, spec in specs.items():
            if server_build._key(spec, m["source"]["package"], m["source"]["version"], cc, recipe) == m["key"]:
                found[name] = Path(m["install"]) / "bin"
    if not {"O2", "pgo"} <= set(found):
        pytest.skip(f"the PGO study's PostgreSQL -O2 and -O2 + PGO builds are not cached in {builds} (dbperf build "
                    "dbperf/studies/data/experiments/pgo-postgres.toml makes them, about 40 minutes)")
    counts = server_pgo_guard.count_server_guard("postgres", found["pgo"], lambda: found["O2"])
    assert 0 < counts.pgo < counts.base and counts.events == 100 and counts.queries == 1000
