"""What a run needs before its first round, checked without building, fetching, starting or measuring anything:
each target's library or server binaries (and whether its build or release is cached or would be made), the
driver, and the tools of the tiers it asks for (valgrind for the simulated tier). `dbperf run --dry-run` shows every
check; a real run refuses at once when the simulated tier's tools are missing, not after its whole budget, and when
a target's checks fail (require_targets), before it claims its results folder."""

from __future__ import annotations

import pwd
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from dbperf import engines
from dbperf.buildlab.builder import build_key, cached_builds
from dbperf.buildlab.paths import server_cache
from dbperf.buildlab.recipes import Recipe
from dbperf.buildlab.server_build import build_key as server_build_key
from dbperf.buildlab.server_build_checks import check_can_build
from dbperf.buildlab.server_cache_listing import cached_server_builds
from dbperf.buildlab.server_releases import ServerInstall
from dbperf.buildlab.sources import origin_of
from dbperf.buildlab.sources.base import ServerOrigin
from dbperf.buildlab.sqlite_source import SqliteSource, _cargo
from dbperf.buildlab.sqlite_tree import configures, resolve_tree
from dbperf.catalog.tool_commands import tool_path
from dbperf.errors import UserError
from dbperf.experiment.build_variants import BuildSpec, ServerBuildSpec
from dbperf.experiment.model import Experiment, Target
from dbperf.host.compiler import Compiler, find_compiler
from dbperf.host.driver import driver_path, library_info
from dbperf.host.process_variants import allocator_library
from dbperf.server_manifest import ReleaseManifest, manifest_record, read_server_manifest
from dbperf.servers.answering import check_answering
from dbperf.servers.process import check_port_free
from dbperf.servers.registry import LAB_SERVERS
from dbperf.tools import run_tool

TOOL_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Check:
    subject: str  # "target a", "valgrind"
    found: str  # what was found, or what a run would do (build, fetch)
    problem: str | None = None  # why a run would stop

    def line(self) -> str:
        return f"{self.subject}: {self.problem}" if self.problem else f"{self.subject}: {self.found}"


def checked(subject: str, look: Callable[[], str]) -> Check:
    try:
        return Check(subject, look())
    except UserError as err:
        return Check(subject, "", str(err))


def _which(tool: str, package: str, why: str) -> str:
    found = shutil.which(tool)
    if found is None:
        raise UserError(f"{tool} not found on PATH: {why} (apt install {package})")
    return found


def valgrind_check(subject: str, why: str) -> Check:
    """valgrind on PATH (where the profiler looks for it) and runnable: a broken install fails here too."""
    def look() -> str:
        path = _which("valgrind", "valgrind", why)
        version = run_tool([path, "--version"], "valgrind --version", timeout=TOOL_TIMEOUT_S).stdout.strip()
        return f"{version or 'valgrind'} ({path})"
    return checked(subject, look)


def counting_checks(started: Iterable[str], what: str, why: str) -> list[Check]:
    """The tools of counting under valgrind: valgrind (`why` it is needed) and setarch (ASLR off) always;
    callgrind_control when a lab server of one process for all connections is `started` (engine names; MariaDB:
    callgrind, dumped on demand). `what` counts: the simulated tier, or a bisect's steps."""
    checks = [valgrind_check(f"valgrind ({what})", why),
              checked(f"setarch ({what})",
                      lambda: _which("setarch", "util-linux", f"the {what} turns ASLR off with it"))]
    threads = sorted({name for name in started if engines.engine(name).process_model.one_process})
    if threads:
        titles = " and ".join(engines.engine(name).title for name in threads)
        checks.append(checked(f"callgrind_control ({what})", lambda: _which(
            "callgrind_control", "valgrind", f"{titles}'s counters are dumped with it")))
    return checks


def simulated_checks(e: Experiment) -> list[Check]:
    """The simulated tier's tools (counting_checks) for the servers the lab starts, and a note per external one."""
    checks = counting_checks((t.engine for t in e.targets if t.is_server and t.dsn is None), "simulated tier",
                             "the simulated tier runs every (target, benchmark) under it")
    for t in e.targets:
        if t.is_server and t.dsn is not None:  # not a refusal: the run measures the others (its record says why)
            checks.append(Check(f"target {t.name}", "an external server: no simulated figures (only servers the "
                                                    "lab starts run under valgrind)"))
    return checks


