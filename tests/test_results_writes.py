"""What the results writer says when it cannot write (issue 45): on a file system that has gone read-only (ext4's
errors=remount-ro mid-run) a failed meta.json is one ResultsWriteError naming the file, not the OSError of removing
a temporary file that is not there (unlink is EROFS there too). No CLI path reaches it without running an engine,
so the writer is driven directly; a real read-only tmpfs needs root, as the lab's server targets do."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbperf.run_meta import run_meta
from dbperf.storage.results import ResultsWriteError, ResultsWriter

pytestmark = pytest.mark.unit

META = {"dbperf_results": 1, "status": "running", "base": "a", "targets": [{"name": "a"}], "benchmarks": []}


@contextlib.contextmanager
def read_only_tmpfs(where: Path) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_meta_json_on_a_file_system_gone_read_only_is_one_error_naming_it(tmp_path):
    with read_only_tmpfs(tmp_path / "ro") as ro:
        # A writer whose directory went read-only after it was claimed (the claim itself cannot be taken there).
        writer = ResultsWriter.__new__(ResultsWriter)
        writer.directory = ro
        with pytest.raises(ResultsWriteError) as err:
            writer.update_meta(run_meta(META))
        assert str(err.value) == f"{ro / 'meta.json.tmp'}: cannot write: Read-only file system"
