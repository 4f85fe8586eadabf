"""What a host's worker runs for one fleet run: its part of the matrix in a child process (hostrun.py), every
record forwarded to the controller the moment the child writes it (Dask's structured events: worker -> scheduler ->
the controller's subscription), and a cancel from the controller (a Dask Event) turned into SIGINT for the child,
which stops its driver and servers as Ctrl-C does in `dbperf run`."""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
from distributed import Event, get_client, get_worker

from dbperf.buildlab.paths import cache_root
from dbperf.errors import UserError
from dbperf.fleet.messages import Done, HostStarted, RecordLine, WorkerMessage, to_event
from dbperf.host.facts import host_metadata
from dbperf.storage.results import read_meta

STDERR_TAIL = 4000


def topic_of(run_id: str) -> str:
    return f"dbperf-fleet-{run_id}"


def cancel_event_of(run_id: str) -> str:
    return f"dbperf-fleet-cancel-{run_id}"


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-STDERR_TAIL:]
    except OSError:
        return ""


def _watch_cancel(child: subprocess.Popen[bytes], event: Event, stop: threading.Event) -> None:
    while not stop.is_set() and child.poll() is None:
        with contextlib.suppress(Exception):  # a scheduler gone for a moment: keep waiting
            if event.wait(timeout=1.0):
                with contextlib.suppress(ProcessLookupError):
                    child.send_signal(signal.SIGINT)
                return
        if stop.wait(0):
            return


def host_matrix(job: dict[str, Any], run_id: str) -> dict[str, Any]:
    """Runs on the host's worker (resource host-NAME). Returns how the child ended; the records, the host's
    metadata and the child's meta.json went to the controller as events."""
    worker = get_worker()
    host = job["host"]
    topic = topic_of(run_id)

    def emit(message: WorkerMessage) -> None:
        worker.log_event(topic, to_event(message))

    emit(HostStarted(host=host, metadata=host_metadata(), worker=worker.address, at=time.time()))
    work = cache_root() / "fleet-runs" / f"{run_id}-{host}"
    work.parent.mkdir(parents=True, exist_ok=True)
    stderr_path = work.parent / f"{run_id}-{host}.stderr"
    read_fd, write_fd = os.pipe()
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    with open(stderr_path, "wb") as stderr:
        child = subprocess.Popen([sys.executable, "-m", "dbperf.fleet.hostrun", str(write_fd), str(work)],
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr,
                                 pass_fds=(write_fd,), start_new_session=True, env=env, cwd="/")
    os.close(write_fd)
    assert child.stdin is not None
    child.stdin.write(pickle.dumps(job))
    child.stdin.flush()  # left open: its end of file tells the child that this worker is gone
    stop = threading.Event()
    # The client is the task's (get_client works in the task's thread only).
    cancel = Event(cancel_event_of(run_id), client=get_client())
    watcher = threading.Thread(target=_watch_cancel, args=(child, cancel, stop), daemon=True)
    watcher.start()
    sent = 0
    try:
        with os.fdopen(read_fd, "rb") as records:
            for line in records:
                emit(RecordLine(host=host, line=line.decode("utf-8", errors="replace")))
                sent += 1
        code = child.wait()
    finally:
        stop.set()
        if child.poll() is None:  # this task is failing: the child must not outlive it
            child.send_signal(signal.SIGTERM)
            child.wait()
        with contextlib.suppress(OSError):
            child.stdin.close()
    meta: dict[str, Any] | None = None
    with contextlib.suppress(UserError):  # the child ended before it wrote one
        meta = msgspec.to_builtins(read_meta(work))
    if not job.get("keep_data"):
        shutil.rmtree(work, ignore_errors=True)
    ended = Done(host=host, exit_code=code, records=sent, meta=meta, work_dir=str(work),
                 stderr_tail=_tail(stderr_path) if code else "")
    stderr_path.unlink(missing_ok=True)
    emit(ended)
    return {"exit_code": code, "records": sent}
