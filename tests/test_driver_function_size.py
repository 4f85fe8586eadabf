"""A driver function fits on a screen too (issue 61, as test_function_size.py holds dbperf/ to it): no Rust function
in driver/src, tests included, is over 80 lines from its `fn` to its closing brace. The sources are scanned, not
parsed: comments, strings and character literals are blanked first, so that a brace inside one does not count."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SOURCES = Path(__file__).resolve().parent.parent / "driver" / "src"
MAX_LINES = 80

# A character literal ('x', '\n', '\'', '\u{7f}'), not a lifetime ('a) or a loop label ('outer:).
_CHAR = re.compile(r"'(?:[^'\\\n]|\\(?:u\{[0-9a-fA-F]{1,6}\}|x[0-9a-fA-F]{2}|.))'")
_RAW = re.compile(r'b?r(#*)"')
_FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def _blank(text: str) -> str:
    """`text` at the same length and on the same lines, comments, string and character literals turned to spaces."""
    out: list[str] = []
    i, n = 0, len(text)

    def keep_newlines(s: str) -> str:
        return "".join(c if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
        elif (raw := _RAW.match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = '"' + raw.group(1)
            j = text.find(close, raw.end())
            j = n if j < 0 else j + len(close)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
        elif c == "'" and (char := _CHAR.match(text, i)):
            j = char.end()
        else:
            out.append(c)
            i += 1
            continue
        out.append(keep_newlines(text[i:j]))
        i = j
    return "".join(out)


def function_lengths(text: str) -> list[tuple[str, int, int]]:
    """Every function with a body in one file's source: (name, line of its `fn`, lines up to its closing brace)."""
    code = _blank(text)
    found = []
    for m in _FN.finditer(code):
        depth, j = 0, m.end()
        # The body opens at the first brace outside the signature's parentheses and brackets; a `;` first is a
        # declaration without a body (a trait's, or an extern function's).
        while j < len(code) and not (depth == 0 and code[j] in "{;"):
            depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(code[j], 0)
            j += 1
        if j == len(code) or code[j] == ";":
            continue
        braces, k = 0, j
        while k < len(code):
            braces += {"{": 1, "}": -1}.get(code[k], 0)
            if braces == 0:
                break
            k += 1
        first = code.count("\n", 0, m.start()) + 1
        found.append((m.group(1), first, code.count("\n", 0, k) + 1 - first + 1))
    return found


def test_the_scan_sees_through_strings_comments_and_characters() -> None:
    source = (
        "fn a() {\n"
        '    let s = "}{ \\" }";\n'
        '    let r = r#"}"#;\n'
        "    let c = '}';\n"
        "    let e = '\\'';\n"
        "    // }\n"
        "    /* } /* { */ } */\n"
        "    fn inner<'x>(v: &'x [u8; 2]) -> &'x u8 { &v[0] }\n"
        "}\n"
        "trait T { fn m(&self); }\n"
        "fn b() -> Result<(), String> { Ok(()) }\n"
    )
    assert function_lengths(source) == [("a", 1, 9), ("inner", 8, 1), ("b", 11, 1)]


def test_no_driver_function_is_over_80_lines() -> None:
    files = sorted(SOURCES.rglob("*.rs"))
    assert files, f"no Rust sources under {SOURCES}"
    over = [
        f"{path.relative_to(SOURCES)}:{line} {name} ({lines} lines)"
        for path in files
        for name, line, lines in function_lengths(path.read_text())
        if lines > MAX_LINES
    ]
    assert not over, f"over {MAX_LINES} lines: " + "; ".join(over)
