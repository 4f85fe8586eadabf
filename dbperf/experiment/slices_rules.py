"""What `order = "slices"` (orders/slice_rounds.py) asks of an experiment: every target runs from one driver process
(SQLite libraries loaded side by side, or one connection per server per client thread), so the targets are all
SQLite or all servers run by the lab's driver, the process is set up alike for all (its allocator, huge pages and the
remedies that act on the process as a whole), servers of different engines run one SQL, no replication lab, and the
load is a closed loop after a fixed warm-up. Each refusal is one line naming the file, the key or the target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dbperf.catalog.workload import compile_statements
from dbperf.errors import UserError
from dbperf.experiment.auto_time import AUTO
from dbperf.experiment.model import DEFAULT_SLICE_S, Experiment, Target
from dbperf.host.process_variants import ProcessVariant
from dbperf.host.remedies import REMEDIES

MIN_SLICE_S = 0.001  # the driver's own bound (driver/src/turn.rs): shorter, a run would be mostly switching
SLICES = "order = \"slices\""


def slice_setting(values: dict[str, Any], rwhere: str, time_s: float) -> float:
    """`[run].slice` (checked as a duration by the key table): only with order = "slices", at least 1 ms, and
    shorter than `time` (the default's too): a turn as long as a target's whole time would never alternate."""
    if "slice" in values and values.get("order") != "slices":
        raise UserError(f"{rwhere}.slice: only with {SLICES} (order is {values.get('order', 'alternate')!r})")
    slice_s = float(values.get("slice", DEFAULT_SLICE_S))
    if values.get("order") != "slices":
        return slice_s
    if slice_s < MIN_SLICE_S:
        raise UserError(f"{rwhere}.slice: at least {MIN_SLICE_S * 1000:g} ms (a switch between targets costs "
                        f"microseconds), got {slice_s:g} s")
    if slice_s >= time_s:
        said = f"slice = {slice_s:g} s" + ("" if "slice" in values else " (the default)")
        length = f"time = {time_s:g} s" if values.get("time") != AUTO else f"time = \"auto\"'s shortest, {time_s:g} s"
        raise UserError(f"{rwhere}: {said} is not shorter than {length}: each target would run its whole "
                        "time in one turn a round, and the targets would never take turns; give a shorter slice or "
                        "a longer time")
    return slice_s


def process_remedies(t: Target) -> tuple[str, ...]:
    """The target's remedies that act on the driver process as a whole."""
    return tuple(sorted(r for r in t.remedies if REMEDIES[r].per_process))


def process_setup(t: Target) -> tuple[ProcessVariant | bool, tuple[str, ...]]:
    """What of a target's setup acts on the driver process as a whole: a SQLite target's process variant and such
    remedies. A server's allocator and huge pages are its server's own (they may differ between servers), except
    that hugepages = "off" also turns the driver's transparent huge pages off (ProcessVariant.apply: thp_disable)."""
    if t.is_server:
        return (t.process.hugepages == "off", process_remedies(t))
    return (t.process, process_remedies(t))


def _describe(t: Target) -> str:
    if t.is_server:  # the rest of a server's process variant is its server's own
        return "hugepages = 'off', which the driver takes too" if t.process.hugepages == "off" else \
            "hugepages not 'off'"
    variant = ", ".join(f"{k} = {v!r}" for k, v in (("allocator", t.process.allocator),
                                                      ("hugepages", t.process.hugepages)) if v) or "the default"
    return f"process {variant}, remedies on the process {', '.join(process_remedies(t)) or 'none'}"


def _kind(t: Target) -> str:
    return f"a {t.descriptor.title} server" if t.is_server else "SQLite"


def _check_servers(e: Experiment, where: Path | str) -> None:
    """Server targets in one process: each driven by the lab's driver, each a server of its own, and, where their
    engines differ, one SQL for all (a slices process runs one workload on every side)."""
    tool = next((t for t in e.targets if t.tool), None)
    if tool is not None:
        raise UserError(f"{where} target {tool.name!r}: {SLICES} runs every target from the lab's driver; "
                        f"{tool.tool} runs its cells in a process of its own: drop driver or the slices")
    seen: dict[str, str] = {}
    for t in e.targets:
        if t.dsn is not None and t.dsn in seen:
            raise UserError(f"{where} target {t.name!r}: {SLICES} would measure one server twice in one process: "
                            f"{seen[t.dsn]!r} names the same dsn")
        if t.dsn is not None:
            seen[t.dsn] = t.name
    first = e.targets[0]
    for t in e.targets[1:]:
        if t.engine == first.engine:
            continue
        for b in e.benchmarks:
            if compile_statements(b, e.table_size, t.engine) != compile_statements(b, e.table_size, first.engine):
                raise UserError(f"{where} target {t.name!r}: {SLICES} runs one workload on every side; "
                                f"{b.name!r} is not the same SQL for {t.descriptor.title} as for "
                                f"{first.descriptor.title} ({first.name!r}): use another order or one "
                                "engine")


def check_slices(e: Experiment, where: Path | str) -> None:
    """Refuses (one line) what a slices run cannot do; nothing to check for another order."""
    rwhere = f"{where} [run]"
    if e.turn_checkpoint and e.order != "slices":
        raise UserError(f"{rwhere}.turn_checkpoint: only with {SLICES} (order is {e.order!r}): a target's turn is a "
                        "slice of the process the targets share")
    if e.order != "slices":
        return
    first = e.targets[0]
    other = next((t for t in e.targets if t.is_server != first.is_server), None)
    if other is not None:
        raise UserError(f"{rwhere}: {SLICES} runs a round's targets in one driver process, all SQLite libraries or "
                        f"all servers; {first.name!r} is {_kind(first)} and {other.name!r} {_kind(other)}: use "
                        "another order or split the run")
    if e.replication is not None:
        raise UserError(f"{where} [replication]: the replication lab runs its own cells, not {SLICES} rounds: "
                        "drop the slices")
    if first.is_server and e.turn_checkpoint:
        raise UserError(f"{rwhere}.turn_checkpoint: checkpoints a SQLite target's WAL in its own turns; a server "
                        "checkpoints on its own: drop turn_checkpoint")
    if first.is_server:
        _check_servers(e, where)
    if e.steady is not None:
        raise UserError(f"{rwhere}: {SLICES} warms every target up for a fixed `warmup` in one process; a "
                        "steady-state warm-up ends for the process, not per target: drop steady or the slices")
    if e.load.rate is not None:
        raise UserError(f"{rwhere}: {SLICES} runs closed loops; an open-loop rate's schedule would run across the "
                        "targets' slices: drop rate or the slices")
    other = next((t for t in e.targets if process_setup(t) != process_setup(first)), None)
    if other is not None:
        raise UserError(f"{where} target {other.name!r}: {SLICES} runs every target in one driver process, so its "
                        f"setup must be that of target {first.name!r} ({_describe(first)}), not {_describe(other)}")
