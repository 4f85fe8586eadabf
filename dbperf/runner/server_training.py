"""PGO training of a server build: the instrumented server started by the lab as any lab server is, the training set
(kept apart from the measured catalog, see catalog/training) run through dbperf-driver against it, prepared and as
SQL text, with one connection and with several at once, as the training load of [Nielsen 2014-01-23]
(gen_profile_load) did. The server is then stopped cleanly, so that every process (PostgreSQL's postmaster and
backends) writes its .gcda counts at exit.

Every program of the instrumented install runs as the service user, set-up tools and probes included (MariaDB's
install script too: run_as_service_user), so that the profile's files are all the trainer's (a root-owned .gcda
would empty the profile). What the clients printed on stderr goes to client.log beside the server's log: the
profile's proof reads every log of the training (buildlab/profile_proof.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from dbperf.buildlab.training import TRAIN_TABLE_SIZE, TRAIN_TABLES, training_workloads
from dbperf.catalog.workload import compile_statements
from dbperf.errors import UserError
from dbperf.experiment.build_variants import SERVER_TRAINING
from dbperf.experiment.model import Experiment, Target
from dbperf.host.driver import run_job
from dbperf.records import RunResult
from dbperf.servers.lifecycle import LabServer
from dbperf.servers.registry import server_target
from dbperf.servers.runtime import RuntimeDir

TRAIN_THREADS = (1, 4)  # one connection, then several at once


def train_server(engine: str, binaries: Path, logs: Path, seconds: float) -> dict[str, Any]:
    """Runs the training set against the server at `binaries`, each workload for `seconds` per connection count
    (half prepared, half as SQL text); what ran, for the manifest."""
    workloads = training_workloads(SERVER_TRAINING)
    target = Target(name="pgo-training", engine=engine, library="", binaries=str(binaries))
    e = Experiment(path=logs / "training.toml", text="", benchmarks=tuple(workloads), targets=(target,),
                   base=target.name, tables=TRAIN_TABLES, table_size=TRAIN_TABLE_SIZE, seed=7)
    runtime = RuntimeDir()
    server = server_target(runtime.target_dir(1), logs, target, e)
    if isinstance(server, LabServer):
        server.run_as_service_user = True
    client_log = logs / "client.log"
    runs = []
    started = time.monotonic()
    server_pid = None
    try:
        server.start()
        # The server process's pid: its BOLT profile file is the whole server's (server_bolt.py).
        server_pid = server.server.pid if server.server is not None else None
        server.load()
        for w in workloads:
            for threads in TRAIN_THREADS:
                for prepared in (True, False):
                    job = server.working_job().replace(
                        mode="run", threads=threads, time_s=seconds / 2, warmup_s=0.0, prepared=prepared,
                        workload=compile_statements(w, TRAIN_TABLE_SIZE, engine))
                    outcome = run_job(job, RunResult, seconds + 120, env=server.env())
                    with open(client_log, "a") as f:
                        f.write(f"== {w.name} threads={threads} prepared={prepared}\n{outcome.stderr_tail}\n")
                    if not outcome.ok or outcome.result is None:
                        raise UserError(f"PGO training run {w.name} against the instrumented {engine} failed: "
                                        f"{outcome.error}")
                    runs.append({"workload": w.name, "threads": threads, "prepared": prepared,
                                 "events": outcome.result.events, "errors": outcome.result.errors,
                                 "seconds": outcome.result.duration_s})
                    server.restore()
    finally:
        server.stop()  # a clean shutdown: the processes write their profiles as they exit
        runtime.remove()
    return {"training_set": list(SERVER_TRAINING), "seconds_per_workload": seconds, "training_runs": runs,
            "training_seconds": round(time.monotonic() - started, 1), "server_pid": server_pid}
