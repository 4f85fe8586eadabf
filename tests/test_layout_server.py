"""The layout check's dynamic count of a server's process (dbperf/layout/server_trace.py): the trace filter's part
(a pid learned from valgrind's first line, counts zeroed on SIGUSR1) and a real MariaDB under lackey."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from dbperf.explain.unhandled import unhandled_instruction
from tests.conftest import NEEDS_SERVERS, run_cli
from tests.test_layout_bad_elf_and_budget import LACKEY_STREAM
from tests.test_servers import lab_processes


def _waiting_for_more(proc: subprocess.Popen[bytes]) -> bool:
    """The filter has read everything written to it and sleeps in its next read."""
    assert proc.stdin is not None
    unread = struct.unpack("i", fcntl.ioctl(proc.stdin.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]
    state = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return unread == 0 and state == "S"


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None, reason="needs a C compiler")
def test_the_filter_learns_the_pid_from_valgrinds_first_line_and_zeroes_on_sigusr1():
    from dbperf.layout.build import trace_filter

    python = os.path.realpath(sys.executable)
    proc = subprocess.Popen([str(trace_filter()), "0", python], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None
    # This test's own process stands for the server: its maps hold the python executable.
    first = f"=={os.getpid()}== Lackey, an example Valgrind tool\n".encode() + LACKEY_STREAM
    proc.stdin.write(first)
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while not _waiting_for_more(proc) and time.monotonic() < deadline:  # whatever the machine's load
        time.sleep(0.05)
    assert _waiting_for_more(proc)
    proc.send_signal(signal.SIGUSR1)  # what the lab sends once the server is ready
    time.sleep(0.2)
    assert proc.poll() is None  # zeroing does not end the read loop
    proc.stdin.write(LACKEY_STREAM[: LACKEY_STREAM.index(b"\n", 40) + 1])  # three more records
    out, _ = proc.communicate(timeout=60)
    lines = out.decode().splitlines()
    assert proc.returncode == 0 and lines[-1] == "T 3 0 0"  # only what came after the signal
    assert any(line.startswith("MAP 0 ") for line in lines)  # the maps of the pid it read


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None, reason="needs a C compiler")
def test_valgrinds_own_lines_in_a_servers_trace_reach_the_lab_which_says_an_undecodable_instruction_in_one_line():
    from dbperf.layout.build import trace_filter
    from dbperf.layout.server_trace import valgrind_lines

    pid = os.getpid()
    # A server dying under lackey on an AVX-512 instruction: valgrind's log is the trace, so its lines are in it.
    stream = (f"=={pid}== Lackey, an example Valgrind tool\n=={pid}== Using Valgrind-3.19.0 and LibVEX\n".encode()
              + LACKEY_STREAM
              + b"vex amd64->IR: unhandled instruction bytes: 0x62 0xF1 0xFE 0x48 0x6F 0x5 0x0 0x0\n"
              + b"vex amd64->IR:   REX=0 REX.W=0 REX.R=0 REX.X=0 REX.B=0\n"
              + f"=={pid}== valgrind: Unrecognised instruction at address 0x5a1b2c.\n"
                f"=={pid}==    at 0x5A1B2C: my_hash_sort_simple (in /usr/sbin/mariadbd)\n"
                f"=={pid}== Process terminating with default action of signal 4 (SIGILL)\n".encode())
    proc = subprocess.run([str(trace_filter()), "0", os.path.realpath(sys.executable)], input=stream,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.decode().splitlines()[-1].startswith("T ")  # the counts, as before
    said = valgrind_lines(proc.stderr.decode())
    assert said.count("\n") == 7 and "Process terminating" in said and " L " not in said  # valgrind's, not the trace
    assert unhandled_instruction(said) == (
        "valgrind 3.19.0 cannot decode an instruction of the program (0x62 0xF1 0xFE 0x48 in my_hash_sort_simple (in "
        "/usr/sbin/mariadbd)): an AVX-512 instruction, which -march=native emits on a CPU that has AVX-512 and "
        "valgrind does not support; simulate a build without `native`, or count with hardware counters on a host "
        "with a PMU")


@pytest.mark.server
@NEEDS_SERVERS
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_a_mariadb_point_query_cell_is_counted_with_the_server_under_lackey_and_its_start_up_left_out(
        tmp_path, write_experiment):
    exp = write_experiment("""
