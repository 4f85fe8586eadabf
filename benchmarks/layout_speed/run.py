"""benchmarks/layout_speed: the two speed targets of `dbperf layout` (issue 15).

1. The static map (symbols, DWARF, disassembly of the stores) of Debian's stripped /usr/sbin/mariadbd: target
   under 10 s.
2. The simulated dynamic count (lackey) of a 1-second point-query cell on the lab's SQLite -O2 build, 2 threads:
   target under 2 minutes. Timed from the start of the count to the findings, data loading included (the build is
   done, or taken from the cache, before the clock starts).

Prints each measured time, its target and measured/target; the last line is `ratio <x>`, the larger (worse) of
the two. Wall-clock times on whatever machine runs it: on a shared, loaded machine they are upper bounds. A
benchmark, not a test: it asserts nothing.

Usage: .venv/bin/python benchmarks/layout_speed/run.py [--binary /usr/sbin/mariadbd] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console

from dbperf.layout.lab import count_target, lab_target
from dbperf.layout.static_map import static_map

STATIC_TARGET_S = 10.0
DYNAMIC_TARGET_S = 120.0
EXPERIMENT = """
[run]
benchmarks = ["point-query"]
table_size = 10000
time = "1s"
warmup = "0s"
threads = [2]

[[target]]
name = "O2"
source = "sqlite@3.54.1"
build = ["O2"]
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default="/usr/sbin/mariadbd")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    console = Console(stderr=True)
    static_s = []
    for _ in range(args.repeats):
        started = time.monotonic()
        m = static_map(Path(args.binary))
        static_s.append(time.monotonic() - started)
    s = statistics.median(static_s)
    print(f"static map of {args.binary}: {len(m.objects)} objects from {m.symbol_table}, median {s:.2f} s of "
          f"{args.repeats} ({min(static_s):.2f}–{max(static_s):.2f}); target {STATIC_TARGET_S:.0f} s, "
          f"ratio {s / STATIC_TARGET_S:.3f}")
    with tempfile.TemporaryDirectory(prefix="dbperf-layout-speed-") as tmp:
        path = Path(tmp) / "exp.toml"
        path.write_text(EXPERIMENT)
        exp, target = lab_target(path, "O2", console)  # builds (or finds in the cache) before the clock starts
        started = time.monotonic()
        _, counts, found, _ = count_target(exp, target, "point-query", Path(target.library), None, "simulated",
                                           console)
        d = time.monotonic() - started
    print(f"dynamic count of a 1-second point-query cell (2 threads, lackey): {d:.1f} s, of which valgrind "
          f"{counts.seconds:.1f} s, {counts.records:,} loads/stores traced, {len(found)} findings; target "
          f"{DYNAMIC_TARGET_S:.0f} s, ratio {d / DYNAMIC_TARGET_S:.3f}")
    print(f"machine load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"ratio {max(s / STATIC_TARGET_S, d / DYNAMIC_TARGET_S):.3f}")


if __name__ == "__main__":
    main()
