"""Relinks (`ldflags`) and the layout fix that only relinks: the option's parsing and the server recipes' commands
(unit); a cmake + ninja project relinked with the fragment, SQLite's object compiled once and linked twice, and
`dbperf layout --fix` on SQLite (e2e)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import pytest

from dbperf.buildlab import kept_build, server_build
from dbperf.buildlab.build_tree import tree_identity
from dbperf.buildlab.rebuilt import ninja_rebuilt, objects_digest
from dbperf.buildlab.recipes import recipe_for
from dbperf.buildlab.recipes.cmake_ninja import CmakeNinjaRecipe
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.experiment.spec import parse_experiment
from dbperf.host.compiler import Compiler
from dbperf.layout.findings import READ_MOSTLY_SECTION, linker_script
from dbperf.layout.fix import (
    BASE_SUFFIX,
    FIXED_SUFFIX,
    ab_experiment,
    base_cost_experiment,
    relinks,
    stock_data_sections,
)
from dbperf.layout.static_map import static_map
from tests.conftest import run_cli

CC = Compiler("/usr/bin/gcc", "gcc (Debian 12.2.0-14+deb12u1) 12.2.0", True, "g++")
FRAGMENT = "-Wl,-T,/cache/layout/scripts/0123456789abcdef.ld"
RUN = '[run]\nbenchmarks = ["point-query"]\ntime = "1s"\n'


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _parsed(tmp_path: Path, target: str):
    path = tmp_path / "exp.toml"
    path.write_text(f'{RUN}\n[[target]]\nname = "t"\n{target}\n')
    return parse_experiment(path).targets[0]


@pytest.mark.unit
def test_ldflags_are_linker_options_alone_and_the_base_is_the_build_without_them(tmp_path):
    (tmp_path / "read_mostly.ld").write_text("SECTIONS {}\n")
    fragment = f"-Wl,-T,{tmp_path / 'read_mostly.ld'}"
    t = _parsed(tmp_path, f'source = "sqlite@3.54.1"\ncflags = ["-fdata-sections"]\nldflags = ["{fragment}"]')
    assert t.build.ldflags == (fragment,) and t.build.flags() == ["-O2", "-fdata-sections"]
    assert t.build.relink_base().ldflags == () and t.build.relink_base().cflags == ("-fdata-sections",)
    assert "relinked " + fragment in t.build.label()
    # a script named relative to the experiment's folder is linked by its absolute path (the link runs elsewhere)
    for relative in ("-Wl,-T,read_mostly.ld", "-Wl,--script=read_mostly.ld"):
        t = _parsed(tmp_path, f'source = "sqlite@3.54.1"\nldflags = ["{relative}"]')
        assert t.build.ldflags == (relative.replace("read_mostly.ld", str(tmp_path / "read_mostly.ld")),)
    for bad, said in [('source = "sqlite@3.54.1"\nldflags = ["-fdata-sections"]', "-Wl,... only"),
                      ('source = "sqlite@3.54.1"\nldflags = "-Wl,-q"', "expected a list of linker options"),
                      ('ldflags = ["-Wl,-q"]', "'ldflags' needs a 'source'"),
                      ('source = "mariadb@debian-src"\nbuild = ["O2", "pgo"]\nldflags = ["-Wl,-q"]',
                       "pgo and bolt builds are made in fresh folders"),
                      ('source = "sqlite@3.54.1"\nldflags = ["-Wl,-o,/elsewhere.so"]', "names the linker's output"),
                      ('source = "sqlite@3.54.1"\nldflags = ["-Wl,--output=/x.so"]', "names the linker's output"),
                      ('source = "sqlite@3.54.1"\nldflags = ["-Wl,-T,nosuch.ld"]',
                       f"'-Wl,-T,nosuch.ld' names {tmp_path / 'nosuch.ld'}, which is not a file"),
                      ('source = "sqlite@3.54.1"\nldflags = ["-Wl,--version-script=/nonexistent/v.map"]',
                       "names /nonexistent/v.map, which is not a file")]:
        with pytest.raises(UserError, match=said):
            _parsed(tmp_path, bad)


@pytest.mark.unit
def test_a_server_relink_has_a_key_of_its_own_and_shares_its_base_kept_tree():
    recipe = recipe_for("mariadb")
    assert recipe is not None
    base = ServerBuildSpec("mariadb", cflags=("-fdata-sections",))
    relink = replace(base, ldflags=(FRAGMENT,))
    assert relink.relink_base() == base
    keys = {spec: server_build._key(spec, "mariadb", "1:11.8.3-1", CC, recipe) for spec in (base, relink)}
    assert keys[base] != keys[relink], "the relink is a build (and cache entry) of its own"
    source = {"engine": "mariadb", "origin": "debian-src", "package": "mariadb", "version": "1:11.8.3-1"}
    assert tree_identity(source, relink.flags(), CC, recipe.options) == \
        tree_identity(source, base.flags(), CC, recipe.options), "the relink builds in its base's kept tree"


@pytest.mark.unit
def test_a_changed_linker_script_is_a_new_build(tmp_path):
    """The script's content is in the key (SQLite's and a server's): a build relinked with last week's script is not
    taken from the cache for today's."""
    from dbperf.buildlab.builder import build_key
    from dbperf.buildlab.sqlite_origin import origins
    script = tmp_path / "read_mostly.ld"
    script.write_text("SECTIONS { .a : { *(.a) } }\n")
    recipe = recipe_for("mariadb")
    assert recipe is not None
    spec = ServerBuildSpec("mariadb", ldflags=(f"-Wl,-T,{script}",))
    t = _parsed(tmp_path, f'source = "sqlite@3.54.1"\nldflags = ["-Wl,-T,{script}"]')
    origin = origins([t.build])[t.build]
    before = (server_build._key(spec, "mariadb", "1:11.8.3-1", CC, recipe), build_key(t.build, origin, CC))
    script.write_text("SECTIONS { .b : { *(.b) } }\n")
    after = (server_build._key(spec, "mariadb", "1:11.8.3-1", CC, recipe), build_key(t.build, origin, CC))
    assert before[0] != after[0] and before[1] != after[1]


