"""`dbperf layout`: read-mostly globals sharing a cache line with written ones (dbperf/layout/)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dbperf.cli.common import err_console, out_console
from dbperf.layout.command import layout_command
from dbperf.output_file import output_path


def layout(
    binary: Annotated[Optional[Path], typer.Argument(help="ELF executable or shared library to check")] = None,
    run: Annotated[Optional[str], typer.Option("--run", help="run BINARY with these arguments under the dynamic "
                                                              "count")] = None,
    experiment: Annotated[Optional[Path], typer.Option(help="drive this experiment's target engine ...")] = None,
    target: Annotated[Optional[str], typer.Option(help="... this target (its SQLite library, or a MariaDB "
                                                       "or MySQL target's server, is checked) ...")] = None,
    benchmark: Annotated[Optional[str], typer.Option(help="... with this catalog benchmark")] = None,
    line: Annotated[Optional[int], typer.Option(help="cache line bytes, 64 or 128 (default: from the ELF "
                                                     "machine)")] = None,
    json_file: Annotated[Optional[str], typer.Option("--json", help="write the map and findings as JSON")] = None,
    fix: Annotated[bool, typer.Option("--fix", help="relink with the remedy (the A/B's base: the target built "
                                                    "with -fdata-sections), recheck, and A/B the workload")] = False,
    demo: Annotated[bool, typer.Option("--demo", help="check the repo's demo program (the pattern of MySQL "
                                                      "bug #97777 and decoys)")] = False,
    mode: Annotated[str, typer.Option(help="auto, simulated or hardware (perf mem)")] = "auto",
    lib: Annotated[Optional[list[Path]], typer.Option("--lib", help="also check this shared library of BINARY "
                                                                     "(repeatable)")] = None,
    force: Annotated[bool, typer.Option("--force", help="replace the --json file if it exists")] = False,
    trace_seconds: Annotated[Optional[str], typer.Option(help="trace the workload this long, then stop it and "
                                                              "analyse the counts so far (90, 90s, 2m; default "
                                                              "60 s)")] = None,
    trace_accesses: Annotated[Optional[str], typer.Option(help="... or until this many memory accesses are "
                                                               "traced (5000000, 5M)")] = None,
) -> None:
    """Find read-mostly globals sharing a cache line with written ones, propose the fix, and prove it."""
    # The rules of every output file (output_file.py), checked before the analysis.
    json_path = None if json_file is None else output_path(json_file, force, "layout.json", "--json")

    code = layout_command(binary, run, experiment, target, benchmark, line, json_path, fix, demo, mode, out_console,
                          err_console, lib, trace_seconds, trace_accesses)
    if code:
        raise typer.Exit(code)
