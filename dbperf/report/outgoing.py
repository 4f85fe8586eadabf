"""A report view on its way out: the View (built when first drawn or written), the notes said on stderr before it,
and the lines of results.jsonl it skipped, said after it. The use cases return one (usecases/report.py); the CLI
sends it out (cli/common.show), and draw_report draws it on consoles it is handed (layout --fix's A/B, inside a
command that prints its own lines)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from dbperf.report import formats
from dbperf.report.model import View
from dbperf.storage.results import SkippedLine, results_path


@dataclass
class ReportView:
    """A view on its way out: `view()` builds it (when first drawn or written, so that notes are said before a view
    that fails), `notes` are said on stderr before it (a lab that died), `skipped` after it."""
    view: Callable[[], View]
    notes: list[str] = field(default_factory=list)
    directory: Path | None = None
    skipped: list[SkippedLine] = field(default_factory=list)  # lines of results.jsonl not used: said after it
    after: list[str] = field(default_factory=list)  # more notes said after it (a comparison's runs' skipped lines)


def ready(view: View) -> ReportView:
    """A view built already; the notes it carries for stderr (View.stderr_after) are said after it."""
    return ReportView(lambda: view, after=list(view.stderr_after))


def skipped_note(view: ReportView) -> str | None:
    """Lines of results.jsonl that were not used are said, never dropped without a word (on stderr, so that
    markdown, CSV and JSON on stdout stay parseable; JSON also carries them as `skipped_lines`): one line per
    results file, the report's and each compared run's in the same words."""
    lines = [*([skipped_lines_note(view.directory, view.skipped)] if view.directory is not None else []),
             *view.after]
    said = "\n".join(line for line in lines if line)
    return said or None


def skipped_lines_note(directory: Path, skipped: list[SkippedLine]) -> str | None:
    """The note for the lines of one results directory's results.jsonl that were skipped, or None."""
    if not skipped:
        return None
    return f"dbperf: note: {results_path(directory)}: {len(skipped)} line(s) skipped ({which_lines(skipped)})"


def which_lines(skipped: list[SkippedLine]) -> str:
    """The first skipped lines and why, for a note."""
    return ", ".join(f"line {s.line}: {s.reason}" for s in skipped[:5]) + (", ..." if len(skipped) > 5 else "")


def draw_report(view: ReportView, out: Console, err: Console) -> None:
    """A report on the terminal `out` with its notes on `err`, as after a run."""
    for note in view.notes:
        err.print(note, markup=False, highlight=False)
    formats.draw(view.view(), out)
    skipped = skipped_note(view)
    if skipped:
        err.print(skipped, markup=False, highlight=False)
