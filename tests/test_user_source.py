"""The experiment keys of a build from the user's change (experiment/user_source.py): `tree`, `rev` and `patches` as
the parser reads them, their labels, their place in the build keys, and bad input one line each. Nothing built."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from dbperf.buildlab import server_build
from dbperf.buildlab.builder import build_key
from dbperf.buildlab.recipes.postgres import PostgresRecipe
from dbperf.buildlab.sqlite_source import SqliteSource
from dbperf.errors import UserError
from dbperf.experiment.build_variants import BuildSpec
from dbperf.experiment.spec import parse_experiment
from dbperf.experiment.user_source import PatchFile, UserTree
from dbperf.host.compiler import find_compiler

pytestmark = pytest.mark.unit

RUN = '[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "a"\n'


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """An experiment's folder with a tree (an amalgamation) and two patches beside it."""
    (tmp_path / "sqlite").mkdir()
    (tmp_path / "sqlite" / "sqlite3.c").write_text("int x;\n")
    (tmp_path / "patches").mkdir()
    for name in ("one.patch", "two.patch"):
        (tmp_path / "patches" / name).write_text(f"--- a/sqlite3.c\n+++ b/sqlite3.c\n# {name}\n")
    (tmp_path / "patches" / "empty.patch").write_text("\n")  # changes nothing: refused, not built as "+1 patch"
    return tmp_path


def _target(write_experiment, body: str):
    return parse_experiment(write_experiment(RUN + body)).targets[0]


def test_a_tree_with_rev_and_patches_relative_to_the_experiment_file(write_experiment, files: Path):
    t = _target(write_experiment, 'tree = "sqlite"\nrev = "main~2"\npatches = ["patches/one.patch", '
                                  '"patches/two.patch"]\nbuild = ["O3"]')
    assert t.build is not None and t.engine == "sqlite" and t.library == ""
    assert t.build.tree == UserTree(str((files / "sqlite").resolve()), "main~2") and t.build.sqlite_version == ""
    assert [p.name for p in t.build.patches] == ["patches/one.patch", "patches/two.patch"]
    one = files / "patches" / "one.patch"
    assert t.build.patches[0] == PatchFile("patches/one.patch", str(one.resolve()),
                                           hashlib.sha256(one.read_bytes()).hexdigest())
    assert t.build.label() == "sqlite@tree:main~2+2 patches [O3]"
    assert t.build.label("tree:0123abc") == "sqlite@tree:0123abc+2 patches [O3]"
    plain = _target(write_experiment, 'tree = "sqlite"')
    assert plain.build is not None and plain.build.tree == UserTree(str((files / "sqlite").resolve()))
    assert plain.build.label() == "sqlite@tree:sqlite [O2]"
    released = _target(write_experiment, 'source = "sqlite@3.54.1"\npatches = "patches/one.patch"')
    assert released.build is not None and released.build.label() == "sqlite@3.54.1+1 patch [O2]"


def test_patches_on_a_server_built_from_debian_source(write_experiment, files: Path):
    t = _target(write_experiment, 'source = "postgres@debian-src"\npatches = ["patches/one.patch"]')
    assert t.server_build is not None and [p.name for p in t.server_build.patches] == ["patches/one.patch"]
    assert t.server_build.label() == "postgres@debian-src+1 patch [O2]"
    cc, recipe = find_compiler(), PostgresRecipe()
    plain = replace(t.server_build, patches=())
    keys = {server_build._key(s, "postgresql-15", "15.18-0+deb12u1", cc, recipe)
            for s in (plain, t.server_build, replace(t.server_build, patches=t.server_build.patches * 2))}
    assert len(keys) == 3


def test_patches_are_in_the_sqlite_build_key_in_their_order_and_keys_without_stay():
    cc = find_compiler()
    source = SqliteSource("3.54.1", "libsqlite3-sys", "0.0.0-test", "", "/nonexistent", "0" * 64)
    one, two = PatchFile("one.patch", "/p/one", "1" * 64), PatchFile("two.patch", "/p/two", "2" * 64)
    plain = BuildSpec("3.54.1")
    keys = [build_key(replace(plain, patches=p), source, cc) for p in ((), (one,), (one, two), (two, one))]
    assert len(set(keys)) == 4
    # a build without patches has the key it had before patches existed: the cache keeps serving it
    before = {"sqlite_version": "3.54.1", "sqlite3_c_sha256": "0" * 64, "flags": ["-O2"], "compiler": cc.version,
              "pgo": None}
    assert keys[0] == hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()[:20]
    # a patch's name is not its content: renamed, the same build
    assert build_key(replace(plain, patches=(replace(one, name="renamed.patch"),)), source, cc) == keys[1]


@pytest.mark.parametrize(("body", "message"), [
    ('tree = "sqlite"\nsource = "sqlite@3.54.1"', "give either 'source' ('sqlite@3.54.1') or 'tree'"),
    ('source = "sqlite@3.54.1"\nrev = "main"', ".rev: a revision of a 'tree'"),
    ('rev = "main"', "'rev' needs a 'source' such as \"sqlite@3.54.1\" or a 'tree'"),
    ('tree = "sqlite"\npatches = ["patches/gone.patch"]', ".patches: 'patches/gone.patch' not found ("),
    ('source = "sqlite@3.54.1"\npatches = ["patches"]', ".patches: 'patches': cannot read"),
    ('source = "sqlite@3.54.1"\npatches = [1]', ".patches: expected a list of patch files"),
    ('tree = "nowhere"', ".tree: "),
    ('tree = "sqlite"\nrev = "--output=/tmp/x"', ".rev: expected a git revision"),
    ('tree = "sqlite"\nlibrary = "/lib/x.so"', "give either 'tree' (the build lab builds it) or 'library'"),
    ('patches = ["patches/one.patch"]', "'patches' needs a 'source' such as \"sqlite@3.54.1\" or a 'tree'"),
    ('engine = "postgres"\ntree = "sqlite"\nsource = "postgres@debian-src"', "give either 'source' ("),
    ('source = "postgres@debian-src"\nrev = "main"', ".rev: a revision of a 'tree'"),
    ('engine = "postgres"\ntree = "sqlite"\nbinaries = "/usr/lib/postgresql/16/bin"', "give either 'tree' ("),
    ('source = "postgres@16.4"\npatches = ["patches/one.patch"]', "'patches' needs a source to build"),
    ('source = "mariadb@debian-src"\npatches = ["patches/none.patch"]', ".patches: 'patches/none.patch' not found"),
    ('tree = "sqlite"\npatches = ["patches/empty.patch"]', ".patches: 'patches/empty.patch' is empty ("),
])
def test_bad_input_is_one_line_at_parse_time(write_experiment, files: Path, body: str, message: str):
    with pytest.raises(UserError) as err:
        _target(write_experiment, body)
    assert message in str(err.value) and "\n" not in str(err.value)
    if body.startswith('tree = "nowhere"'):
        assert str(err.value).endswith(f"{files / 'nowhere'} is not a folder")
