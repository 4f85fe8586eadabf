"""Dask's scheduler and worker as the lab runs them (`dbperf scheduler`, `dbperf worker`), and the controller's
client. TLS with the lab's certificates (certs.py) and `require_encryption`, so nothing crosses the wire in clear and
a peer without a certificate of the lab's CA is refused during the handshake.

A benchmark host must stay quiet between cells: the event loop's tick monitor, the system monitor, the memory
monitor and the statistical profiler wake Dask's processes tens of times a second by default; the lab slows them
down (IDLE_CONFIG). The scheduler marks a task erred the first time its worker dies (allowed_failures 0): a
matrix is never silently run twice on a host that came back."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import dask
from distributed import Client, Scheduler, Security, Worker

from dbperf.errors import UserError
from dbperf.fleet.certs import cert_files

IDLE_CONFIG: dict[str, Any] = {
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.tick.limit": "30s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.admin.system-monitor.disk": False,
    "distributed.admin.system-monitor.host-cpu": False,
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.worker.profile.enabled": False,
    "distributed.worker.memory.monitor-interval": "5s",
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": False,
    "distributed.scheduler.work-stealing": False,
    "distributed.scheduler.allowed-failures": 0,
    "distributed.scheduler.worker-ttl": "60s",
}


def resource_of(host: str) -> str:
    """The worker resource that pins a task to one host: one unit, so one matrix at a time."""
    return f"host-{host}"


LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def _loopback(address: str) -> bool:
    host = address.split("://", 1)[-1].rsplit(":", 1)[0]
    return host in LOOPBACK or host == ""


def security(certs: Path | None, address: str) -> Security:
    """Mutual TLS with the lab's set for tls:// addresses; a tls:// address without certificates is refused here,
    and a tcp:// address with certificates too (they would not be used). Plain tcp:// only on this machine
    (127.0.0.1): a Dask scheduler runs the code its clients send on every worker, so one that other machines can
    reach must authenticate them."""
    if not address.startswith(("tls://", "tcp://")):
        raise UserError(f"{address}: expected tls://HOST:PORT (or tcp://127.0.0.1:PORT on this machine)")
    if address.startswith("tcp://") and not _loopback(address):
        raise UserError(f"{address}: plain tcp:// is for 127.0.0.1 only; between machines the fleet uses tls:// "
                        "with the lab's certificates (dbperf fleet certs DIR)")
    if certs is None:
        if address.startswith("tls://"):
            raise UserError(f"{address}: a tls:// scheduler needs the lab's certificates (--certs DIR; "
                            "dbperf fleet certs DIR makes a set)")
        return Security()
    if not address.startswith("tls://"):
        raise UserError(f"{address}: certificates given but the address is not tls://")
    ca, cert, key = (str(p) for p in cert_files(certs))
    return Security(tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key, tls_scheduler_cert=cert,
                    tls_scheduler_key=key, tls_worker_cert=cert, tls_worker_key=key, require_encryption=True)


def _quiet_logs() -> None:
    # Dask logs every connection at INFO; a refused handshake is still logged at WARNING and above.
    for name in ("distributed", "distributed.scheduler", "distributed.worker", "distributed.core"):
        logging.getLogger(name).setLevel(logging.WARNING)


async def _until_signal(stopped: asyncio.Future[Any] | None = None) -> None:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(s, lambda: None if done.done() else done.set_result(None))
    waits: list[asyncio.Future[Any]] = [done] + ([stopped] if stopped is not None else [])
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)


def run_scheduler(host: str, port: int, certs: Path | None, address_file: Path | None,
                  announce: Any = print) -> None:
    """A Dask scheduler until SIGINT/SIGTERM/SIGHUP. Listens on `host` (127.0.0.1 by default: safe by default)."""
    if not 0 <= port <= 65535:  # Tornado would take 99999 as 34463 (modulo 65536) without a word
        raise UserError(f"--port: expected 0 (a free one) to 65535, got {port}")
    protocol = "tls" if certs else "tcp"
    sec = security(certs, f"{protocol}://{host}:{port}")
    _quiet_logs()

    async def main() -> None:
        with dask.config.set(IDLE_CONFIG):
            scheduler = Scheduler(host=host, port=port, protocol=protocol, security=sec, dashboard=False,
                                  dashboard_address=None, allowed_failures=0)
            try:
                await scheduler
            except RuntimeError as e:  # "Scheduler failed to start." wraps why (the port in use, a bad address)
                cause: BaseException = e
                while cause.__cause__ is not None:
                    cause = cause.__cause__
                raise UserError(f"cannot start the scheduler on {host}:{port}: {_one_line(cause)}") from None
            async with scheduler:
                announce(f"dbperf: scheduler listening on {scheduler.address}")
                if address_file:
                    tmp = address_file.with_suffix(".tmp")
                    tmp.write_text(scheduler.address + "\n")
                    os.replace(tmp, address_file)
                await _until_signal()

    asyncio.run(main())


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text or type(e).__name__


def run_worker(scheduler: str, name: str, certs: Path | None, cache: Path | None, listen: str | None,
               join_timeout: float = 60, ready_file: Path | None = None) -> None:
    """A Dask worker for host `name` until it is stopped or loses the scheduler: one thread, resource host-NAME.
    `cache` becomes the lab's cache directory for everything this worker builds (DBPERF_CACHE); `ready_file` is
    written once it joined (how `fleet local` counts its workers in)."""
    sec = security(certs, scheduler)
    if cache:
        os.environ["DBPERF_CACHE"] = str(cache.absolute())
    _quiet_logs()
    work = Path(os.environ.get("DBPERF_CACHE") or Path.home() / ".cache" / "dbperf") / "fleet-worker" / name
    work.mkdir(parents=True, exist_ok=True)

    async def main() -> None:
        with dask.config.set(IDLE_CONFIG):
            try:
                worker = await Worker(scheduler, name=name, nthreads=1, resources={resource_of(name): 1},
                                      security=sec, local_directory=str(work), host=listen, dashboard=False,
                                      death_timeout=join_timeout)
            except (OSError, TimeoutError) as e:
                raise UserError(f"{scheduler}: cannot join the scheduler as {name!r}: {e}") from None
            print(f"dbperf: worker {name} joined {scheduler} (listening on {worker.address}, cache "
                  f"{os.environ.get('DBPERF_CACHE', '~/.cache/dbperf')})", file=sys.stderr, flush=True)
            if ready_file:
                tmp = ready_file.with_suffix(".tmp")
                tmp.write_text(worker.address + "\n")
                os.replace(tmp, ready_file)
            finished = asyncio.ensure_future(worker.finished())
            await _until_signal(finished)
            with contextlib.suppress(Exception):
                await worker.close(reason="dbperf worker stopped")

    asyncio.run(main())


def connect(address: str, certs: Path | None, timeout: float = 30) -> Client:
    """The controller's client."""
    sec = security(certs, address)
    _quiet_logs()
    dask.config.set(IDLE_CONFIG)  # this process's Dask config: the controller has no other Dask work
    try:
        return Client(address, security=sec, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as e:
        raise UserError(f"{address}: cannot reach the Dask scheduler: {e}") from None


def connected_hosts(client: Client) -> dict[str, str]:
    """Worker name -> address, as the scheduler sees them now.

    Asks the scheduler directly rather than through `Client.scheduler_info()`: that returns the client's cached
    identity, which the client's own periodic refresh (totals only, no workers) can overwrite between the fetch and
    the return; a controller that read it then saw every worker gone at once and failed its hosts as lost."""
    info = client.sync(client.scheduler.identity, n_workers=-1)
    return {str(w.get("name")): addr for addr, w in info.get("workers", {}).items()}
