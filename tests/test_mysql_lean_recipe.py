"""MySQL's lean recipe (`lean = true`): the default recipe's cmake line with each departure's options in it and the
bundled copies they replace gone, a build key of its own, its manifest naming each departure, and the experiment key
that asks for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbperf.buildlab import server_build
from dbperf.buildlab.recipes import recipe_for
from dbperf.buildlab.recipes.base import Departure, with_options
from dbperf.buildlab.recipes.mysql import LEAN, LEANER, RECIPE
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.host.compiler import Compiler
from tests.conftest import run_cli

pytestmark = pytest.mark.unit

CC = Compiler("/usr/bin/gcc", "gcc (Debian 12.2.0-14+deb12u1) 12.2.0", True, "g++")


def _names(options: tuple[str, ...] | list[str]) -> list[str]:
    return [o.split("=", 1)[0] for o in options]


def test_the_lean_cmake_line_names_each_departure_and_keeps_the_rest_of_the_default():
    configure = LEAN.commands(Path("/src"), Path("/p"), CC, ["-O2"], 2)[0]
    for option in (o for d in LEANER for o in d.options):
        assert option in configure
    for bundled in ("ICU", "ZSTD", "LZ4", "ZLIB", "PROTOBUF"):
        assert f"-DWITH_{bundled}=bundled" in RECIPE.options and f"-DWITH_{bundled}=bundled" not in configure
    assert "-DWITHOUT_NDBCLUSTER=ON" not in RECIPE.options and "-DWITH_MYSQLX=OFF" not in RECIPE.options
    # every other option of the default, in the default's order; no -D variable given twice
    departed = set(_names([o for d in LEANER for o in d.options]))
    assert [o for o in LEAN.options if o.split("=", 1)[0] not in departed] == \
        [o for o in RECIPE.options if o.split("=", 1)[0] not in departed]
    assert len(set(_names(LEAN.options))) == len(LEAN.options)
    # the same server: binaries, layout and the way steps are counted
    assert LEAN.server_binary(Path("/p")) == RECIPE.server_binary(Path("/p")) == Path("/p/bin/mysqld")
    assert LEAN.is_step("[1/2135] Building CXX object sql/CMakeFiles/sql.dir/item.cc.o")


def test_with_options_replaces_a_variable_in_place_and_appends_a_new_one():
    got = with_options(("-GNinja", "-DA=1", "-DB=bundled", "-DC=x"),
                       (Departure("b", ("-DB=system",), "why", 1), Departure("d", ("-DD=OFF",), "why", 2)))
    assert got == ("-GNinja", "-DA=1", "-DB=system", "-DC=x", "-DD=OFF")


def test_lean_is_asked_of_the_recipe_and_needs_the_system_libraries_it_links():
    assert recipe_for("mysql") is RECIPE and RECIPE.lean() is LEAN and LEAN.lean() is LEAN
    assert recipe_for("postgres").lean() is None
    added = set(LEAN.headers.values()) - set(RECIPE.headers.values())
    assert {"libicu-dev", "libzstd-dev", "liblz4-dev", "libprotobuf-dev", "libprotoc-dev"} <= added
    assert LEAN.tools["protoc"] == "protobuf-compiler"
    with pytest.raises(UserError, match=r"no leaner recipe for postgres \(drop lean = true\)$"):
        server_build.check_can_build(ServerBuildSpec("postgres", lean=True))


def test_a_lean_build_has_a_key_and_a_label_of_its_own_and_the_default_keeps_its_key():
    default, lean = ServerBuildSpec("mysql"), ServerBuildSpec("mysql", lean=True)
    keys = {server_build._key(s, "mysql-9.7", "9.7.2-4", CC, r) for s, r in ((default, RECIPE), (lean, LEAN))}
    assert len(keys) == 2
    # the key the default had before the lean recipe existed (tests/test_build_recipes.py's KEYS)
    assert server_build._key(default, "mysql-9.7", "9.7.2-4", CC, RECIPE) == "0504913fcab3734dd9ce"
    assert lean.label() == "mysql@debian-src [O2 lean]" and default.label() == "mysql@debian-src [O2]"
    # a PGO build's base (what its guard compares with) is lean too: base and variants built alike
    assert server_build.base_spec(ServerBuildSpec("mysql", variants=("O2", "pgo"), lean=True)).lean


def test_the_manifest_says_how_the_lean_build_differs_from_debians(tmp_path, monkeypatch):
    class Runner:
        steps = 2135

    class State:
        def totals(self) -> dict[str, float]:
            return {"build_seconds": 1.0}

    monkeypatch.setattr(server_build, "sha256_of", lambda path: "0" * 64)
    monkeypatch.setattr(server_build, "open_to_service_users", lambda root: None)
    work, final = tmp_path / "work", tmp_path / "final"
    (work / "install").mkdir(parents=True)
    built = server_build._enter(ServerBuildSpec("mysql", lean=True), LEAN, CC, {"origin": "debian-src"}, "k", work,
                                final, [], 2, Runner(), State(), {})
    written = json.loads((final / "manifest.json").read_text())
    assert written == built.manifest
    departures = written["differs_from_debian"]
    assert [d["part"] for d in departures] == [d.part for d in LEANER]
    assert {"NDB engine", "X plugin", "ICU"} <= {d["part"] for d in departures}
    for d in departures:
        assert d["options"] and d["reason"] and d["steps_saved"] > 0
    plain = server_build._enter(ServerBuildSpec("mysql"), RECIPE, CC, {"origin": "debian-src"}, "k2",
                                _work(tmp_path / "w2"), tmp_path / "f2", [], 2, Runner(), State(), {})
    assert plain.manifest["differs_from_debian"] == []


def _work(path: Path) -> Path:
    (path / "install").mkdir(parents=True)
    return path


@pytest.mark.parametrize(("target", "message"), [
    ('source = "mysql@debian-src"\nlean = "yes"', "lean: expected true or false"),
    ('source = "sqlite@3.45.1"\nlean = true', "lean: only for servers built from source"),
    ('engine = "mysql"\nlean = true', "'lean' needs a source to build"),
])
def test_bad_lean_keys_are_one_line(write_experiment, target, message):
    exp = write_experiment(f'[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\n{target}\n')
    proc = run_cli("run", str(exp), "--yes")
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_lean_true_reaches_the_build_spec(write_experiment):
    from dbperf.experiment.spec import parse_experiment
    exp = write_experiment('[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\nsource = "mysql@debian-src"\n'
                           'lean = true\n')
    assert parse_experiment(exp).targets[0].server_build == ServerBuildSpec("mysql", lean=True)
