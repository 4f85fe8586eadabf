"""A port the lab chose (free_port) but someone else bound before the server could: the server's start is tried
again on another port, on both servers, and a port the user named is never replaced."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

import dbperf.servers.lifecycle as lifecycle
from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.servers.registry import server_target
from tests.conftest import NEEDS_SERVERS
from tests.test_servers import experiment, lab_processes

pytestmark = [pytest.mark.server, NEEDS_SERVERS]


@pytest.fixture
def taken() -> Iterator[int]:
    """A port bound (not listening: a connection to it is refused) by this test for as long as it runs."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


@pytest.fixture
def answered() -> Iterator[int]:
    """A port another process listens on: a connection to it succeeds, but not to the lab's server."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.mark.parametrize("engine", ["postgres", "mariadb"])
def test_a_chosen_port_taken_before_the_server_binds_it_is_replaced(where, monkeypatch, taken, engine):
    _replaced(where, monkeypatch, taken, engine)


def test_a_chosen_port_another_listener_answers_on_is_not_taken_for_the_server(where, monkeypatch, answered):
    """The other listener accepts the lab's connection while the server fails to bind: the lab does not take it
    for the server's (it would load and measure someone else's server, or fail on its password)."""
    _replaced(where, monkeypatch, answered, "postgres")


def _replaced(where, monkeypatch, taken: int, engine: str) -> None:
    chosen = iter([taken])
    real = lifecycle.free_port
    monkeypatch.setattr(lifecycle, "free_port", lambda: next(chosen, None) or real())
    exp = parse_experiment(experiment(where, f'[[target]]\nname = "s"\nengine = "{engine}"\n'))
    server = server_target(where / "s", where / "logs", exp.targets[0], exp)
    try:
        server.start()
        assert server.port not in (None, taken)
        assert lifecycle.ADDRESS_IN_USE in (where / "logs").joinpath(server.log.name).read_text()
        server.load()  # it answers on the port it got
    finally:
        server.stop()
    assert lab_processes() == []


def test_a_port_the_user_named_is_not_replaced(where, taken):
    exp = parse_experiment(experiment(where, f'[[target]]\nname = "s"\nengine = "postgres"\nport = {taken}\n'))
    server = server_target(where / "s", where / "logs", exp.targets[0], exp)
    with pytest.raises(UserError, match=f"port {taken} on 127.0.0.1 is already in use"):
        server.start()
    server.stop()
