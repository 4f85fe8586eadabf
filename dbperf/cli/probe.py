"""`dbperf probe`: what barriers, mutexes, PAUSE, PRNGs, timers and false sharing cost (usecases/probe.py)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Optional

import typer

from dbperf.cli.common import FORMAT_OPTION, OUTPUT_OPTION, check_output, fail, show
from dbperf.probes.catalog import DEFAULT, FAMILIES
from dbperf.report.probe_hosts import probe_hosts_view
from dbperf.report.probe_view import probe_compare_view, probe_view
from dbperf.usecases.probe import load_probes, probe_fleet, probe_here, refuse_held


def probe(
    names: Annotated[Optional[list[str]], typer.Argument(
        help=f"probe families (known: {', '.join(FAMILIES)}; default: {', '.join(DEFAULT)}, those that fetch nothing)")]
    = None,
    json_output: Annotated[bool, typer.Option("--json", help="print the results as JSON (--format json)")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", help="store the results (probes.json) in this directory")]
    = None,
    repeats: Annotated[int, typer.Option(help="repeats per figure (at least 5 for the published tables)")] = 5,
    scale: Annotated[float, typer.Option(help="multiplies every iteration count")] = 1.0,
    compare: Annotated[Optional[list[Path]], typer.Option("--compare", help="two stored result directories")]
    = None,
    fleet: Annotated[bool, typer.Option("--fleet", help="run on every host of a fleet: a table per family, a "
                                                        "column per host")] = False,
    scheduler: Annotated[Optional[str], typer.Option(help="with --fleet: the fleet's scheduler")] = None,
    certs: Annotated[Optional[Path], typer.Option(help="with --fleet: the lab's TLS certificates")] = None,
    local: Annotated[int, typer.Option(help="with --fleet: a local fleet of N workers instead of --scheduler")] = 0,
    force: Annotated[bool, typer.Option("--force", help="replace the probes.json already in --out, or the -o "
                                                        "file")] = False,
    format: Annotated[str, FORMAT_OPTION] = "table",
    output: Annotated[Optional[str], OUTPUT_OPTION] = None,
) -> None:
    """Measure what barriers, mutexes, PAUSE, PRNGs, timers and false sharing cost on this CPU."""
    fmt = "json" if json_output else format
    check_output(fmt, output, force, "probes")
    refuse_held(out, force)
    if not math.isfinite(scale) or scale <= 0:
        fail("--scale must be a positive finite number")
    if fleet:
        results = probe_fleet(names or [], repeats, scale, scheduler, certs, local, out, force)
        show(probe_hosts_view(results), fmt, output, force)
        return
    if compare:
        if len(compare) != 2:
            fail("--compare takes two result directories (--compare DIR1 --compare DIR2)")
        loaded = [load_probes(d) for d in compare]
        show(probe_compare_view(loaded[0], loaded[1], str(compare[0]), str(compare[1])), fmt, output, force)
        return
    result = probe_here(names, repeats, scale, out, force)
    show(probe_view(result), fmt, output, force)
