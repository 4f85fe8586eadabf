"""Parsing and validating an experiment file into the model (experiment/model.py). Every problem is a UserError
naming the file and the key."""

from __future__ import annotations

import re
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dbperf import engines
from dbperf.catalog.registry import resolve
from dbperf.catalog.workload import Workload
from dbperf.engines.lab_owned import lab_owned_refusal
from dbperf.errors import UserError
from dbperf.experiment import keys
from dbperf.experiment.aa import with_aa
from dbperf.experiment.auto_time import time_setting
from dbperf.experiment.build_variants import (
    SERVER_ORIGINS,
    TREE_ORIGIN,
    BuildSpec,
    ServerBuildSpec,
    parse_build,
    parse_server_build,
    parse_source,
)
from dbperf.experiment.dsn_address import dsn_address
from dbperf.experiment.harness_settings import harness_settings
from dbperf.experiment.keys import DEFAULT_MIN_EFFECT, MIN_ROUNDS
from dbperf.experiment.load_model import parse_load_model
from dbperf.experiment.model import Experiment, FleetSection, ProcessCount, Target, default_sqlite_library
from dbperf.experiment.remedies_setting import with_remedies
from dbperf.experiment.replication_section import check_replication_experiment, parse_replication
from dbperf.experiment.slices_rules import check_slices, slice_setting
from dbperf.experiment.steady import steady_with_warmup
from dbperf.experiment.tool_section import check_tool_benchmarks, tool_fields
from dbperf.experiment.user_source import parse_patches, parse_tree
from dbperf.host.cpus import PLANNED_ON_EACH_HOST, plan_cpus
from dbperf.host.process_variants import ProcessVariant, allocator_library
from dbperf.names import check_name

AUTO_BUDGET_S = 600.0

SERVER_KEYS = {"binaries", "dsn", "password_env", "password_file", "port", "socket"}
# Server settings end up in postgresql.conf or my.cnf: plain words, numbers, sizes and paths only.
SERVER_SETTING_NAME = re.compile(r"^[a-z_][a-z0-9_.-]*$")
SERVER_SETTING_VALUE = re.compile(r"^[A-Za-z0-9_.+:/,-]+$")
BUILD_KEYS = {"build", "cflags", "ldflags", "pgo_train", "pgo_partial_training", "pgo_train_seconds"}
# PRAGMA names and values reach SQL text, so only plain words and numbers are allowed.
RELEASE_VERSION = re.compile(r"^\d+(\.\d+){0,2}(-\d+)?$")
PRAGMA_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
PRAGMA_VALUE = re.compile(r"^-?[A-Za-z0-9_.]+$")


def _settings(raw: dict[str, Any], twhere: str, name_re: re.Pattern[str], value_re: re.Pattern[str],
              kind: str) -> dict[str, str]:
    """A target's `config` table, checked: these names and values end up in SQL text or a config file."""
    config = raw.get("config", {})
    if not isinstance(config, dict):
        raise UserError(f"{twhere}: 'config' must be a table of {kind} = value")
    checked = {}
    for key, value in config.items():
        if not name_re.match(key):
            raise UserError(f"{twhere}: config key {key!r} is not a {kind} name")
        text = ("ON" if value else "OFF") if isinstance(value, bool) else str(value)
        if not isinstance(value, (int, float, str, bool)) or not value_re.match(text):
            raise UserError(f"{twhere} config.{key}: value {value!r} is not a plain word, number or size")
        checked[key] = text
    return checked


def sqlite_settings(config: Any, twhere: str) -> dict[str, str]:
    """The PRAGMAs of a SQLite target's `config`, checked (also for `dbperf bisect --tree --config`)."""
    return _settings({"config": config}, twhere, PRAGMA_NAME, PRAGMA_VALUE, "PRAGMA")


def server_settings(config: Any, engine: str, twhere: str) -> dict[str, str]:
    """The `config` of a server the lab starts, checked (also for `dbperf bisect --config`)."""
    checked = _settings({"config": config}, twhere, SERVER_SETTING_NAME, SERVER_SETTING_VALUE, "server setting")
    for key in checked:
        # Where a server the lab starts listens, keeps its files and who it runs as are the lab's business
        # (127.0.0.1 only, a private data directory), in every form the server reads the name (loose-, abbreviations).
        refusal = lab_owned_refusal(engine, key, twhere)
        if refusal:
            raise UserError(refusal)
    return checked


