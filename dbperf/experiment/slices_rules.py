"""What `order = "slices"` (runner/slices.py) asks of an experiment: every target runs inside one driver process
(SQLite libraries loaded side by side), so every target is in-process, the process is set up alike for all (its
allocator, huge pages and the remedies that act on the process as a whole), and the load is a closed loop after a
fixed warm-up. Each refusal is one line naming the file, the key or the target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dbperf import engines
from dbperf.errors import UserError
from dbperf.experiment.model import DEFAULT_SLICE_S, Experiment, Target
from dbperf.host.process_variants import ProcessVariant
from dbperf.host.remedies import REMEDIES

MIN_SLICE_S = 0.001  # the driver's own bound (driver/src/slices.rs): shorter, a run would be mostly switching
SLICES = "order = \"slices\""


def slice_setting(values: dict[str, Any], rwhere: str) -> float:
    """`[run].slice` (checked as a duration by the key table): only with order = "slices", and at least 1 ms."""
    if "slice" not in values:
        return DEFAULT_SLICE_S
    if values.get("order") != "slices":
        raise UserError(f"{rwhere}.slice: only with {SLICES} (order is {values.get('order', 'alternate')!r})")
    if values["slice"] < MIN_SLICE_S:
        raise UserError(f"{rwhere}.slice: at least {MIN_SLICE_S * 1000:g} ms (a switch between targets costs "
                        f"microseconds), got {values['slice']:g} s")
    return float(values["slice"])


def process_remedies(t: Target) -> tuple[str, ...]:
    """The target's remedies that act on the driver process as a whole."""
    return tuple(sorted(r for r in t.remedies if REMEDIES[r].per_process))


def process_setup(t: Target) -> tuple[ProcessVariant, tuple[str, ...]]:
    """What of a target's setup acts on the driver process as a whole: its process variant and such remedies."""
    return (t.process, process_remedies(t))


def _describe(t: Target) -> str:
    variant = ", ".join(f"{k} = {v!r}" for k, v in (("allocator", t.process.allocator),
                                                      ("hugepages", t.process.hugepages)) if v) or "the default"
    return f"process {variant}, remedies on the process {', '.join(process_remedies(t)) or 'none'}"


def check_slices(e: Experiment, where: Path | str) -> None:
    """Refuses (one line) what a slices run cannot do; nothing to check for another order."""
    if e.order != "slices":
        return
    rwhere = f"{where} [run]"
    server = next((t for t in e.targets if t.is_server), None)
    if server is not None:
        raise UserError(f"{rwhere}: {SLICES} needs every target in one driver process (SQLite libraries loaded side "
                        f"by side); target {server.name!r} is a {engines.engine(server.engine).title} server: use "
                        "another order or drop it")
    if e.steady is not None:
        raise UserError(f"{rwhere}: {SLICES} warms every target up for a fixed `warmup` in one process; a "
                        "steady-state warm-up ends for the process, not per target: drop steady or the slices")
    if e.load.rate is not None:
        raise UserError(f"{rwhere}: {SLICES} runs closed loops; an open-loop rate's schedule would run across the "
                        "targets' slices: drop rate or the slices")
    first = e.targets[0]
    other = next((t for t in e.targets if process_setup(t) != process_setup(first)), None)
    if other is not None:
        raise UserError(f"{where} target {other.name!r}: {SLICES} runs every target in one driver process, so its "
                        f"setup must be {first.name!r}'s ({_describe(first)}), not {_describe(other)}")
