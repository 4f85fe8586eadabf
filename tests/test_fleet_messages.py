"""The fleet's messages (dbperf/fleet/messages.py): each kind survives the trip through a Dask structured event's
builtins, a message that is not one is refused in one line naming who sent it, and the controller acts on decoded
messages (no Dask cluster: events are fed to it as its subscription would)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
from rich.console import Console

from dbperf.experiment.spec import parse_experiment
from dbperf.fleet import controller as fleet_controller
from dbperf.fleet.controller import Controller
from dbperf.fleet.messages import (
    Done,
    FutureChanged,
    HostStarted,
    Message,
    MessageError,
    RecordLine,
    decode,
    to_event,
)
from dbperf.records import CellRecord, encode
from dbperf.storage.results import read_results

pytestmark = pytest.mark.unit

MESSAGES: list[Message] = [
    HostStarted(host="h1", metadata={"cpu_model": "x", "dbperf_version": "1.0", "cpus": 4}, worker="tcp://w:1",
                at=1700000000.5),
    RecordLine(host="h1", line='{"target": "A", "benchmark": "b", "threads": 1, "repeat": 1}\n'),
    Done(host="h1", exit_code=0, records=3, meta={"status": "complete", "targets": [{"name": "A"}]},
         work_dir="/w/run-h1"),
    Done(host="h2", exit_code=1, records=0, meta=None, work_dir="/w/run-h2", stderr_tail="boom\n"),
    FutureChanged(host="h1"),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_each_kind_goes_through_an_events_builtins_and_back(message: Message) -> None:
    event = msgspec.to_builtins(message)
    assert json.loads(json.dumps(event)) == event  # plain builtins, as log_event carries
    assert decode(event) == message
    if not isinstance(message, FutureChanged):
        assert to_event(message) == event


@pytest.mark.parametrize("message", [m for m in MESSAGES if not isinstance(m, FutureChanged)],
                         ids=lambda m: type(m).__name__)
def test_the_address_the_scheduler_stamps_on_a_workers_event_is_read(message: Message) -> None:
    """distributed's Scheduler.log_worker_event sets `worker` in every dict a worker logs."""
    event = {**to_event(message), "worker": "tcp://10.0.0.2:4000"}
    decoded = decode(event)
    assert type(decoded) is type(message) and decoded.worker == "tcp://10.0.0.2:4000"  # type: ignore[union-attr]


def test_the_kinds_are_tagged_as_they_were() -> None:
    assert [msgspec.to_builtins(m)["kind"] for m in MESSAGES] == ["host", "record", "done", "done", "future"]


@pytest.mark.parametrize("event, message", [
    ({"kind": "done", "host": "h1", "exit_code": "zero", "records": 0, "meta": None, "work_dir": "/w"},
     r"^host h1 sent a message that is not one \(Expected `int`, got `str` - at `\$\.exit_code`\)$"),
    ({"kind": "gossip", "host": "h2"}, r"^host h2 sent a message that is not one \(.*`\$\.kind`\)$"),
    ({"kind": "record", "host": "h1"}, r"^host h1 sent a message that is not one \(.*`line`.*\)$"),
    ({"kind": "host", "host": "h3", "worker": "tcp://w:9", "metadata": {}, "at": 1.0, "extra": 1},
     r"^host h3 \(tcp://w:9\) sent a message that is not one \(Object contains unknown field `extra`\)$"),
    ({"kind": "host", "host": "h3", "worker": "tcp://w:9", "metadata": [], "at": 1.0},
     r"^host h3 \(tcp://w:9\) sent a message that is not one \(Expected `object`, got `array` - at `\$\.metadata`\)$"),
    ({"host": "h1", "line": "{}"}, r"^host h1 sent a message that is not one \(.*`kind`.*\)$"),
    ("not a message", r"^a worker sent a message that is not one \(Expected `object`, got `str`\)$"),
    ({"kind": "record", "line": "{}"}, r"^a worker sent a message that is not one \(.*`host`.*\)$"),
])
def test_a_message_that_is_not_one_is_one_line_naming_its_sender(event: Any, message: str) -> None:
    with pytest.raises(MessageError, match=message) as err:
        decode(event)
    assert "\n" not in str(err.value)
    assert err.value.__cause__ is None and err.value.__suppress_context__


ONE_HOST = """
[run]
benchmarks = ["point-query"]
table_size = 2000
time = "0.5s"
repeats = 1

[[target]]
name = "A"

[fleet]
hosts = ["h1"]
"""


def test_the_controller_acts_on_decoded_messages_and_reports_a_bad_one_in_one_line(
        write_experiment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    e = parse_experiment(write_experiment(ONE_HOST))
    here = sorted(os.sched_getaffinity(0))
    monkeypatch.setattr(fleet_controller, "hosts_cpus", lambda _client, hosts, _run_id: {h: here for h in hosts})
    out = io.StringIO()
    controller = Controller(e, None, tmp_path / "out", Console(file=out, width=300), "tcp://127.0.0.1:8786", [])
    controller._plan_host_cpus()
    writer = controller._open_results()
    run = controller.hosts["h1"]
    run.status = "running"
    assert controller.meta.host is not None
    cell = CellRecord(target="A", benchmark="point-query", threads=1, repeat=1, status="failed", error="x")
    events: list[Any] = [
        to_event(HostStarted(host="h1", metadata=msgspec.to_builtins(controller.meta.host), worker="tcp://w:1",
                             at=1.0)),
        to_event(RecordLine(host="h1", line=(encode(cell) + b"\n").decode())),
        {"kind": "done", "host": "h1", "exit_code": "zero"},
        to_event(RecordLine(host="elsewhere", line="{}")),  # not one of this run's hosts: ignored
        to_event(Done(host="h1", exit_code=0, records=1, meta={"targets": [{"name": "A"}]}, work_dir="/w")),
    ]
    for event in events:
        controller._receive((0.0, event))
    handled = []
    while not controller.events.empty():
        handled.append(controller._handle(writer, controller.events.get()))
    writer.close()
    assert isinstance(handled[1], CellRecord) and handled[1].benchmark == "point-query"
    assert out.getvalue().splitlines() == [
        "dbperf: error: host h1 sent a message that is not one (Expected `int`, got `str` - at `$.exit_code`); ignored"]
    assert run.status == "complete" and run.worker == "tcp://w:1"
    _, records, _ = read_results(tmp_path / "out")
    assert [(r.host, r.benchmark) for r in records if isinstance(r, CellRecord)] == [("h1", "point-query")]
    hosts = json.loads((tmp_path / "out" / "meta.json").read_text())["fleet"]["hosts"]
    assert hosts["h1"]["status"] == "complete" and hosts["h1"]["worker"] == "tcp://w:1"
    assert hosts["h1"]["targets"] == [{"name": "A"}]
