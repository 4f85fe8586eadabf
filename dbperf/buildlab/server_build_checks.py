"""What a server build needs, checked before any build of an experiment starts (each takes minutes, some an hour): its
recipe, its origin (a bad revision or another engine's tree), the tools and development files, gcc for PGO, BOLT,
valgrind for the PGO guard; each missing one is one line naming what to install."""

from __future__ import annotations

import shutil

from dbperf.buildlab.profile_scope import scope_kind
from dbperf.buildlab.recipes import Recipe, recipe_for
from dbperf.buildlab.server_bolt import bolt_tools
from dbperf.buildlab.sources import origin_of
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.host.compiler import Compiler, find_compiler, missing_headers


def spec_recipe(spec: ServerBuildSpec) -> Recipe | None:
    """The recipe that builds `spec` (its engine's, or that one's leaner recipe), None when the lab has none; a
    UserError for `lean = true` on an engine without a leaner one."""
    recipe = recipe_for(spec.engine)
    if recipe is None or not spec.lean:
        return recipe
    lean = recipe.lean()
    if lean is None:
        raise UserError(f"{spec.label()}: the lab has no leaner recipe for {spec.engine} (drop lean = true)")
    return lean


def check_can_build(spec: ServerBuildSpec) -> tuple[Recipe, Compiler]:
    """The recipe and compiler of `spec`, or a UserError naming what this machine lacks (tools, development files,
    gcc for PGO, BOLT): checked for every build of an experiment before the first starts, so that a missing tool is
    not found after an hour of other builds."""
    recipe = spec_recipe(spec)
    if recipe is None:
        raise UserError(f"{spec.label()}: building {spec.engine} from source is not supported yet; "
                        f"use released binaries (source = \"{spec.engine}@VERSION\") or Debian's package")
    origin_of(spec, recipe)  # a bad revision or another engine's tree: one line
    cc = find_compiler(spec.compiler)
    missing = sorted({package for tool, package in recipe.tools.items() if shutil.which(tool) is None})
    if missing:
        raise UserError(f"{spec.label()}: building {spec.engine} from source needs {', '.join(recipe.tools)} "
                        f"(apt install {' '.join(missing)})")
    libraries = missing_headers(cc, recipe.headers, recipe.language)
    if libraries:
        raise UserError(f"{spec.label()}: building {spec.engine} from source needs the development files of "
                        f"{', '.join(libraries)} (apt install {' '.join(libraries)})")
    if spec.pgo and not cc.is_gcc:
        raise UserError(f"{spec.label()}: the pgo variant needs gcc (found {cc.version})")
    scope_refused = scope_kind(spec.pgo_scope).refusal(recipe) if spec.pgo else None
    if scope_refused:
        raise UserError(f"{spec.label()}: {scope_refused}")
    if spec.bolt:
        try:
            bolt_tools()
        except UserError as e:
            raise UserError(f"{spec.label()}: {e}") from None
    if spec.pgo and shutil.which("valgrind") is None:
        raise UserError(f"{spec.label()}: the pgo variant's guard counts instructions with valgrind (apt install "
                        "valgrind)")
    return recipe, cc
