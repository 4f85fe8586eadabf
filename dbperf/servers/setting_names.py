"""Server setting names checked against the server's own list before anything is fetched or started: a misspelt
`dbperf bisect --config` name would otherwise show only once the releases are downloaded and the first step's
server refuses to start.

Which binary may judge a name: settings are added from one version on and removed from one on, so a name that a
release inside the range does not know is unknown to one of the range's two ends, and the first step starts both
ends. Any server binary of a version inside the range is therefore a witness: the ends when the lab's cache holds
them, and Debian's package (installed by `make setup`) when its version lies in the range. Nothing is fetched for
it; with no binary at hand nothing is refused here, and the first step's server says what it does not know.

Each engine is asked in its own way, as itself: PostgreSQL with `postgres -C NAME` (root may run it when `-C` comes
first; it reads a configuration file, an empty one in a temporary directory, and says "unrecognized configuration
parameter"; `--describe-config` alone misses the settings kept out of the sample file, such as
zero_damaged_pages). MariaDB with `mariadbd --no-defaults --help --verbose`, whose options and variables are the
names it reads, in the forms its option parser takes (engines/lab_owned.py: `loose-`, `skip-`, abbreviations)."""

from __future__ import annotations

import difflib
import re
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from dbperf import engines
from dbperf.buildlab.paths import server_cache
from dbperf.buildlab.server_releases import SOURCES, version_key
from dbperf.engines.lab_owned import MY_GETOPT_PREFIXES
from dbperf.errors import UserError
from dbperf.server_manifest import ReleaseManifest, read_server_manifest
from dbperf.servers.lifecycle import LabServer
from dbperf.servers.mariadb import MariaDBServer
from dbperf.servers.postgres import PostgresServer
from dbperf.servers.process import server_environ

PROBE_TIMEOUT_S = 60.0  # each probe takes well under a second; a loaded machine gets room
PG_UNKNOWN = "unrecognized configuration parameter"


@dataclass(frozen=True)
class Binary:
    """A server program at hand and its version."""
    version: str
    program: Path
    basedir: Path | None = None  # a release's own install (a relocated MariaDB reads its share/ there)


def _probe(argv: list[str]) -> subprocess.CompletedProcess[str] | None:
    """A server program run for what it prints (never a server): None when it cannot run. Messages in English
    (C locale), so that they can be read; no password in its environment; an instrumented (PGO) program's profile
    written into a scratch folder, never into the build's (a probe's root-owned .gcda once emptied a profile)."""
    with tempfile.TemporaryDirectory(prefix="dbperf-probe-") as scratch:
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL, cwd="/", check=False,
                                  env=server_environ({"LC_ALL": "C", "LANG": "C", "GCOV_PREFIX": scratch}))
        except (OSError, subprocess.SubprocessError):
            return None


def _version(program: Path, pattern: str) -> str | None:
    out = _probe([str(program), "--version"])
    m = re.search(pattern, out.stdout) if out is not None else None
    return m.group(1) if m else None


# PostgreSQL


def _pg_unknown(binary: Binary, config: Mapping[str, str]) -> list[str]:
    unknown = []
    with tempfile.TemporaryDirectory(prefix="dbperf-settings-") as directory:
        Path(directory, "postgresql.conf").write_text("")  # -C reads a configuration file: an empty one
        for name in config:
            if "." in name:
                continue  # an extension's setting (a placeholder until the extension loads): not the server's
            out = _probe([str(binary.program), "-C", name, "-D", directory])
            if out is not None and out.returncode != 0 and PG_UNKNOWN in out.stderr:
                unknown.append(name)
    return unknown


def _pg_names(binary: Binary) -> list[str]:
    out = _probe([str(binary.program), "--describe-config"])
    return [line.split("\t", 1)[0] for line in out.stdout.splitlines()] if out is not None else []


# MariaDB

MARIADB_OPTION = re.compile(r"^\s*(?:-\w, )?--([A-Za-z0-9_-]+)")


def _mariadb_names(binary: Binary) -> list[str]:
    """Every option and variable `mariadbd --help --verbose` lists ('_' for '-'), its compiled-in plugins' too."""
    basedir = [f"--basedir={binary.basedir}"] if binary.basedir else []
    out = _probe([str(binary.program), "--no-defaults", *basedir, "--help", "--verbose"])
    if out is None or out.returncode != 0:
        return []
    options, _, table = out.stdout.partition("\nVariables (--variable-name=value)")
    names = {m.group(1) for line in options.splitlines() if (m := MARIADB_OPTION.match(line))}
    _, _, rows = table.partition("\n---")  # the table: a rule of dashes, a row per variable, a blank line
    names.update(row.split()[0] for row in rows.split("\n\n", 1)[0].splitlines()[1:] if row.strip())
    return sorted({n.replace("-", "_") for n in names})


