"""How many objects a build in a kept build tree compiled (its manifest's `objects_rebuilt`), read from what the
build tool leaves: make's own lines (one per command it runs), ninja's log (.ninja_log: one entry per output it
wrote, with the output's mtime)."""

from __future__ import annotations

from collections.abc import Callable

OBJECT_SUFFIXES = (".o", ".obj")


def compiles_in(output: str, is_step: Callable[[str], bool]) -> int:
    """The compiler invocations among a build's lines (`is_step`: the recipe's test of one line)."""
    return sum(1 for line in output.splitlines() if is_step(line))


def ninja_rebuilt(log: str, since_ns: int) -> int:
    """The objects a .ninja_log (format v5: start, end, mtime in ns, output, command hash; tab-separated) lists as
    written at or after `since_ns`: each output counted once, by its last entry (ninja appends an entry each time it
    runs a command, and compacts the log now and then, so positions in it say nothing)."""
    last: dict[str, int] = {}
    for line in log.splitlines():
        fields = line.split("\t")
        if line.startswith("#") or len(fields) != 5 or not fields[2].isdigit():
            continue
        last[fields[3]] = int(fields[2])
    return sum(1 for output, mtime in last.items() if output.endswith(OBJECT_SUFFIXES) and mtime >= since_ns)
