"""Processes as Linux's /proc shows them: one parser of /proc/PID/stat and one walk over every process, beneath the
lab's process trees (resources, tool runs), its own children (the driver, the simulated tier's tools) and a build's
session (the build lab's staging)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcStat:
    """One line of /proc/PID/stat (proc(5)): `fields` are the fields after the command, from `state` on."""
    pid: int
    comm: str
    fields: tuple[str, ...]

    @property
    def state(self) -> str:
        return self.fields[0]

    @property
    def ppid(self) -> int:
        return int(self.fields[1])

    @property
    def session(self) -> int:
        return int(self.fields[3])

    @property
    def user_ticks(self) -> int:
        """utime + cutime (its reaped children's), in clock ticks."""
        return int(self.fields[11]) + int(self.fields[13])

    @property
    def system_ticks(self) -> int:
        """stime + cstime, in clock ticks."""
        return int(self.fields[12]) + int(self.fields[14])


def parse_stat(pid: int, text: str) -> ProcStat:
    # pid (comm) state ppid pgrp session ...: comm may hold spaces and parentheses, so split after the last ')'.
    end = text.rindex(")")
    return ProcStat(pid, text[text.find("(") + 1:end], tuple(text[end + 2:].split()))


def stat(pid: int) -> ProcStat | None:
    """The process's /proc/PID/stat, or None when it is gone."""
    try:
        return parse_stat(pid, Path(f"/proc/{pid}/stat").read_text())
    except OSError:
        return None


def processes() -> Iterator[ProcStat]:
    """Every process of the host (those that end during the walk left out)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (s := stat(int(entry.name))) is not None:
            yield s


def process_tree(root: int) -> list[int]:
    """`root` and its descendants, from /proc/*/stat."""
    parents = {s.pid: s.ppid for s in processes()}
    members, i = [root], 0
    while i < len(members):
        members.extend(pid for pid, ppid in parents.items() if ppid == members[i])
        i += 1
    return members


def session_members(sid: int) -> list[int]:
    """The live (not zombie) processes of session `sid`."""
    return [s.pid for s in processes() if s.session == sid and s.state != "Z"]


def children_named(name: str) -> list[int]:
    """This process's children whose command is `name` (the kernel keeps its first 15 characters)."""
    me = os.getpid()
    return [s.pid for s in processes() if s.comm == name[:15] and s.ppid == me]


def own_children() -> set[int]:
    """This process's child processes (of every thread), by id, from /proc/self/task/*/children."""
    pids: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        with contextlib.suppress(OSError, ValueError):
            pids |= {int(p) for p in (task / "children").read_text().split()}
    return pids


TCP_LISTEN = "0A"  # the `st` column of /proc/net/tcp (include/net/tcp_states.h)


def tcp_listeners(port: int) -> set[int] | None:
    """The socket inodes listening on TCP `port` (any address, IPv4 or IPv6) in this network namespace, from
    /proc/net/tcp and tcp6; None where neither can be read."""
    found: set[int] = set()
    readable = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        readable = True
        for line in lines:
            fields = line.split()
            # sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            if len(fields) > 9 and fields[3] == TCP_LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(int(fields[9]))
    return found if readable else None


def socket_inodes(pids: list[int]) -> set[int]:
    """The inodes of the sockets these processes hold open (those that end or cannot be read left out)."""
    inodes: set[int] = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inodes.add(int(target[8:-1]))
    return inodes


def proc_io(pid: int, fields: tuple[str, ...]) -> dict[str, int] | None:
    """The named counters of /proc/PID/io, or None when it cannot be read (gone, or another user's)."""
    try:
        text = Path(f"/proc/{pid}/io").read_text()
    except OSError:
        return None
    values = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {k: int(values[k]) for k in fields if k in values}


def context_switches(pid: int) -> tuple[int, int]:
    """Voluntary and involuntary context switches of every thread of the process (OSError when it is gone)."""
    vol = invol = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                vol += int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches:"):
                invol += int(line.split()[1])
    return vol, invol