def mariadb_knows(name: str, names: set[str]) -> bool:
    """Whether mariadbd reads `name` as one of its options (its option parser's forms: a `loose-` name is ignored
    when unknown, so it is never refused; an abbreviation of one or more names is not unknown)."""
    name = name.replace("-", "_").lower()
    if name.startswith("loose_"):
        return True
    candidates = [name, *(name[len(p):] for p in MY_GETOPT_PREFIXES if name.startswith(p))]
    return any(c in names or any(n.startswith(c) for n in names) for c in candidates if c)


def _mariadb_unknown(binary: Binary, config: Mapping[str, str]) -> list[str]:
    if any(k.replace("-", "_").removeprefix("loose_").startswith("plugin_load") for k in config):
        return []  # a plugin's options are known only once it is loaded: the server says
    names = set(_mariadb_names(binary))
    return [k for k in config if not mariadb_knows(k, names)] if names else []


@dataclass(frozen=True)
class NameCheck:
    """How one engine's binaries are found and asked."""
    program: Callable[[Path], Path]  # the server program of a release's `binaries` (PostgreSQL's is a directory)
    installed: Callable[[], list[Path]]  # Debian's packaged server programs
    version_pattern: str  # in `PROGRAM --version`
    unknown: Callable[[Binary, Mapping[str, str]], list[str]]  # the names the binary does not know ([]: cannot tell)
    names: Callable[[Binary], list[str]]  # every name it knows, for a suggestion


_BY_SERVER: dict[type[LabServer], NameCheck] = {
    PostgresServer: NameCheck(
        lambda b: b / "postgres",
        # every major version Debian has installed, beside the lab's default (…/15/bin)
        lambda: sorted(Path(PostgresServer.default_binaries).parent.parent.glob("*/bin/postgres")),
        r"\(PostgreSQL\) (\d+(?:\.\d+)*)", _pg_unknown, _pg_names),
    MariaDBServer: NameCheck(
        lambda b: b, lambda: [p for p in [Path(MariaDBServer.default_binaries)] if p.is_file()],
        r"Ver (\d+(?:\.\d+)+)", _mariadb_unknown, _mariadb_names),
}
# Keyed by the lab server class, whose `engine` names it (no engine name spelled here).
CHECKS: dict[str, NameCheck] = {server.engine: check for server, check in _BY_SERVER.items()}


def _cached_release(engine: str, version: str) -> Path | None:
    """The unpacked release `version` (a release name, as a bisect's range holds it) in the lab's cache: None when
    it is not there (nothing is fetched here)."""
    try:
        cache = server_cache() / "release"
    except UserError:
        return None
    for entry in sorted(cache.glob(f"{engine}-*")) if cache.is_dir() else []:
        try:
            manifest = read_server_manifest(entry / "manifest.json", ReleaseManifest)
        except UserError:  # not there, or unreadable: not a witness (the build that uses it says why)
            continue
        if version in (manifest.version, manifest.published_version):
            return entry
    return None


def witnesses(engine: str, versions: list[str]) -> list[Binary]:
    """The server binaries at hand whose version lies in versions[0]..versions[-1] (module docstring)."""
    check = CHECKS[engine]
    lo, hi = version_key(versions[0]), version_key(versions[-1])
    found = []
    for version in dict.fromkeys((versions[0], versions[-1])):
        root = _cached_release(engine, version)
        program = check.program(SOURCES[engine].binaries_in(root)) if root else None
        if root and program and program.is_file():
            found.append(Binary(version, program, root))
    for program in check.installed():
        installed = _version(program, check.version_pattern)
        if installed and lo <= version_key(installed) <= hi:
            found.append(Binary(installed, program))
    return found


def unknown_setting(engine: str, config: Mapping[str, str], versions: list[str], where: str) -> str | None:
    """The one-line refusal of the first setting of `config` that a server binary of the range (at hand) does not
    know; None when each is known, or when no binary can tell."""
    check = CHECKS.get(engine)
    if check is None or not config:
        return None
    title = engines.engine(engine).title
    for binary in witnesses(engine, versions):
        unknown = check.unknown(binary, config)
        if not unknown:
            continue
        name = unknown[0]
        close = difflib.get_close_matches(name.replace("-", "_").lower(), check.names(binary), n=1)
        return (f"{where} {name}: {title} has no such setting ({title} {binary.version}, {binary.program}, inside "
                f"the range {versions[0]}..{versions[-1]}, does not know it)"
                + (f"; did you mean {close[0]}?" if close else ""))
    return None
