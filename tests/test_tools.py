"""External tools that fail: one line naming what was being done, the command and its last lines, exit 2."""

from __future__ import annotations

import sys

import pytest

from dbperf.errors import UserError
from dbperf.tools import run_tool
from tests.conftest import run_cli
from tests.test_run_out_and_signals import one_error_line

pytestmark = pytest.mark.unit


def test_a_failing_tool_is_a_user_error_with_its_last_lines():
    script = "import sys\nfor i in range(10): print('line', i, file=sys.stderr)\nsys.exit(4)"
    with pytest.raises(UserError) as e:
        run_tool([sys.executable, "-c", script], "doing a thing")
    message = str(e.value)
    assert message.startswith("doing a thing failed (") and "exit 4" in message
    assert "line 6 | line 7 | line 8 | line 9" in message and "line 5" not in message and "\n" not in message


def test_a_missing_tool_and_a_hung_tool():
    with pytest.raises(UserError, match=r"^fetching: /nonexistent/cargo not found$"):
        run_tool(["/nonexistent/cargo", "fetch"], "fetching")
    with pytest.raises(UserError, match=r"did not finish within 1 s"):
        run_tool([sys.executable, "-c", "import time; time.sleep(30)"], "waiting", timeout=1)


def test_a_compiler_that_fails_on_a_probe(tmp_path):
    cc = tmp_path / "cc"
    cc.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'gcc (fake) 1.0'; exit 0; fi\n"
                  "echo 'probe.c:1: error: this compiler refuses' >&2\nexit 1\n")
    cc.chmod(0o755)
    proc = run_cli("probe", "timers", "--scale", "0.01", env={"CC": str(cc), "DBPERF_CACHE": str(tmp_path / "c")})
    line = one_error_line(proc)
    assert "compiling probe " in line and " failed (" in line and "this compiler refuses" in line


# valgrind 3.19's output for a program that executes an AVX-512 instruction (`vpaddd %zmm1,%zmm1,%zmm1`).
VALGRIND_SIGILL = """\
==15672== Using Valgrind-3.19.0 and LibVEX; rerun with -h for copyright info
vex amd64->IR: unhandled instruction bytes: 0x62 0xF1 0x75 0x48 0xFE 0xC9 0x31 0xC0 0xC5 0xF8
vex amd64->IR:   REX=0 REX.W=0 REX.R=0 REX.X=0 REX.B=0
==15672== valgrind: Unrecognised instruction at address 0x109040.
==15672==    at 0x109040: main (in /tmp/s42/a)
==15672== Your program just tried to execute an instruction that Valgrind
==15672== Process terminating with default action of signal 4 (SIGILL)
==15672== I   refs:      122,358
==15672== LLd miss rate:     3.4% (   3.5%     +   3.1%  )
"""


def test_valgrind_refusing_an_instruction_is_said_with_where_and_what_to_do_instead():
    from dbperf.explain.unhandled import unhandled_instruction
    said = unhandled_instruction(VALGRIND_SIGILL)
    assert said == ("valgrind 3.19.0 cannot decode an instruction of the program (0x62 0xF1 0x75 0x48 in main (in "
                    "/tmp/s42/a)): an AVX-512 instruction, which -march=native emits on a CPU that has AVX-512 and "
                    "valgrind does not support; simulate a build without `native`, or count with hardware counters "
                    "on a host with a PMU")
    other = unhandled_instruction("vex amd64->IR: unhandled instruction bytes: 0xC4 0xE2 0x79 0xB8 0x01\n")
    assert other == ("valgrind cannot decode an instruction of the program (0xC4 0xE2 0x79 0xB8): an instruction "
                     "newer than this valgrind; simulate a build for an older CPU, or a newer valgrind")
    assert unhandled_instruction(VALGRIND_SIGILL.replace("unhandled instruction bytes", "handled")) is None
    # run_tool says it instead of the summary's tail, on one line
    script = f"import sys; sys.stderr.write({VALGRIND_SIGILL!r}); sys.exit(132)"
    with pytest.raises(UserError) as e:
        run_tool([sys.executable, "-c", script], "cachegrind run of a", explain=unhandled_instruction)
    assert "exit 132): valgrind 3.19.0 cannot decode an instruction of the program (0x62" in str(e.value)
    assert "\n" not in str(e.value) and "LLd miss rate" not in str(e.value)
