"""meta.json and study.json are typed at the boundary and read through their readers only (issue 48): no module
parses them raw (json.loads or msgspec of the file's text) besides the reader of each, so that an upgrade of either
format, or a run that died, is seen the same way everywhere."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "dbperf"
# the one reader of each file, and output_file.py, which decodes only meta.json's mark (it sits below storage)
READERS = {"storage/results.py", "studies/study_record.py", "output_file.py"}
NAMES = ("META", "meta.json", "STUDY_JSON", "study.json")


def _names_a_typed_file(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if (isinstance(sub, ast.Name) and sub.id in NAMES) or (isinstance(sub, ast.Constant) and sub.value in NAMES):
            return True
    return False


def _parses(call: ast.Call) -> bool:
    """json.loads(...), json.load(...) or msgspec...decode(...)"""
    f = call.func
    return isinstance(f, ast.Attribute) and f.attr in ("loads", "load", "decode")


@pytest.mark.unit
def test_no_module_parses_meta_or_study_json_raw():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where in READERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _parses(node) and any(_names_a_typed_file(a) for a in node.args):
                found.append(f"{where}:{node.lineno}")
    assert not found, f"parse meta.json/study.json through storage.results.read_meta / studies.study_record: {found}"


@pytest.mark.unit
def test_the_check_sees_a_raw_read():
    tree = ast.parse('import json\nstatus = json.loads((d / META).read_text()).get("status")\n')
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _parses(n)]
    assert calls and any(_names_a_typed_file(a) for a in calls[0].args)