def _target(raw: Any, i: int, where: str, base_dir: Path) -> Target:
    twhere = f"{where} [[target]] #{i}"
    if not isinstance(raw, dict):
        raise UserError(f"{twhere}: expected a table")
    name = check_name(raw.get("name"), twhere)
    twhere = f"{where} target {name!r}"
    values = keys.checked(raw, keys.TARGET, twhere)
    engine = values.get("engine", engines.DEFAULT.name)
    source = raw.get("source")
    source_engine = source.split("@", 1)[0] if isinstance(source, str) else None
    if source_engine in engines.SERVER_NAMES:
        if "engine" in raw and engine != source_engine:
            raise UserError(f"{twhere}: source {source!r} is a {source_engine} release but engine is {engine!r}")
        engine = source_engine
    if engine in engines.SERVER_NAMES:
        return _server_target(raw, name, engine, twhere, base_dir)
    misplaced = sorted((SERVER_KEYS | {"driver_options"}) & set(raw))
    if misplaced:
        raise UserError(f"{twhere}: {misplaced[0]!r} is for server engines ({', '.join(engines.SERVER_NAMES)})")
    if raw.get("driver", "dbperf") != "dbperf":
        raise UserError(f"{twhere}: driver = {raw['driver']!r} drives server engines only (SQLite runs in the "
                        "lab's driver)")
    build = _sqlite_build(raw, twhere, base_dir)
    library_path = None if build else _library(raw, twhere, base_dir)
    checked = sqlite_settings(raw.get("config", {}), twhere)
    return Target(name=name, engine=engine, library=str(library_path) if library_path else "", config=checked,
                  build=build, process=_process_variant(raw, twhere))


def _sqlite_build(raw: dict[str, Any], twhere: str, base_dir: Path) -> BuildSpec | None:
    """A SQLite target's build: from `source` (a released version) or `tree` (the user's), with its `patches`; None
    for a target that loads a `library`."""
    if "source" not in raw and "tree" not in raw:
        misplaced = sorted(BUILD_KEYS & set(raw))
        if misplaced:
            raise UserError(f"{twhere}: {misplaced[0]!r} needs a 'source' such as \"sqlite@3.54.1\"")
        misplaced = sorted({"rev", "patches"} & set(raw))
        if misplaced:
            raise UserError(f"{twhere}: {misplaced[0]!r} needs a 'source' such as \"sqlite@3.54.1\" or a 'tree'")
        return None
    if "library" in raw:
        raise UserError(f"{twhere}: give either '{'tree' if 'tree' in raw else 'source'}' (the build lab builds it) "
                        "or 'library', not both")
    tree = parse_tree(raw, base_dir, twhere)
    version = "" if tree else parse_source(raw["source"], f"{twhere}.source")
    return parse_build(raw, version, twhere, tree, parse_patches(raw, base_dir, twhere), base_dir)


def _library(raw: dict[str, Any], twhere: str, base_dir: Path) -> Path:
    """The libsqlite3.so a target without a build loads (the system's by default)."""
    library = raw.get("library", default_sqlite_library())
    if not isinstance(library, str) or not library:
        raise UserError(f"{twhere}: 'library' must be a path")
    library_path = Path(library).expanduser()
    if not library_path.is_absolute():
        library_path = base_dir / library_path
    if not library_path.is_file():
        raise UserError(f"{twhere}: library {library_path} not found")
    return library_path


def _process_variant(raw: dict[str, Any], twhere: str) -> ProcessVariant:
    """allocator and hugepages of the process that runs the engine (their values checked by the key table)."""
    allocator = raw.get("allocator")
    if allocator:
        allocator_library(allocator)  # a missing package is an input error, named now
    return ProcessVariant(allocator, raw.get("hugepages"))


