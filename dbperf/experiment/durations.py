"""Durations as people write them in experiment files: "10s", "500ms", "2m", or a number of seconds."""

from __future__ import annotations

import re

from dbperf.errors import UserError

UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
MAX_SECONDS = 7 * 86400.0
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m|h)?\s*$")


def parse_duration(value: object, where: str) -> float:
    """Seconds, or a UserError naming `where`."""
    if isinstance(value, bool):
        raise UserError(f"{where}: cannot parse duration {value!r} (write e.g. \"10s\", \"500ms\", \"2m\")")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and (m := DURATION.match(value)):
        seconds = float(m.group(1)) * UNITS[m.group(2) or "s"]
    else:
        raise UserError(f"{where}: cannot parse duration {value!r} (write e.g. \"10s\", \"500ms\", \"2m\")")
    if seconds < 0:
        raise UserError(f"{where}: duration must not be negative")
    if seconds > MAX_SECONDS:
        # Per cell: beyond this the timeouts derived from it overflow, and it is a typo anyway.
        raise UserError(f"{where}: {value!r} is longer than a week per cell")
    return seconds
