"""benchmarks/replication_apply: examples/replication.toml end to end (a MariaDB primary and a replica started by the
lab; the apply-rate study at 3 worker counts × 2 durability settings, 20,000 transactions per measurement, then the
stale-read study), timed on the wall clock; with `--engine postgres`, examples/replication-postgres.toml (a
PostgreSQL primary and a hot standby; 2 recovery_prefetch modes × 2 durability settings, then stale reads against
synchronous_commit = remote_apply). Prints the apply table and the stale-read fractions from
`dbperf report --format json`. Last line: `ratio <elapsed / 600 s>`; target < 1 (under 10 minutes). A benchmark, not
a test: it prints what it measured and asserts nothing.

Usage: .venv/bin/python benchmarks/replication_apply/run.py [--engine mariadb|postgres] [--experiment FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUDGET_S = 600.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", choices=("mariadb", "postgres"), default="mariadb")
    ap.add_argument("--experiment", default=None)
    args = ap.parse_args()
    if args.experiment is None:
        name = "replication-postgres.toml" if args.engine == "postgres" else "replication.toml"
        args.experiment = str(REPO / "examples" / name)
    work = Path(tempfile.mkdtemp(prefix="dbperf-repl-bench-"))
    out = work / "out"
    try:
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "dbperf.cli", "run", args.experiment, "--out", str(out)],
                              cwd=REPO, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(f"dbperf run failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        report = subprocess.run([sys.executable, "-m", "dbperf.cli", "report", str(out), "--format", "json"],
                                cwd=REPO, capture_output=True, text=True, check=True)
        r = json.loads(report.stdout)["replication"]
        print(f"{args.experiment}: {len(r['apply'])} apply measurements of {r['transactions']:,} transactions, "
              f"host CPUs {r['cpus']}, fdatasync {r['fdatasync_per_s']:,.0f}/s")
        for a in sorted(r["apply"], key=lambda a: (a["durability"], a["workers"], a["mode"])):
            vs = f"{a['vs_serial']:.2f}x" if a["vs_serial"] else "n/a" if r.get("engine") == "postgres" else "-"
            extra = (f"; WAL {a['wal_bytes'] / 2**20:.1f} MB, peak replay_lag {a.get('peak_replay_lag_s') or 0:.2f} s"
                     if r.get("engine") == "postgres" else "")
            spread = f" (min–max {a['trx_per_s_min']:,.0f}–{a['trx_per_s_max']:,.0f}, n={a['n']})" if a["n"] > 1 else ""
            print(f"  {a['durability']:<22} workers {a['workers']:>2} {a['mode']:<17} {a['trx_per_s']:>10,.0f} trx/s "
                  f"applied{spread} ({vs} vs 0 workers; apply {a['apply_s']:.2f} s; primary "
                  f"{a['primary_trx_per_s']:,.0f} trx/s{extra})")
        s = r["stale_reads"]
        lat = s.get("wait_latency_us") or {}
        added = s.get("wait_added_us")
        print(f"  stale reads: without wait {s['without_wait']:.2%}, with {s.get('wait')} {s['with_wait']:.2%}; "
              f"wait p50 {lat.get('p50_us', 0):,.0f} µs, p99 {lat.get('p99_us', 0):,.0f} µs"
              + (f" (adds p50 {added['p50_us']:,.0f} µs, p99 {added['p99_us']:,.0f} µs to a local commit)"
                 if added else "")
              + f", timeouts {s.get('wait_timeouts')} ({s.get('durability')} replica)")
        print(f"  studies: {json.loads((out / 'meta.json').read_text())['replication'].get('study_seconds')} s; "
              f"whole run {elapsed:.1f} s (wall clock, including server start and load)")
        print(f"ratio {elapsed / BUDGET_S:.3f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
