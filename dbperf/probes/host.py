"""What a probe result must say about the CPU: model, microcode, cores, caches, virtualisation, TSC flags."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

from dbperf.explain.mode import detect_mode
from dbperf.host.compiler import find_compiler
from dbperf.host.facts import cpu_id, cpu_model, cpuinfo_field, virtualised
from dbperf.host.topology import HostShape, this_host


def _caches() -> list[dict[str, str]]:
    out = []
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            out.append({k: (index / k).read_text().strip() for k in ("level", "type", "size",
                                                                       "coherency_line_size")})
        except OSError:
            continue
    return out


def host_shape() -> HostShape:
    """vCPUs, cores and whether perf counts cycles here: what a figure's `requires` is checked against."""
    counters = detect_mode()
    return this_host(counters.mode == "hardware", counters.reason)


def cpu_metadata() -> dict[str, Any]:
    flags = set((cpuinfo_field("flags") or "").split())
    return {
        "model": cpu_model(),
        "cpu_id": cpu_id(),
        "microcode": cpuinfo_field("microcode"),
        "cores": os.cpu_count(),
        "machine": platform.machine(),
        "kernel": platform.release(),
        "hostname": platform.node(),
        "virtualised": virtualised(),
        "caches": _caches(),
        "tsc": {"constant_tsc": "constant_tsc" in flags, "nonstop_tsc": "nonstop_tsc" in flags,
                "invariant": "constant_tsc" in flags and "nonstop_tsc" in flags},
        "compiler": find_compiler().version,
        "shape": host_shape().to_json(),
    }
