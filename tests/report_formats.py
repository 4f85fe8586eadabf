"""The run report in one format, as `dbperf report` writes it (the run view through the format registry), for tests
that check what a format says of a matrix."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from dbperf.report import formats
from dbperf.report.run_view import run_view
from dbperf.run_meta import RunMeta
from dbperf.stats.rqps_matrix import Matrix


def render_table(m: Matrix, meta: RunMeta, console: Console, verbose: bool = False) -> None:
    formats.draw(run_view(m, meta, verbose=verbose), console)


def to_markdown(m: Matrix, meta: RunMeta) -> str:
    return formats.render(run_view(m, meta), "markdown")


def to_csv(m: Matrix, meta: RunMeta) -> str:
    return formats.render(run_view(m, meta), "csv")


def to_json(m: Matrix, meta: RunMeta, skipped: list[dict[str, Any]] | None = None) -> str:
    return formats.render(run_view(m, meta, skipped), "json")
