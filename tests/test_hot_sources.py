"""The hot sources of a recipe (buildlab/hot_sources.py, `pgo_scope = "hot-path"`): cmake's object paths to the
sources the launcher sees, gcov-dump's arc counters summed, the choice by share, MySQL's list and the key."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dbperf.buildlab import hot_sources
from dbperf.buildlab.profile_launcher import profiled
from dbperf.buildlab.profile_scope import recipe_hot_sources, scope_kind
from dbperf.buildlab.recipes.mysql import LEAN, MysqlRecipe
from dbperf.buildlab.recipes.postgres import PostgresRecipe
from dbperf.errors import UserError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("obj", "source"), [
    ("storage/innobase/CMakeFiles/innobase.dir/handler/ha_innodb.cc.o", "storage/innobase/handler/ha_innodb.cc"),
    ("sql/CMakeFiles/sql_main.dir/sql_yacc.cc.o", "sql/sql_yacc.cc"),  # generated: relative to the build folder
    ("sql/CMakeFiles/sql_main.dir/__/sql-common/client.cc.o", "sql-common/client.cc"),  # cmake's __ for ..
    ("CMakeFiles/top.dir/main.c.o", "main.c"),
])
def test_an_object_is_named_by_its_source(obj, source):
    assert hot_sources.object_source(obj) == source


DUMP = """x.gcda:  01000000:  12:FUNCTION ident=1
x.gcda:    01a10000:  16:COUNTERS arcs 2 counts
x.gcda:                   0: 2 5
x.gcda:    01af0000:   8:COUNTERS time_profiler 1 counts
x.gcda:                   0: 7
x.gcda:  01000000:  12:FUNCTION ident=2
x.gcda:    01a10000:  24:COUNTERS arcs 3 counts
x.gcda:                   0: 1 0 3
"""


def test_the_arc_counters_are_summed_and_nothing_else():
    assert hot_sources.arc_sum(DUMP) == 11  # 2 + 5 + 1 + 0 + 3; the time profiler's 7 is not an arc


def test_the_hottest_objects_up_to_the_share_are_chosen():
    counts = {"a.o": 90, "b.o": 9, "c.o": 1, "d.o": 0}
    assert hot_sources.choose(counts, 0.9) == ["a.o"]
    assert hot_sources.choose(counts, 0.95) == ["a.o", "b.o"]
    assert hot_sources.choose(counts, 1.0) == ["a.o", "b.o", "c.o"]
    assert hot_sources.choose({"a.o": 5, "b.o": 5}, 0.5) == ["a.o", "b.o"]  # a tie stays together
    with pytest.raises(UserError, match="counted nothing"):
        hot_sources.choose({"a.o": 0}, 0.5)


def test_mysqls_list_lies_within_its_directories_and_holds_the_sentinels_source():
    hot = recipe_hot_sources(LEAN)
    assert hot.engine == "mysql" and hot.version == "9.7.2" and hot.training == ["train-mix"]
    assert len(hot.sources) == len(set(hot.sources)) > 100
    assert all(profiled(s, list(MysqlRecipe.profile_dirs)) for s in hot.sources)
    assert "sql/sql_parse.cc" in hot.sources  # dispatch_command, the proof's sentinel
    assert "storage/innobase/handler/ha_innodb.cc" in hot.sources


def test_the_list_is_in_the_key_and_another_version_is_refused():
    assert scope_kind("query-path").identity(LEAN, "9.7.2-4") == {
        "scope": "query-path", "directories": ["sql", "storage/innobase", "mysys", "strings", "vio"]}
    identity = scope_kind("hot-path").identity(LEAN, "9.7.2-4")
    assert identity["hot"]["sources"] == recipe_hot_sources(LEAN).sources
    with pytest.raises(UserError, match=r"found on 9\.7\.2's profile, not 9\.7\.4-2's"):
        scope_kind("hot-path").identity(LEAN, "9.7.4-2")


def test_a_recipe_without_a_list_is_refused_in_one_line():
    said = scope_kind("hot-path").refusal(PostgresRecipe())
    assert said is not None and "profile directories" in said  # PostgreSQL names no directories either


def test_a_bad_list_is_one_line(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    with pytest.raises(UserError, match="not a hot-sources file"):
        hot_sources.read(bad)


def test_a_newer_version_than_the_lists_is_passed_over_and_said(monkeypatch):
    """Debian's index named 9.7.4-2 before its mirror served it (2026-11-29): a hot-path build skips a version its
    list was not made on, as one the archive does not serve, says so, and builds (here: finds) the list's version."""
    from dbperf.buildlab import server_build
    from dbperf.buildlab.sources import debian
    from dbperf.experiment.build_variants import ServerBuildSpec

    spec = ServerBuildSpec("mysql", variants=("O2", "pgo"), lean=True, pgo_scope="hot-path")
    keyed: list[str] = []
    monkeypatch.setattr(server_build, "check_can_build", lambda s: (LEAN, None))
    monkeypatch.setattr(debian, "candidate_versions", lambda e: ("apt", "mysql-9.7", ["9.7.4-2", "9.7.2-4"]))
    monkeypatch.setattr(server_build, "_key", lambda s, package, version, *a: keyed.append(version) or version)
    monkeypatch.setattr(server_build, "_cached", lambda entry, recipe: entry.name)
    guarded: list[ServerBuildSpec] = []
    monkeypatch.setattr(server_build, "_guarded_cached", lambda s, found, *a: guarded.append(s) or found)
    said: list[str] = []
    found = server_build.build_server(spec, lambda *a: {}, lambda text, done, total: said.append(text))
    assert found == "9.7.2-4" and keyed == ["9.7.2-4"]  # 9.7.4-2 never keyed, so never fetched nor built
    assert len(said) == 1 and said[0].startswith("mysql-9.7 9.7.4-2: pgo_scope = \"hot-path\"") \
        and said[0].endswith("; trying 9.7.2-4")
    # the guard's base is of the PGO build's version, not the archive's newest
    (pinned,) = guarded
    assert pinned.version == "9.7.2-4" and server_build.base_spec(pinned).version == "9.7.2-4"
    keyed.clear()
    assert server_build.build_server(server_build.base_spec(pinned), lambda *a: {}) == "9.7.2-4"
    assert keyed == ["9.7.2-4"]
    with pytest.raises(UserError, match=r"no longer lists mysql-9\.7 9\.7\.1-1, the version of the PGO build"):
        server_build.build_server(server_build.base_spec(replace(pinned, version="9.7.1-1")), lambda *a: {})


def test_an_experiment_of_two_debian_versions_is_refused(tmp_path):
    from dbperf.buildlab.server_build import ServerBuild
    from dbperf.experiment.build_variants import ServerBuildSpec
    from dbperf.runner import targets

    def built(version: str) -> ServerBuild:
        return ServerBuild(tmp_path, tmp_path, {"source": {"package": "mysql-9.7", "version": version}}, True)

    o2 = ServerBuildSpec("mysql", lean=True)
    pgo = ServerBuildSpec("mysql", variants=("O2", "pgo"), lean=True, pgo_scope="hot-path")
    targets._one_version_per_engine({o2: built("9.7.2-4"), pgo: built("9.7.2-4")})
    with pytest.raises(UserError, match=r"\[O2 lean\] is of 9\.7\.4-2, .* of 9\.7\.2-4: an experiment"):
        targets._one_version_per_engine({o2: built("9.7.4-2"), pgo: built("9.7.2-4")})
