"""Compile steps by source directory of a configured cmake + ninja build, today's against another's:
`python scripts/compile_steps.py SOURCE BUILD_A/build.ninja [BUILD_B/build.ninja]` (dbperf/buildlab/compile_steps.py;
docs/build-lab.md, MySQL's lean recipe). Prints `directory a [b]` rows, largest first, and the totals."""

from __future__ import annotations

import sys
from pathlib import Path

from dbperf.buildlab.compile_steps import steps_by_directory


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__.splitlines()[1], file=sys.stderr)
        return 2
    source, *ninjas = argv
    counts = [steps_by_directory(Path(n).read_text(), str(Path(source).absolute())) for n in ninjas]
    rows = sorted(set().union(*counts), key=lambda d: (-counts[0][d], d))
    for d in [*rows, "total"]:
        figures = [sum(c.values()) if d == "total" else c[d] for c in counts]
        print(f"{d:48} " + " ".join(f"{f:6d}" for f in figures))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
