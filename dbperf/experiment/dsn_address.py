"""Where an external server's `dsn` points: one host and port, or a Unix socket (MySQL's `socket=`, libpq's
`host=/dir`), read as the driver reads them. The experiment's parser refuses a port that is no port number here, and
a run (and its dry run) looks whether something answers there before it claims its results folder."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote

from dbperf.errors import UserError


@dataclass(frozen=True)
class DsnAddress:
    host: str = ""
    port: int = 0
    socket: str = ""  # a Unix socket, or the directory that holds it (libpq's host=/var/run/postgresql)

    def said(self) -> str:
        return self.socket or f"{self.host}:{self.port}"


def _port(text: str, where: str) -> int:
    # ASCII digits only: int() would take "５４３２", which the driver does not
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 65535):
        raise UserError(f"{where}: port {text!r} is not a port number (1 to 65535)")
    return int(text)


def _host_port(hostport: str, default_port: int, where: str) -> tuple[str, int]:
    host, colon, port = hostport.rpartition(":")
    if not colon or port.endswith("]"):  # no port, or an IPv6 address in brackets without one
        return hostport.strip("[]"), default_port
    return host.strip("[]"), _port(port, where) if port else default_port


def dsn_address(dsn: str, default_port: int | None, where: str) -> DsnAddress | None:
    """The address `dsn` names, its ports checked (a UserError naming `where`); None when it names several hosts or
    none (the driver's defaults): not looked at."""
    rest = dsn.split("://", 1)[-1]
    rest, _, query = rest.partition("?")
    authority = rest.split("/", 1)[0].rpartition("@")[2]
    hosts = [_host_port(h, default_port or 0, where) for h in authority.split(",")]
    params = dict(parse_qsl(query))
    port = _port(params["port"], where) if "port" in params else hosts[0][1]
    socket = params.get("socket") or params.get("host") or unquote(hosts[0][0])
    if socket.startswith("/"):
        return DsnAddress(socket=socket)
    if len(hosts) > 1 or not hosts[0][0] or "host" in params or "hostaddr" in params:
        return None
    return DsnAddress(unquote(hosts[0][0]), port)