@pytest.mark.unit
@pytest.mark.parametrize("engine", ["mariadb", "mysql"])
def test_the_cmake_ninja_relink_changes_the_link_flags_and_no_compile_flag(engine, tmp_path):
    recipe = recipe_for(engine)
    assert isinstance(recipe, CmakeNinjaRecipe)
    base = ServerBuildSpec(engine, cflags=("-fdata-sections",))
    relink = replace(base, ldflags=(FRAGMENT,))
    before = recipe.commands(tmp_path, tmp_path / "prefix", CC, base.flags(), 2)
    after = recipe.commands(tmp_path, tmp_path / "prefix", CC, [*relink.flags(), *relink.ldflags], 2)
    assert before[1:] == after[1:], "the same ninja and install commands"
    changed = [(b, a) for b, a in zip(before[0], after[0], strict=True) if b != a]
    assert [b.split("=", 1)[0] for b, _ in changed] == [f"-DCMAKE_{kind}_LINKER_FLAGS" for kind in
                                                         ("EXE", "SHARED", "MODULE")]
    assert all(a.endswith(FRAGMENT) and FRAGMENT not in b for b, a in changed)
    compile_flags = [o for o in after[0] if o.startswith(("-DCMAKE_C_FLAGS=", "-DCMAKE_CXX_FLAGS="))]
    assert compile_flags == ["-DCMAKE_C_FLAGS=-O2 -fdata-sections", "-DCMAKE_CXX_FLAGS=-O2 -fdata-sections"]
    assert recipe.relink_outputs(tmp_path) == (), "ninja relinks an output whose link command changed by itself"


@pytest.mark.unit
def test_the_make_relink_gives_the_fragment_to_ldflags_and_removes_the_server_binary(tmp_path):
    recipe = recipe_for("postgres")
    assert recipe is not None
    configure = recipe.commands(tmp_path, tmp_path / "prefix", CC, ["-O2", "-fdata-sections", FRAGMENT], 2)[0]
    assert "CFLAGS=-O2 -fdata-sections" in configure and f"LDFLAGS={FRAGMENT}" in configure
    assert recipe.relink_outputs(tmp_path) == (tmp_path / "src" / "backend" / "postgres",)


def _experiment(tmp_path: Path, threads: int, targets: str, name: str = "exp.toml"):
    """An experiment file of `targets` (TOML) and its parsed targets by name."""
    path = tmp_path / name
    path.write_text(f"{RUN}threads = [{threads}]\n\n{targets}")
    return path, {t.name: t for t in parse_experiment(path).targets}


def _ab(exp: Path, target, threads: int, script: Path):
    """The fix's A/B experiment of `target`, written beside `exp` and parsed."""
    ab = exp.parent / "ab.toml"
    ab.write_text(ab_experiment(exp, target, "point-query", threads, script))
    return parse_experiment(ab)


