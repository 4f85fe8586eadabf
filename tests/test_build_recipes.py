"""The build lab's recipes are one file each in dbperf/buildlab/recipes/, found by the RECIPE their module holds (as
study step kinds are found), and moving them there changed no build's cache key: a changed key would build every
cached server again."""

from __future__ import annotations

import pytest

from dbperf.buildlab import server_build
from dbperf.buildlab.recipes import Recipe, recipe_for, recipes
from dbperf.buildlab.recipes.cmake_ninja import CmakeNinjaRecipe
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.host.compiler import Compiler

pytestmark = pytest.mark.unit

CC = Compiler("/usr/bin/gcc", "gcc (Debian 12.2.0-14+deb12u1) 12.2.0", True, "g++")
# (engine, Debian package, version, variants) -> the key server_build._key gave before the recipes had files of their
# own (computed from the commit before the move).
KEYS = {
    ("postgres", "postgresql-15", "15.18-0+deb12u1", ("O2",)): "132d9abfe796dca0822e",
    ("postgres", "postgresql-15", "15.18-0+deb12u1", ("O3", "lto")): "598227fe6828b83dab9f",
    ("mariadb", "mariadb", "1:10.11.14-0+deb12u2", ("O2",)): "4fa8220c0b7199cd07cb",
    ("mariadb", "mariadb", "1:10.11.14-0+deb12u2", ("O3", "lto")): "1e7d81cc2d52c8565f51",
    ("mysql", "mysql-9.7", "9.7.2-4", ("O2",)): "0504913fcab3734dd9ce",
    ("mysql", "mysql-9.7", "9.7.2-4", ("O3", "lto")): "7d599f217fef497b9400",
}


def test_each_recipe_is_found_by_its_module_and_keyed_by_its_engine():
    found = recipes()
    assert set(found) == {"postgres", "mariadb", "mysql"}
    for engine, recipe in found.items():
        assert isinstance(recipe, Recipe) and recipe.engine == engine
        assert type(recipe).__module__ == f"dbperf.buildlab.recipes.{engine}"  # one file per engine
    # the shared cmake + ninja part is a base, not a recipe of its own
    assert not any(type(r) is CmakeNinjaRecipe for r in found.values())
    assert {type(found[e]).__mro__[1] for e in ("mariadb", "mysql")} == {CmakeNinjaRecipe}


def test_an_engine_without_a_recipe_is_refused_in_one_line():
    assert recipe_for("sqlite") is None
    with pytest.raises(UserError, match=r"building sqlite from source is not supported yet"):
        server_build.check_can_build(ServerBuildSpec("sqlite"))


@pytest.mark.parametrize(("engine", "package", "version", "variants"), list(KEYS))
def test_moving_the_recipes_kept_every_cache_key(engine, package, version, variants):
    spec = ServerBuildSpec(engine, variants=variants)
    key = server_build._key(spec, package, version, CC, recipes()[engine])
    assert key == KEYS[(engine, package, version, variants)]
