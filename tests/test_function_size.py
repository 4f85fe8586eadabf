"""A function fits on a screen (issue 48, docs' STYLE): no function, method or closure in dbperf/ is over 80 lines
or over a cyclomatic complexity of 20, as radon measures them (a closure is measured apart from the function around
it, and its lines count in both). The functions over the bar today are listed in ALLOW with their figures; the list
only shrinks: a listed function now within the bar, or gone, fails the test until its line is removed, and a listed
function may not grow past its figures."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest
from radon.complexity import add_inner_blocks, cc_visit
from radon.visitors import Function

import dbperf

pytestmark = pytest.mark.unit

PACKAGE = Path(dbperf.__file__).parent
MAX_COMPLEXITY = 20
MAX_LINES = 80

# Qualified name -> (cyclomatic complexity, lines) as measured when it was listed: empty since issue 48. Remove a
# line when the function is within the bar; never add one.
ALLOW: dict[str, tuple[int, int]] = {}


class Size(NamedTuple):
    complexity: int
    lines: int

    def over(self) -> bool:
        return self.complexity > MAX_COMPLEXITY or self.lines > MAX_LINES


def _sizes(code: str, module: str) -> dict[str, Size]:
    """Every function, method and closure in one module's source, by qualified name."""
    sizes = {}
    for block in add_inner_blocks(cc_visit(code)):
        if isinstance(block, Function):
            sizes[f"{module}.{block.fullname}"] = Size(block.complexity, block.endline - block.lineno + 1)
    return sizes


def _package_sizes() -> dict[str, Size]:
    sizes = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        sizes.update(_sizes(path.read_text(), module))
    return sizes


def _problems(sizes: dict[str, Size], allow: dict[str, tuple[int, int]]) -> list[str]:
    problems = []
    for name, size in sorted(sizes.items()):
        figure = f"complexity {size.complexity}, {size.lines} lines"
        if name not in allow:
            if size.over():
                problems.append(f"{name}: {figure}; split it (at most complexity {MAX_COMPLEXITY} "
                                f"and {MAX_LINES} lines); the allow-list takes no new entry")
        elif not size.over():
            problems.append(f"{name}: {figure}, now within the bar; remove its line from ALLOW")
        elif size.complexity > allow[name][0] or size.lines > allow[name][1]:
            problems.append(f"{name}: {figure}, grown past its listed {allow[name]}; split it instead")
    problems += [f"{name}: no longer found; remove its line from ALLOW" for name in sorted(allow.keys() - sizes.keys())]
    return problems


def test_no_function_is_over_eighty_lines_or_complexity_twenty():
    problems = _problems(_package_sizes(), ALLOW)
    assert problems == [], "tests/test_function_size.py:\n" + "\n".join(problems)


def test_the_scan_measures_functions_methods_and_closures():
    def branches(indent: str) -> str:
        return "".join(f"{indent}if x == {i}:\n{indent}    return {i}\n" for i in range(21))
    code = (f"def wide(x):\n{branches('    ')}    return 0\n\n"
            "class C:\n    def long(self):\n" + "        y = 1\n" * 80 + "\n"
            f"def outer():\n    def inner(x):\n{branches('        ')}        return 0\n    return inner\n")
    sizes = _sizes(code, "m")
    assert sizes["m.wide"] == Size(22, 44)
    assert sizes["m.C.long"] == Size(1, 81)
    assert sizes["m.outer.inner"] == Size(22, 44)
    assert sizes["m.outer"].complexity == 1


def test_the_allow_list_only_shrinks():
    sizes = {"m.big": Size(30, 10), "m.fixed": Size(5, 10), "m.new": Size(3, 120), "m.fine": Size(1, 2),
             "m.grown": Size(25, 10)}
    problems = _problems(sizes, {"m.big": (30, 10), "m.fixed": (25, 10), "m.gone": (21, 5), "m.grown": (22, 10)})
    assert problems == [
        "m.fixed: complexity 5, 10 lines, now within the bar; remove its line from ALLOW",
        "m.grown: complexity 25, 10 lines, grown past its listed (22, 10); split it instead",
        "m.new: complexity 3, 120 lines; split it (at most complexity 20 and 80 lines); the allow-list takes no new "
        "entry",
        "m.gone: no longer found; remove its line from ALLOW"]
