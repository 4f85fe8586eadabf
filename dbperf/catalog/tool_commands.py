"""What sysbench and pgbench run for a cell: the catalog benchmark's equivalent (sysbench's bundled oltp_* scripts,
or a pgbench script written from the catalog's SQL) or the user's own script, and their command lines. Command
lines carry no password: sysbench reads it from a 0600 --config-file, pgbench from PGPASSWORD."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from dbperf import engines
from dbperf.catalog.workload import PLACEHOLDER, Workload
from dbperf.errors import UserError

TOOL_DRIVERS = ("sysbench", "pgbench")
# The engines each tool drives, as their descriptors say.
TOOL_ENGINES = {tool: tuple(e.name for e in engines.ENGINES.values() if tool in e.tools) for tool in TOOL_DRIVERS}
(PGBENCH_ENGINE,) = TOOL_ENGINES["pgbench"]  # whose SQL dialect pgbench scripts are written in
SCRIPT_SUFFIX = {"sysbench": ".lua", "pgbench": ".sql"}
# pgbench's built-in scripts (`pgbench:NAME` benchmarks) on its own tables (pgbench -i), with their SQL commands
# per transaction counted as sysbench counts (BEGIN and END included).
PGBENCH_BUILTINS = {"tpcb-like": 7, "simple-update": 5, "select-only": 1}
BUILTIN_PREFIX = "pgbench:"
# Catalog benchmark -> sysbench 1.0 bundled script and options with the same events (the microbenchmarks of
# [Callaghan 2023-03-27] and [Callaghan, mytools]).
SYSBENCH_EQUIVALENTS: dict[str, tuple[str, list[str]]] = {
    "point-query": ("oltp_point_select", []),
    "read-only-10": ("oltp_read_only", ["--range_size=10"]),
    "read-only-100": ("oltp_read_only", ["--range_size=100"]),
    "read-only-10000": ("oltp_read_only", ["--range_size=10000"]),
    "read-write-10": ("oltp_read_write", ["--range_size=10"]),
    "read-write-100": ("oltp_read_write", ["--range_size=100"]),
    "write-only": ("oltp_write_only", []),
    "update-index": ("oltp_update_index", []),
    "update-nonindex": ("oltp_update_non_index", []),
    "delete": ("oltp_delete", []),
    "insert": ("oltp_insert", []),
}
# Options the lab sets itself (connection, password, duration, clients): refused in a target's driver_options.
LAB_LONG = re.compile(r"^--(mysql-|pgsql-|db-driver|config-file|password|host|port|user|username|dbname|time|"
                      r"threads|client|jobs|log-prefix)")
LAB_SHORT = re.compile(r"^-[hpUTcjdWlf]")


def check_options(options: object, where: str) -> tuple[str, ...]:
    if not isinstance(options, list) or not all(isinstance(o, str) and o.startswith("-") for o in options):
        raise UserError(f"{where}: expected a list of options, each with its value attached "
                        "(\"--report-interval=1\", \"-P1\")")
    for o in options:
        if LAB_LONG.match(o) or (not o.startswith("--") and LAB_SHORT.match(o)):
            raise UserError(f"{where}: {o!r} is the lab's to set (connection, password, time, threads, logs)")
    return tuple(options)


def tool_path(tool: str) -> str:
    """The tool's binary. Debian's /usr/bin/pgbench is pg_wrapper, a Perl script that execs the real pgbench: its
    start-up would be charged to pgbench's CPU, so the newest /usr/lib/postgresql/N/bin/pgbench is taken first."""
    if tool == "pgbench":
        versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pgbench"),
                          key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
        if versions:
            return str(versions[-1])
    found = shutil.which(tool)
    if not found:
        package = "sysbench" if tool == "sysbench" else "postgresql-client (or postgresql)"
        raise UserError(f"{tool} not found (apt install {package})")
    return found


def is_script(w: Workload, tool: str) -> bool:
    return w.source.endswith(SCRIPT_SUFFIX[tool]) and not w.statements


def builtin_name(w: Workload) -> str | None:
    """`select-only` for the benchmark `pgbench:select-only`, else None."""
    return w.source.removeprefix(BUILTIN_PREFIX) if w.source.startswith(BUILTIN_PREFIX) else None


def check_runnable(w: Workload, tool: str, tables: int, where: str) -> None:
    """A UserError when `tool` cannot run benchmark `w` (checked when the experiment is read)."""
    if builtin_name(w) is not None:
        if tool != "pgbench":
            raise UserError(f"{where}: benchmark {w.source!r} is one of pgbench's built-in scripts; a {tool} target "
                            "cannot run it")
        return
    if any(w.source.endswith(s) for s in SCRIPT_SUFFIX.values()) and not w.statements:
        if not is_script(w, tool):
            raise UserError(f"{where}: benchmark {w.name!r} is a script for another tool ({w.source}); "
                            f"a {tool} target runs {SCRIPT_SUFFIX[tool]} scripts and catalog benchmarks")
        return
    if tool == "sysbench":
        base = w.name.split("@", 1)[0]
        if base not in SYSBENCH_EQUIVALENTS:
            raise UserError(f"{where}: benchmark {w.name!r} has no sysbench equivalent (sysbench targets run "
                            f"{', '.join(SYSBENCH_EQUIVALENTS)} or a .lua script)")
    else:
        pgbench_script(w, 100, tables, where)


