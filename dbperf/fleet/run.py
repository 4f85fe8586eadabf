"""`dbperf fleet run` and `dbperf fleet local`: from an experiment file to a results directory, as `dbperf run`
does for one machine."""

from __future__ import annotations

import contextlib
import signal
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment
from dbperf.experiment.spec import parse_experiment
from dbperf.fleet.cluster import connect
from dbperf.fleet.controller import Controller, FleetOutcome
from dbperf.fleet.local import check_workers, local_fleet, local_names
from dbperf.fleet.plan import fleet_hosts
from dbperf.runner import interrupts

NO_CELL_SUCCEEDED = 3
HOSTS_INCOMPLETE = 4


@dataclass
class FleetEnd:
    directory: Path
    exit_code: int
    outcome: FleetOutcome | None = None


def _directory(experiment: Path, out: Path | None, resume: bool) -> Path:
    if resume:
        if out is None:
            raise UserError("--resume continues an earlier run: give its directory with --out DIR")
        if not (out / "meta.json").is_file():
            raise UserError(f"{out}: no earlier run to resume (no meta.json)")
    return (out or Path("results") / f"{experiment.stem}-{datetime.now():%Y%m%d-%H%M%S}").absolute()


def _summary(outcome: FleetOutcome, console: Console, resume_hint: str) -> int:
    for host, run in outcome.hosts.items():
        line = f"dbperf: {host}: {run.status}, {len(run.received)} cell(s) written this run"
        if run.reason:
            line += f" ({run.reason})"
        if run.remaining():
            line += f"; {len(run.remaining())} cell(s) not run"
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if outcome.not_run:
        console.print(f"dbperf: the cells not run can be run later: {resume_hint}", markup=False, highlight=False)
    if outcome.cells_ok == 0 and outcome.cells_failed > 0:
        console.print(f"dbperf: error: no cell succeeded ({outcome.cells_failed} failed); the errors are in "
                      f"{outcome.directory / 'results.jsonl'}", markup=False, highlight=False)
        return NO_CELL_SUCCEEDED
    return HOSTS_INCOMPLETE if any(r.status != "complete" for r in outcome.hosts.values()) else 0


def _run(e: Experiment, directory: Path, scheduler: str, certs: Path | None, console: Console,
         default_hosts: list[str], resume: bool, keep_data: bool, resume_hint: str,
         fake_cell_s: float | None = None) -> FleetEnd:
    client = connect(scheduler, certs)
    try:
        controller = Controller(e, client, directory, console, scheduler, default_hosts, resume=resume,
                                keep_data=keep_data, fake_cell_s=fake_cell_s)
        hosts = ", ".join(controller.hosts)
        console.print(f"dbperf: fleet of {len(controller.hosts)} host(s) ({hosts}) on {scheduler}, results in "
                      f"{directory}", markup=False, highlight=False)
        try:
            outcome = controller.run()
        except KeyboardInterrupt as interrupt:
            console.print(f"dbperf: interrupted ({interrupts.reason(interrupt)}); what was measured is in "
                          f"{directory}", markup=False, highlight=False)
            _summary(controller.outcome, console, resume_hint)
            return FleetEnd(directory, interrupts.exit_code(interrupt), controller.outcome)
        return FleetEnd(directory, _summary(outcome, console, resume_hint), outcome)
    finally:
        client.close()


def run_fleet(experiment: Path, out: Path | None, scheduler: str | None, certs: Path | None, console: Console,
              resume: bool = False, keep_data: bool = False) -> FleetEnd:
    """`dbperf fleet run`: the hosts' workers are already at the scheduler ([fleet] scheduler or --scheduler)."""
    e = parse_experiment(experiment, cpus_here=False)  # each host plans [run].cpus with its own CPUs
    scheduler = scheduler or (e.fleet.scheduler if e.fleet else None)
    if not scheduler:
        raise UserError(f"{experiment}: no scheduler: give [fleet] scheduler = \"tls://HOST:PORT\" or --scheduler")
    certs = certs or (e.fleet.certs if e.fleet else None)
    directory = _directory(experiment, out, resume)
    return _run(e, directory, scheduler, certs, console, [], resume, keep_data,
                f"dbperf fleet run {experiment} --out {directory} --resume")


def run_local(experiment: Path, workers: int, out: Path | None, console: Console, tls: bool = False,
              resume: bool = False, keep_data: bool = False, fake_cell_s: float | None = None) -> FleetEnd:
    """`dbperf fleet local`: a scheduler and `workers` workers on 127.0.0.1 for this run only."""
    check_workers(workers)  # before anything else: the cap is about this host, not the experiment
    e = parse_experiment(experiment, cpus_here=False)  # each host plans [run].cpus with its own CPUs
    foreign = [h for h in fleet_hosts(e, local_names(workers)) if h not in local_names(workers)]
    if foreign:
        raise UserError(f"{experiment}: names host(s) {', '.join(foreign)}; fleet local runs on local-1 ... "
                        f"local-{workers} (name those, or none, in the experiment; or use dbperf fleet run)")
    directory = _directory(experiment, out, resume)
    with contextlib.ExitStack() as stack:
        try:
            fleet = stack.enter_context(local_fleet(workers, tls=tls))
        except KeyboardInterrupt as interrupt:  # the fleet's processes are stopped by now
            how = signal.Signals(getattr(interrupt, "signum", signal.SIGINT)).name
            console.print(f"dbperf: interrupted ({how}) while the local workers started; every process of the "
                          "fleet is stopped, nothing was run", markup=False, highlight=False)
            return FleetEnd(directory, interrupts.exit_code(interrupt))
        return _run(e, directory, fleet.scheduler, fleet.certs, console, local_names(workers), resume, keep_data,
                    f"dbperf fleet local --workers {workers} {experiment} --out {directory} --resume",
                    fake_cell_s=fake_cell_s)
