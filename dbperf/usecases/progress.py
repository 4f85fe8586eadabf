"""The lab's progress output: stderr, so that the reports on stdout stay parseable."""

from __future__ import annotations

import sys

from rich.console import Console

# Not wrapped at 80 columns when not a terminal (a log file, a pipe): a line said is a line read.
PROGRESS = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


def say(text: str, err: Console = PROGRESS) -> None:
    # soft_wrap: a line longer than the console (a long path in a warning) stays one line, in a log as on a terminal
    err.print(text, markup=False, highlight=False, soft_wrap=True)
