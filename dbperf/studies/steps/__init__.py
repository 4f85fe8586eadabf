"""The study step kinds, one module each (probe.py, layout.py, experiment.py, bisect.py, diff.py, counters.py), each
with a `KIND` (base.StepKind): found by import, as asv finds its plugins, so that a new kind is a new file and no
table here names them."""

from __future__ import annotations

from functools import cache

from dbperf.plugins import found
from dbperf.studies.steps.base import StepKind


@cache
def step_kinds() -> dict[str, StepKind]:
    """Every kind by its name (found on first use: the kinds' modules build on the study's model)."""
    return {kind.name: kind for kind in found(__path__, __name__, "KIND", StepKind)}


def step_kind(name: str) -> StepKind:
    """The kind named `name` (a step's `kind`, checked when its study loads)."""
    return step_kinds()[name]


def kind_names() -> tuple[str, ...]:
    return tuple(step_kinds())
