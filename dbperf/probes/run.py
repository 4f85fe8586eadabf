"""Running probe families and turning their samples into figures: per operation, median of the repeats with min
and max, in ns and in TSC ticks."""

from __future__ import annotations

import json
import os
import platform
import statistics
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from dbperf.buildlab.debian_source import Announce
from dbperf.errors import UserError
from dbperf.probes.build import probe_binary
from dbperf.probes.catalog import DEFAULT, FAMILIES, ProbeFamily
from dbperf.probes.host import cpu_metadata
from dbperf.probes.server_code import RELEASES, extracted
from dbperf.probes.server_source import NotServed
from dbperf.tools import run_tool

# Extra fields that tell figures apart (the others are measurements, reduced to their median).
IDENTITY = ("x", "multiplier", "offset", "flag_offset", "n", "pair", "threads")
MIN_REPEATS = 5
TIMEOUT_S = 1200


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def aggregate(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Groups samples by (group, name, identity extras) in first-seen order; per-op ns and ticks summarised."""
    grouped: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for s in samples:
        key = (s["group"], s["name"], *((k, s[k]) for k in IDENTITY if k in s))
        grouped[key].append(s)
    figures = []
    for (group, name, *ident), runs in grouped.items():
        measured = {k for r in runs for k in r} - {"group", "name", "repeat", "ops", "ns", "ticks", *IDENTITY}
        figures.append({
            "group": group, "name": name, **dict(ident), "repeats": len(runs), "ops": runs[0]["ops"],
            "ns_per_op": _spread([r["ns"] / r["ops"] for r in runs]),
            "ticks_per_op": _spread([r["ticks"] / r["ops"] for r in runs]),
            **{k: statistics.median(r[k] for r in runs) for k in sorted(measured)},
        })
    return figures


def _run_binary(family: ProbeFamily, repeats: int, scale: float) -> list[dict[str, Any]]:
    exe, _ = probe_binary(family)
    proc = run_tool([exe, str(repeats), repr(scale)], f"probe {family.name}", timeout=TIMEOUT_S)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def skip_reason(family: ProbeFamily) -> str | None:
    if family.x86_only and platform.machine() not in ("x86_64", "i686", "i386", "AMD64"):
        return f"x86-only probe, this host is {platform.machine()}"
    if (os.cpu_count() or 1) < family.needs_cpus:
        return f"needs {family.needs_cpus} CPUs, this host has {os.cpu_count()}"
    return None


def tsc_ghz(repeats: int, scale: float) -> dict[str, float] | None:
    """TSC ticks per ns, calibrated against CLOCK_MONOTONIC."""
    if platform.machine() not in ("x86_64", "i686", "i386"):
        return None
    exe, _ = probe_binary(ProbeFamily("tsc", "tsc.c", "calibration"))
    proc = run_tool([exe, str(repeats), repr(min(scale, 1.0))], "TSC calibration probe", timeout=TIMEOUT_S)
    samples = [json.loads(line) for line in proc.stdout.splitlines()]
    return _spread([s["ticks"] / s["ns"] for s in samples])


def run_probes(names: list[str], repeats: int = MIN_REPEATS, scale: float = 1.0, on_family=None,
               announce: Announce | None = None) -> dict[str, Any]:
    """The families' figures; `on_family` told as each starts, `announce` before a server's source is downloaded."""
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise UserError(f"unknown probe {unknown[0]!r} (known: {', '.join(FAMILIES)})")
    if repeats < 1:
        raise UserError("--repeats must be at least 1")
    result: dict[str, Any] = {
        "dbperf_probes": 1,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": cpu_metadata(),
        "repeats": repeats,
        "scale": scale,
        "tsc_ghz": tsc_ghz(repeats, scale),
        "families": {},
    }
    for name in names or DEFAULT:
        family = FAMILIES[name]
        if on_family:
            on_family(family)
        reason = skip_reason(family)
        if reason:
            result["families"][name] = {"skipped": reason}
            continue
        result["families"][name] = _family(family, repeats, scale, result["host"]["shape"], announce)
    return result


def _family(family: ProbeFamily, repeats: int, scale: float, shape: dict[str, Any],
            announce: Announce | None = None) -> dict[str, Any]:
    """A family's figures; a server family's source with them, or (its release served by no registry) why not,
    also kept in the host's shape: a figure requiring that release is then not reproducible here."""
    source: dict[str, Any] = {}
    if family.server:
        try:
            source = {"server_source": extracted(RELEASES[family.server], announce)[1]}
        except NotServed as e:
            shape["unserved"][family.server] = str(e)
            return {"skipped": f"the {family.server} release is served by no registry here: {e}"}
    _, cmd = probe_binary(family)
    return {"compile": cmd, **source, "figures": aggregate(_run_binary(family, repeats, scale))}
