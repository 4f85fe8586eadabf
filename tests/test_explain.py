"""Explain: counters mode, simulated counters on real SQLite builds, their repeatability, the diff and the gate,
and the hardware-mode parsers on recorded perf output (this machine has no PMU)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from dbperf.explain.cachegrind import parse_cachegrind_out
from dbperf.explain.mode import detect_mode
from dbperf.explain.perfstat import parse_perf_report, parse_perf_stat_csv
from tests.conftest import run_cli

pytestmark = pytest.mark.e2e

# Recorded `perf stat -x, -e cycles,instructions,L1-icache-load-misses,branch-misses,branches` on a PMU machine,
# with one event the PMU lacks, and `perf stat -x, -M TopdownL1` metric lines.
PERF_STAT = """\
# started on Sat Nov 21 10:00:00 2026

812345678,,cycles,400123456,100.00,,
1623456789,,instructions,400123456,100.00,2.00,insn per cycle
<not supported>,,L1-icache-load-misses,0,100.00,,
2345678,,branch-misses,400123456,100.00,0.72,of all branches
325678901,,branches,400123456,100.00,812.345,M/sec
,,,,,31.4,%  tma_frontend_bound
,,,,,4.2,%  tma_bad_speculation
,,,,,40.1,%  tma_retiring
,,,,,24.3,%  tma_backend_bound
"""

CACHEGRIND = """\
desc: I1 cache:         32768 B, 64 B, 8-way associative
cmd: driver run job.json
events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim
fl=???
fn=sqlite3VdbeExec
0 100 2 1 40 3 1 20 1 0 10 2 1 0
0 50 1 0 10 0 0 5 0 0 5 1
fn=pthreadMutexEnter
0 30 0 0 10 0 0 0 0 0 2 0 0 0
fl=other.c
fn=sqlite3VdbeExec
12 20 0 0 0 0 0 0 0 0 0 0 0 0
summary: 200 3 1 60 3 1 25 1 0 17 3 1 0
"""


def test_perf_stat_parser_keeps_unsupported_apart_and_reads_topdown():
    stat = parse_perf_stat_csv(PERF_STAT)
    assert stat.counts["cycles"] == 812345678 and stat.counts["instructions"] == 1623456789
    assert "L1-icache-load-misses" not in stat.counts and stat.unsupported == ["L1-icache-load-misses"]
    assert stat.metrics["tma_frontend_bound"] == 31.4 and stat.metrics["tma_backend_bound"] == 24.3
    assert stat.metrics["insn per cycle"] == 2.0


def test_perf_report_parser():
    text = "# Overhead  Symbol\n#\n    42.10%  [.] sqlite3VdbeExec\n     7.50%  [k] do_syscall_64\n\n"
    expected = [("sqlite3VdbeExec", pytest.approx(0.421)), ("do_syscall_64", pytest.approx(0.075))]
    assert parse_perf_report(text) == expected


def test_cachegrind_parser_sums_by_function_and_subtracts():
    p = parse_cachegrind_out(CACHEGRIND)
    assert p.functions["sqlite3VdbeExec"]["Ir"] == 170 and p.functions["sqlite3VdbeExec"]["I1mr"] == 3
    assert p.functions["pthreadMutexEnter"]["Dr"] == 10
    assert p.total()["Ir"] == 200
    assert p.minus(p).total()["Ir"] == 0


def test_mode_is_detected_and_explained():
    mode = detect_mode()
    assert mode.mode in ("hardware", "simulated") and mode.reason
    probe = subprocess.run(["perf", "stat", "-e", "instructions", "true"], capture_output=True, text=True)
    if "not supported" in probe.stderr or probe.returncode != 0:
        assert mode.mode == "simulated"


BODY = """
[run]
benchmarks = ["point-query"]
table_size = 5000

[[target]]
name = "{a}"
source = "sqlite@3.54.1"
cflags = ["-O0", "-DSQLITE_THREADSAFE={ta}"]

[[target]]
name = "{b}"
source = "sqlite@3.54.1"
cflags = ["-O0", "-DSQLITE_THREADSAFE={tb}"]
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return {"DBPERF_CACHE": str(tmp_path_factory.mktemp("cache"))}


@pytest.fixture
def experiment(tmp_path: Path):
    def make(a: str = "single", ta: int = 0, b: str = "serialized", tb: int = 1) -> Path:
        path = tmp_path / "exp.toml"
        path.write_text(BODY.format(a=a, ta=ta, b=b, tb=tb))
        return path
    return make