def _server_source(raw: dict[str, Any], engine: str, twhere: str,
                   base_dir: Path) -> tuple[str | None, ServerBuildSpec | None]:
    """A server target's `source`: the release the lab fetches, or the build it makes (either may be None)."""
    release, server_build = None, None
    source = raw.get("source")
    tree = parse_tree(raw, base_dir, twhere)  # a checkout of the engine's source: what it holds is the build lab's
    if tree is not None or (isinstance(source, str) and source.split("@", 1)[-1] in SERVER_ORIGINS):
        if not engines.engine(engine).builds_from_source:
            buildable = (e.name for e in engines.ENGINES.values() if e.builds_from_source)
            raise UserError(f"{twhere}.{'tree' if tree else 'source'}: building {engine} from source is not supported "
                            f"yet (only {', '.join(buildable)}); use released binaries (\"{engine}@VERSION\") or "
                            "Debian's package")
        origin = TREE_ORIGIN if tree is not None else str(source).split("@", 1)[1]
        server_build = parse_server_build(raw, engine, origin, twhere, parse_patches(raw, base_dir, twhere), tree,
                                          base_dir)
        for key in ("binaries", "dsn"):
            if tree is not None and key in raw:
                raise UserError(f"{twhere}: give either 'tree' (a checkout the lab builds) or {key!r}")
    else:
        for key in ("build", "cflags", "ldflags", "pgo_train", "pgo_partial_training", "pgo_train_seconds",
                    "compiler", "patches", "lean", "pgo_scope"):
            if key in raw:
                raise UserError(f"{twhere}: {key!r} needs a source to build: \"sqlite@X.Y.Z\" or "
                                f"\"{engine}@debian-src\", or a 'tree' of yours")
    if "source" in raw:
        if server_build is None:
            release = _release(raw["source"], engine, f"{twhere}.source")
        for key in ("binaries", "dsn"):
            if key in raw:
                raise UserError(f"{twhere}: give either 'source' (a server the lab fetches or builds) or {key!r}")
    return release, server_build


def _external_dsn(raw: dict[str, Any], dsn: Any, engine: str, twhere: str) -> str:
    """An external server's `dsn`, checked (no password in it, no key of a server the lab starts beside it) and in
    its engine's canonical form."""
    schemes = engines.engine(engine).dsn_schemes
    if not isinstance(dsn, str) or not dsn.startswith(schemes):
        raise UserError(f"{twhere}.dsn: expected {' or '.join(schemes)}... for engine {engine}")
    if urlsplit(dsn).password is not None:
        raise UserError(f"{twhere}.dsn: keep the password out of the experiment file "
                        "(password_env = \"VAR\" or password_file = \"path\")")
    canonical = engines.engine(engine).canonical_dsn(dsn)
    dsn_address(canonical, engines.engine(engine).default_port, f"{twhere}.dsn")  # its ports are port numbers
    for key in ("binaries", "port", "socket"):
        if key in raw:
            raise UserError(f"{twhere}: {key!r} is for servers the lab starts, not for a dsn")
    return canonical


def _server_target(raw: dict[str, Any], name: str, engine: str, twhere: str, base_dir: Path) -> Target:
    if "library" in raw:
        raise UserError(f"{twhere}: 'library' is for SQLite targets")
    release, server_build = _server_source(raw, engine, twhere, base_dir)
    dsn = raw.get("dsn")
    checked = (_settings(raw, twhere, SERVER_SETTING_NAME, SERVER_SETTING_VALUE, "server setting") if dsn is not None
               else server_settings(raw.get("config", {}), engine, twhere))
    if dsn is not None:
        dsn = _external_dsn(raw, dsn, engine, twhere)
    elif "password_env" in raw or "password_file" in raw:
        raise UserError(f"{twhere}: password_env/password_file are for external targets (dsn)")
    variant = _process_variant(raw, twhere)
    if dsn is not None and (variant.allocator or variant.hugepages):
        raise UserError(f"{twhere}: allocator/hugepages apply to servers the lab starts, not to a dsn")
    return Target(name=name, engine=engine, library="", config=checked, process=variant,
                  binaries=raw.get("binaries"), release=release, server_build=server_build, dsn=dsn,
                  password_env=raw.get("password_env"), password_file=raw.get("password_file"), port=raw.get("port"),
                  socket=raw.get("socket", False), **tool_fields(raw, engine, twhere))


