"""`dbperf compare`: the same target(s) from two runs side by side (usecases/compare.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dbperf.cli.common import FORCE_OPTION, FORMAT_OPTION, OUTPUT_OPTION, show
from dbperf.usecases.compare import compare as compare_runs


def compare(
    dir_a: Annotated[Path, typer.Argument(help="results directory A (the reference)")],
    dir_b: Annotated[Path, typer.Argument(help="results directory B")],
    target: Annotated[Optional[list[str]], typer.Option(help="target(s) to compare (default: every target "
                                                             "name both runs have)")] = None,
    format: Annotated[str, FORMAT_OPTION] = "table",
    aggregate: Annotated[Optional[str], typer.Option(help="median or trimmed (default: A's)")] = None,
    output: Annotated[Optional[str], OUTPUT_OPTION] = None,
    force: Annotated[bool, FORCE_OPTION] = False,
) -> None:
    """The same target(s) from two runs (two hosts, two days) side by side, with the same verdict rules."""
    show(compare_runs(dir_a, dir_b, target, format, aggregate), format, output, force)
