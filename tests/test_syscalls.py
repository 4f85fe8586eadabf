"""strace's summary parsed into calls per system call, and a real count of a small process."""

from __future__ import annotations

import shutil
import sys

import pytest

from dbperf.host.syscalls import count_syscalls, parse_strace_summary

SUMMARY = """% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 61.20    0.000120           2        40           sendto
 20.00    0.000040           1        40         3 recvfrom
  0.00    0.000000           0         2         2 access
------ ----------- ----------- --------- --------- ----------------
100.00    0.000160           1        82         5 total
"""


@pytest.mark.unit
def test_the_summary_gives_calls_per_system_call():
    assert parse_strace_summary(SUMMARY) == {"sendto": 40, "recvfrom": 40, "access": 2}


@pytest.mark.unit
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is installed by make setup")
def test_a_process_writing_ten_times_is_counted_ten_writes_more():
    code = "import os\nfor _ in range({}):\n    os.write(1, b'x')\n"
    _, few = count_syscalls([sys.executable, "-c", code.format(1)])
    out, many = count_syscalls([sys.executable, "-c", code.format(11)])
    assert "x" * 11 in out
    assert many["write"] - few["write"] == 10