def require_simulated_tools(e: Experiment) -> None:
    """A real run with the simulated tier: its tools before anything is built or measured, in one line."""
    for check in simulated_checks(e):
        if check.problem:
            raise UserError(f"{e.path}: simulated = true (or --simulated): {check.problem}")


def driver_check() -> Check:
    return checked("dbperf-driver", driver_path)


def cached_sqlite_build(spec: BuildSpec, base_dir: Path) -> Path | None:
    """The cached library of `spec`, or None: a cached manifest of the same SQLite version whose key, worked out
    again from its own source and this machine's compiler, is this build's (no source fetched to find out); for a
    user's tree, the key of the tree read again (git and its files, nothing built)."""
    cc = find_compiler()  # a build, cached or not, needs it (builder.build)
    if spec.tree is not None:
        key = build_key(spec, resolve_tree(spec.tree), cc, base_dir)
        libraries = (Path(str(m.get("library"))) for m in cached_builds() if m.get("key") == key)
        return next((library for library in libraries if library.is_file()), None)
    for m in cached_builds():
        source = {k: v for k, v in (m.get("source") or {}).items() if k != "patches"}  # the spec's, in its key
        if source.get("sqlite_version") != spec.sqlite_version:
            continue
        try:
            key = build_key(spec, SqliteSource(**source), cc, base_dir)
        except TypeError:  # a manifest of another shape: not this build
            continue
        library = Path(str(m.get("library")))
        if key == m.get("key") and library.is_file():
            return library
    return None


def cached_release(engine: str, wanted: str) -> Path | None:
    """The binaries of a cached release (as server_releases.fetch_release finds them, without the network)."""
    cache = server_cache() / "release"
    for entry in sorted(cache.glob(f"{engine}-*")) if cache.is_dir() else []:
        if not (entry / "manifest.json").is_file():
            continue
        manifest = read_server_manifest(entry / "manifest.json", ReleaseManifest)
        if wanted in (manifest.version, manifest.published_version):
            return ServerInstall(engine, manifest.version, entry, manifest_record(manifest), cached=True).binaries
    return None


def cached_server_build(spec: ServerBuildSpec, recipe: Recipe, cc: Compiler, origin: ServerOrigin) -> Path | None:
    """The binaries of a cached build of `spec` by this compiler. Its key also names the Debian version, known only
    after an `apt update`: a cached build of the same label, compiler and patches is taken as this one. A tree's
    key is known now (its content, `origin` as read)."""
    known = origin.known_version()
    if known is not None:
        entry = server_cache() / "build" / server_build_key(spec, origin, known, cc, recipe)
        return recipe.binaries(entry / "install") if (entry / "manifest.json").is_file() else None
    manifests = cached_server_builds()  # one that cannot be read: its one line
    patches = [p.sha256 for p in spec.patches]
    for m in manifests:
        applied = [p.get("sha256") for p in (m.get("source") or {}).get("patches", [])]
        if (m.get("label") == spec.label() and (m.get("compiler") or {}).get("version") == cc.version
                and applied == patches):
            return recipe.binaries(Path(str(m.get("install"))))
    return None


def _compiled(spec: BuildSpec) -> str:
    """What a SQLite build does once its source is there: one compile, or PGO's two around its training."""
    if not spec.pgo:
        return "compiled"
    return (f"compiled instrumented, trained on {', '.join(spec.pgo_train)}, compiled with the proven profile and "
            "checked against the same build without pgo, built too unless cached")


