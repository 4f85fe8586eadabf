"""What one kind of replication (dbperf/replication/kind.py) allows in an experiment's `[replication]` section: the
worker counts, modes and commit waits it measures and their defaults, its durability variants, its studies and the
target settings its lab sets itself (SectionRules), plus the list parsers its module and replication_section.py
share. One module per kind (binlog_rules.py, streaming_rules.py), listed in replication_section.KINDS by the name an
engine's descriptor gives (`Engine.replication`); the section's own keys are declared in dbperf/experiment/keys.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dbperf.errors import UserError


@dataclass(frozen=True)
class ApplyKeys:
    """The apply study's sweep as one kind reads it from the section."""
    workers: tuple[int, ...]
    modes: tuple[str, ...]
    commit_wait_counts: tuple[int, ...]
    commit_wait_usec: int


@dataclass(frozen=True)
class SectionRules:
    name: str  # the kind's name, as engines' descriptors give it
    durability: tuple[str, ...]  # the variants `durability` may list, in order (all of them by default)
    # The section's apply keys for this kind: `raw` the section, `values` its checked scalar keys (keys.checked),
    # `where` for messages; a UserError for what this kind does not have.
    apply_keys: Callable[[dict[str, Any], dict[str, Any], str], ApplyKeys]
    lab_settings: frozenset[str]  # set by the lab on the primary or the replicas: refused in the target's config
    refused_studies: dict[str, str] = field(default_factory=dict)  # study -> why this kind does not run it
    # The kind's rules on an engine whose servers name things otherwise (MySQL's binlog replicas), by the engine's
    # name; the kind's other engines take these.
    by_engine: Mapping[str, SectionRules] = field(default_factory=dict)

    def of_engine(self, engine: str) -> SectionRules:
        return self.by_engine.get(engine, self)


def names(raw: dict[str, Any], key: str, choices: tuple[str, ...], default: tuple[str, ...],
          where: str) -> tuple[str, ...]:
    value = raw.get(key, list(default))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise UserError(f"{where}.{key}: expected a non-empty list of {', '.join(choices)}")
    for v in value:
        if v not in choices:
            raise UserError(f"{where}.{key}: unknown {v!r} (known: {', '.join(choices)})")
    if len(set(value)) != len(value):
        raise UserError(f"{where}.{key}: {next(v for v in value if value.count(v) > 1)!r} is listed twice")
    return tuple(value)


def integers(raw: dict[str, Any], key: str, default: tuple[int, ...], where: str, maximum: int) -> tuple[int, ...]:
    value = raw.get(key, list(default))
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if (not isinstance(value, list) or not value
            or any(isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= maximum for v in value)):
        raise UserError(f"{where}.{key}: expected an integer from 0 to {maximum} or a non-empty list of them, "
                        f"got {value!r}")
    if len(set(value)) != len(value):
        raise UserError(f"{where}.{key}: {next(v for v in value if value.count(v) > 1)} is listed twice")
    return tuple(value)
