"""The build lab's server recipes, one module each (postgres.py, mariadb.py, mysql.py; what the cmake ones share is
cmake_ninja.py), each with a `RECIPE` (base.Recipe): found by import, as the study step kinds are, so that a new
engine's recipe is a new file and no table here names them. The pipeline that runs them is server_build.py."""

from __future__ import annotations

from functools import cache

from dbperf.buildlab.recipes.base import Recipe
from dbperf.plugins import found

__all__ = ["Recipe", "recipe_for", "recipes"]


@cache
def recipes() -> dict[str, Recipe]:
    """Every recipe by the name of its engine."""
    # Recipe is abstract: found() only checks each RECIPE is an instance of it
    return {recipe.engine: recipe for recipe in found(__path__, __name__, "RECIPE", Recipe)}  # type: ignore[type-abstract]


def recipe_for(engine: str) -> Recipe | None:
    """The recipe that builds `engine` from source, None when the lab has none."""
    return recipes().get(engine)
