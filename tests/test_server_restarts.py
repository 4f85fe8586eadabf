"""A lab server that died and was started again between cells (issue 45): said on stderr when it happens and in the
report, since the cells from the restart on ran on a cold buffer pool, not only as `restarts: 1` in meta.json."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import DBPERF, NEEDS_SERVERS, REPO, run_cli
from tests.synthetic import write_run
from tests.test_servers import experiment, lab_processes


def _restarted_run(directory: Path) -> Path:
    """A complete synthetic run whose target b's server died once: its restart came before b's second repeat."""
    targets = [{"name": t, "engine": "mariadb", "engine_version": "10.11.6", "settings": [],
                **({"restarts": 1} if t == "b" else {})} for t in ("a", "b")]
    write_run(directory, ["a", "b"], ["point-query", "update-index"], 3, engine="mariadb", server=True,
              meta_extra={"targets": targets})
    results = directory / "results.jsonl"
    lines = [json.loads(x) for x in results.read_text().splitlines()]
    for i, x in enumerate(lines):
        x["started_at"] = 1000.0 + i
        if (x["target"], x["benchmark"], x["repeat"]) == ("b", "point-query", 2):
            x["server_restarted_before"] = True
    results.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return directory


@pytest.mark.unit
@pytest.mark.parametrize("fmt", ["table", "markdown", "html"])
def test_the_report_says_which_target_restarted_and_what_it_means(tmp_path, fmt):
    run = _restarted_run(tmp_path / "run")
    proc = run_cli("report", str(run), "--format", fmt)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())  # one line however a format wraps it
    assert ("restarts: target b: its server died and the lab started it again once (before point-query t=1 #2): "
            "the cells from each restart on ran on a cold buffer pool") in text, proc.stdout
    assert "target a: its server died" not in text


@pytest.mark.unit
def test_a_run_without_restarts_says_nothing_of_them(tmp_path):
    run = write_run(tmp_path / "run", ["a", "b"], ["point-query"], 3)
    proc = run_cli("report", str(run))
    assert proc.returncode == 0, proc.stderr
    assert "restart" not in proc.stdout


@pytest.mark.server
@NEEDS_SERVERS
def test_a_server_killed_in_a_cell_is_said_when_it_is_started_again(where):
    out = where / "out"
    exp = experiment(where, '[[target]]\nname = "maria"\nengine = "mariadb"\n', '"point-query", "update-index"')
    exp.write_text(exp.read_text().replace('time = "1s"', 'time = "4s"'))
    proc = subprocess.Popen([*DBPERF, "run", str(exp), "--out", str(out)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)

    def kill_during_first_cell() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            meta_path = out / "meta.json"
            if meta_path.is_file():
                meta = json.loads(meta_path.read_text())
                pid = meta["targets"][0].get("server_pid")
                if pid and meta["targets"][0].get("load") and not (out / "results.jsonl").read_text():
                    time.sleep(1.5)  # inside the first cell's measured window
                    os.kill(pid, signal.SIGKILL)
                    return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_during_first_cell)
    killer.start()
    stdout, stderr = proc.communicate(timeout=600)
    killer.join()
    assert proc.returncode == 0, stderr
    assert json.loads((out / "meta.json").read_text())["targets"][0]["restarts"] == 1
    said = [line for line in stderr.splitlines() if "started again" in line]
    assert said == ["dbperf: target maria: its server had died and was started again (restart 1) before update-index "
                    "t=1 #1: this cell and the ones after it run on a cold buffer pool (the server's caches "
                    "emptied)"], stderr
    # the report after the run says it too
    assert "restarts: target maria: its server died and the lab started it again once (before update-index t=1 " \
           "#1)" in " ".join(stdout.split()), stdout
    assert lab_processes() == []
