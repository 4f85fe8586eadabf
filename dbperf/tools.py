"""Running an external tool (perf, valgrind, cargo, a compiler, a probe) whose failure is the user's to fix: a
non-zero exit, a missing binary or a time-out is one line naming what was being done, the command and its last lines
of output, never a traceback."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dbperf.errors import UserError

TAIL_LINES = 4


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


def run_tool(argv: Sequence[str | Path], what: str, timeout: float | None = None,
             explain: Callable[[str], str | None] | None = None, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """`subprocess.run` with output captured as text; returns only when the tool succeeded. `explain`: why it
    failed, read from its whole output (stderr, then stdout), when the tail would not say it."""
    args = [str(a) for a in argv]
    # One line, and short: arguments can be scripts or long paths.
    command = " ".join(shlex.join(args[:4]).split())[:120] + (" ..." if len(args) > 4 else "")
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)
    except FileNotFoundError:
        raise UserError(f"{what}: {args[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise UserError(f"{what}: `{command}` did not finish within {timeout:.0f} s") from None
    except OSError as e:
        raise UserError(f"{what}: cannot run {args[0]}: {e.strerror}") from None
    if proc.returncode != 0:
        said = (explain and explain(proc.stderr + proc.stdout)) or tail(proc.stderr) or tail(proc.stdout) or "no output"
        how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
        raise UserError(f"{what} failed (`{command}`, {how}): {said}")
    return proc
