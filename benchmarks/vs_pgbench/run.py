"""benchmarks/vs_pgbench: dbperf-driver against pgbench (PostgreSQL 15, Debian) on the same lab-started PostgreSQL
and database, 1 client: `pgbench -S -M prepared` (its select-only script on pgbench_accounts, scale 1 = 100k rows,
prepared) and dbperf `point-query` (a prepared primary-key SELECT on sbtest1, 100k rows), alternately, N pairs.
Both clients connect over TCP to 127.0.0.1 and are measured the same way: the rusage of the client process (wait4)
divided by the queries it reports. Prints each pair, the QPS ratio dbperf/pgbench and the client CPU per query
ratios, `simulated client instructions per query <dbperf> vs <pgbench>` (cachegrind of 2,000 and 6,000 queries of
each, the difference) and `system calls per query <dbperf> vs <pgbench>` (one short run of each under
`strace -f -c`); the last
line is `ratio <median QPS ratio>`. Targets: QPS ratio >= 1.0, client user + system CPU per query <= 0.8 of pgbench's.
A benchmark, not a test: it asserts nothing.

Usage: .venv/bin/python benchmarks/vs_pgbench/run.py [--time 10] [--pairs 3] [--socket]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
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
from dbperf.servers.lifecycle import PASSWORD_ENV
from dbperf.servers.registry import server_target

TABLE_SIZE = 100_000
SYSCALL_RUN_S = 3
SIMULATED_QUERIES = (2_000, 6_000)


def measured(argv: list[str], env: dict[str, str]) -> tuple[str, float, float]:
    """(output, user s, system s) of a client process, from wait4's rusage (as benchmarks/vs_sysbench)."""
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **env})
        _, status, usage = os.wait4(proc.pid, 0)
        out.seek(0)
        text = out.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[0]} failed: {text[-500:]}")
    return text, usage.ru_utime, usage.ru_stime


