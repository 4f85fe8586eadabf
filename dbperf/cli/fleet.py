"""The fleet (dbperf/fleet/): `dbperf fleet run/local/certs`, `dbperf scheduler` and `dbperf worker`, many benchmark
hosts on Dask distributed. The fleet's modules are imported inside the commands: Dask distributed adds about half a
second (0.48 s measured) to every start of dbperf, fleet or not."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from dbperf.cli.common import OUT_OPTION, err_console, out_console
from dbperf.cli.report import VERBOSE_OPTION
from dbperf.cli.run import report_after_run
from dbperf.experiment.durations import parse_duration
from dbperf.names import check_name
from dbperf.usecases.run import RunEnd

fleet_app = typer.Typer(no_args_is_help=True, help="Run an experiment across many benchmark hosts (Dask).")
CERTS_OPTION = typer.Option("--certs", help="the lab's TLS certificates (dbperf fleet certs DIR)")


def scheduler(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port (0: a free one)")] = 8786,
    certs: Annotated[Optional[Path], CERTS_OPTION] = None,
    address_file: Annotated[Optional[Path], typer.Option(help="write the address here once listening")] = None,
) -> None:
    """A Dask scheduler for the fleet (tls:// with --certs), until Ctrl-C."""
    from dbperf.fleet.cluster import run_scheduler
    run_scheduler(host, port, certs, address_file,
                  announce=lambda line: err_console.print(line, markup=False, highlight=False))


def worker(
    scheduler: Annotated[str, typer.Option("--scheduler", help="tls://HOST:PORT (or tcp://) of the scheduler")],
    name: Annotated[str, typer.Option("--name", help="this host's name in experiments and results")],
    certs: Annotated[Optional[Path], CERTS_OPTION] = None,
    cache: Annotated[Optional[Path], typer.Option(help="the lab's cache on this host (default $DBPERF_CACHE or "
                                                       "~/.cache/dbperf)")] = None,
    listen: Annotated[Optional[str], typer.Option(help="address to listen on (default: the interface that "
                                                       "reaches the scheduler)")] = None,
    join_timeout: Annotated[str, typer.Option(help="how long to keep trying to join the scheduler (e.g. 60s, "
                                                   "2m)")] = "60s",
    ready_file: Annotated[Optional[Path], typer.Option(hidden=True, help="written once joined (fleet local)")]
    = None,
) -> None:
    """Join the fleet as host NAME: one cell at a time, run with this host's dbperf, compiler and caches."""
    from dbperf.fleet.cluster import run_worker
    timeout = parse_duration(join_timeout, "--join-timeout", positive=True)
    run_worker(scheduler, check_name(name, "--name"), certs, cache, listen, timeout, ready_file)


def _fleet_end(end: Any, verbose: bool = False) -> None:
    report_after_run(RunEnd(end.directory, end.exit_code), verbose=verbose)


@fleet_app.command("run")
def fleet_run(
    experiment: Annotated[Path, typer.Argument(help="experiment file with a [fleet] section")],
    out: Annotated[Optional[Path], OUT_OPTION] = None,
    scheduler: Annotated[Optional[str], typer.Option(help="overrides [fleet] scheduler")] = None,
    certs: Annotated[Optional[Path], CERTS_OPTION] = None,
    resume: Annotated[bool, typer.Option("--resume", help="run the cells --out DIR lacks")] = False,
    keep_data: Annotated[bool, typer.Option(help="keep each host's loaded data")] = False,
    verbose: Annotated[bool, VERBOSE_OPTION] = False,
) -> None:
    """Run the matrix on the fleet's hosts; every record carries its host."""
    from dbperf.fleet.run import run_fleet
    _fleet_end(run_fleet(experiment, out, scheduler, certs, err_console, resume=resume, keep_data=keep_data),
               verbose)


@fleet_app.command("local")
def fleet_local(
    experiment: Annotated[Path, typer.Argument(help="experiment file")],
    workers: Annotated[int, typer.Option(help="workers (hosts local-1 ... local-N); at most 4 per CPU the lab may "
                                              "use, and as many as fit at 160 MiB each in half of MemAvailable")]
    = 2,
    out: Annotated[Optional[Path], OUT_OPTION] = None,
    tls: Annotated[bool, typer.Option("--tls", help="TLS with a fresh self-signed set")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="run the cells --out DIR lacks")] = False,
    keep_data: Annotated[bool, typer.Option(help="keep each host's loaded data")] = False,
    verbose: Annotated[bool, VERBOSE_OPTION] = False,
) -> None:
    """Start a scheduler and N workers on 127.0.0.1, run the experiment on them, stop them (all of them, also on
    Ctrl-C or SIGTERM while they start). N is capped by this host: 4 workers per CPU the lab may use, and 160 MiB
    (one worker's measured resident size) each within half of MemAvailable."""
    from dbperf.fleet.run import run_local
    _fleet_end(run_local(experiment, workers, out, err_console, tls=tls, resume=resume, keep_data=keep_data),
               verbose)


@fleet_app.command("certs")
def fleet_certs(
    directory: Annotated[Path, typer.Argument(help="new directory for the certificate set")],
    host: Annotated[Optional[list[str]], typer.Option("--host", help="a name or address the scheduler is reached "
                                                                     "by (repeat)")] = None,
) -> None:
    """Make a self-signed CA and a lab certificate for the scheduler, the workers and the controller."""
    from dbperf.fleet.certs import make_certs
    for path in make_certs(directory, host or []):
        out_console.print(str(path), markup=False, highlight=False)