def _sqlite(e: Experiment, t: Target) -> str:
    library, said = t.library, ""
    if t.build is not None:
        cached = cached_sqlite_build(t.build, e.path.parent)
        if cached is None:
            if t.build.tree is None:
                _cargo()  # the source is fetched through cargo
                where = "source fetched through cargo"
            else:  # a source tree that does not configure is refused now, not after the run claimed its folder
                tried = configures(resolve_tree(t.build.tree), t.build.label())
                where = "the tree copied into the cache" + (f"; {tried}" if tried else "")
            return f"{t.build.label()}: not cached, would be built ({where}, then {_compiled(t.build)})"
        library, said = str(cached), f"{t.build.label()}: cached, "
    info = library_info(t.engine, library)
    return f"{said}{t.descriptor.title} {info.engine_version} ({library})"


def _lab_binaries(t: Target, binaries: Path) -> str:
    """The server's files found where the target says, and its version (the binary run with --version)."""
    kind = LAB_SERVERS[t.engine]
    title = t.descriptor.title
    files = kind.program_files(binaries)
    problem = kind.install_problem(binaries)
    if problem:
        raise UserError(problem)
    out = run_tool([files[-1], "--version"], f"{files[-1]} --version", timeout=TOOL_TIMEOUT_S).stdout.strip()
    version = out.splitlines()[0].removeprefix(str(files[-1])).strip() if out else title  # mariadbd names itself
    return f"{version} ({binaries})"


def require_service_user(engine: str) -> None:
    """The system user a lab server of `engine` runs as, there (Debian's package creates it)."""
    kind = LAB_SERVERS[engine]
    try:
        pwd.getpwnam(kind.service_user)
    except KeyError:
        raise UserError(f"user {kind.service_user} not found (apt install {kind.apt_package})") from None


def _server(t: Target) -> str:
    if t.dsn is not None:
        t.password()  # an unset password variable refuses the run
        return check_answering(t)
    kind = LAB_SERVERS[t.engine]
    require_service_user(t.engine)
    if t.port:
        check_port_free(t.port, kind.service_user)
    if t.release is not None:
        found = cached_release(t.engine, t.release)
        if found is None:
            return f"{t.engine}@{t.release}: not cached, would be fetched (released binaries)"
        return f"{t.engine}@{t.release}: cached, " + _lab_binaries(t, found)
    if t.server_build is not None:
        recipe, cc = check_can_build(t.server_build)  # its tools and headers (and a tree), as a real run checks first
        origin = origin_of(t.server_build, recipe)
        found = cached_server_build(t.server_build, recipe, cc, origin)
        if found is None:  # how, as its origin says: from Debian's source, in a kept tree, or whole in a fresh folder
            return f"{t.server_build.label()}: not cached, would be built {origin.how_made(t.server_build, recipe)}"
        return f"{t.server_build.label()}: cached, " + _lab_binaries(t, found)
    if not (t.binaries or kind.default_binaries):
        raise UserError(kind.binaries_needed)
    return _lab_binaries(t, Path(t.binaries or kind.default_binaries))


def _target(e: Experiment, t: Target) -> str:
    found = _server(t) if t.is_server else _sqlite(e, t)
    if t.tool:
        found += f"; cells run by {t.tool} ({tool_path(t.tool)})"
    if t.process.allocator:
        found += f"; allocator {allocator_library(t.process.allocator)}"
    return found


def require_targets(e: Experiment) -> None:
    """A real run's targets looked at as its dry run looks at them (target_checks: binaries there and of their
    engine, the service user, a port free and one the server may take, an external server answering, the tools and
    allocators named) and the driver, before anything is built, fetched or claimed: a target that cannot run is
    otherwise found once the results folder is claimed, which the next `run --out` refuses. One line, the first."""
    for check in [driver_check(), *target_checks(e)]:
        if check.problem:
            subject = f"target {check.subject.removeprefix('target ')!r}" if check.subject.startswith("target ") \
                else check.subject
            raise UserError(f"{subject}: {check.problem}")


def target_checks(e: Experiment) -> list[Check]:
    checks = []
    for t in e.targets:
        check = checked(f"target {t.name}", partial(_target, e, t))
        # the line names the target once, where the lab's own message (a password not set) names it too
        problem = check.problem and check.problem.removeprefix(f"target {t.name!r}: ")
        checks.append(Check(check.subject, check.found, problem))
    return checks