@pytest.mark.unit
def test_the_fix_ab_is_the_data_sections_build_against_its_relink_and_the_base_cost_a_run_apart(tmp_path):
    script = tmp_path / "fragment.ld"
    script.write_text("SECTIONS {}\n")  # layout --fix writes it before the A/B is read
    exp, targets = _experiment(tmp_path, 4, '[[target]]\nname = "O2"\nsource = "sqlite@3.54.1"\ncflags = ["-DX=1"]\n'
                               '\n[[target]]\nname = "ds"\nsource = "sqlite@3.54.1"\ncflags = ["-fdata-sections"]\n')
    parsed = _ab(exp, targets["O2"], 4, script)
    base, fixed = (t.build for t in parsed.targets)
    assert [t.name for t in parsed.targets] == ["O2" + BASE_SUFFIX, "O2" + FIXED_SUFFIX]
    assert parsed.base == "O2" + BASE_SUFFIX
    assert base.cflags == fixed.cflags == ("-DX=1", "-fdata-sections") and fixed.relink_base() == base
    assert fixed.ldflags == (f"-Wl,-T,{script}",) and parsed.threads == (4,)
    cost = tmp_path / "cost.toml"
    cost.write_text(base_cost_experiment(exp, targets["O2"], "point-query", 4) or "")
    parsed = parse_experiment(cost)
    assert [t.name for t in parsed.targets] == ["O2", "O2" + BASE_SUFFIX] and parsed.base == "O2"
    assert base_cost_experiment(exp, targets["ds"], "point-query", 4) is None, "the base is the stock build"
    server, servers = _experiment(tmp_path, 4, '[[target]]\nname = "pgo"\nsource = "mariadb@debian-src"\n'
                                  'build = ["O2", "pgo"]\n', "server.toml")
    pgo = servers["pgo"]
    assert not relinks(pgo) and relinks(targets["O2"]), "a PGO server has no kept tree to relink in"
    plain, rebuilt = (t.server_build for t in _ab(server, pgo, 4, script).targets)
    assert plain == pgo.server_build and rebuilt.cflags == ("-fdata-sections", f"-Wl,-T,{script}")


@pytest.mark.unit
def test_a_recipe_whose_stock_build_has_data_sections_is_its_own_fix_base(tmp_path):
    """MySQL's cmake compiles every object with -fdata-sections: the fix's A/B base is the stock build (the same
    build key: no second hour-long build of the same code), relinked with the fragment; the base cost is nothing to
    run. MariaDB's is not, so its base adds the flag."""
    script = tmp_path / "fragment.ld"
    script.write_text("SECTIONS {}\n")
    exp, targets = _experiment(tmp_path, 2, '[[target]]\nname = "mysql"\nsource = "mysql@debian-src"\nlean = true\n'
                               '\n[[target]]\nname = "mariadb"\nsource = "mariadb@debian-src"\n')
    base, fixed = (t.server_build for t in _ab(exp, targets["mysql"], 2, script).targets)
    assert base == targets["mysql"].server_build and base.cflags == ()
    assert fixed.relink_base() == base and fixed.ldflags == (f"-Wl,-T,{script}",)
    assert base_cost_experiment(exp, targets["mysql"], "point-query", 2) is None
    assert "SECTIONS_FLAG" in str(stock_data_sections(targets["mysql"]))
    assert stock_data_sections(targets["mariadb"]) is None
    base, _ = (t.server_build for t in _ab(exp, targets["mariadb"], 2, script).targets)
    assert base.cflags == ("-fdata-sections",)


@pytest.mark.unit
def test_a_server_relink_says_whether_its_objects_are_its_base_s(tmp_path):
    spec = ServerBuildSpec("mariadb", cflags=("-fdata-sections",), ldflags=(FRAGMENT,))
    digest = {"count": 3, "sha256": "a" * 64}
    incremental = {"objects": digest, "objects_rebuilt": 0}

    def base(objects: dict | None) -> server_build.ServerBuild:
        manifest = {"key": "basekey", "incremental": {"objects": objects} if objects else {}}
        return server_build.ServerBuild(tmp_path, tmp_path, manifest, cached=True)

    same = kept_build.relink_record(spec, base(digest).manifest, incremental)
    assert same == {"base_key": "basekey", "ldflags": [FRAGMENT], "object_count": 3, "objects_sha256": "a" * 64,
                    "objects_equal": True, "objects_compiled": 0}
    other = base({"count": 3, "sha256": "b" * 64}).manifest
    assert kept_build.relink_record(spec, other, incremental)["objects_equal"] is False
    assert kept_build.relink_record(spec, base(None).manifest, incremental)["objects_equal"] is None, "an older base"


