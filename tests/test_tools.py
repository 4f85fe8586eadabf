"""External tools that fail: one line naming what was being done, the command and its last lines, exit 2."""

from __future__ import annotations

import sys

import pytest

from dbperf.errors import UserError
from dbperf.tools import run_tool
from tests.conftest import run_cli
from tests.test_hardening_run import one_error_line

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
