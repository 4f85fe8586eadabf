"""benchmarks/vs_sysbench: dbperf-driver against sysbench 1.0.20 (Debian) on the same freshly started MariaDB, then
PostgreSQL, 1 thread, the same table (1 x 100k rows, loaded by dbperf), sysbench `oltp_point_select` and dbperf
`point-query` alternately, 3 pairs x 15 s. Both clients are measured the same way: the rusage of the client process
(wait4), divided by the queries it reports. Prints the QPS ratio dbperf/sysbench and the client CPU us/query ratios
(user, and user+system); the last line is `ratio <QPS ratio>` over both servers (geometric mean).
Then, per server, the clients' user-space instructions per query under cachegrind (2,000 and 6,000 queries each, the
difference): `simulated client instructions per query <dbperf> vs <sysbench>`, and one short run of each under
`strace -f -c`: `system calls per query <dbperf> vs <sysbench>`.
Targets: QPS ratio >= 1.0, total client CPU ratio <= 0.8, user client CPU ratio <= 0.5.
A benchmark, not a test: it asserts nothing.

The floor: each pair also runs `floor_client.c` (compiled here with `cc` against libmariadb and libpq, whose
libmariadb-dev and libpq-dev `make setup` installs), a bare C loop of one send() of a pre-built execute message and
recv() until the response is complete, measured the same three ways. What it pays per query is what any client pays
for the same queries over the same loopback TCP: `floor client CPU ratio` lines set it against sysbench, so a target
below the floor is on record as one no client can reach.

Usage: .venv/bin/python benchmarks/vs_sysbench/run.py [--time 15] [--pairs 3]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from dbperf.catalog.registry import builtin
from dbperf.catalog.workload import compile_statements
from dbperf.experiment.spec import parse_experiment
from dbperf.explain.cachegrind import profile_command, run_under_cachegrind
from dbperf.host.driver import driver_path
from dbperf.host.syscalls import count_syscalls, per_query_text
from dbperf.records import RunResult, decode, encode
from dbperf.servers.lifecycle import PASSWORD_ENV, LabServer
from dbperf.servers.registry import server_target

TABLE_SIZE = 100_000
SYSCALL_RUN_S = 3
SIMULATED_QUERIES = (2_000, 6_000)
FLOOR_PASSWORD_ENV = "DBPERF_FLOOR_PASSWORD"


def measured(argv: list[str], env: dict[str, str], stdin: str | None = None) -> tuple[str, float, float]:
    """(stdout, user s, system s) of a client process, from wait4's rusage."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as inp:
        if stdin is not None:
            inp.write(stdin)
            inp.seek(0)
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=inp, env={**os.environ, **env})
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} failed: {text[-500:]}")
    return text, usage.ru_utime, usage.ru_stime


def sysbench_argv(server: LabServer, seconds: float) -> list[str]:
    common = ["sysbench", "oltp_point_select", "--threads=1", f"--time={seconds:g}", "--tables=1",
              f"--table-size={TABLE_SIZE}", "--db-ps-mode=auto", "--rand-type=uniform"]
    if server.engine == "mariadb":
        return [*common, "--db-driver=mysql", "--mysql-host=127.0.0.1", f"--mysql-port={server.port}",
                "--mysql-user=dbperf", f"--mysql-password={server.password}", "--mysql-db=sbtest", "run"]
    return [*common, "--db-driver=pgsql", "--pgsql-host=127.0.0.1", f"--pgsql-port={server.port}",
            "--pgsql-user=dbperf", f"--pgsql-password={server.password}", "--pgsql-db=sbtest", "run"]


def floor_client(work: Path) -> str:
    """benchmarks/vs_sysbench/floor_client.c compiled with the machine's compiler against libmariadb and libpq."""
    source = Path(__file__).with_name("floor_client.c")
    binary = work / "floor_client"
    flags = []
    for tool, args in (("mariadb_config", ["--cflags", "--libs"]), ("pg_config", ["--includedir"])):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found: the floor client needs libmariadb-dev and libpq-dev (make setup "
                             "installs them; or apt install libmariadb-dev libpq-dev)")
        out = subprocess.run([tool, *args], capture_output=True, text=True, check=True).stdout.split()
        flags += out if tool == "mariadb_config" else [f"-I{out[0]}"]
    subprocess.run(["cc", "-O2", "-o", str(binary), str(source), *flags, "-lpq"], check=True)
    return str(binary)


def floor_argv(binary: str, server: LabServer, seconds: float, events: int = 0) -> list[str]:
    return [binary, server.engine, str(server.port), str(TABLE_SIZE), f"{seconds:g}", str(events)]


