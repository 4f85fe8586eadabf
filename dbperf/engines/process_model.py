"""How a server's processes serve its connections: the one fact that decides how the server's CPU time and
instructions are counted (explain/server_profile.py chooses its counting from it, once), what perf stat attaches to,
and what the methods and refusals say. An engine's descriptor holds one (`process_model`); callers ask it instead of
comparing a name.

PostgreSQL forks a backend per connection, which exits with it: a profile of each exited process (cachegrind), or
perf attached to the parent, which the forked backends inherit. MariaDB's mariadbd and MySQL's mysqld are one process
whose threads serve every connection and which exits only at shutdown: counted while it runs (callgrind, zeroed and
dumped on demand), the threads that served the connection alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class ProcessModel:
    """The kind: in-process, the library running inside the driver (SQLite); a server is one of the subclasses."""
    # One long-lived process serves every connection with threads: it is counted while it runs, never at its exit.
    one_process: ClassVar[bool] = False
    said: ClassVar[str] = "the engine runs inside the driver's process"  # for messages: what its processes are

    def perf_attached(self, program: str) -> str:
        """What `perf stat -p` is attached to, for a profile's method line (`program`: the engine's server_program)."""
        return program


@dataclass(frozen=True)
class Threads(ProcessModel):
    one_process: ClassVar[bool] = True
    said: ClassVar[str] = "one process whose threads serve every connection"

    def perf_attached(self, program: str) -> str:
        return f"{program}, every thread"


@dataclass(frozen=True)
class ProcessPerConnection(ProcessModel):
    said: ClassVar[str] = "a process per connection"
    parent: str = ""  # the process that forks them, as the method names it ("the postmaster")

    def perf_attached(self, program: str) -> str:
        return f"{self.parent or program}; the backends it forks in the window are inherited"


IN_PROCESS = ProcessModel()
THREADS = Threads()
