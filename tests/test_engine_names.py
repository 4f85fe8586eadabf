"""Engine knowledge lives in one place (issue 24): outside the engines' own files, no module compares an engine's
name as a string literal or keys a table by one; it asks the engine's descriptor (dbperf/engines/). The scan is of
the syntax tree, so comments, docstrings and an engine's name used as something else (PostgreSQL's "postgres"
database, its binary) are not caught."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dbperf
from dbperf import engines

pytestmark = pytest.mark.unit

PACKAGE = Path(dbperf.__file__).parent
# An engine's own files: its descriptor, its server lifecycle.
OWN_FILES = {"engines/descriptor.py", "engines/__init__.py", *(f"engines/{name}.py" for name in engines.NAMES),
             "servers/postgres.py", "servers/mariadb.py"}


def _literal_names(node: ast.AST) -> list[str]:
    """Engine names among a constant or a tuple/list/set of constants."""
    items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return [i.value for i in items if isinstance(i, ast.Constant) and i.value in engines.NAMES]


def _uses(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                found += [(node.lineno, f"compared with {name!r}") for name in _literal_names(operand)]
        elif isinstance(node, ast.Dict):
            found += [(node.lineno, f"a table keyed by {name!r}")
                      for key in node.keys if key is not None for name in _literal_names(key)]
        elif isinstance(node, ast.match_case) and isinstance(node.pattern, ast.MatchValue):
            found += [(node.pattern.lineno, f"matched against {name!r}") for name in _literal_names(node.pattern.value)]
    return found


def test_no_engine_name_is_compared_as_a_literal_outside_the_engines_files():
    offences = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in OWN_FILES:
            continue
        offences += [f"dbperf/{relative}:{line}: {what}" for line, what in _uses(ast.parse(path.read_text()))]
    assert offences == [], "ask the engine's descriptor (dbperf/engines/) instead:\n" + "\n".join(offences)


def test_the_scan_finds_what_it_looks_for():
    code = ('if t.engine == "mariadb": pass\nx = {"postgres": 1}\ny = e in ("sqlite", "mariadb")\n'
            'match e:\n    case "postgres": pass\nz = "postgres"\n')
    assert [what for _, what in _uses(ast.parse(code))] == [
        "compared with 'mariadb'", "a table keyed by 'postgres'", "compared with 'sqlite'",
        "compared with 'mariadb'", "matched against 'postgres'"]


def test_every_engine_is_described_once():
    assert set(engines.NAMES) == {"sqlite", "postgres", "mariadb", "mysql"}
    assert tuple(n for n in engines.NAMES if engines.engine(n).server) == engines.SERVER_NAMES
    for kind in engines.ENGINES.values():
        if kind.server:
            assert kind.dsn_schemes and kind.client and kind.client_argv and kind.default_port
            assert kind.counters_query is not None and kind.size_sql
            # released binaries from a registry: none serves MySQL's (its targets name an install or a source build)
            assert (kind.release is None) == (kind.name == "mysql"), kind.name
    assert engines.engine("mariadb").canonical_dsn("mariadb://u@h/db") == "mysql://u@h/db"
    assert engines.engine("postgres").canonical_dsn("postgres://u@h/db") == "postgres://u@h/db"


def test_the_build_lab_has_a_recipe_for_every_engine_that_says_it_builds_from_source():
    from dbperf.buildlab.recipes import recipes

    assert set(recipes()) == {e.name for e in engines.ENGINES.values() if e.builds_from_source}


def test_every_server_names_its_program_for_profiles():
    """A profile's method names the server program it counted from the descriptor: it said "mariadbd" of MySQL."""
    for name in engines.NAMES:
        e = engines.engine(name)
        if e.server:
            assert e.server_program, name
    assert [engines.engine(n).server_program for n in ("mariadb", "mysql", "postgres")] == [
        "mariadbd", "mysqld", "postgres"]