@pytest.mark.unit
def test_the_objects_digest_changes_with_any_object_and_ignores_other_files(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.o").write_bytes(b"x")
    (tmp_path / "y.o").write_bytes(b"y")
    (tmp_path / "app").write_bytes(b"linked")
    first = objects_digest(tmp_path)
    assert first["count"] == 2
    (tmp_path / "app").write_bytes(b"linked again")
    assert objects_digest(tmp_path) == first
    (tmp_path / "y.o").write_bytes(b"z")
    assert objects_digest(tmp_path)["sha256"] != first["sha256"]


class _Toy(CmakeNinjaRecipe):
    """The cmake + ninja recipes' commands on a two-file C program."""
    engine: ClassVar[str] = "toy"
    options: ClassVar[tuple[str, ...]] = ("-GNinja", "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_C_FLAGS_RELEASE=-DNDEBUG")
    tools: ClassVar[dict[str, str]] = {}
    headers: ClassVar[dict[str, str]] = {}
    build_time: ClassVar[str] = "seconds"

    def binaries(self, prefix: Path) -> Path:
        return prefix / "bin" / "toy"

    def server_binary(self, prefix: Path) -> Path:
        return prefix / "bin" / "toy"


TOY_MAIN = """extern int toy_counter; extern int toy_flag;
int main(int argc, char **argv) { (void)argv; toy_counter += argc; return toy_flag + toy_counter - argc - 7; }
"""
TOY_DATA = "int toy_flag = 7;\nint toy_counter = 0;\nint toy_other = 3;\n"


def _run(commands: list[list[str]], cwd: Path) -> None:
    for cmd in commands:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{cmd}: {proc.stdout[-800:]} {proc.stderr[-800:]}"


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None, reason="needs cmake and ninja")
def test_a_cmake_ninja_tree_relinked_with_the_fragment_compiles_nothing_and_moves_the_object(tmp_path):
    tree = tmp_path / "src"
    tree.mkdir()
    (tree / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.13)\nproject(toy C)\n"
                                         "add_executable(toy main.c data.c)\n"
                                         "install(TARGETS toy RUNTIME DESTINATION bin)\n")
    (tree / "main.c").write_text(TOY_MAIN)
    (tree / "data.c").write_text(TOY_DATA)
    recipe, cc = _Toy(), Compiler("/usr/bin/gcc", "gcc", True, "/usr/bin/g++")
    base_flags, prefix = ["-O2", "-fdata-sections"], tmp_path / "prefix"  # a kept tree installs to its own prefix
    _run(recipe.commands(tree, prefix, cc, base_flags, 2), tree)
    objects = objects_digest(recipe.objects_root(tree))
    assert objects["count"] >= 2
    base = shutil.copy(prefix / "bin" / "toy", tmp_path / "toy-base")
    script = tmp_path / "read_mostly.ld"
    script.write_text(linker_script(["toy_flag"], 64))
    stamp = tmp_path / "started"
    stamp.touch()
    since = stamp.stat().st_mtime_ns
    _run(recipe.commands(tree, prefix, cc, [*base_flags, f"-Wl,-T,{script}"], 2), tree)
    log = (tree / recipe.BUILD_DIR / ".ninja_log").read_text()
    assert ninja_rebuilt(log, since) == 0, "nothing compiled: only the link edge ran again"
    assert objects_digest(recipe.objects_root(tree)) == objects, "the same objects, byte for byte"
    sections = {o.name: o.section for o in static_map(prefix / "bin" / "toy", None).objects}
    assert sections["toy_flag"] == READ_MOSTLY_SECTION and sections["toy_counter"] != READ_MOSTLY_SECTION
    before = {o.name: o.section for o in static_map(Path(base), None).objects}
    assert before["toy_flag"] != READ_MOSTLY_SECTION
    assert subprocess.run([prefix / "bin" / "toy"], timeout=60).returncode == 0


@pytest.fixture
def cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path_factory.mktemp("relink-cache")
    monkeypatch.setenv("DBPERF_CACHE", str(root))
    return root


def _manifests(cache: Path) -> dict[str, dict]:
    return {m["key"]: m for m in (json.loads(p.read_text()) for p in (cache / "builds").glob("*/manifest.json"))}


MOVED = ["sqlite3Hooks", "vfsList"]  # two globals of SQLite's 3.54.1 -O2 findings (docs/layout.md)


