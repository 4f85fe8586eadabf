"""The A/A check: the base target run against itself as an extra target (`dbperf run --aa`, or `aa = true` in
`[run]`). Both are the same build and settings with data of their own, interleaved like any two targets, so every
cell the report calls faster or slower for the copy is a false alarm: the user's own false-alarm rate on this host."""

from __future__ import annotations

from dataclasses import replace

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment

SUFFIX = "-aa"


def with_aa(e: Experiment) -> Experiment:
    """`e` with a copy of its base target, named BASE-aa, added right after the base."""
    if e.aa_target:
        return e
    base = next(t for t in e.targets if t.name == e.base)
    name = base.name + SUFFIX
    if any(t.name == name for t in e.targets):
        raise UserError(f"{e.path}: the A/A copy of {base.name!r} would be named {name!r}, which is already a target")
    if base.port is not None:
        raise UserError(f"{e.path}: the A/A copy of {base.name!r} cannot share its fixed port {base.port}; "
                        "drop port for an A/A run")
    targets = list(e.targets)
    targets.insert(targets.index(base) + 1, replace(base, name=name))
    return replace(e, targets=tuple(targets), aa_target=name)