def _release(value: object, engine: str, where: str) -> str:
    version = value.split("@", 1)[1] if isinstance(value, str) and value.startswith(f"{engine}@") else ""
    if not RELEASE_VERSION.match(version):
        raise UserError(f"{where}: expected \"{engine}@VERSION\" such as \"{engine}@"
                        f"{engines.engine(engine).example_release}\" (released binaries) or "
                        f"\"{engine}@debian-src\" (built from Debian's source package), got {value!r}")
    return version


def _read(path: Path) -> tuple[str, dict[str, Any]]:
    """The experiment file's text and its TOML document, its sections checked."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise UserError(f"{where}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"{where}: not a text (UTF-8) file; an experiment file is TOML") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{where}: malformed TOML: {e}") from None
    unknown = set(doc) - {"run", "target", "fleet", "replication"}
    if unknown:
        raise UserError(f"{where}: unknown section {sorted(unknown)[0]!r} (known: run, target, fleet, replication)")
    if not isinstance(doc.get("run"), dict):
        raise UserError(f"{where}: missing [run] section")
    return text, doc


def _benchmarks(run: dict[str, Any], base_dir: Path, rwhere: str) -> list[Workload]:
    requested = run.get("benchmarks")
    if isinstance(requested, str):
        requested = [requested]
    if not isinstance(requested, list) or not requested:
        raise UserError(f"{rwhere}.benchmarks: expected a non-empty list of names, groups or workload files")
    return resolve(requested, base_dir, f"{rwhere}.benchmarks")


def _threads(run: dict[str, Any], rwhere: str) -> list[int]:
    threads = run.get("threads", [1])
    if isinstance(threads, int) and not isinstance(threads, bool):
        threads = [threads]
    if (not isinstance(threads, list) or not threads
            or any(isinstance(t, bool) or not isinstance(t, int) or t < 1 for t in threads)):
        raise UserError(f"{rwhere}.threads: expected a positive integer or a list of them, got {threads!r}")
    if max(threads) > keys.MAX_THREADS:
        raise UserError(f"{rwhere}.threads: {max(threads):,} client threads: at most {keys.MAX_THREADS:,} in one "
                        "driver")
    if len(set(threads)) != len(threads):
        duplicate = next(t for t in threads if threads.count(t) > 1)
        raise UserError(f"{rwhere}.threads: {duplicate} is listed twice (each thread count is a row of cells)")
    return threads


def _targets(doc: dict[str, Any], where: str, base_dir: Path) -> list[Target]:
    """The `[[target]]`s, each with its fleet host where it names one; no two share a name."""
    raw_targets = doc.get("target")
    if not isinstance(raw_targets, list) or not raw_targets:
        raise UserError(f"{where}: needs at least one [[target]]")
    targets = [_target(t, i, where, base_dir) for i, t in enumerate(raw_targets, 1)]
    targets = [replace(t, host=raw["host"]) if "host" in raw else t
               for t, raw in zip(targets, raw_targets, strict=True)]
    names = [t.name for t in targets]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise UserError(f"{where}: target name {duplicate!r} is used twice")
    return targets


def _repeats(run: dict[str, Any], values: dict[str, Any], rwhere: str) -> tuple[int, float | None]:
    """The repeats, and the time budget when they are "auto" (then the repeats are the minimum rounds)."""
    repeats = values.get("repeats", 3)
    budget_s = None
    if repeats == "auto":
        repeats, budget_s = MIN_ROUNDS, values.get("budget", AUTO_BUDGET_S)
        if budget_s <= 0:
            raise UserError(f"{rwhere}.budget: must be longer than 0")
    elif "budget" in run:
        raise UserError(f"{rwhere}.budget: only with repeats = \"auto\" (repeats is {repeats})")
    return repeats, budget_s


def parse_experiment(path: Path, *, cpus_here: bool = True) -> Experiment:
    """The experiment file at `path`, checked. `cpus_here=False` (a fleet's controller): `[run].cpus` is checked as
    written and planned later on each host, with that host's CPUs, not with this one's."""
    where = str(path)
    text, doc = _read(path)
    run = doc["run"]
    rwhere = f"{where} [run]"
    values = keys.checked(run, keys.RUN, rwhere)
    benchmarks = _benchmarks(run, path.parent, rwhere)
    threads = _threads(run, rwhere)
    time_s, auto_time = time_setting(values.get("time", 10.0), values.get("auto_time"), rwhere)
    if time_s <= 0:
        raise UserError(f"{rwhere}.time: must be longer than 0")
    targets = _targets(doc, where, path.parent)
    names = [t.name for t in targets]
    check_tool_benchmarks(benchmarks, targets, values.get("tables", 1), rwhere)
    base = run.get("base", names[0])
    if base not in names:
        raise UserError(f"{rwhere}.base: {base!r} is not a target (targets: {', '.join(names)})")
    replication = (parse_replication(doc["replication"], where, targets[0].engine) if "replication" in doc
                   else None)
    if replication is not None:
        check_replication_experiment(replication, targets, benchmarks, where)
    repeats, budget_s = _repeats(run, values, rwhere)
    experiment = Experiment(
        path=path, text=text, benchmarks=tuple(benchmarks), targets=tuple(targets), base=base,
        tables=values.get("tables", 1), table_size=values.get("table_size", 100_000),
        threads=tuple(threads), time_s=time_s, auto_time=auto_time, warmup_s=values.get("warmup", 2.0),
        repeats=repeats, budget_s=budget_s, seed=values.get("seed", 1),
        aggregate=values.get("aggregate", "median"), prepared=values.get("prepared", True),
        min_effect=values.get("min_effect", DEFAULT_MIN_EFFECT), order=values.get("order", "alternate"),
        processes=_processes(values.get("processes", 1), targets, budget_s, rwhere),
        slice_s=slice_setting(values, rwhere, auto_time.shortest_s if auto_time else time_s),
        turn_checkpoint=values.get("turn_checkpoint", False),
        **harness_settings(values, values.get("tables", 1) * values.get("table_size", 100_000)),
        fleet=_fleet(doc.get("fleet"), where, path.parent),
        cpus=plan_cpus(run.get("cpus"), f"{rwhere}.cpus") if cpus_here else PLANNED_ON_EACH_HOST,
        cpus_setting=run.get("cpus"),
        resources=values.get("resources", True),
        simulated=values.get("simulated", False),
        explain=values.get("explain", "none"),
        load=parse_load_model(run, values, rwhere, time_s),
        replication=replication,
        steady=steady_with_warmup(values.get("steady"), values.get("warmup", 2.0), rwhere),
    )
    if experiment.order == "duet" and experiment.steady is not None:
        raise UserError(f"{rwhere}: order = \"duet\" measures both sides over one fixed window from their common "
                        "start; a steady-state warm-up ends on its own in each process: drop steady or the duet")
    experiment = replace(experiment, targets=tuple(with_remedies(
        list(experiment.targets), doc["target"], run, experiment.writes == "cumulative", where)))
    check_slices(experiment, where)
    if values.get("aa"):
        experiment = with_aa(experiment)
    return experiment


def _processes(processes: int | str, targets: list[Target], budget_s: float | None, rwhere: str) -> ProcessCount:
    """`processes` above 1 (or "auto") needs a server the lab starts (and can start again): SQLite's rounds are each
    their own driver process already, and an external server is the user's to restart. "auto" chooses from a
    group's share of the budget: it needs `repeats = "auto"`."""
    count = ProcessCount(None if processes == "auto" else int(processes))
    if count.auto and budget_s is None:
        raise UserError(f"{rwhere}.processes: \"auto\" chooses the count from a group's share of the budget; "
                        "with a fixed number of repeats set the count (5 or more)")
    if count.restarts() and not any(t.is_server and t.dsn is None for t in targets):
        raise UserError(f"{rwhere}.processes: {processes} processes a target needs a server the lab starts; no "
                        "target is one (SQLite's rounds each run in a new driver process already; an external "
                        "server is not the lab's to restart)")
    return count


def _fleet(raw: Any, where: str, base_dir: Path) -> FleetSection | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise UserError(f"{where} [fleet]: expected a table")
    values = keys.checked(raw, keys.FLEET, f"{where} [fleet]")
    certs = Path(values["certs"]).expanduser() if "certs" in values else None
    return FleetSection(scheduler=values.get("scheduler"), hosts=values.get("hosts", ()),
                        certs=base_dir / certs if certs and not certs.is_absolute() else certs)
