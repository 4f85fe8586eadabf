"""meta.json, study.json, bisect.json, calibration.json and the build lab's resume.json are typed at the boundary
and read through their readers only (issues 48 and 61): no module parses them raw (json.loads or msgspec of the
file's text) besides the reader of each, so that an upgrade of a format, or a run that died, is seen the same way
everywhere; and no module but the calibration's reader tells a calibration's folder, or its --quick, from its
experiment's comment line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "dbperf"
# the one reader of each file, and output_file.py, which decodes only meta.json's mark (it sits below storage)
READERS = {"storage/results.py", "studies/study_record.py", "output_file.py", "storage/bisect_path.py",
           "storage/calibration_run.py", "buildlab/resume.py"}
NAMES = ("META", "meta.json", "STUDY_JSON", "study.json", "PATH_FILE", "bisect.json", "CALIBRATION_JSON",
         "calibration.json", "STATE", "resume.json")
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
    assert not found, ("parse meta.json/study.json/bisect.json/calibration.json/resume.json through their readers: "
                       f"{found}")


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
@pytest.mark.parametrize("code", ['status = json.loads((d / META).read_text()).get("status")',
                                  'data = json.loads((partial / STATE).read_text())',
                                  'data = json.loads((work / "resume.json").read_text())'])
def test_the_check_sees_a_raw_read(code):
    tree = ast.parse(f"import json\n{code}\n")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _parses(n)]
    assert calls and any(_names_a_typed_file(a) for a in calls[0].args)


@pytest.mark.unit
def test_the_checks_see_a_raw_bisect_path_and_the_comment_line():
    tree = ast.parse('doc = json.loads((out / PATH_FILE).read_text())\nquick = "(--quick)" in first\n'
                     'mine = line.startswith(MARKER)\n')
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _parses(n)]
    assert calls and any(_names_a_typed_file(a) for a in calls[0].args)
    assert sum(_reads_the_comment(n) for n in ast.walk(tree)) == 2


# resume.json is found by a glob before it is read (`dbperf build --list`): the path's name is far from the parse, so
# for it the whole function is the unit: none but its reader both names the file and parses JSON.
RESUME_READER = "buildlab/resume.py"
RESUME_NAMES = ("STATE", "resume.json")


def _functions_reading_resume_json(code: str) -> list[str]:
    found = []
    for fn in ast.walk(ast.parse(code)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        parses = any(isinstance(n, ast.Call) and _parses(n) for n in ast.walk(fn))
        named = any((isinstance(n, ast.Name) and n.id in RESUME_NAMES)
                    or (isinstance(n, ast.Constant) and isinstance(n.value, str) and RESUME_NAMES[1] in n.value)
                    for n in ast.walk(fn))
        if parses and named:
            found.append(f"{fn.name}:{fn.lineno}")
    return found


@pytest.mark.unit
def test_no_function_but_its_reader_parses_resume_json():
    found = [f"{path.relative_to(PACKAGE).as_posix()}:{where}" for path in sorted(PACKAGE.rglob("*.py"))
             if path.relative_to(PACKAGE).as_posix() != RESUME_READER
             for where in _functions_reading_resume_json(path.read_text(encoding="utf-8"))]
    assert not found, f"read resume.json through buildlab.resume.read_resume: {found}"


@pytest.mark.unit
def test_the_resume_check_sees_a_read_after_a_glob():
    # the shape `dbperf build --list` had before resume.json was typed
    code = ("def partial_server_builds():\n"
            "    for path in builds.glob(f'.*{PARTIAL}/{STATE}'):\n"
            "        data = json.loads(path.read_text())\n")
    assert _functions_reading_resume_json(code) == ["partial_server_builds:1"]
