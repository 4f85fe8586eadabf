"""What a format is: a name (`--format NAME`), a file extension, and either a document (`render`: the view as text,
for stdout or `-o FILE`) or a drawing on a terminal (`draw`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console

from dbperf.report.model import View


@dataclass(frozen=True)
class Format:
    name: str
    extension: str
    render: Callable[[View], str] | None = None
    draw: Callable[[View, Console], None] | None = None
