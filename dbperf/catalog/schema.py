"""The sbtest schema, per engine dialect, as the driver's load job wants it."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_FILE = Path(__file__).parent / "schemas" / "sbtest.toml"


@cache
def sbtest(engine: str) -> dict[str, Any]:
    doc = tomllib.loads(SCHEMA_FILE.read_text())
    dialect = doc[engine]
    return {"create": dialect["create"], "insert": dialect["insert"], "after_load": dialect["after_load"],
            "c_groups": doc["c_groups"], "pad_groups": doc["pad_groups"]}