def _library_functions(library: str) -> set[str]:
    out = subprocess.run(["nm", "--defined-only", library], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def test_simulated_profile_repeats_exactly_and_names_library_functions(experiment, env, tmp_path):
    figures = []
    for i in range(2):
        out = tmp_path / f"p{i}.json"
        proc = run_cli("profile", str(experiment()), "--target", "serialized", "--benchmark", "point-query",
                       "--queries", "2000", "--mode", "simulated", "--json", str(out), env=env)
        assert proc.returncode == 0, proc.stderr
        figures.append(json.loads(out.read_text()))
    a, b = figures
    assert a["mode"] == "simulated" and "counters mode simulated" in proc.stderr
    assert "[simulated]" in proc.stdout and "IPC" not in proc.stdout and "cycles per" not in proc.stdout
    for key, value in a["per_query"].items():
        assert value == pytest.approx(b["per_query"][key], rel=1e-6), key
    pq = a["per_query"]
    assert 1_000 < pq["instructions"] < 1_000_000 and pq["estimated_cycles"] >= pq["instructions"]
    assert 0 <= pq["i1_miss_pct_of_instructions"] < 100
    top = [r["function"] for r in a["top_by_instructions"]]
    assert "sqlite3VdbeExec" in top
    assert a["slowdown"]["factor"] and a["slowdown"]["factor"] > 1


def test_diff_shows_the_mutex_cost_of_threadsafe_builds(experiment, env):
    proc = run_cli("diff", str(experiment()), "single", "serialized", "--benchmark", "point-query", "--queries",
                   "2000", "--mode", "simulated", "--top", "8", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    header = lines[0]
    assert header.startswith("instructions per query (simulated): single")
    before, after = (float(x.replace(",", "")) for x in
                     [header.split("single ")[1].split(" ")[0], header.split("serialized ")[1].split(" ")[0]])
    assert after > before  # mutex enter/leave on every call costs instructions
    manifests = [json.loads(p.read_text()) for p in Path(env["DBPERF_CACHE"]).glob("builds/*/manifest.json")]
    serialized = next(m for m in manifests if "-DSQLITE_THREADSAFE=1" in m["flags"])
    functions = _library_functions(serialized["library"])
    shown = [line.split()[0] for line in lines[3:11] if line.strip()]
    from_sqlite = [name for name in shown if name.startswith(("sqlite3", "pthreadMutex"))]
    assert from_sqlite and all(name in functions for name in from_sqlite), (from_sqlite, shown)
    assert shown[0] in ("sqlite3_mutex_enter", "sqlite3_mutex_leave", "pthreadMutexEnter", "pthreadMutexLeave")


def test_check_gates_on_instruction_regressions(experiment, env):
    failing = run_cli("check", str(experiment()), "--instructions", "--max-regression", "1%", "--queries", "1000",
                      env=env)
    assert failing.returncode == 1, failing.stderr
    assert "REGRESSION" in failing.stdout and "check failed: serialized/point-query" in failing.stderr
    passing = run_cli("check", str(experiment("serialized", 1, "single", 0)), "--instructions", "--max-regression",
                      "1%", "--queries", "1000", env=env)
    assert passing.returncode == 0, passing.stderr + passing.stdout


def test_check_refuses_bad_threshold(experiment, env):
    proc = run_cli("check", str(experiment()), "--instructions", "--max-regression", "lots", env=env)
    assert proc.returncode == 2 and "--max-regression" in proc.stderr


def test_a_program_valgrind_cannot_decode_is_refused_in_one_line_naming_the_instruction(tmp_path):
    """An AVX-512 instruction, as -march=native emits on a CPU that has it: valgrind raises SIGILL, and the error
    says why instead of the summary's tail. Assembled by the machine's cc; never run natively."""
    from dbperf.errors import UserError
    from dbperf.explain.cachegrind import profile_command
    source = tmp_path / "evex.c"
    source.write_text('int main(void) { __asm__ volatile("vpaddd %%zmm1, %%zmm1, %%zmm1" ::: "xmm1"); return 0; }\n')
    subprocess.run(["cc", "-O2", "-o", str(tmp_path / "evex"), str(source)], check=True)
    with pytest.raises(UserError) as e:
        profile_command([str(tmp_path / "evex")], timeout_s=120)
    said = str(e.value)
    assert said.startswith("cachegrind run of evex failed (") and "signal 4" in said and "\n" not in said
    assert "cannot decode an instruction of the program (0x62 " in said and "in main (in " in said
    assert "an AVX-512 instruction, which -march=native emits" in said
