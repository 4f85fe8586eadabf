"""What a `dbperf bisect` is asked (its range of releases, its threshold, every step's settings), checked before
anything is fetched or started: each refusal one line naming the option."""

from __future__ import annotations

import contextlib

from dbperf.buildlab.server_releases import SOURCES, release_name, resolve_version, version_key
from dbperf.catalog.registry import builtin
from dbperf.engines.lab_owned import lab_owned_refusal
from dbperf.errors import UserError
from dbperf.experiment.keys import RUN_ORDERS, fraction
from dbperf.experiment.spec import server_settings
from dbperf.servers.setting_names import unknown_setting
from dbperf.storage.bisect_path import StepSettings


def release_range(engine: str, first: str, last: str, published: list[str]) -> list[str]:
    """The published releases from `first` to `last` (both included), oldest first, one per release (the newest
    rebuild of each), as a user names them (PostgreSQL's 16.4.0 is 16.4). Unknown versions and a reversed range
    are a UserError."""
    if engine not in SOURCES:
        raise UserError(f"bisect: engine {engine!r} has no released binaries (known: {', '.join(sorted(SOURCES))})")
    lo = resolve_version(engine, first, published)
    hi = resolve_version(engine, last, published)
    if version_key(lo) > version_key(hi):
        raise UserError(f"bisect: reversed range: {first} ({release_name(engine, lo)}) is newer than {last} "
                        f"({release_name(engine, hi)}); give the older version first")
    newest: dict[str, str] = {}
    for p in published:
        if version_key(lo) <= version_key(p) <= version_key(hi):
            name = release_name(engine, p)
            if name not in newest or version_key(p) > version_key(newest[name]):
                newest[name] = p
    ordered = sorted(newest, key=lambda n: version_key(newest[n]))
    if len(ordered) < 2:
        raise UserError(f"bisect: {first}..{last} holds one release ({ordered[0]}): nothing to bisect")
    return ordered


def parse_threshold(value: str) -> float:
    """`--threshold 5%` or 0.05: the smallest slowdown a step calls slower (the experiment's min_effect)."""
    number: object = value
    if not value.strip().endswith("%"):
        with contextlib.suppress(ValueError):  # else said by fraction(), with the expected form
            number = float(value)
    return fraction(number, "--threshold")


def check_step_options(s: StepSettings) -> None:
    """What every step's run takes, whatever the candidates are (releases, a tree's commits): one line each."""
    if s.benchmark not in builtin():
        raise UserError(f"--benchmark: {s.benchmark!r} is not a catalog benchmark (`dbperf list` lists them)")
    for name, value in (("--time", s.time_s), ("--budget", s.budget_s)):
        if not value > 0:
            raise UserError(f"{name}: expected a positive duration, got {value}")
    if s.threads < 1:
        raise UserError(f"--threads: expected at least 1, got {s.threads}")
    if s.table_size < 1:
        raise UserError(f"--table-size: expected at least 1, got {s.table_size}")
    if s.order is not None and s.order not in RUN_ORDERS:
        raise UserError(f"--order: expected one of {', '.join(RUN_ORDERS)}, got {s.order!r}")


def check_settings(s: StepSettings) -> None:
    """Every step's settings of a bisect of a server's releases, each refusal one line naming its option."""
    if s.engine not in SOURCES:
        raise UserError(f"bisect: engine {s.engine!r} has no released binaries (known: {', '.join(sorted(SOURCES))})")
    check_server_settings(s)


def check_server_settings(s: StepSettings) -> None:
    """Every step's settings of a server, whatever its candidates are (releases, a tree's commits)."""
    check_step_options(s)
    for key in s.config:  # with the remedy that fits a bisect (no target to set a port or a dsn on)
        refusal = lab_owned_refusal(s.engine, key, "bisect", bisect=True)
        if refusal:
            raise UserError(refusal)
    server_settings(s.config, s.engine, "bisect")  # checked before the first release is fetched


def check_config_names(settings: StepSettings, versions: list[str]) -> None:
    """Each --config name against the server's own list, where a binary of the range is at hand
    (servers/setting_names.py): before any release is fetched or server started."""
    refusal = unknown_setting(settings.engine, settings.config, versions, "bisect --config")
    if refusal:
        raise UserError(refusal)
