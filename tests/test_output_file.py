"""`-o FILE` (output_file.py's rules), issue 45: only regular files are written (a device, a FIFO or a socket never
becomes one, with or without --force), a symlink is refused (neither it nor its file replaced), every existing file of a
results directory is the run's own, and a destination that cannot be written is one line. Each test reproduced
its defect before the fix."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import DBPERF, REPO, run_cli
from tests.synthetic import write_run


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", ["a", "b"], ["point-query"], 3)


def _refused(done: subprocess.CompletedProcess[str], *words: str, unsaid: tuple[str, ...] = ()) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dbperf: error:"), done.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    for w in unsaid:
        assert w not in lines[0], (w, lines[0])
    return lines[0]


def _sums(*paths: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def _report(results: Path, out: str | Path, *more: str) -> subprocess.CompletedProcess[str]:
    return run_cli("report", str(results), "--format", "csv", "-o", str(out), *more)


@pytest.mark.unit
def test_a_device_a_fifo_or_a_socket_is_never_replaced_and_force_is_not_offered(results, tmp_path):
    # /dev/null itself only without --force (before the fix --force would have replaced the host's /dev/null):
    # the refusal must not invite --force.
    _refused(_report(results, "/dev/null"), "/dev/null", "character device", unsaid=("--force",))
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    held = socket.socket(socket.AF_UNIX)
    sock = tmp_path / "s"
    held.bind(str(sock))
    others = {fifo: "FIFO", sock: "socket"}
    device = tmp_path / "null"
    try:  # a private /dev/null (root, or CAP_MKNOD): --force on a real device, harmless if it were replaced
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        others[device] = "character device"
    except PermissionError:
        pass
    try:
        for path, kind in others.items():
            _refused(_report(results, path, "--force"), kind, "regular file", unsaid=("--force",))
            assert not stat.S_ISREG(os.lstat(path).st_mode), path
    finally:
        held.close()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and stat.S_ISSOCK(os.lstat(sock).st_mode)


@pytest.mark.unit
def test_a_symlink_is_refused_and_neither_it_nor_its_file_is_replaced(results, tmp_path):
    """With --force it wrote through to the file the link names, which the user had not named."""
    mine = tmp_path / "kept" / "report.csv"
    mine.parent.mkdir()
    mine.write_text("my earlier report\n")
    link = tmp_path / "latest.csv"
    link.symlink_to(mine)
    for force in ([], ["--force"]):
        _refused(_report(results, link, *force), f"{link}: a symbolic link to {mine}", "give that file itself",
                 unsaid=("add --force",))
    assert link.is_symlink() and os.readlink(link) == str(mine)
    assert mine.read_text() == "my earlier report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept", "latest.csv", "run"]  # no temporary left behind
    done = _report(results, mine, "--force")  # the file itself, named
    assert done.returncode == 0, done.stderr
    assert mine.read_text().startswith("target,benchmark") and link.is_symlink()


@pytest.mark.unit
def test_a_symlink_to_nothing_in_a_loop_or_through_proc_is_refused(results, tmp_path):
    dangling = tmp_path / "dangling.csv"
    dangling.symlink_to(tmp_path / "nowhere" / "x.csv")
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "pool")
    (tmp_path / "pool").symlink_to(loop)
    for force in ([], ["--force"]):
        _refused(_report(results, dangling, *force), "does not exist", unsaid=("--force",))
    _refused(_report(results, loop, "--force"), "symbolic links")
    # stdout appended to a regular file (`>> mine`): written through, that file would be renamed over, all it held lost
    mine = tmp_path / "stdout.txt"
    mine.write_text("what the user had\n")
    with open(mine, "a") as out:
        done = subprocess.run([*DBPERF, "report", str(results), "--format", "csv", "-o", "/dev/stdout", "--force"],
                              stdout=out, stderr=subprocess.PIPE, text=True, cwd=REPO, timeout=300)
    _refused(done, "/proc")
    assert mine.read_text() == "what the user had\n"
    assert dangling.is_symlink() and loop.is_symlink() and not (tmp_path / "nowhere").exists()


@pytest.mark.unit
def test_every_existing_file_of_a_results_directory_is_the_runs_own(results, tmp_path):
    logs = results / "logs"
    logs.mkdir()
    (logs / "server.log").write_text("the server's log\n")
    own = [results / "experiment.toml", results / "meta.json", results / "results.jsonl", logs / "server.log"]
    before = _sums(*own)
    link = tmp_path / "innocent.toml"
    link.symlink_to(results / "experiment.toml")
    for target in (*own, link):
        _refused(_report(results, target, "--force"), "results directory")
    _refused(run_cli("compare", str(results), str(results), "--format", "json", "-o", str(results / "experiment.toml"),
                     "--force"), "results directory")
    # a new report beside the results is allowed; written again, it is a file of the results directory like any
    done = _report(results, f"{results}/")
    assert done.returncode == 0, done.stderr
    _refused(_report(results, f"{results}/", "--force"), "results directory", "not even with --force")
    _refused(_report(results, results / ".lock"), ".lock")  # the run's own names, even before they exist
    assert not (results / ".lock").exists()
    assert _sums(*own) == before and link.is_symlink()


@pytest.mark.unit
def test_a_destination_that_cannot_be_written_is_one_line(results):
    # /sys refuses new files even to root (EACCES); before the fix the temporary file's creation was a traceback
    _refused(_report(results, "/sys/dbperf-report.csv"), "/sys/dbperf-report.csv", "cannot write")


@pytest.mark.unit
@pytest.mark.skipif(shutil.which("unshare") is None, reason="util-linux's unshare makes a read-only mount")
def test_a_read_only_file_system_is_one_line(results, tmp_path):
    """EROFS: a read-only tmpfs mounted in a mount namespace of the CLI's own (skipped where none can be made)."""
    ro = tmp_path / "ro"
    ro.mkdir()
    probe = subprocess.run(["unshare", "--mount", "--map-root-user", "sh", "-c", f"mount -t tmpfs -o ro tmpfs {ro}"],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode:
        pytest.skip(f"no mount namespace here: {probe.stderr.strip()}")
    command = " ".join([*DBPERF, "report", str(results), "--format", "csv", "-o", str(ro / "r.csv")])
    done = subprocess.run(["unshare", "--mount", "--map-root-user", "sh", "-c",
                           f"mount -t tmpfs -o ro tmpfs {ro} && exec {command}"],
                          capture_output=True, text=True, cwd=REPO, timeout=300, env={**os.environ})
    _refused(done, "cannot write", "Read-only file system")