def floor_queries(text: str) -> int:
    return int(re.search(r"queries (\d+)", text).group(1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--time", type=float, default=15.0)
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args()
    if shutil.which("sysbench") is None:
        raise SystemExit("sysbench not found (apt install sysbench)")
    base = Path(tempfile.mkdtemp(prefix="dbperf-vs-sysbench-", dir="/tmp"))
    base.chmod(0o755)
    qps_ratios = []
    floor = floor_client(base)
    try:
        for engine in ("mariadb", "postgres"):
            exp_file = base / f"{engine}.toml"
            exp_file.write_text(f'[run]\nbenchmarks = ["point-query"]\ntable_size = {TABLE_SIZE}\n'
                                f'[[target]]\nname = "{engine}"\nengine = "{engine}"\n')
            exp = parse_experiment(exp_file)
            server = server_target(base / "data", base / "logs", exp.targets[0], exp)
            server.start()
            try:
                server.load()
                job = server.working_job().replace(
                    mode="run", threads=1, time_s=args.time, warmup_s=0.0,
                    workload=compile_statements(builtin()["point-query"], TABLE_SIZE, engine))
                job_file = base / "job.json"
                job_file.write_bytes(encode(job))
                rows = []
                floor_env = {FLOOR_PASSWORD_ENV: server.password}
                for _ in range(args.pairs):
                    text, su, ss = measured(sysbench_argv(server, args.time), {})
                    queries = int(re.search(r"total:\s+(\d+)", text).group(1))
                    sb_qps = float(re.search(r"queries:\s+\d+\s+\(([\d.]+) per sec", text).group(1))
                    out, du, ds = measured([driver_path(), "run", str(job_file)], {PASSWORD_ENV: server.password})
                    result = decode(RunResult, out.strip().splitlines()[-1])
                    text, fu, fs = measured(floor_argv(floor, server, args.time), floor_env)
                    fq = floor_queries(text)
                    rows.append({"sb_qps": sb_qps, "sb_user": su / queries * 1e6, "sb_total": (su + ss) / queries * 1e6,
                                 "d_qps": result.qps, "d_user": du / result.queries * 1e6,
                                 "d_total": (du + ds) / result.queries * 1e6, "f_qps": fq / args.time,
                                 "f_user": fu / fq * 1e6, "f_total": (fu + fs) / fq * 1e6})
                # System calls per query, counted apart from the timed pairs (strace slows a client down).
                text, sb_calls = count_syscalls(sysbench_argv(server, SYSCALL_RUN_S))
                sb_queries = int(re.search(r"total:\s+(\d+)", text).group(1))
                job_file.write_bytes(encode(job.replace(time_s=SYSCALL_RUN_S)))
                out, d_calls = count_syscalls([driver_path(), "run", str(job_file)], {PASSWORD_ENV: server.password})
                d_queries = decode(RunResult, out.strip().splitlines()[-1]).queries
                text, f_calls = count_syscalls(floor_argv(floor, server, SYSCALL_RUN_S), floor_env)
                syscalls = (per_query_text(d_calls, d_queries), per_query_text(sb_calls, sb_queries),
                            per_query_text(f_calls, floor_queries(text)))
                # The clients' user-space instructions per query, deterministic: cachegrind of N1 and N2 queries.
                sim = []
                for n in SIMULATED_QUERIES:
                    profile, text = profile_command([*sysbench_argv(server, 0), f"--events={n}"], jit=True)
                    sb_run = (profile.total()["Ir"], int(re.search(r"total:\s+(\d+)", text).group(1)))
                    profile, d_result = run_under_cachegrind(driver_path(), job.replace(events=n, time_s=0.0),
                                                             {PASSWORD_ENV: server.password})
                    d_run = (profile.total()["Ir"], d_result.queries)
                    profile, text = profile_command(floor_argv(floor, server, 0, n), floor_env)
                    f_run = (profile.total()["Ir"], floor_queries(text))
                    sim.append((sb_run, d_run, f_run))
                simulated = tuple((b[0] - a[0]) / (b[1] - a[1]) for a, b in zip(sim[0], sim[1], strict=True))
            finally:
                server.stop()
            print(f"{engine} (1 thread, 1 x {TABLE_SIZE:,} rows, "
                  f"{args.pairs} pairs x {args.time:g} s; client CPU = wait4 rusage / queries)")
            for i, r in enumerate(rows, 1):
                print(f"  pair {i}: sysbench {r['sb_qps']:9,.0f} qps, {r['sb_user']:5.2f} user "
                      f"{r['sb_total']:6.2f} total us/q | dbperf {r['d_qps']:9,.0f} qps, {r['d_user']:5.2f} user "
                      f"{r['d_total']:6.2f} total us/q | floor {r['f_qps']:9,.0f} qps, {r['f_user']:5.2f} user "
                      f"{r['f_total']:6.2f} total us/q")
            med = {k: sorted(r[k] for r in rows)[len(rows) // 2] for k in rows[0]}
            qps_ratio = med["d_qps"] / med["sb_qps"]
            qps_ratios.append(qps_ratio)
            print(f"  {engine}: QPS ratio dbperf/sysbench {qps_ratio:.3f}; client CPU ratio user "
                  f"{med['d_user'] / med['sb_user']:.3f}, user+system {med['d_total'] / med['sb_total']:.3f} "
                  f"(medians of the pairs)")
            print(f"  {engine}: floor client CPU ratio floor/sysbench user {med['f_user'] / med['sb_user']:.3f}, "
                  f"user+system {med['f_total'] / med['sb_total']:.3f}; dbperf/floor user "
                  f"{med['d_user'] / med['f_user']:.3f}, user+system {med['d_total'] / med['f_total']:.3f}; floor QPS "
                  f"/ sysbench {med['f_qps'] / med['sb_qps']:.3f} (medians of the pairs)")
            sb_ir, d_ir, f_ir = simulated
            print(f"  simulated client instructions per query {d_ir:,.0f} vs {sb_ir:,.0f}, ratio {d_ir / sb_ir:.3f} "
                  f"(cachegrind, user space of each client, ({SIMULATED_QUERIES[1]:,} - {SIMULATED_QUERIES[0]:,}) "
                  f"queries); floor {f_ir:,.0f}")
            (d_total, d_top), (sb_total, sb_top), (f_total, f_top) = syscalls
            print(f"  system calls per query {d_total:.2f} vs {sb_total:.2f} (strace -f -c of one {SYSCALL_RUN_S} s "
                  f"run each; dbperf: {d_top}; sysbench: {sb_top}); floor {f_total:.2f} ({f_top})")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"ratio {math.exp(sum(math.log(r) for r in qps_ratios) / len(qps_ratios)):.3f}")


if __name__ == "__main__":
    main()
