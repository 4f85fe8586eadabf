"""The measure kinds, one module each (probe.py, cell.py, geomean.py, in_json.py), each with a `KIND` (a subclass of
base.Measure, tagged by its `from`): found by import, so that a new kind is a new file; decoded here once, as one
tagged union, when a study loads (definition.py)."""

from __future__ import annotations

import functools
import operator
from functools import cache
from typing import Any

import msgspec

from dbperf.errors import UserError
from dbperf.plugins import found
from dbperf.studies.measures.base import Measure


@cache
def measure_kinds() -> tuple[type[Measure], ...]:
    return tuple(k for k in found(__path__, __name__, "KIND", type) if issubclass(k, Measure))


@cache
def _union() -> Any:
    return functools.reduce(operator.or_, measure_kinds())


def kind_names() -> tuple[str, ...]:
    return tuple(str(k.__struct_config__.tag) for k in measure_kinds())


def decoded(raw: Any, where: str) -> Measure:
    """A measure table as a study's TOML has it, as its kind's struct; one line, UserError, when it is none."""
    if not isinstance(raw, dict):
        raise UserError(f"{where}: measure must be a table")
    if raw.get("from") not in kind_names():
        raise UserError(f"{where}: measure 'from' must be one of {', '.join(kind_names())}, got {raw.get('from')!r}")
    try:
        measure: Measure = msgspec.convert(raw, _union())
    except msgspec.ValidationError as e:
        raise UserError(f"{where}: a {raw['from']} measure: {e}") from None
    return measure


def overridden(measure: Measure, overrides: dict[str, Any], where: str) -> Measure:
    """The measure with some of its keys replaced (a figure's --quick overrides), decoded and checked again."""
    return decoded({**msgspec.to_builtins(measure), **overrides}, where) if overrides else measure
