"""The CLI as a subprocess with studies of a test's own: `python -m dbperf.cli` with dbperf/studies/data/ replaced by
a directory the test wrote, so that a study of one cheap step (a layout check of a binary that does not exist fails
at once) goes through `dbperf study ...` for real without servers or compilers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

RUN_WITH_STUDIES = ("import runpy, sys; from pathlib import Path; import dbperf.studies.model as model; "
                    "model.STUDY_DIR = Path(sys.argv[1]); sys.argv = ['dbperf', *sys.argv[2:]]; "
                    "runpy.run_module('dbperf.cli', run_name='__main__')")

# A study whose one step fails at once (no binary to check): what a study run writes, in a second.
TINY = """
name = "tiny"
title = "one cheap step"
sources = ['Daniel Black, "MySQL bug #97777: separate global variables (from hot variables) using linker script \
(ELF)" (2019-11-26)']
duration = "a second"
description = "a layout check of a binary that is not there"

[[step]]
name = "static"
kind = "layout"
binary = "/nonexistent/mariadbd"

[[figure]]
what = "lines"
section = "§6"
published = "found by readelf"
measure = { from = "json", step = "static", path = "static_candidate_lines" }
"""


def write_studies(directory: Path, **studies: str) -> Path:
    """A studies directory holding each study's TOML by its name (default: the tiny study)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in (studies or {"tiny": TINY}).items():
        (directory / f"{name}.toml").write_text(text)
    return directory


def study_cli(studies: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`dbperf ARGS` with the studies of `studies`; a wide terminal, so that a table cell is one line."""
    return subprocess.run([sys.executable, "-c", RUN_WITH_STUDIES, str(studies), *args], capture_output=True,
                          text=True, cwd=REPO, timeout=timeout, env={**os.environ, "COLUMNS": "400"})
