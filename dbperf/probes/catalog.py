"""The probe families: which C file, what it needs, and the defaults of a full run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SOURCE_DIR = Path(__file__).parent / "c"


@dataclass(frozen=True)
class ProbeFamily:
    name: str
    source: str
    description: str
    x86_only: bool = False
    needs_cpus: int = 1
    # The server release whose own functions it times (server_code.RELEASES): a C++ harness compiled with them.
    server: str = ""


FAMILIES = {
    f.name: f for f in (
        ProbeFamily("barriers", "barriers.c", "thread-state update with and without barriers; single atomic ops"),
        ProbeFamily("spin", "spin.c", "PAUSE latency, ut_delay calibration, the backoff off-by-one", x86_only=True),
        ProbeFamily("prng", "prng.c", "backoff PRNGs, alone and a shared-counter LCG under two threads"),
        ProbeFamily("timers", "timers.c", "rdtsc, rdtscp, clock_gettime clocks, gettimeofday"),
        ProbeFamily("sharing", "sharing.c", "false sharing: counters per cache line; a read-mostly flag",
                    needs_cpus=2),
        ProbeFamily("c2c", "c2c.c", "core to core: one cache line moved between each pair of vCPUs; false sharing "
                    "at this host's thread count", needs_cpus=2),
        ProbeFamily("innodb-mysql", "innodb_mysql.cc", "MySQL 9.7's own ut_delay, ut::random_from_interval and "
                    "ut::random_from_interval_fast, read from its Debian source", x86_only=True, server="mysql"),
        ProbeFamily("innodb-mariadb", "innodb_mariadb.cc", "MariaDB 10.11's own ut_delay (calibrated) and "
                    "ut_rnd_interval, read from its Debian source", x86_only=True, server="mariadb"),
    )
}

# What `dbperf probe` runs when no family is named: those that fetch nothing. A server's own functions come from its
# Debian source package (hundreds of MB the first time): named, or run by the barriers-spin study.
DEFAULT = [name for name, f in FAMILIES.items() if not f.server]
