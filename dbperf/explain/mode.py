"""Which counters this machine can give: `hardware` when perf can count cycles and instructions, else `simulated`.
The decision and its reason are always reported; there is no silent fallback."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class CounterMode:
    mode: str  # "hardware" or "simulated"
    reason: str


@cache
def detect_mode() -> CounterMode:
    perf = shutil.which("perf")
    if perf is None:
        return CounterMode("simulated", "perf is not installed (apt install linux-perf)")
    proc = subprocess.run([perf, "stat", "-x,", "-e", "cycles,instructions", "true"], capture_output=True,
                          text=True, timeout=60)
    out = proc.stderr + proc.stdout
    if proc.returncode != 0 or "<not supported>" in out or "not supported" in out.lower():
        first = next((line for line in out.splitlines() if "not supported" in line.lower()), out.strip()[:120])
        return CounterMode("simulated", f"perf cannot count cycles and instructions here ({first.strip()})")
    if "<not counted>" in out:
        return CounterMode("simulated", "perf reports cycles/instructions as <not counted>")
    return CounterMode("hardware", "perf counts cycles and instructions on this CPU")
