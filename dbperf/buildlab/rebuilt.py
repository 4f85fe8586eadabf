"""How many objects a build in a kept build tree compiled (its manifest's `objects_rebuilt`), read from what the
build tool leaves: make's own lines (one per command it runs), ninja's log (.ninja_log: one entry per output it
wrote, with the output's mtime); and the digest of the objects a tree holds, which a relink compares with its
base's."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

OBJECT_SUFFIXES = (".o", ".obj")


def compiles_in(output: str, is_step: Callable[[str], bool]) -> int:
    """The compiler invocations among a build's lines (`is_step`: the recipe's test of one line)."""
    return sum(1 for line in output.splitlines() if is_step(line))


def ninja_entries(log: str) -> Iterator[tuple[int, int, int, str]]:
    """A .ninja_log's entries (format v5: start and end in ms since its ninja started, mtime in ns, output, command
    hash; tab-separated) in the order written, as (start, end, mtime, output); its header and torn lines skipped."""
    for line in log.splitlines():
        fields = line.split("\t")
        if not line.startswith("#") and len(fields) == 5 and all(f.isdigit() for f in fields[:3]):
            yield int(fields[0]), int(fields[1]), int(fields[2]), fields[3]


def ninja_rebuilt(log: str, since_ns: int) -> int:
    """The objects a .ninja_log lists as written at or after `since_ns`: each output counted once, by its last entry
    (ninja appends an entry each time it runs a command, and compacts the log now and then, so positions in it say
    nothing)."""
    last = {output: mtime for _, _, mtime, output in ninja_entries(log)}
    return sum(1 for output, mtime in last.items() if output.endswith(OBJECT_SUFFIXES) and mtime >= since_ns)


def objects_digest(root: Path) -> dict[str, Any]:
    """The object files under `root` (a kept tree's build folder) and one sha256 over them all (each file's path
    relative to `root` and content digest, in path order): equal digests, the same objects. What a relink compares
    with its base's (server_build.py)."""
    total = hashlib.sha256()
    count = 0
    for path in sorted(p for p in root.rglob("*") if p.suffix in OBJECT_SUFFIXES and p.is_file()):
        total.update(f"{path.relative_to(root)}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
        count += 1
    return {"count": count, "sha256": total.hexdigest()}
