"""The micro-probes' use cases: probe this CPU, or every host of a fleet; store a result; load a stored one."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from dbperf.errors import UserError
from dbperf.output_file import write_file
from dbperf.probes.catalog import DEFAULT
from dbperf.probes.run import run_probes
from dbperf.usecases.progress import PROGRESS


def refuse_held(out: Path | None, force: bool) -> None:
    """A stored probe result is a measurement: refused before probing, not after."""
    if out is not None and not force:
        held = [p for p in (out / "probes.json", *out.glob("*/probes.json")) if p.exists()]
        if held:
            raise UserError(f"--out {out}: already holds a probe result ({held[0]}); add --force to replace it")


def probe_here(names: list[str] | None, repeats: int, scale: float, out: Path | None, force: bool,
               err: Console = PROGRESS) -> dict:
    """The families on this CPU (those that fetch nothing by default), stored as DIR/probes.json with `out`."""
    result = run_probes(names or DEFAULT, repeats=repeats, scale=scale,
                        on_family=lambda f: err.print(f"dbperf: probing {f.name}: {f.description}", highlight=False),
                        announce=lambda said: err.print(f"dbperf: {said}", highlight=False))
    if out:
        store_probes(out, result, force)
    return result


def store_probes(directory: Path, result: dict, force: bool) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"{directory}: cannot write results: {e.strerror}") from None
    write_file(directory / "probes.json", json.dumps(result, indent=2) + "\n", force, "probes.json", "--out")


def load_probes(directory: Path) -> dict:
    path = directory / "probes.json" if directory.is_dir() else directory
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise UserError(f"{path}: not a stored probe result ({e})") from None
    except RecursionError:  # [[[[... deeper than the json module goes
        raise UserError(f"{path}: not a stored probe result (nested too deeply)") from None


def probe_fleet(names: list[str], repeats: int, scale: float, scheduler: str | None, certs: Path | None,
                local: int, out: Path | None, force: bool, err: Console = PROGRESS) -> dict[str, dict]:
    """`probe --fleet`: each host probes itself (dbperf/fleet/probe.py); DIR/HOST/probes.json with `out`."""
    # Imported here: Dask distributed costs every dbperf start about half a second (cli/fleet.py).
    from dbperf.fleet.cluster import connect
    from dbperf.fleet.local import local_fleet
    from dbperf.fleet.probe import probe_fleet as probe_hosts
    if local < 0:
        raise UserError(f"--local: expected a number of workers of at least 1, got {local}")
    if (scheduler is None) == (local == 0):
        raise UserError("--fleet: give the fleet's --scheduler, or --local N for N workers on this machine")
    args = [*names, "--repeats", str(repeats), "--scale", str(scale)]
    with contextlib.ExitStack() as stack:
        if local:
            lf = stack.enter_context(local_fleet(local))
            scheduler, certs = lf.scheduler, lf.certs
        assert scheduler is not None
        client = connect(scheduler, certs)
        stack.callback(client.close)
        if local:
            _wait_local(client, local)
        err.print("dbperf: probing every host of the fleet", highlight=False)
        results = probe_hosts(client, args, one_at_a_time=bool(local))
    if out:
        for host, result in results.items():
            store_probes(out / host, result, force)
    return results


def _wait_local(client: Any, workers: int) -> None:
    from dbperf.fleet.cluster import connected_hosts
    from dbperf.fleet.local import START_TIMEOUT_S, local_names
    deadline = time.monotonic() + START_TIMEOUT_S
    while not set(local_names(workers)) <= set(connected_hosts(client)):
        if time.monotonic() > deadline:
            raise UserError("the local workers did not join the scheduler")
        time.sleep(0.2)
