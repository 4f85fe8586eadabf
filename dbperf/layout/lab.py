"""`dbperf layout --experiment E --target T --benchmark B`: the target's engine driven by a catalog benchmark under
the dynamic count, the way `dbperf profile` runs the driver under valgrind: data loaded natively once, then one
driver process (the cell's threads, time, no warm-up) under lackey, the job in a file. A MariaDB target: the server
under lackey and the driver native instead (server_trace.py)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console

from dbperf.catalog.registry import resolve
from dbperf.catalog.workload import compile_statements
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.experiment.spec import parse_experiment
from dbperf.host.driver import driver_environ, driver_path
from dbperf.layout.check import dynamic_counts
from dbperf.layout.dynamic import DynamicCounts, TraceBudget, TraceInterrupted
from dbperf.layout.findings import Finding, findings
from dbperf.layout.server_trace import count_server, refuse_untraceable
from dbperf.layout.static_map import StaticMap, static_map
from dbperf.records import encode
from dbperf.runner.targets import build_targets, inspect_targets
from dbperf.targets.sqlite_data import SqliteData

# False sharing needs two threads at least; an experiment of one thread is counted with two.
MIN_THREADS = 2


def lab_target(experiment: Path, name: str, err: Console) -> tuple[Experiment, Target]:
    exp, t, _ = built_target(experiment, name, err)
    return exp, t


def built_target(experiment: Path, name: str, err: Console) -> tuple[Experiment, Target, dict[str, dict[str, Any]]]:
    """The experiment with its targets built, the target `name`, and every built target's manifest by name."""
    exp, manifests = build_targets(parse_experiment(experiment), err)
    inspect_targets(exp)
    for t in exp.targets:
        if t.name == name:
            if t.is_server:
                refuse_untraceable(t)
            return exp, t, manifests
    raise UserError(f"{experiment}: no target {name!r} (targets: {', '.join(t.name for t in exp.targets)})")


def count_target(exp: Experiment, target: Target, benchmark: str, library: Path, line: int | None, mode: str,
                 err: Console, budget: TraceBudget | None = None) \
        -> tuple[StaticMap, DynamicCounts, list[Finding], dict]:
    (bench,) = resolve([benchmark], exp.path.parent, "--benchmark")
    static = static_map(library, line)
    threads = max(MIN_THREADS, *exp.threads)
    if target.is_server:  # the server's process under lackey, the driver native (server_trace.py)
        if mode == "hardware":
            raise UserError(f"target {target.name!r}: hardware memory sampling (perf mem) counts a program the lab "
                            "runs, not a server's process: give --mode simulated or auto")
        budget = budget or TraceBudget()
        cell = {"target": target.name, "benchmark": bench.name, "threads": threads, "time_s": budget.seconds,
                "library": str(library), "server": True}
        counts = count_server(exp, target, bench, static, threads, budget, err)
        counts.mode_reason = "a server's process is counted under lackey only"
        return static, counts, findings(static, counts), cell
    work = Path(tempfile.mkdtemp(prefix="dbperf-layout-"))
    try:
        data = SqliteData(work, target, exp)
        data.load()
        job = target.process.apply(data.job(data.working)).replace(
            mode="run", threads=threads, time_s=exp.time_s, warmup_s=0.0, seed=exp.seed,
            workload=compile_statements(bench, exp.table_size))
        job_file = work / "job.json"
        job_file.write_bytes(encode(job))
        err.print(f"dbperf: counting {target.name} {bench.name}, {threads} threads, {exp.time_s:g} s under lackey",
                  markup=False, highlight=False)
        cell = {"target": target.name, "benchmark": bench.name, "threads": threads, "time_s": exp.time_s,
                "library": str(library)}
        try:
            counts = dynamic_counts(static, [driver_path(), "run", str(job_file)], mode,
                                    env=driver_environ(target.process.environment()), cwd=work, budget=budget,
                                    err=err)
        except TraceInterrupted as interrupted:
            interrupted.checked = [(static, c, findings(static, c), cell) for c in interrupted.counts]
            raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return static, counts, findings(static, counts), cell
