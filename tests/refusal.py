"""What every refusal of the CLI looks like: one line on stderr (`dbperf: error: ...`), a non-zero exit code of its
own, no traceback, and nothing created where the results would have gone."""

from __future__ import annotations

import subprocess
from pathlib import Path


def assert_refused(proc: subprocess.CompletedProcess[str], code: int, says: str, out: Path | None = None) -> str:
    """`proc` refused in one line that holds `says`, with exit `code`; `out` (its --out folder), when given, was not
    created. Returns the line."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("dbperf: error: ") and says in lines[0], lines[0]
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    if out is not None:
        assert not out.exists(), f"{out} was created: {sorted(p.name for p in out.iterdir())}"
    return lines[0]
