"""sysbench and pgbench driving lab servers, through the real CLI: the same cell records as the lab's driver, the
tool's CPU from its rusage, a failing script (one line, exit 2, the tool's last lines), a hung script (killed,
the cell failed, the run goes on), and no password on any command line."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest

from tests.conftest import NEEDS_SERVERS, run_cli

pytestmark = [pytest.mark.server, NEEDS_SERVERS]

RUN = '[run]\nbenchmarks = [{benchmarks}]\ntable_size = 1000\ntime = "1s"\nwarmup = "0s"\nrepeats = 1\n'


def test_sysbench_and_pgbench_cells(where: Path):
    exp = where / "exp.toml"
    exp.write_text(RUN.format(benchmarks='"point-query", "read-only-10"') + """
[[target]]
name = "pg-sysbench"
engine = "postgres"
driver = "sysbench"

[[target]]
name = "pg-pgbench"
engine = "postgres"
driver = "pgbench"

[[target]]
name = "maria-sysbench"
engine = "mariadb"
driver = "sysbench"
""")
    out = where / "out"
    marker = "Pw-tool-7e21"
    seen: list[str] = []
    stop = threading.Event()

    def watch() -> None:  # every command line on the host while the run goes on
        while not stop.is_set():
            seen.append(subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout)
            stop.wait(0.2)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        proc = run_cli("run", str(exp), "--out", str(out), timeout=600, env={"DBPERF_SERVER_PASSWORD": marker})
    finally:
        stop.set()
        watcher.join()
    assert proc.returncode == 0, proc.stderr
    assert any("sysbench" in s for s in seen) and not any(marker in s for s in seen)
    cells = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(cells) == 6 and all(c["status"] == "ok" for c in cells), cells
    for c in cells:
        r = c["result"]
        assert c["tool"] in ("sysbench", "pgbench") and r["qps"] > 0 and r["errors"] == 0
        assert r["client_usage"]["user_us"] + r["client_usage"]["system_us"] > 0  # wait4's rusage
        assert r["server_usage"]["user_us"] + r["server_usage"]["system_us"] > 0
        assert r["latency"]["p99_us"] >= r["latency"]["p50_us"] > 0
        per_event = 16 if c["benchmark"].startswith("read-only") else 1
        assert r["queries"] == r["events"] * per_event
        resources = c["resources"]  # sampled around the tool's measured run
        assert resources["window_s"] > 0.5 and resources["client_io"]["processes"] == 1
        counter = "xact_commit" if c["target"].startswith("pg") else "Innodb_buffer_pool_read_requests"
        assert counter in resources["engine_counters"]
    for f in out.rglob("*"):
        if f.is_file():
            assert marker not in f.read_text(errors="replace"), f


def test_user_failing_and_hung_scripts(where: Path):
    """One run: a user's pgbench script, pgbench's tpcb-like, one that hangs (killed after time + grace, its cell
    failed, the run goes on), then one that fails (the run ends: one line naming the tool with its last lines,
    exit 2)."""
    (where / "ok.sql").write_text("\\set id random(1, 1000)\nSELECT c FROM sbtest1 WHERE id = :id;\n")
    (where / "sleeps.sql").write_text("SELECT pg_sleep(600);\n")
    (where / "broken.sql").write_text("SELECT no_such_column FROM sbtest1;\n")
    exp = where / "scripts.toml"
    exp.write_text(RUN.format(benchmarks='"ok.sql", "pgbench:tpcb-like", "sleeps.sql", "broken.sql"')
                   + '[[target]]\nname = "pg"\nengine = "postgres"\ndriver = "pgbench"\n')
    out = where / "out"
    proc = run_cli("run", str(exp), "--out", str(out), timeout=600, env={"DBPERF_HANG_GRACE_S": "3"})
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "pgbench failed on broken" in line and "no_such_column" in line
    ok, builtin, hung = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert ok["benchmark"] == "ok" and ok["status"] == "ok" and ok["result"]["events"] > 0
    # pgbench's built-in script on its own tables (pgbench -i in the working database): 7 commands a transaction.
    assert builtin["benchmark"] == "pgbench-tpcb-like" and builtin["status"] == "ok"
    assert builtin["result"]["queries"] == 7 * builtin["result"]["events"] > 0
    assert hung["status"] == "failed" and "pgbench hung past 4 s and was killed" in hung["error"]
    assert json.loads((out / "meta.json").read_text())["status"] == "failed"