def pgbench_binary() -> str:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pgbench")) or [Path(shutil.which("pgbench") or "")]
    if not found[-1].is_file():
        raise SystemExit("pgbench not found (make setup installs it with postgresql)")
    return str(found[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--time", type=float, default=10.0)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--socket", action="store_true", help="both clients over the server's Unix socket")
    args = ap.parse_args()
    pgbench = pgbench_binary()
    base = Path(tempfile.mkdtemp(prefix="dbperf-vs-pgbench-", dir="/tmp"))
    base.chmod(0o755)
    rows = []
    try:
        exp_file = base / "pg.toml"
        exp_file.write_text(f'[run]\nbenchmarks = ["point-query"]\ntable_size = {TABLE_SIZE}\n'
                            f'[[target]]\nname = "pg"\nengine = "postgres"\n'
                            f'{"socket = true" if args.socket else ""}\n')
        exp = parse_experiment(exp_file)
        server = server_target(base / "data", base / "logs", exp.targets[0], exp)
        server.start()
        try:
            server.load()
            host = str(server.dir / "pgdata") if args.socket else "127.0.0.1"
            env = {"PGPASSWORD": server.password or ""}
            conn = ["-h", host, "-p", str(server.port), "-U", "dbperf"]
            measured([pgbench, "-i", "-s", "1", "-q", *conn, "sbtest"], env)
            job = server.working_job().replace(
                mode="run", threads=1, time_s=args.time, warmup_s=0.0, interval_s=0.0,
                workload=compile_statements(builtin()["point-query"], TABLE_SIZE, "postgres"))
            job_file = base / "job.json"
            job_file.write_bytes(encode(job))
            for _ in range(args.pairs):
                text, pu, ps = measured([pgbench, "-S", "-M", "prepared", "-c", "1", "-j", "1", "-n",
                                         "-T", f"{args.time:.0f}", *conn, "sbtest"], env)
                txns = int(re.search(r"number of transactions actually processed: (\d+)", text).group(1))
                pg_qps = float(re.search(r"tps = ([\d.]+)", text).group(1))
                out, du, ds = measured([driver_path(), "run", str(job_file)], {PASSWORD_ENV: server.password or ""})
                result = decode(RunResult, out.strip().splitlines()[-1])
                rows.append({"pg_qps": pg_qps, "pg_user": pu / txns * 1e6, "pg_total": (pu + ps) / txns * 1e6,
                             "d_qps": result.qps, "d_user": du / result.queries * 1e6,
                             "d_total": (du + ds) / result.queries * 1e6})
            # System calls per query, counted apart from the timed pairs (strace slows a client down).
            text, pg_calls = count_syscalls([pgbench, "-S", "-M", "prepared", "-c", "1", "-j", "1", "-n",
                                             "-T", str(SYSCALL_RUN_S), *conn, "sbtest"], env)
            pg_txns = int(re.search(r"number of transactions actually processed: (\d+)", text).group(1))
            job_file.write_bytes(encode(job.replace(time_s=SYSCALL_RUN_S)))
            out, d_calls = count_syscalls([driver_path(), "run", str(job_file)], {PASSWORD_ENV: server.password or ""})
            d_queries = decode(RunResult, out.strip().splitlines()[-1]).queries
            syscalls = (per_query_text(d_calls, d_queries), per_query_text(pg_calls, pg_txns))
            # The clients' user-space instructions per query, deterministic: cachegrind of N1 and N2 queries.
            sim = []
            for n in SIMULATED_QUERIES:
                profile, text = profile_command([pgbench, "-S", "-M", "prepared", "-c", "1", "-j", "1", "-n",
                                                 "-t", str(n), *conn, "sbtest"], env)
                pg_run = (profile.total()["Ir"],
                          int(re.search(r"number of transactions actually processed: (\d+)", text).group(1)))
                profile, d_result = run_under_cachegrind(driver_path(), job.replace(events=n, time_s=0.0),
                                                         {PASSWORD_ENV: server.password or ""})
                sim.append((pg_run, (profile.total()["Ir"], d_result.queries)))
            pg_ir, d_ir = ((b[0] - a[0]) / (b[1] - a[1]) for a, b in zip(sim[0], sim[1], strict=True))
        finally:
            server.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"PostgreSQL ({'Unix socket' if args.socket else 'TCP 127.0.0.1'}), 1 client, {args.pairs} pairs x "
          f"{args.time:g} s; pgbench -S -M prepared (scale 1) vs dbperf point-query (1 x {TABLE_SIZE:,}); client CPU "
          "= wait4 rusage / queries")
    for i, r in enumerate(rows, 1):
        print(f"  pair {i}: pgbench {r['pg_qps']:9,.0f} qps, {r['pg_user']:5.2f} user {r['pg_total']:6.2f} total us/q"
              f" | dbperf {r['d_qps']:9,.0f} qps, {r['d_user']:5.2f} user {r['d_total']:6.2f} total us/q  "
              f"(QPS ratio {r['d_qps'] / r['pg_qps']:.3f})")
    ratios = [r["d_qps"] / r["pg_qps"] for r in rows]
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(f"QPS ratio dbperf/pgbench median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max "
          f"{max(ratios):.3f}); client CPU ratio user {med['d_user'] / med['pg_user']:.3f}, user+system "
          f"{med['d_total'] / med['pg_total']:.3f} (medians of the pairs)")
    print(f"simulated client instructions per query {d_ir:,.0f} vs {pg_ir:,.0f}, ratio {d_ir / pg_ir:.3f} (cachegrind, "
          f"user space of each client, ({SIMULATED_QUERIES[1]:,} - {SIMULATED_QUERIES[0]:,}) queries)")
    (d_total, d_top), (pg_total, pg_top) = syscalls
    print(f"system calls per query {d_total:.2f} vs {pg_total:.2f} (strace -f -c of one {SYSCALL_RUN_S} s run each; "
          f"dbperf: {d_top}; pgbench: {pg_top})")
    print(f"ratio {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
