"""meta.json, study.json, bisect.json and calibration.json are typed at the boundary and read through their
readers only (issues 48 and 61): no module parses them raw (json.loads or msgspec of the file's text) besides the
reader of each, so that an upgrade of a format, or a run that died, is seen the same way everywhere; and no module
but the calibration's reader tells a calibration's folder, or its --quick, from its experiment's comment line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "dbperf"
# the one reader of each file, and output_file.py, which decodes only meta.json's mark (it sits below storage)
READERS = {"storage/results.py", "studies/study_record.py", "output_file.py", "storage/bisect_path.py",
           "storage/calibration_run.py"}
NAMES = ("META", "meta.json", "STUDY_JSON", "study.json", "PATH_FILE", "bisect.json", "CALIBRATION_JSON",
         "calibration.json")
CALIBRATION_READER = "storage/calibration_run.py"


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
    assert not found, ("parse meta.json/study.json/bisect.json/calibration.json through storage.results.read_meta / "
                       f"studies.study_record / storage.bisect_path.read_path / storage.calibration_run: {found}")


# A module that names one of these files parses no JSON at all: a raw read of them went through a variable
# (`path = out / PATH_FILE; json.loads(path.read_text())`, then doc.get(...)), which the check above cannot follow.
NEWER = ("PATH_FILE", "bisect.json", "CALIBRATION_JSON", "calibration.json")


@pytest.mark.unit
def test_no_module_that_names_bisect_json_or_calibration_json_parses_json():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where in READERS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = any((isinstance(n, ast.Name) and n.id in NEWER) or (isinstance(n, ast.Constant) and n.value in NEWER)
                    or (isinstance(n, ast.alias) and n.name in NEWER) for n in ast.walk(tree))
        if names:
            found += [f"{where}:{n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Call) and _parses(n)]
    assert not found, f"read bisect.json / calibration.json through their readers (storage/): {found}"


def _reads_the_comment(node: ast.AST) -> bool:
    """`x.startswith(MARKER)` (the calibration's comment line) or the comment's "(--quick)" looked for."""
    if isinstance(node, ast.Constant) and node.value == "(--quick)":
        return True
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith"
            and any(isinstance(a, ast.Name) and a.id == "MARKER" for a in node.args))


@pytest.mark.unit
def test_no_module_reads_the_calibrations_kind_from_its_comment_line():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where == CALIBRATION_READER:
            continue
        found += [f"{where}:{n.lineno}" for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                  if _reads_the_comment(n) and hasattr(n, "lineno")]
    assert not found, f"a calibration's kind and --quick are read through storage.calibration_run: {found}"


@pytest.mark.unit
def test_the_check_sees_a_raw_read():
    tree = ast.parse('import json\nstatus = json.loads((d / META).read_text()).get("status")\n')
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _parses(n)]
    assert calls and any(_names_a_typed_file(a) for a in calls[0].args)


@pytest.mark.unit
def test_the_checks_see_a_raw_bisect_path_and_the_comment_line():
    tree = ast.parse('doc = json.loads((out / PATH_FILE).read_text())\nquick = "(--quick)" in first\n'
                     'mine = line.startswith(MARKER)\n')
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _parses(n)]
    assert calls and any(_names_a_typed_file(a) for a in calls[0].args)
    assert sum(_reads_the_comment(n) for n in ast.walk(tree)) == 2
