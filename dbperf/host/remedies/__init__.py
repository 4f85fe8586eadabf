"""Noise remedies: what the lab may do to the process that runs the engine, or to the data it reads,
before a cell, so that each process draws less of a speed of its own (docs/verdicts.md: on this host the noise is
per process). A remedy is a module of this package defining `REMEDY`; the registry finds them by import.

A remedy never changes what the benchmark measures unless it says so (`changes_engine`): such a remedy is an option
a user names, never one of the lab's defaults. What a cell had applied, and what the lab saw of it (the huge pages
the process ended with, the bytes read into the page cache), is recorded in the cell's record (`remedies`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dbperf.errors import UserError
from dbperf.plugins import found
from dbperf.records import RunResult

Evidence = dict[str, Any]


@dataclass(frozen=True)
class CellPlace:
    """What a remedy may act on before a cell: the in-process engine's database file (None: a server's data, which
    the remedies that need a file do not touch), how to put the loaded data back, and the CPUs the lab planned."""
    database: Path | None
    restore: Callable[[], None]
    cpus: frozenset[int] | None
    allowed_cpus: frozenset[int]
    settings: tuple[tuple[str, str], ...] = ()  # the engine's per-connection settings (SQLite's PRAGMAs)
    threads: int = 1
    restored: bool = False  # the lab already put the loaded data back for this cell (a write cell)


@dataclass(frozen=True)
class Remedy:
    name: str
    what: str  # one line for `dbperf keys` and the docs
    changes_engine: bool = False  # it changes what the engine does: an option, never a default
    in_process_only: bool = True  # it acts on the process that runs the engine, which only the driver is here
    # It acts on the driver process as a whole (its environment, its start, its CPUs, a job field of the process),
    # not on one target's data: in a slices run, where every target shares one process, all must have it or none.
    per_process: bool = False
    environment: Mapping[str, str] = field(default_factory=dict)  # added to the driver's environment
    prefix: tuple[str, ...] = ()  # the driver started through this command (setarch -R)
    # Fields of the driver's job (engine options: `changes_engine`), from the cell's place.
    job_fields: Callable[[CellPlace], dict[str, Any]] = lambda place: {}
    # Before the cell: what it did (evidence); a refusal is a UserError naming why.
    prepare: Callable[[CellPlace], Evidence] = lambda place: {}
    # The CPUs the cell's driver runs on, from those the lab planned and those it may use.
    place_cpus: Callable[[CellPlace], frozenset[int] | None] = lambda place: place.cpus
    # After the cell: what the driver saw of it, and why the cell does not stand when the remedy did not take.
    observe: Callable[[RunResult], Evidence] = lambda result: {}
    verify: Callable[[RunResult], str | None] = lambda result: None
    # Why it cannot apply to a target with these facts (or None): e.g. a target that sets its own huge pages.
    conflict: Callable[[Mapping[str, Any]], str | None] = lambda facts: None
    excludes: tuple[str, ...] = ()  # remedies it cannot be combined with (the other page-cache state)
    stage: int = 1  # before-cell order: the data put back (0) before it is read into the cache (1)


REMEDIES: dict[str, Remedy] = dict(sorted((r.name, r) for r in found(__path__, __name__, "REMEDY", Remedy)))
NAMES = tuple(REMEDIES)
# The lab's defaults: the remedies measured to narrow the per-process spread on this kind of host without changing
# the engine (benchmarks/verdicts/states.py --remedies). None yet: the measurement decides (docs/verdicts.md).
DEFAULTS: tuple[str, ...] = ()


def remedy(name: str) -> Remedy:
    return REMEDIES[name]


def check_remedies(value: object, where: str) -> tuple[str, ...]:
    """A `remedies` key: a list of remedy names, or "none"; each name once."""
    if value == "none":
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{where}: expected a list of remedies ({', '.join(NAMES)}) or \"none\"")
    unknown = [v for v in value if v not in REMEDIES]
    if unknown:
        raise UserError(f"{where}: unknown remedy {unknown[0]!r} (known: {', '.join(NAMES)})")
    if len(set(value)) != len(value):
        raise UserError(f"{where}: a remedy is named twice")
    return tuple(value)


@dataclass(frozen=True)
class AppliedRemedies:
    """What a cell's remedies add to its driver's start, and what they did before it (by remedy name)."""
    environment: dict[str, str]
    prefix: tuple[str, ...]
    cpus: frozenset[int] | None
    job_fields: dict[str, Any]
    evidence: dict[str, Evidence]


def apply_remedies(names: tuple[str, ...], place: CellPlace) -> AppliedRemedies:
    """The remedies `names` applied before one cell, in stage order."""
    env: dict[str, str] = {}
    prefix: tuple[str, ...] = ()
    cpus = place.cpus
    fields: dict[str, Any] = {}
    evidence: dict[str, Evidence] = {}
    for r in sorted((REMEDIES[n] for n in names), key=lambda r: (r.stage, r.name)):
        env.update(r.environment)
        prefix += r.prefix
        cpus = r.place_cpus(replace(place, cpus=cpus))
        fields.update(r.job_fields(place))
        evidence[r.name] = r.prepare(place)
    return AppliedRemedies(env, prefix, cpus, fields, evidence)


def not_taken(names: tuple[str, ...], result: RunResult) -> str | None:
    """Why a cell's result does not show one of its remedies applied (the cell then fails), or None."""
    return next((f"remedy {n}: {why}" for n in names if (why := REMEDIES[n].verify(result))), None)


def observed(names: tuple[str, ...], result: RunResult | None, before: dict[str, Evidence]) -> dict[str, Evidence]:
    """Each remedy's evidence: what it did before the cell and what the driver saw of it after."""
    return {n: {**before.get(n, {}), **(REMEDIES[n].observe(result) if result else {})} for n in names}
