"""Experiment files written as TOML: the one writer of the experiments the lab makes itself (a study's step with its
--quick overrides, a bisect's steps and counts, a calibration), from dicts. Python's tomllib reads but does not
write. Strings go out as JSON strings, which TOML reads the same; tables of a section as inline tables."""

from __future__ import annotations

import json
import math
from typing import Any

from dbperf.errors import UserError


def value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise UserError(f"cannot write {v!r} into an experiment file")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {value(x)}" for k, x in v.items()) + " }"
    raise UserError(f"cannot write {v!r} into an experiment file")


def document(doc: dict[str, Any], comment: str = "") -> str:
    """A document of sections ([run], [replication], [fleet]) and arrays of tables ([[target]]), after `comment`'s
    lines as TOML comments."""
    out: list[str] = [f"# {line}".rstrip() for line in comment.splitlines()]
    for section, body in doc.items():
        tables = body if isinstance(body, list) else [body]
        header = f"[[{section}]]" if isinstance(body, list) else f"[{section}]"
        for table in tables:
            out.append(header)
            out.extend(f"{json.dumps(str(k))} = {value(v)}" for k, v in table.items())
            out.append("")
    return "\n".join(out)