@pytest.mark.e2e
def test_sqlite_with_ldflags_is_its_base_object_linked_again(tmp_path, cache):
    script = tmp_path / "read_mostly.ld"
    script.write_text(linker_script(MOVED, 64))
    exp = tmp_path / "exp.toml"
    exp.write_text(f'{RUN}\n[[target]]\nname = "base"\nsource = "sqlite@3.54.1"\ncflags = ["-fdata-sections"]\n'
                   f'\n[[target]]\nname = "fixed"\nsource = "sqlite@3.54.1"\ncflags = ["-fdata-sections"]\n'
                   f'ldflags = ["-Wl,-T,{script}"]\n')
    proc = run_cli("build", str(exp), env={"DBPERF_CACHE": str(cache)}, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    manifests = _manifests(cache)
    (fixed,) = [m for m in manifests.values() if m.get("relink")]
    base = manifests[fixed["relink"]["base_key"]]
    assert base["flags"] == ["-O2", "-fdata-sections"] and "-fdata-sections" in base["commands"][0]
    assert not base["ldflags"] and fixed["ldflags"] == [f"-Wl,-T,{script}"]
    kept = Path(base["library"]).parent / "sqlite3.o"
    (obj,) = fixed["relink"]["objects"]
    assert Path(obj["file"]) == kept and obj["sha256"] == base["objects"][0]["sha256"] == _sha256(kept)
    assert fixed["relink"]["object_count"] == 1 and fixed["relink"]["objects_equal"] is True
    (link,) = fixed["commands"]
    assert "-c" not in link and str(kept) in link and link[-1] == f"-Wl,-T,{script}", "a link, not a compile"
    assert fixed["library_sha256"] != base["library_sha256"]
    after = {o.name: o.section for o in static_map(Path(fixed["library"]), None).objects}
    before = {o.name: o.section for o in static_map(Path(base["library"]), None).objects}
    assert all(after[n] == READ_MOSTLY_SECTION != before[n] for n in MOVED), (after, before)
    again = run_cli("build", str(exp), env={"DBPERF_CACHE": str(cache)}, timeout=600)
    assert again.returncode == 0 and _manifests(cache).keys() == manifests.keys(), "both cached, nothing rebuilt"


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_layout_fix_of_sqlite_relinks_its_data_sections_build(tmp_path, cache):
    exp = tmp_path / "exp.toml"
    exp.write_text('[run]\nbenchmarks = ["point-query"]\ntable_size = 1000\nthreads = [2]\ntime = "0.5s"\n'
                   'warmup = "0.2s"\nrepeats = 2\n\n[[target]]\nname = "O2"\nsource = "sqlite@3.54.1"\n')
    out = tmp_path / "layout.json"
    proc = run_cli("layout", "--experiment", str(exp), "--target", "O2", "--benchmark", "point-query", "--fix",
                   "--trace-seconds", "5", "--json", str(out), env={"DBPERF_CACHE": str(cache)}, timeout=3000)
    assert proc.returncode == 0, proc.stderr[-2000:]
    fix = json.loads(out.read_text())["fix"]
    manifests = _manifests(cache)
    base, fixed = manifests[fix["base_key"]], manifests[fix["fixed_key"]]
    assert fix["relink"] is True and fix["base_flags"] == ["-fdata-sections"]
    assert base["flags"] == ["-O2", "-fdata-sections"] and not base.get("relink")
    assert fixed["relink"]["base_key"] == base["key"] and fixed["relink"]["objects_equal"] is True
    assert fix["objects"] == {"count": 1, "equal": True, "compiled": 0}
    assert fixed["relink"]["objects"][0]["sha256"] == _sha256(Path(base["library"]).parent / "sqlite3.o")
    assert Path(fix["fixed_library"]) == Path(fixed["library"]) and Path(fix["base_library"]) == Path(base["library"])
    assert fix["moved"] and set(fix["sections_after"].values()) == {READ_MOSTLY_SECTION}
    ab = tomllib.loads((Path(fix["ab_results"]).parent / "ab.toml").read_text())
    assert ab["run"]["base"] == "O2-data-sections" and fix["ab_cells"] > 0
    assert [t.get("ldflags") for t in ab["target"]] == [None, fixed["ldflags"]]
    cost = tomllib.loads(Path(fix["base_cost"]["experiment"]).read_text())
    assert cost["run"]["base"] == "O2" and [t["name"] for t in cost["target"]] == ["O2", "O2-data-sections"]
    assert fix["base_cost"]["command"].startswith("dbperf run ")
    assert "relink:" in proc.stdout and f"build key {base['key']}" in proc.stdout
