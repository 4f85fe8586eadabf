"""Kinds, not flags (issue 48): a kind of replication (MariaDB's binlog replicas, PostgreSQL's streaming standbys) is
one object per layer, registered by the name an engine's descriptor gives: its section's rules
(dbperf/experiment/*_rules.py, replication_section.KINDS), its cluster and studies (dbperf/replication/kind.py,
lab.KINDS), its view (dbperf/report/*_view.py, replication_view.VIEWS). Outside a kind's own files nothing branches
on which kind it is: no comparison with a kind's name, no table keyed by one, no `streaming`/`binlog` flag."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dbperf
from dbperf import engines
from dbperf.experiment.replication_section import KINDS as RULES
from dbperf.experiment.replication_section import STUDIES
from dbperf.replication.lab import KINDS
from dbperf.report.replication_view import VIEWS, kind_view

pytestmark = pytest.mark.unit

PACKAGE = Path(dbperf.__file__).parent
KIND_NAMES = {"binlog", "streaming"}
# A kind's own files: its rules, its lab module with its cluster and studies, its view; the engines' descriptors.
OWN_FILES = {
    "experiment/binlog_rules.py", "replication/binlog.py", "replication/cluster.py", "replication/apply_rate.py",
    "replication/stale_reads.py", "replication/cross_engine.py", "report/binlog_view.py",
    "experiment/streaming_rules.py", "replication/streaming.py", "replication/pg_cluster.py",
    "replication/pg_apply.py", "replication/pg_stale.py", "report/streaming_view.py",
    "engines/descriptor.py", "engines/mariadb.py", "engines/postgres.py"}


def test_every_replicated_engine_has_its_kind_in_every_layer():
    named = {e.replication for e in engines.ENGINES.values() if e.replication is not None}
    assert named == KIND_NAMES
    assert set(RULES) == set(KINDS) == set(VIEWS) == named
    for name, kind in KINDS.items():
        assert kind.name == name and kind.rules is RULES[name] and VIEWS[name].name == name
        assert set(kind.studies) <= set(STUDIES)
        assert set(kind.studies) == set(STUDIES) - set(kind.rules.refused_studies), name
        assert kind.apply_method and kind.replica and kind.rules.durability and kind.rules.lab_settings


def test_results_that_name_no_engine_are_mariadbs():
    assert kind_view(None) is VIEWS[str(engines.engine("mariadb").replication)]


def _branches(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []

    def kind_literals(node: ast.AST) -> list[str]:
        items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
        return [i.value for i in items if isinstance(i, ast.Constant) and i.value in KIND_NAMES]

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                found += [(node.lineno, f"compared with {name!r}") for name in kind_literals(operand)]
        elif isinstance(node, ast.Dict):
            found += [(node.lineno, f"a table keyed by {name!r}")
                      for key in node.keys if key is not None for name in kind_literals(key)]
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in KIND_NAMES:
            found.append((node.lineno, f"a flag named {node.id!r}"))
        elif isinstance(node, ast.arg) and node.arg in KIND_NAMES:
            found.append((node.lineno, f"an argument named {node.arg!r}"))
        elif isinstance(node, ast.Attribute) and node.attr == "streaming_replication":
            found.append((node.lineno, "the old flag, engines.streaming_replication"))
    return found


def test_nothing_outside_a_kinds_files_branches_on_the_kind():
    offences = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative not in OWN_FILES:
            offences += [f"dbperf/{relative}:{line}: {what}" for line, what in _branches(ast.parse(path.read_text()))]
    assert offences == [], "ask the kind (rules, ReplicationKind, KindView) instead:\n" + "\n".join(offences)


def test_the_scan_finds_what_it_looks_for():
    code = ('streaming = engines.streaming_replication(e)\nif kind == "streaming": pass\nx = {"binlog": 1}\n'
            'def f(binlog): pass\ny = "streaming"\n')
    assert sorted(_branches(ast.parse(code))) == [
        (1, "a flag named 'streaming'"), (1, "the old flag, engines.streaming_replication"),
        (2, "compared with 'streaming'"), (3, "a table keyed by 'binlog'"), (4, "an argument named 'binlog'")]
