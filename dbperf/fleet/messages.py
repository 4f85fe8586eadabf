"""The messages of a fleet run, as tagged structs: what a host's task (task.py) tells the controller, and the
controller's own note that a task's future changed state. One union, `Message`, tagged by `kind`.

The worker sends them as Dask structured events (`log_event`), which carry plain builtins only: a message is
turned into builtins once where it is sent (`to_event`) and decoded once where it is received (`decode`), into its
type, its fields checked. The scheduler stamps every worker's event with that worker's address (`worker`, in
distributed's `Scheduler.log_worker_event`): every message a task sends has that field. A message that is not one
is a `MessageError` of one line naming the host (and worker) that sent it. Both ends run the same dbperf (the
controller warns otherwise): no older form is read."""

from __future__ import annotations

from typing import Any

import msgspec


class HostStarted(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="kind", tag="host"):
    """The host's task started: the host's facts (dbperf.host.facts.host_metadata) and its worker's address (the
    task's own; the scheduler's stamp is the same)."""
    host: str
    metadata: dict[str, Any]
    worker: str
    at: float


class RecordLine(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="kind", tag="record"):
    """One line of results the host's child wrote (a results.jsonl line, decoded by the controller's records)."""
    host: str
    line: str
    worker: str = ""  # set by the scheduler


class Done(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="kind", tag="done"):
    """The task's final report: how the child ended, how many lines it sent, its meta.json (as builtins; None if
    the child ended before it wrote one), where it worked, and its standard error's tail if it failed."""
    host: str
    exit_code: int
    records: int
    meta: dict[str, Any] | None
    work_dir: str
    stderr_tail: str = ""
    worker: str = ""  # set by the scheduler


class FutureChanged(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="kind", tag="future"):
    """The controller's own: the host's task's future changed state (finished, failed, cancelled)."""
    host: str


Message = HostStarted | RecordLine | Done | FutureChanged
WorkerMessage = HostStarted | RecordLine | Done  # what a host's task sends


class MessageError(Exception):
    """A message that is not one, in one line naming who sent it."""


def to_event(message: WorkerMessage) -> dict[str, Any]:
    """A message as the builtins a Dask structured event carries (its `kind` included)."""
    event: dict[str, Any] = msgspec.to_builtins(message)
    return event


def _sender(event: object) -> str:
    if not isinstance(event, dict):
        return "a worker"
    host, worker = event.get("host"), event.get("worker")
    named = f"host {host}" if isinstance(host, str) and host else "a worker"
    return f"{named} ({worker})" if isinstance(worker, str) and worker else named


def decode(event: object) -> Message:
    """An event received from a host's task (or the controller's own) as its message, or MessageError."""
    try:
        return msgspec.convert(event, type=Message)
    except msgspec.ValidationError as err:
        reason = " ".join(str(err).split())
        raise MessageError(f"{_sender(event)} sent a message that is not one ({reason})") from None
