"""A server engine's process model is an object that is asked (engines/process_model.py): how its CPU time and
instructions are counted (explain/server_profile.py's counting_of chooses the counting from it, once) and what the
profile's method and perf's line say, in the words of the engine's descriptor: MySQL's name mysqld, never mariadbd."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from dbperf import engines
from dbperf.errors import UserError
from dbperf.explain import server_profile
from dbperf.explain.cachegrind import EVENTS, CachegrindProfile
from dbperf.explain.server_profile import ConnectionThreads, ExitedProcesses, Windows, counting_of
from dbperf.records import RunResult

pytestmark = pytest.mark.unit


def test_each_engine_has_its_process_model():
    assert [engines.engine(n).process_model.one_process for n in ("mariadb", "mysql", "postgres", "sqlite")] == [
        True, True, False, False]
    assert engines.engine("postgres").process_model.said == "a process per connection"
    assert engines.engine("mysql").process_model.said == "one process whose threads serve every connection"


def test_the_counting_is_chosen_by_the_process_model():
    assert isinstance(counting_of(engines.engine("mariadb")), ConnectionThreads)
    assert isinstance(counting_of(engines.engine("mysql")), ConnectionThreads)
    assert isinstance(counting_of(engines.engine("postgres")), ExitedProcesses)


@pytest.mark.parametrize(("name", "program"), [("mariadb", "mariadbd"), ("mysql", "mysqld")])
def test_a_threaded_servers_words_name_its_own_program(name, program):
    kind = engines.engine(name)
    counting = counting_of(kind)
    counted = Windows(CachegrindProfile(()), CachegrindProfile(()), _result(), held_s=12.4)
    method = counting.method(kind.server_program, 1000, 2000, counted)
    assert method.startswith(f"callgrind (cache and branch simulation) of {program}, the threads that served")
    assert "window held open as long, 12 s" in method and "divided by 2000 queries" in method
    assert counting.slowdown(kind.server_program) == (f"wall time of both windows of {program} under callgrind; not "
                                                       "timed natively")
    assert kind.perf_attached == f"{program}, every thread"
    others = {"mariadbd", "mysqld"} - {program}
    assert not any(other in method or other in kind.perf_attached for other in others)
    assert "callgrind --cache-sim=yes" in (counting.tool("valgrind-3.19.0") or "")


def test_a_process_per_connection_servers_words():
    kind = engines.engine("postgres")
    counting = counting_of(kind)
    method = counting.method(kind.server_program, 500, 500, Windows(CachegrindProfile(()), CachegrindProfile(()),
                                                                    _result()))
    assert method.startswith("cachegrind of the server processes that exited during 500 events (the connection's "
                             "backend and any worker it started) minus the same for 0 events")
    assert "autovacuum off" in method and "held open" not in method
    assert counting.tool("valgrind-3.19.0") is None  # the profiler's own cachegrind line
    assert kind.perf_attached == "the postmaster; the backends it forks in the window are inherited"


def _result() -> Any:
    return SimpleNamespace(events=100, errors=0)  # the driver's result: carried through, never read here


class FakeServers:
    """ServerProfiling's windows, recorded: (kind of window, events, hold)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, float]] = []

    def window(self, target: Any, benchmark: Any, events: int) -> tuple[CachegrindProfile, RunResult]:
        self.calls.append(("exits", events, 0.0))
        return CachegrindProfile(()), _result()

    def callgrind_window(self, target: Any, benchmark: Any, events: int,
                         hold_s: float = 0.0) -> tuple[CachegrindProfile, RunResult, float]:
        self.calls.append(("threads", events, hold_s))
        counts = {e: 3 * events for e in EVENTS}  # 3 of each event per query
        return CachegrindProfile(EVENTS, {"do_command": counts}), _result(), 7.5 if events else 8.0


def test_each_counting_runs_its_own_windows():
    servers = FakeServers()
    counted = counting_of(engines.engine("mysql")).windows(servers, None, None, 100)  # type: ignore[arg-type]
    assert servers.calls == [("threads", 100, 0.0), ("threads", 0, 7.5)]  # the 0-event window held as long
    assert counted.held_s == 7.5
    servers = FakeServers()
    counted = counting_of(engines.engine("postgres")).windows(servers, None, None, 100)  # type: ignore[arg-type]
    assert servers.calls == [("exits", 100, 0.0), ("exits", 0, 0.0)] and counted.held_s == 0.0


def _server(engine: str) -> SimpleNamespace:
    return SimpleNamespace(target=SimpleNamespace(engine=engine, descriptor=engines.engine(engine)), launch_prefix=[],
                           ready_timeout_s=60.0,
                           run_as_service_user=False)


def test_each_counting_launches_its_valgrind_tool(monkeypatch):
    monkeypatch.setattr(server_profile.shutil, "which", lambda name: f"/usr/bin/{name}")
    threaded = _server("mysql")
    counting_of(engines.engine("mysql")).launch(threaded, Path("/out"), ["setarch", "valgrind"])  # type: ignore[arg-type]
    assert threaded.launch_prefix[:3] == ["setarch", "valgrind", "--tool=callgrind"]
    assert threaded.launch_prefix[-1] == "--callgrind-out-file=/out/callgrind.out.%p"
    assert threaded.run_as_service_user and threaded.ready_timeout_s == server_profile.PROFILED_READY_TIMEOUT_S
    forked = _server("postgres")
    counting_of(engines.engine("postgres")).launch(forked, Path("/out"), ["setarch", "valgrind"])  # type: ignore[arg-type]
    assert forked.launch_prefix[2] == "--tool=cachegrind" and not forked.run_as_service_user
    assert forked.launch_prefix[-1] == "--cachegrind-out-file=/out/cachegrind.out.%p"


def test_a_threaded_server_without_callgrind_control_is_one_line_naming_it(monkeypatch):
    monkeypatch.setattr(server_profile.shutil, "which", lambda name: None)
    with pytest.raises(UserError, match=r"^callgrind_control not found: MySQL's counters need it"):
        counting_of(engines.engine("mysql")).launch(_server("mysql"), Path("/out"), [])  # type: ignore[arg-type]


def test_a_mysql_profile_says_mysqld_from_its_descriptor(tmp_path, monkeypatch):
    """The profiler asks the counting once and writes its words: a MySQL target's method names mysqld (it said
    mariadbd of MySQL when the choice was a string compared)."""
    from dbperf.experiment.spec import parse_experiment
    from dbperf.explain import profile
    from dbperf.explain.mode import CounterMode

    exp = tmp_path / "exp.toml"
    exp.write_text('[run]\nbenchmarks = ["point-query"]\n[[target]]\nname = "m"\nengine = "mysql"\n')
    e = parse_experiment(exp)
    monkeypatch.setattr(profile, "_valgrind_version", lambda: "valgrind-3.19.0")
    profiler = profile.Profiler(e, tmp_path, queries=100, mode=CounterMode("simulated", "no PMU here"))
    servers = FakeServers()
    profiler.servers = servers  # type: ignore[assignment]
    made = profiler.profile(e.targets[0], e.benchmarks[0])
    assert [c[0] for c in servers.calls] == ["threads", "threads"]
    assert made.method.startswith("callgrind (cache and branch simulation) of mysqld,")
    assert "mariadbd" not in made.method and made.per_query["instructions"] == 3
    assert made.tool.startswith("valgrind-3.19.0 callgrind") and made.queries == 100
    assert made.slowdown is not None and "of mysqld under callgrind" in made.slowdown.what
