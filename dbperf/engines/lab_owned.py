"""The settings of a server the lab starts that are the lab's own (each engine's `lab_owned_settings`): which of
them a setting name stands for, why it is the lab's, and what to do instead, so that a refusal names the remedy
that fits that setting (a fixed port is `port = N` on the target; a data directory elsewhere is
DBPERF_RUNTIME_DIR) and the one that fits where it was given (an experiment file's target, or `dbperf bisect`,
whose steps have no target of the user's).

MariaDB reads an option name in several forms (mysys' my_getopt): `-` and `_` alike, a `loose-` prefix (ignored
when unknown, taken when known), `skip-`, `enable-`, `disable-` and `maximum-` prefixes, and any unambiguous
abbreviation (`bind` is bind-address). Each form counts as the setting it stands for: `loose-bind-address` would
otherwise make a lab server listen on every address. PostgreSQL reads names exactly, case-insensitively."""

from __future__ import annotations

from dataclasses import dataclass

from dbperf import engines


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

REASONS: dict[str, dict[str, Owned]] = {
    "postgres": {
        "listen_addresses": LISTEN, "port": PORT, "unix_socket_directories": SOCKET, "unix_socket_group": SOCKET,
        "unix_socket_permissions": SOCKET, "data_directory": DATA, "external_pid_file": FILES, "hba_file": LOGINS,
        "ident_file": LOGINS, "config_file": CONF, "include": CONF, "include_dir": CONF, "include_if_exists": CONF},
    "mariadb": {
        "bind_address": LISTEN, "skip_networking": LISTEN, "networking": LISTEN, "named_pipe": LISTEN, "port": PORT,
        "socket": SOCKET, "datadir": DATA, "pid_file": FILES, "tmpdir": FILES, "secure_file_priv": FILES,
        "log_error": LOG, "init_file": LOGINS, "skip_grant_tables": LOGINS, "user": USER, "basedir": INSTALL,
        "plugin_dir": INSTALL, "defaults_file": CONF, "defaults_extra_file": CONF},
}
# Should an engine own a setting without a reason here (a new one), the refusal still says why in general.
GENERAL = Owned("the lab's servers listen on 127.0.0.1 only and keep their files in the lab's private directory",
                DSN, LEAVE_OUT)

# Engines whose servers read option names as mysys' my_getopt does (the module's docstring).
MY_GETOPT = frozenset({"mariadb"})
MY_GETOPT_PREFIXES = ("skip_", "enable_", "disable_", "maximum_")


def _my_getopt_candidates(name: str) -> list[str]:
    """The names my_getopt may look `name` up as: without `loose-`, then without a special prefix."""
    name = name.removeprefix("loose_")
    return [name, *(name[len(p):] for p in MY_GETOPT_PREFIXES if name.startswith(p))]


def owned_setting(engine: str, key: str) -> tuple[list[str], str] | None:
    """The lab-owned settings `key` stands for and how the server reads it ("": as itself, "as": another form
    of it, "abbreviation": an abbreviation of it, or of several, which the server would refuse as ambiguous);
    None when it stands for none."""
    owned = engines.engine(engine).lab_owned_settings
    if engine not in MY_GETOPT:
        return ([key.lower()], "") if key.lower() in owned else None
    name = key.replace("-", "_").lower()
    for candidate in _my_getopt_candidates(name):
        if candidate in owned:
            return [candidate], "" if candidate == name else "as"
        starts = sorted(o for o in owned if candidate and o.startswith(candidate))
        if starts:
            return starts, "abbreviation"
    return None


def lab_owned_refusal(engine: str, key: str, where: str, bisect: bool = False) -> str | None:
    """The one-line refusal of setting `key` of a server the lab starts, when it is the lab's; None otherwise.
    `bisect`: given to `dbperf bisect` (or a study's bisect step), not to an experiment file's target."""
    found = owned_setting(engine, key)
    if found is None:
        return None
    (setting, *others), form = found
    title = engines.engine(engine).title
    if others:  # an abbreviation of several: no one reason fits, and the server would refuse it as ambiguous
        return (f"{where} config.{key}: {title} could read it as an abbreviation of "
                f"{', '.join([setting, *others[:-1]])} or {others[-1]} (settings the lab owns); give the full name "
                "of the setting meant")
    reason = REASONS.get(engine, {}).get(setting, GENERAL)
    read_as = {"": "", "as": f"{title} reads it as {setting}: ",
               "abbreviation": f"{title} reads it as an abbreviation of {setting}: "}[form]
    return f"{where} config.{key}: {read_as}{reason.why}; {reason.bisect if bisect else reason.experiment}"
