"""Whether something answers where an external server's `dsn` points (a TCP connection opened and closed, or its
Unix socket there), looked at by a run and its dry run before the results folder is claimed: a closed port is
otherwise found by the first cell, in a folder the next `run --out` refuses. Nothing is logged into."""

from __future__ import annotations

import socket
from pathlib import Path

from dbperf.errors import UserError
from dbperf.experiment.dsn_address import dsn_address
from dbperf.experiment.model import Target

CONNECT_TIMEOUT_S = 5.0  # a server on another host, over a slow link, still answers a SYN within it


def check_answering(t: Target) -> str:
    """What was found where `t`'s dsn points, or a UserError saying why nothing is there."""
    assert t.dsn is not None
    address = dsn_address(t.dsn, t.descriptor.default_port, f"target {t.name!r}: dsn")
    if address is None:
        return "an external server (several or default hosts: not contacted)"
    if address.socket:
        if not Path(address.socket).exists():
            raise UserError(f"dsn: no {address.socket} (the server's Unix socket, or its directory): is the server "
                            "running?")
        return f"an external server at {address.socket} (not logged in)"
    try:
        with socket.create_connection((address.host, address.port), timeout=CONNECT_TIMEOUT_S):
            pass
    except socket.gaierror:
        raise UserError(f"dsn: host {address.host!r} not found") from None
    except ConnectionRefusedError:
        raise UserError(f"dsn: nothing listens at {address.said()} (connection refused): is the server running, on "
                        "that port?") from None
    except TimeoutError:
        raise UserError(f"dsn: no answer from {address.said()} within {CONNECT_TIMEOUT_S:.0f} s") from None
    except OSError as err:
        raise UserError(f"dsn: cannot reach {address.said()}: {err.strerror or err}") from None
    return f"an external server answering at {address.said()} (not logged in)"