[run]
benchmarks = ["point-query"]
table_size = 500
threads = [2]
time = "10m"

[[target]]
name = "maria"
engine = "mariadb"
config = { innodb_buffer_pool_size = "16M" }

[[target]]
name = "pg"
engine = "postgres"
""")
    out = tmp_path / "m.json"
    proc = run_cli("layout", "--experiment", str(exp), "--target", "maria", "--benchmark", "point-query",
                   "--trace-seconds", "3", "--json", str(out), timeout=900)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    dynamic = data["dynamic"]
    assert data["binary"] == "/usr/sbin/mariadbd" and data["cell"]["server"] is True
    assert data["cell"]["threads"] == 2 and dynamic["mode"] == "simulated"
    assert "start-up and shutdown left out" in dynamic["tool"] and "queries in the window" in dynamic["tool"]
    assert dynamic["command"][0] == "env"
    assert dynamic["command"][1].startswith("GLIBC_TUNABLES=glibc.cpu.x86_rep_stosb_threshold=")
    # Two connection threads and the server's own at least; accesses to mariadbd's objects were counted. Its
    # start-up alone under lackey is about 80 million records: a window of seconds is far fewer.
    assert dynamic["threads"] >= 2 and dynamic["records_in_binary"] > 0
    assert 0 < dynamic["memory_records"] < 40_000_000
    assert lab_processes() == []
    refused = run_cli("layout", "--experiment", str(exp), "--target", "pg", "--benchmark", "point-query",
                      timeout=300)
    assert refused.returncode == 2 and "runs a process per connection" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    fixed = run_cli("layout", "--experiment", str(exp), "--target", "maria", "--benchmark", "point-query", "--fix",
                    timeout=300)
    assert fixed.returncode == 2 and "is a server the lab does not build" in fixed.stderr
    assert len(fixed.stderr.strip().splitlines()) == 1


@pytest.mark.unit
def test_the_traced_binary_is_the_server_program_of_the_targets_binaries(tmp_path):
    from dbperf.experiment.model import Target
    from dbperf.layout.server_trace import traced_binary

    basedir = tmp_path / "mysql-9.7"  # a MySQL target names a basedir (Oracle's tarballs, the lab's build)
    (basedir / "bin").mkdir(parents=True)
    (basedir / "bin" / "mysqld").touch()
    for binaries in (basedir, basedir / "bin" / "mysqld"):
        assert traced_binary(Target(name="m", engine="mysql", library="", binaries=str(binaries))) == \
            basedir / "bin" / "mysqld"
    assert traced_binary(Target(name="a", engine="mariadb", library="", binaries="/opt/m/bin/mariadbd")) == \
        Path("/opt/m/bin/mariadbd")
    assert traced_binary(Target(name="a", engine="mariadb", library="")) == Path("/usr/sbin/mariadbd")


@pytest.mark.unit
def test_lackeys_tunables_join_the_targets_own_glibc_tunables(tmp_path, write_experiment):
    """Under lackey the server's glibc avoids `rep stosb`/`rep movsb` (traced byte by byte); a target's own tunables
    (hugepages = "thp": glibc.malloc.hugetlb) stay, in the one list glibc reads."""
    from dbperf.experiment.spec import parse_experiment
    from dbperf.layout.dynamic import LACKEY_TUNABLES
    from dbperf.servers.registry import server_target

    exp = parse_experiment(write_experiment("""
[run]
benchmarks = ["point-query"]

[[target]]
name = "m"
engine = "mariadb"
hugepages = "thp"

[[target]]
name = "plain"
engine = "mariadb"
"""))
    thp, plain = (server_target(tmp_path / t.name, tmp_path / "logs", t, exp) for t in exp.targets)
    assert thp.process_environment()["GLIBC_TUNABLES"] == "glibc.malloc.hugetlb=1"
    assert "GLIBC_TUNABLES" not in plain.process_environment()
    thp.launch_tunables = plain.launch_tunables = LACKEY_TUNABLES
    assert thp.process_environment()["GLIBC_TUNABLES"].split(":") == ["glibc.malloc.hugetlb=1", *LACKEY_TUNABLES]
    assert plain.process_environment()["GLIBC_TUNABLES"].split(":") == list(LACKEY_TUNABLES)
    assert all(t.startswith("glibc.cpu.x86_rep_") for t in LACKEY_TUNABLES)