@dataclass(frozen=True)
class Connection:
    host: str
    port: int
    user: str
    database: str


def sysbench_argv(w: Workload, engine: str, conn: Connection, config_file: Path, tables: int, table_size: int,
                  threads: int, seconds: int, seed: int, prepared: bool, options: tuple[str, ...]) -> list[str]:
    prefix = engines.engine(engine).sysbench_driver
    extra: list[str]
    if is_script(w, "sysbench"):
        script, extra = w.source, []
    else:
        script, extra = SYSBENCH_EQUIVALENTS[w.name.split("@", 1)[0]]
        extra = [f"--tables={tables}", f"--table-size={table_size}", *extra]
    return [tool_path("sysbench"), script, f"--db-driver={prefix}", f"--{prefix}-host={conn.host}",
            f"--{prefix}-port={conn.port}", f"--{prefix}-user={conn.user}", f"--{prefix}-db={conn.database}",
            f"--config-file={config_file}", f"--threads={threads}", f"--time={seconds}", "--events=0",
            f"--rand-seed={seed}", "--histogram=on", f"--db-ps-mode={'auto' if prepared else 'disable'}",
            *extra, *options, "run"]


def pgbench_init_argv(conn: Connection, scale: int) -> list[str]:
    """pgbench's own tables in the working database, for its built-in scripts."""
    return [tool_path("pgbench"), "-i", "-q", "-s", str(scale), "-h", conn.host, "-p", str(conn.port),
            "-U", conn.user, conn.database]


def pgbench_argv(script: Path | str, conn: Connection, threads: int, seconds: int, seed: int, prepared: bool,
                 log_prefix: Path, options: tuple[str, ...]) -> list[str]:
    return [tool_path("pgbench"), "-n", "-h", conn.host, "-p", str(conn.port), "-U", conn.user,
            "-M", "prepared" if prepared else "simple", "-c", str(threads), "-j", str(threads), "-T", str(seconds),
            f"--random-seed={seed}", "-l", f"--log-prefix={log_prefix}",
            *(["-b", script] if isinstance(script, str) else ["-f", str(script)]), *options, conn.database]


def pgbench_script(w: Workload, table_size: int, tables: int, where: str = "") -> str:
    """The catalog benchmark as a pgbench script: each execution draws fresh parameters with \\set (uniform ids,
    hot ids, ranges), as the lab's driver does; BEGIN and COMMIT around a transaction. Zipfian ids and random
    strings have no pgbench equivalent here and are refused."""
    where = where or w.name
    if tables != 1:
        raise UserError(f"{where}: pgbench scripts written from the catalog need tables = 1 (pgbench cannot "
                        "choose a table per statement with prepared statements)")
    lines = ["BEGIN;"] if w.transaction else []
    counter = 0
    for s in w.statements:
        for _ in range(s.repeat):
            sets: list[str] = []
            drawn: dict[str, str] = {}

            def placeholder(m: re.Match[str], s_params: dict = s.params, sets: list[str] = sets,
                            drawn: dict[str, str] = drawn) -> str:
                nonlocal counter
                name = m.group(1)
                if name == "table":
                    return "1"
                if name in drawn:
                    return drawn[name]
                spec = s_params.get(name)
                if spec is None:  # a value an earlier statement drew
                    return f":{name}"
                gen = spec["gen"]
                if gen == "uniform":
                    names = []
                    for _ in range(spec.get("count", 1)):
                        counter += 1
                        var = name if spec.get("count", 1) == 1 else f"{name}_{counter}"
                        sets.append(f"\\set {var} random(1, {table_size})")
                        names.append(f":{var}")
                    text = ", ".join(names)
                elif gen == "hot":
                    start = spec.get("start", "middle")
                    first = max(1, table_size // 2) if start == "middle" else int(start)
                    text = ", ".join(str(first + i) for i in range(spec.get("count", 1)))
                elif gen == "range":
                    sets += [f"\\set {name}_lo random(1, {table_size})",
                             f"\\set {name}_hi :{name}_lo + {spec['size'] - 1}"]
                    text = f":{name}_lo AND :{name}_hi"
                else:
                    raise UserError(f"{where}: pgbench cannot draw {gen!r} parameters like the lab's driver; "
                                    "run this benchmark with the lab's driver or a pgbench script of your own")
                drawn[name] = text
                return text

            sql = PLACEHOLDER.sub(placeholder, s.sql_for(PGBENCH_ENGINE))
            lines += [*sets, sql.rstrip(";") + ";"]
    if w.transaction:
        lines.append("COMMIT;")
    return "\n".join(lines) + "\n"
