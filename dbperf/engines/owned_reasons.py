"""Why a setting of a server the lab starts is the lab's, and what to do instead (dbperf/engines/lab_owned.py
reads them): the reasons each engine's descriptor names for its `lab_owned_settings`. Kept apart from lab_owned.py
because the descriptors import it, and lab_owned.py imports the descriptors."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Owned:
    why: str  # what the lab does with it
    experiment: str  # what to do instead in an experiment file's target
    bisect: str  # ... in `dbperf bisect --config` (and a study's bisect step): no target, released binaries


DSN = "a server set up otherwise is measured as a target with a dsn"
LEAVE_OUT = "leave it out"
LISTEN = Owned("the lab's servers listen on 127.0.0.1 only, over TCP", DSN,
               f"bisect measures the lab's own servers: {LEAVE_OUT}")
PORT = Owned("the lab gives each server it starts a free port on 127.0.0.1",
             "port = N on the target fixes the port", f"each step's servers get free ports: {LEAVE_OUT}")
SOCKET = Owned("the lab puts a server's Unix socket in its private data directory",
               "socket = true on the target connects the driver through it",
               f"the steps connect over TCP: {LEAVE_OUT}")
DATA = Owned("the lab keeps a server's data directory in its private runtime directory",
             "DBPERF_RUNTIME_DIR chooses where that directory is (e.g. another disk)",
             "DBPERF_RUNTIME_DIR chooses where that directory is (e.g. another disk)")
FILES = Owned("the lab decides where a server it starts writes files", DSN, LEAVE_OUT)
LOG = Owned("the lab keeps a server's log in the results directory (logs/) and reads the server's errors there",
            "read it there", "each step's log is in its results directory (logs/)")
LOGINS = Owned("the lab sets up a server's logins itself (its user dbperf, a password per run)", DSN, LEAVE_OUT)
USER = Owned("a server the lab starts runs as its service user", DSN, LEAVE_OUT)
INSTALL = Owned("the lab runs a server from its binaries' own install",
                "binaries = PATH or source = \"ENGINE@VERSION\" on the target chooses the install",
                f"each step runs the releases' own installs: {LEAVE_OUT}")
CONF = Owned("the lab writes a server's configuration file itself",
             "give each setting in the target's config table", "give each setting as its own NAME=VALUE")

# Should an engine own a setting without a reason here (a new one), the refusal still says why in general.
GENERAL = Owned("the lab's servers listen on 127.0.0.1 only and keep their files in the lab's private directory",
                DSN, LEAVE_OUT)
