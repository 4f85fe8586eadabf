"""Durations as people write them in experiment files and on the command line: "10s", "500ms", "2m", or a number of
seconds. The one parser for every duration and timeout the lab takes (experiment keys, `dbperf worker
--join-timeout`, ...): a negative, malformed or non-finite value is one line naming where it came from."""

from __future__ import annotations

import math
import re

from dbperf.errors import UserError

UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
MAX_SECONDS = 7 * 86400.0
# A sign is accepted by the pattern only so that "-5s" is refused as negative rather than as unreadable.
# ASCII: \d would take other scripts' digits ("２０ms"), which float() reads but no other tool the lab drives does.
DURATION = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*(ms|s|min|m|h)?\s*$", re.ASCII)
EXAMPLES = "write e.g. \"10s\", \"500ms\", \"2m\""


def _spelled(seconds: float) -> str:
    for unit, size in (("week", 7 * 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size and seconds % size == 0:
            n = seconds / size
            return f"a {unit}" if unit == "week" and n == 1 else f"{n:g} {unit}"
    return f"{seconds:g} s"


def parse_duration(value: object, where: str, *, positive: bool = False, maximum: float = MAX_SECONDS,
                   per: str = "") -> float:
    """Seconds, or a UserError naming `where`. `positive`: 0 is refused too. The default maximum (a week): beyond
    it the timeouts derived from it overflow, and it is a typo anyway; `per` says what the limit is counted on, in
    the caller's terms ("per cell" for a cell's time and warm-up)."""
    if isinstance(value, str) and not value.isascii():
        raise UserError(f"{where}: {value!r}: write durations in ASCII digits and units ({EXAMPLES})")
    if isinstance(value, bool):
        raise UserError(f"{where}: cannot parse duration {value!r} ({EXAMPLES})")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and (m := DURATION.match(value)):
        seconds = float(m.group(1)) * UNITS[m.group(2) or "s"] + 0.0  # + 0.0: "-0" is 0, not -0.0
    else:
        raise UserError(f"{where}: cannot parse duration {value!r} ({EXAMPLES})")
    if not math.isfinite(seconds):  # TOML has nan and inf; nan passes every comparison below
        raise UserError(f"{where}: {value!r} is not a finite number of seconds")
    if seconds < 0:
        raise UserError(f"{where}: duration must not be negative, got {value!r}")
    if positive and seconds == 0:
        raise UserError(f"{where}: must be longer than 0, got {value!r}")
    if seconds > maximum:
        raise UserError(f"{where}: {value!r} is longer than {_spelled(maximum)}{' ' + per if per else ''}")
    return seconds
