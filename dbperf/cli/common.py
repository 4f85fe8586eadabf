"""What every command group shares: the two consoles, the one-line failure, how a report view goes out (terminal,
stdout or -o FILE), and the options several commands take."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import NoReturn

import typer
from rich.console import Console

from dbperf.output_file import output_path, write_file
from dbperf.report import formats
from dbperf.report.model import View
from dbperf.report.outgoing import ReportView, ready, skipped_note
from dbperf.usecases.progress import PROGRESS, say

# Reports are wide; when piped (no terminal width to respect) do not wrap them at 80 columns.
out_console = Console(width=None if sys.stdout.isatty() else 200)
err_console = PROGRESS

OUT_OPTION = typer.Option("--out", help="results directory (default results/NAME-TIME)")
OUTPUT_OPTION = typer.Option("-o", "--output", help="write to this file (or DIR/NAME.EXT for a directory)")
FORCE_OPTION = typer.Option("--force", help="replace the -o file if it exists")
FORMAT_OPTION = typer.Option("--format", help=", ".join(formats.FORMATS))
YES_OPTION = typer.Option("--yes", help="run even if it will take over an hour or more than the free disk")


class StdoutWriteError(OSError):
    """Standard output refused a write (a full disk, an I/O error), told apart from every other OSError so that
    main says it in one line. A closed pipe stays a BrokenPipeError, which ends quietly (`dbperf report R | head`)."""


class _GuardedStdout(io.RawIOBase):
    """Standard output's file descriptor, whose write errors are StdoutWriteErrors."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: bytes) -> int:  # type: ignore[override]  # io's stub takes any buffer
        try:
            return os.write(self._fd, data)
        except (BlockingIOError, BrokenPipeError):
            raise
        except OSError as e:
            raise StdoutWriteError(e.errno, e.strerror) from None


def guard_stdout() -> None:
    """The process's own stdout (not one a test or an embedding program put there) made to raise StdoutWriteError:
    every writer (Rich, Typer's help, a document) goes through it, so main catches them all in one place."""
    old = sys.stdout
    if old is not sys.__stdout__:  # also: guarded already
        return
    if old is None:
        return
    try:
        fd = old.fileno()
    except (OSError, ValueError):  # no file descriptor behind it
        return
    old.flush()
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(_GuardedStdout(fd)), encoding=old.encoding, errors=old.errors,
                                  newline="\n", line_buffering=old.line_buffering)


def stdout_failed(e: OSError) -> None:
    """One line for a write to stdout that failed; stdout then goes to /dev/null, so that what is still buffered
    cannot fail again (a second message, or Python's "Exception ignored" at exit)."""
    if not isinstance(e, BrokenPipeError):  # the reader stopped reading: nothing to say
        err_console.print(f"dbperf: error: cannot write to standard output: {e.strerror or e}", markup=False,
                          highlight=False, soft_wrap=True)
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def flush_stdout(code: int | str | None) -> None:
    """What is still buffered for stdout, written before the exit with `code`, where a failure can still be said
    in one line; a failure makes a zero exit code 1."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (StdoutWriteError, BrokenPipeError) as e:
        stdout_failed(e)
        raise SystemExit(code or 1) from None


def fail(message: str, code: int = 2) -> NoReturn:
    err_console.print(f"dbperf: error: {message}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def show(report: ReportView | View, fmt: str, output: str | None = None, force: bool = False) -> None:
    """Every view goes out here, through the format registry (dbperf/report/formats/): on the terminal (`table`),
    or as a document to stdout or to `-o FILE` (output_file.py's rules; a directory gets VIEW.EXT). Its notes go
    to stderr, before it and, for the lines of results.jsonl it skipped, after it."""
    if isinstance(report, View):
        report = ready(report)
    chosen = formats.format_named(fmt)
    check_output(fmt, output)
    for note in report.notes:
        say(note)
    view = report.view()
    if chosen.draw is not None:
        formats.draw(view, out_console, fmt)
    else:
        write_output(formats.render(view, fmt), output, force, f"{view.name}.{chosen.extension}")
    skipped = skipped_note(report)
    if skipped:
        say(skipped)


def check_output(fmt: str, output: str | None, force: bool = False, stem: str | None = None) -> None:
    """`-o` with a format that only draws on the terminal is refused; with `stem`, the file too, by output_file.py's
    rules (for a command that measures first: refused before, not after)."""
    chosen = formats.format_named(fmt)
    if output is None:
        return
    if chosen.draw is not None:
        documents = ", ".join(name for name, f in formats.FORMATS.items() if f.render is not None)
        fail(f"-o/--output: not with --format {fmt} ({documents} can be written to a file)")
    if stem is not None:
        output_path(output, force, f"{stem}.{chosen.extension}")


def write_output(document: str, output: str | None, force: bool = False, name: str = "report.txt") -> None:
    """A document to stdout, or to a file by output_file.py's rules (no overwrite without --force, never a results
    directory's own files; `name` when the path is a directory)."""
    if output is None:
        sys.stdout.write(document)
        return
    written = write_file(output, document, force, name)
    say(f"dbperf: wrote {written} ({len(document.encode()) / 1e6:.1f} MB)")
