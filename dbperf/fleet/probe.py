"""`dbperf probe --fleet`: every host of the fleet runs `dbperf probe` (its own compiler, its own CPU), one host at a
time is not needed (each probe runs on its own host), and the results come back as one JSON document per host.
`hosts_cpus`: the CPUs each host may use, for a fleet run to plan `[run].cpus` there (fleet/plan.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from distributed import Client

from dbperf.errors import UserError
from dbperf.fleet.cluster import connected_hosts, resource_of

TIMEOUT_S = 1800
CPUS_TIMEOUT_S = 60.0  # a worker that joined answers at once, unless another task holds its thread


def probe_on_host(args: list[str]) -> dict[str, Any]:
    """Runs on a host's worker: `dbperf probe --json ARGS` in a process of its own (the probes pin threads)."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "dbperf.cli", "probe", "--json", *args], capture_output=True,
                          text=True, timeout=TIMEOUT_S, env=env, cwd="/")
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()
        return {"error": tail[-1] if tail else f"dbperf probe exited with {proc.returncode}"}
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def probe_fleet(client: Client, args: list[str], hosts: list[str] | None = None,
                one_at_a_time: bool = False) -> dict[str, dict[str, Any]]:
    """Host name -> its probe result (or {"error": ...}), for every connected host (or those named). Hosts that
    share a machine (a local fleet) probe one at a time, so that they do not measure each other."""
    present = connected_hosts(client)
    names = hosts or sorted(present)
    missing = [h for h in names if h not in present]
    if missing:
        raise UserError(f"no worker for host(s) {', '.join(missing)} at the scheduler")
    if not names:
        raise UserError("no worker has joined the scheduler")
    def submit(host: str) -> Any:
        return client.submit(probe_on_host, args, key=f"dbperf-probe-{host}-{os.getpid()}", pure=False,
                             resources={resource_of(host): 1})

    if one_at_a_time:
        return {h: submit(h).result() for h in names}
    futures = {h: submit(h) for h in names}
    return {h: f.result() for h, f in futures.items()}


def allowed_cpus() -> list[int]:
    """Runs on a host's worker: the CPUs the lab may use there (the worker's affinity, which the child that runs
    the host's cells inherits)."""
    return sorted(os.sched_getaffinity(0))


def hosts_cpus(client: Client, hosts: list[str], run_id: str) -> dict[str, list[int]]:
    """Host name -> the CPUs it may use, asked on each host (its worker; they are connected). Each future is waited
    on through its own client: the lab's client is not Dask's default one, which distributed.wait would need."""
    futures = {h: client.submit(allowed_cpus, key=f"dbperf-cpus-{run_id}-{h}", pure=False,
                                resources={resource_of(h): 1}) for h in hosts}
    deadline = time.monotonic() + CPUS_TIMEOUT_S
    cpus: dict[str, list[int]] = {}
    for host, future in futures.items():
        try:
            cpus[host] = future.result(timeout=max(0.1, deadline - time.monotonic()))
        except TimeoutError:
            late = [h for h, f in futures.items() if not f.done()]
            client.cancel([futures[h] for h in late])
            raise UserError(f"host(s) {', '.join(late)} did not say which CPUs they may use within "
                            f"{CPUS_TIMEOUT_S:.0f} s (is another run using their worker?)") from None
        except Exception as err:  # the worker died or the call failed there: one line, no traceback
            raise UserError(f"host {host!r}: could not ask which CPUs it may use "
                            f"({type(err).__name__}: {err})") from None
    return cpus
