"""A server process the lab started: started in its own session, stopped TERM then KILL on every exit path
(normal end, errors, Ctrl-C, TERM/HUP, interpreter exit; when the lab is killed hard, the watchdog), its log kept
in the results directory. Servers get the lab's environment without any password in it."""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from dbperf.errors import UserError
from dbperf.host.cpus import pinned
from dbperf.host.procfs import session_members, socket_inodes, tcp_listeners
from dbperf.servers.watchdog import Watchdog
from dbperf.tools import run_tool

STOP_TIMEOUT_S = 30.0
LOG_TAIL_LINES = 15
_running: set[ServerProcess] = set()
# Environment variables that hold a password (the lab's own, and every external target's password_env): never
# passed on to a server or a set-up tool.
SECRET_ENV = {"DBPERF_SERVER_PASSWORD", "DBPERF_PASSWORD"}


def server_environ(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV}
    return {**env, **(extra or {})}


def run_probe(argv: Sequence[str | Path], user: str, what: str, timeout: float = 60) -> str:
    """What a program of a server's install prints (its version), run as the server's user `user` (when the lab is
    root; else as the lab's own user, as the server will be), never as root, and with GCOV_PREFIX pointing at a
    scratch folder. A PGO build's instrumented programs write their profile at exit: run as root, they left
    root-owned .gcda that the training's processes then could not open, and the profile was lost; the
    scratch folder keeps a probe's counts out of the profile altogether."""
    scratch = Path(tempfile.mkdtemp(prefix="dbperf-probe-"))
    try:
        as_user = None
        if os.geteuid() == 0:
            try:
                entry = pwd.getpwnam(user)
            except KeyError:
                raise UserError(f"{what}: user {user} not found") from None
            os.chown(scratch, entry.pw_uid, entry.pw_gid)
            as_user = user
        return run_tool(argv, what, timeout=timeout, user=as_user, cwd="/",
                        env=server_environ({"GCOV_PREFIX": str(scratch)})).stdout
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unprivileged_port_start() -> int:
    """The lowest port a user other than root may listen on (Linux's sysctl; 1024 where it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_unprivileged_port_start").read_text())
    except (OSError, ValueError):
        return 1024


def check_port_free(port: int, user: str) -> None:
    """`port` on 127.0.0.1 one a lab server running as `user` can listen on: free, and not one only root may take
    (the lab, as root, could bind it; the server, as its service user, could not)."""
    lowest = unprivileged_port_start()
    if port < lowest and user != "root":
        raise UserError(f"port {port} is below {lowest}: only root may listen on it, and the server runs as user "
                        f"{user}; choose a port from {lowest} to 65535, or none (a free one is taken)")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            raise UserError(f"port {port} on 127.0.0.1 is already in use (not free for the lab's server); choose "
                            "another port, or none (a free one is taken)") from None


def log_tail(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return ""


class ServerProcess:
    def __init__(self, argv: list[str], log: Path, user: str | None, env: dict[str, str] | None = None) -> None:
        self.argv = argv
        self.log = log
        self.user = user
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.cpus: frozenset[int] | None = None  # pinned from the start: backends and threads inherit it

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log, pinned(self.cpus):
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         user=self.user, start_new_session=True,
                                         env=server_environ(self.env), cwd="/")
        _running.add(self)
        Watchdog.get().watch_group(self.proc.pid)  # its own session: the process group id is its pid

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_port(self, port: int, timeout_s: float) -> None:
        """Until the server accepts TCP connections on 127.0.0.1:port; a UserError with the log's tail if it
        exits or does not come up in time."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive():
                raise UserError(f"server exited during start-up: {last_error_line(self.log)}")
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.settimeout(0.5)
                if s.connect_ex(("127.0.0.1", port)) == 0 and self.listens_on(port):
                    return
            time.sleep(0.1)
        self.stop()
        raise UserError(f"server did not accept connections within {timeout_s:.0f} s: {last_error_line(self.log)}")

    def listens_on(self, port: int) -> bool:
        """Whether the socket listening on `port` is this server's (its session's): another process can bind a
        port the lab chose between free_port and the server's own bind, and would answer the lab's connection
        while this server fails to bind. True where /proc/net/tcp cannot be read (nothing to check against)."""
        listening = tcp_listeners(port)
        if listening is None:
            return True
        return bool(listening & socket_inodes(session_members(self.pid)))

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        # Whatever the server forked and left behind in its session goes too.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        _running.discard(self)
        Watchdog.get().forget_group(self.proc.pid)


# Lines that name the bad setting itself (and its value), preferred over the generic FATAL or "[ERROR] Aborting"
# that follows them.
SPECIFIC = ("unrecognized configuration parameter", "unknown variable", "invalid value", "unknown option",
            "Unknown suffix", "Error while setting value", "is outside the valid range")


def last_error_line(log: Path) -> str:
    lines = log_tail(log, 40).splitlines()
    for line in lines:
        if any(s in line for s in SPECIFIC):
            return line.strip()
    for line in reversed(lines):
        if any(w in line for w in ("ERROR", "FATAL", "error", "unknown variable", "unrecognized")):
            return line.strip()
    return lines[-1].strip() if lines else f"no output in {log}"


@atexit.register
def _stop_all() -> None:
    for server in list(_running):
        server.stop()
