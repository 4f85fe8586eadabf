"""The dbperf command line. Bad input is one line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, NoReturn, Optional

import typer
from rich.console import Console
from rich.table import Table
from typer._click import exceptions as click_errors  # Typer's own click: its parameter errors

from dbperf import __version__
from dbperf.buildlab.builder import cached_builds
from dbperf.buildlab.server_build import cached_server_builds
from dbperf.buildlab.server_releases import SOURCES as SERVER_RELEASES
from dbperf.buildlab.server_releases import available_versions, cached_releases, release_name
from dbperf.buildlab.sqlite_source import CRATE, scan_versions
from dbperf.catalog.harness import DESCRIPTIONS as HARNESS_GROUPS
from dbperf.catalog.registry import GROUP_NAMES, builtin, expand_group, resolve
from dbperf.catalog.workload import Workload
from dbperf.errors import UserError
from dbperf.experiment import keys as key_table
from dbperf.experiment.aa import with_aa
from dbperf.experiment.keys import AGGREGATES
from dbperf.experiment.spec import Experiment, Target, parse_experiment
from dbperf.explain.diff import profile_diff
from dbperf.explain.mode import CounterMode, detect_mode
from dbperf.explain.profile import Profiler
from dbperf.history.commands import record_run
from dbperf.history.commands import register as register_history
from dbperf.history.store import history_path
from dbperf.output_file import default_name, output_path, write_file
from dbperf.probes.catalog import FAMILIES
from dbperf.probes.run import run_probes
from dbperf.records import to_builtins
from dbperf.replication.lab import run_replication
from dbperf.report.escape import md, term
from dbperf.report.hosts import csv_with_host, host_view, hosts_in, json_by_host
from dbperf.report.hosts import heading as host_heading
from dbperf.report.html import to_html, to_html_hosts
from dbperf.report.intervals_view import cell_lines, intervals_view, measured
from dbperf.report.ladder import ladder_view, render_ladder
from dbperf.report.load_view import cell_heading
from dbperf.report.probe_view import render_compare, render_probes
from dbperf.report.profile_view import render_diff, render_profile
from dbperf.report.render import render_table, to_csv, to_json, to_markdown
from dbperf.report.replication_html import replication_html
from dbperf.report.replication_view import (
    render_replication,
    replication_csv,
    replication_json,
    replication_markdown,
)
from dbperf.report.resources_view import render_resources, resources_view
from dbperf.report.resources_view import to_json as resources_json
from dbperf.report.view import render_view
from dbperf.runner import interrupts
from dbperf.runner.estimate import estimate
from dbperf.runner.matrix import run_matrix
from dbperf.runner.targets import build_targets, inspect_targets
from dbperf.stats.ladder import ladder as ladder_steps
from dbperf.stats.rqps_matrix import build_matrix
from dbperf.storage.results import STATUS_NOTE, SkippedLine, read_results
from dbperf.tooldrivers.importer import import_outputs

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="dbperf: a performance lab for database engines.")
# Reports are wide; when piped (no terminal width to respect) do not wrap them at 80 columns.
out_console = Console(width=None if sys.stdout.isatty() else 200)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)
FORMATS = ("table", "markdown", "csv", "json", "html")
NO_CELL_SUCCEEDED = 3


def fail(message: str, code: int = 2) -> NoReturn:
    err_console.print(f"dbperf: error: {message}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _check_aggregate(aggregate: str | None) -> None:
    if aggregate is not None and aggregate not in AGGREGATES:
        fail(f"--aggregate: expected one of {', '.join(AGGREGATES)}, got {aggregate!r}")


def _note_skipped(directory: Path, skipped: list[SkippedLine]) -> None:
    """Lines of results.jsonl that were not used are said, never dropped without a word (on stderr, so that
    markdown, CSV and JSON on stdout stay parseable; JSON also carries them as `skipped_lines`)."""
    if skipped:
        where = ", ".join(f"line {s.line}: {s.reason}" for s in skipped[:5]) + (", ..." if len(skipped) > 5 else "")
        err_console.print(f"dbperf: note: {directory / 'results.jsonl'}: {len(skipped)} line(s) skipped ({where})",
                          markup=False, highlight=False)


def show(fmt: str, output: str | None, force: bool, stem: str, table: Callable[[], object],
         document: Callable[[str], str]) -> None:
    """Every report view goes out here: `table` draws it on the terminal; `document(fmt)` is it as Markdown, CSV,
    JSON or HTML, to stdout or to `-o FILE` (output_file.py's rules; a directory gets STEM.EXT)."""
    if fmt == "table":
        if output is not None:
            fail("-o/--output: not with --format table (markdown, csv, json and html can be written to a file)")
        table()
        return
    write_output(document(fmt), output, force, default_name(fmt, stem))


def print_report(directory: Path, fmt: str, aggregate: str | None, output: str | None = None,
                 force: bool = False) -> None:
    meta, records, skipped = read_results(directory)
    if meta.get(STATUS_NOTE):  # the status read back (a lab that died): said on stderr too, as skipped lines are
        err_console.print(f"dbperf: note: {directory}: {meta[STATUS_NOTE]}", markup=False, highlight=False)
    skipped_lines = [asdict(s) for s in skipped]
    if meta.get("replication"):  # a replication lab's results (replication_view.py; HTML: replication_html.py)
        replication = {"markdown": replication_markdown, "csv": replication_csv, "html": replication_html,
                       "json": lambda meta, records: replication_json(meta, records, skipped_lines)}
        show(fmt, output, force, "report", lambda: render_replication(meta, records, out_console),
             lambda f: replication[f](meta, records))
    elif hosts_in(records):
        print_host_reports(meta, records, skipped_lines, fmt, aggregate, output, force)
    else:
        matrix = build_matrix(meta, records, aggregate)
        run = {"markdown": to_markdown, "csv": to_csv, "html": to_html,
               "json": lambda m, meta: to_json(m, meta, skipped=skipped_lines)}
        show(fmt, output, force, "report", lambda: render_table(matrix, meta, out_console),
             lambda f: run[f](matrix, meta))
    _note_skipped(directory, skipped)


def write_output(document: str, output: str | None, force: bool = False, name: str = "report.txt") -> None:
    """A document to stdout, or to a file by output_file.py's rules (no overwrite without --force, never a results
    directory's own files; `name` when the path is a directory)."""
    if output is None:
        sys.stdout.write(document)
        return
    written = write_file(output, document, force, name)
    err_console.print(f"dbperf: wrote {written} ({len(document.encode()) / 1e6:.1f} MB)", markup=False,
                      highlight=False)


def print_host_reports(meta: dict, records: list, skipped: list[dict], fmt: str, aggregate: str | None,
                       output: str | None, force: bool = False) -> None:
    """A fleet run: one report per host (dbperf/report/hosts.py)."""
    views = [(host, view, build_matrix(view, mine, aggregate))
             for host in hosts_in(records, meta) for view, mine in [host_view(meta, records, host)]]

    def table() -> None:
        for host, view, matrix in views:
            out_console.print(f"\n[bold reverse] {term(host_heading(meta, host))} [/bold reverse]")
            render_table(matrix, view, out_console)

    def document(f: str) -> str:
        if f == "html":
            return to_html_hosts([(host_heading(meta, host), matrix, view) for host, view, matrix in views], meta)
        if f == "json":
            return json_by_host([(host, to_json(matrix, view)) for host, view, matrix in views], skipped)
        if f == "csv":
            return csv_with_host([(host, to_csv(matrix, view)) for host, view, matrix in views])
        return "".join(f"## {md(host_heading(meta, host))}\n\n" + to_markdown(matrix, view) + "\n"
                       for host, view, matrix in views)

    show(fmt, output, force, "report", table, document)


def print_intervals(directory: Path, fmt: str = "table", output: str | None = None, force: bool = False) -> None:
    """`report --intervals`: every measured cell's interval lines (sysbench --report-interval) in run order."""
    _, records, skipped = read_results(directory)

    def table() -> None:
        for record in measured(records):
            out_console.print(cell_heading(record), markup=False, highlight=False)
            for line in cell_lines(record):
                out_console.print(line, markup=False, highlight=False, soft_wrap=True)

    show(fmt, output, force, "intervals", table, lambda f: render_view(intervals_view(records), f))
    _note_skipped(directory, skipped)


@dataclass
class RunEnd:
    directory: Path
    exit_code: int  # 0, 3 when no cell succeeded, 128 + signal when interrupted


def run_experiment(experiment: Path, out: Path | None, keep_data: bool, profile: bool = False,
                   yes: bool = False, aa: bool = False, simulated: bool = False) -> RunEnd:
    """Builds what the targets need, runs the matrix."""
    # Absolute once, here: servers and set-up tools run with another working directory.
    directory = (out or Path("results") / f"{experiment.stem}-{datetime.now():%Y%m%d-%H%M%S}").absolute()
    spec = parse_experiment(experiment)
    if spec.replication is not None:
        return run_replication_experiment(spec, directory, keep_data)
    if aa:
        spec = with_aa(spec)
    if simulated:
        spec = replace(spec, simulated=True)
    history_path()  # a bad DBPERF_HISTORY is said now, not after the run
    size = estimate(spec, directory)
    if size.needs_confirmation() and not yes:  # said once, as the error; with --yes, as a warning
        fail(f"{experiment}: {size.summary()}; add --yes to run it anyway")
    for line in size.warnings():
        err_console.print(f"dbperf: warning: {line}", markup=False, highlight=False)
    exp, builds = build_targets(spec, err_console)
    inspect_targets(exp)
    repeats = (f"auto repeats (at least {exp.repeats} rounds, budget {exp.budget_s:.0f} s)"
               if exp.budget_s is not None else f"{exp.repeats} repeats")
    err_console.print(f"dbperf: {len(exp.benchmarks)} benchmarks × {len(exp.threads)} thread counts × "
                      f"{repeats} × {len(exp.targets)} targets, results in {directory}",
                      markup=False, highlight=False)
    if profile:
        mode = detect_mode()
        err_console.print(f"dbperf: counters mode {mode.mode}: {mode.reason}", highlight=False)
    return _run_to_end(directory, keep_data, "cell",
                       lambda: run_matrix(exp, directory, err_console, keep_data=keep_data, builds=builds,
                                          profile=profile),
                       record=True)


def run_replication_experiment(spec: Experiment, directory: Path, keep_data: bool) -> RunEnd:
    """An experiment with a [replication] section: the replication lab (dbperf/replication/) instead of the matrix."""
    exp, builds = build_targets(spec, err_console)
    r = exp.replication
    assert r is not None
    err_console.print(f"dbperf: replication lab: primary + {r.replicas} replica(s), studies {', '.join(r.studies)}, "
                      f"results in {directory}", markup=False, highlight=False)
    return _run_to_end(directory, keep_data, "measurement",
                       lambda: run_replication(exp, directory, err_console, keep_data=keep_data, builds=builds))


def _run_to_end(directory: Path, keep_data: bool, unit: str, run: Callable[[], Any], record: bool = False) -> RunEnd:
    """Runs the matrix or the replication lab and turns how it ended into the exit code, saying why on stderr;
    `record` adds the run to the history store (a warning if it cannot be)."""
    try:
        outcome = run()
    except KeyboardInterrupt as interrupt:
        err_console.print(f"dbperf: interrupted ({interrupts.reason(interrupt)}); what was measured is in "
                          f"{directory}", markup=False, highlight=False)
        return RunEnd(directory, interrupts.exit_code(interrupt))
    if keep_data and outcome.runtime_dir:
        err_console.print(f"dbperf: the servers' data directories are kept in {outcome.runtime_dir}", markup=False,
                          highlight=False)
    if record and outcome.cells_ok == 0:  # a run that measured nothing is no point of a series
        err_console.print(f"dbperf: note: not recorded in the history: no {unit} succeeded", markup=False,
                          highlight=False)
    elif record:
        record_run(directory, err_console)
    if outcome.cells_ok == 0 and outcome.cells_failed > 0:
        err_console.print(f"dbperf: error: no {unit} succeeded ({outcome.cells_failed} failed); the errors are in "
                          f"{directory / 'results.jsonl'}", markup=False, highlight=False)
        return RunEnd(directory, NO_CELL_SUCCEEDED)
    return RunEnd(directory, 0)


def _report_after_run(end: RunEnd, show: Callable[[Path], None]) -> None:
    """The (partial) report of a run that ended; a terminal that went away (SIGHUP) does not turn into a
    traceback."""
    if (end.directory / "meta.json").is_file():
        with contextlib.suppress(OSError):
            show(end.directory)
    if end.exit_code:
        raise typer.Exit(end.exit_code)


OUT_OPTION = typer.Option("--out", help="results directory (default results/NAME-TIME)")


@app.command()
def run(
    experiment: Annotated[Path, typer.Argument(help="experiment file (TOML)")],
    out: Annotated[Optional[Path], OUT_OPTION] = None,
    aggregate: Annotated[Optional[str], typer.Option(help="median (default) or trimmed")] = None,
    keep_data: Annotated[bool, typer.Option(help="keep the loaded databases (SQLite: DIR/.data; servers: the "
                                                   "runtime directory named in meta.json)")] = False,
    profile: Annotated[bool, typer.Option("--profile", help="also measure counters per (target, benchmark)")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="run even if it will take over an hour or more than the free "
                                                    "disk")] = False,
    aa: Annotated[bool, typer.Option("--aa", help="also run the base against itself: how many A/A cells are called "
                                                  "changed")] = False,
    simulated: Annotated[bool, typer.Option("--simulated", help="also measure simulated instructions and estimated "
                                                                "cycles per query (cachegrind), as `simulated = "
                                                                "true`")] = False,
) -> None:
    """Run an experiment's matrix and print the rQPS table."""
    _check_aggregate(aggregate)
    end = run_experiment(experiment, out, keep_data, profile, yes, aa, simulated)
    _report_after_run(end, lambda d: print_report(d, "table", aggregate))


@app.command()
def ladder(
    experiment: Annotated[Path, typer.Argument(help="experiment file: its targets are cumulative tuning steps")],
    out: Annotated[Optional[Path], OUT_OPTION] = None,
    aggregate: Annotated[Optional[str], typer.Option(help="median (default) or trimmed")] = None,
    yes: Annotated[bool, typer.Option("--yes", help="run even if it will take over an hour or more than the free "
                                                    "disk")] = False,
) -> None:
    """Run the targets as a tuning ladder and report each step's gain over the previous step and the base."""
    _check_aggregate(aggregate)
    end = run_experiment(experiment, out, keep_data=False, yes=yes)
    _report_after_run(end, lambda d: print_ladder(d, aggregate))


def print_resources(directory: Path, fmt: str, output: str | None = None, force: bool = False) -> None:
    meta, records, skipped = read_results(directory)
    show(fmt, output, force, "resources", lambda: render_resources(meta, records, out_console),
         lambda f: resources_json(meta, records) if f == "json" else render_view(resources_view(meta, records), f))
    _note_skipped(directory, skipped)


def print_ladder(directory: Path, aggregate: str | None, fmt: str = "table", output: str | None = None,
                 force: bool = False) -> None:
    meta, records, skipped = read_results(directory)
    ladders: list[tuple[str | None, list[Any]]] = [  # a fleet run: a ladder per host
        (host, ladder_steps(build_matrix(view, mine, aggregate)))
        for host in hosts_in(records, meta) for view, mine in [host_view(meta, records, host)]]
    if not hosts_in(records):
        ladders.append((None, ladder_steps(build_matrix(meta, records, aggregate))))

    def table() -> None:
        for host, steps in ladders:
            if host is not None:
                out_console.print(f"\n[bold reverse] {term(host_heading(meta, host))} [/bold reverse]")
            render_ladder(steps, out_console)

    show(fmt, output, force, "ladder", table, lambda f: render_view(ladder_view(ladders), f))
    _note_skipped(directory, skipped)


@app.command()
def build(
    experiment: Annotated[Optional[Path], typer.Argument(help="build every `source` target of this experiment")] = None,
    list_cache: Annotated[bool, typer.Option("--list", help="show the build cache")] = False,
    versions: Annotated[Optional[str], typer.Option(
        "--versions", help="which versions exist: sqlite (crates.io), postgres or mariadb (released binaries)")]
    = None,
    scan: Annotated[int, typer.Option(help="with --versions sqlite: how many newest crate releases to map")] = 8,
) -> None:
    """Build SQLite variants or fetch server releases without running anything, list the caches, or list the
    versions that exist."""
    if list_cache:
        table = Table(show_edge=False, pad_edge=False)
        for title in ("key", "sqlite", "variants / cflags", "PGO training", "built", "seconds", "library"):
            table.add_column(title)
        for m in cached_builds():
            pgo = m.get("pgo") or {}
            table.add_row(m["key"], m["source"]["sqlite_version"], " ".join(m["variants"] + m["cflags"]),
                          ", ".join(pgo.get("training_set", [])) or "-", m["built_at"], str(m["build_seconds"]),
                          m["library"])
        out_console.print(table)
        server_builds = cached_server_builds()
        if server_builds:
            table = Table(show_edge=False, pad_edge=False, title="server builds")
            for title in ("key", "build", "source package", "PGO .gcda", "built", "seconds", "install"):
                table.add_column(title)
            for m in server_builds:
                table.add_row(m["key"], m["label"], f"{m['source']['package']} {m['source']['version']}",
                              str((m.get("pgo") or {}).get("profile_files", "-")), m["built_at"],
                              str(m["build_seconds"]), m["install"])
            out_console.print(table)
        releases = cached_releases()
        if releases:
            table = Table(show_edge=False, pad_edge=False, title="server releases")
            for title in ("engine", "version", "published as", "jar sha256", "fetched"):
                table.add_column(title)
            for r in releases:
                table.add_row(r["engine"], r["version"], r["published_version"], r["jar_sha256"][:16],
                              r["fetched_at"])
            out_console.print(table)
        return
    if versions in SERVER_RELEASES:
        published = available_versions(versions)
        out_console.print(f"{SERVER_RELEASES[versions].description}: write source = \"{versions}@VERSION\"",
                          highlight=False)
        names = dict.fromkeys(release_name(versions, p) for p in published)  # rebuilds (-1) once
        out_console.print("  " + ", ".join(names), highlight=False)
        return
    if versions is not None and versions != "sqlite":
        fail(f"--versions: expected sqlite, postgres or mariadb, got {versions!r}")
    if versions:
        mapping = scan_versions(scan)
        out_console.print(f"SQLite versions bundled by the newest {len(mapping)} {CRATE} releases on crates.io "
                          "(read from each amalgamation's SQLITE_VERSION):", highlight=False)
        for crate_version, sqlite_version in mapping.items():
            out_console.print(f"  sqlite@{sqlite_version}   ({CRATE} {crate_version})", highlight=False)
        return
    if experiment is None:
        fail("build: give an experiment file, --list or --versions")
    _, builds = build_targets(parse_experiment(experiment), err_console)
    if not builds:
        fail(f"{experiment}: no target has a 'source' to build")
    for name, manifest in builds.items():
        if "release" in manifest:
            release = manifest["release"]
            out_console.print(f"{name}: {release['engine']}@{release['version']} released binaries, jar sha256 "
                              f"{release['jar_sha256']}", highlight=False, markup=False)
            continue
        how = "cached" if manifest["cached"] else f"built in {manifest['build_seconds']} s"
        out_console.print(f"{name}: {manifest['label']} -> {manifest.get('library') or manifest['install']} ({how})",
                          highlight=False,
                          markup=False)


FORCE_OPTION = typer.Option("--force", help="replace the -o file if it exists (never a results directory's "
                                            "results.jsonl or meta.json)")


@app.command()
def report(
    directory: Annotated[Path, typer.Argument(help="results directory of a run")],
    format: Annotated[str, typer.Option("--format", help="table, markdown, csv, json or html")] = "table",
    aggregate: Annotated[Optional[str], typer.Option(help="median or trimmed (default: the run's)")] = None,
    as_ladder: Annotated[bool, typer.Option("--ladder", help="report the targets as a tuning ladder")] = False,
    output: Annotated[Optional[str], typer.Option("-o", "--output", help="write the report (any format but "
                                                   "table) to this file, or DIR/report.EXT for a directory")]
    = None,
    force: Annotated[bool, FORCE_OPTION] = False,
    resources: Annotated[bool, typer.Option("--resources", help="I/O and engine counters per query, database "
                                            "sizes")] = False,
    intervals: Annotated[bool, typer.Option("--intervals", help="each cell's time series as sysbench's interval "
                                            "lines, and per-statement latencies")] = False,
) -> None:
    """Report a results directory, complete or partial."""
    if format not in FORMATS:
        fail(f"--format: expected one of {', '.join(FORMATS)}, got {format!r}")
    _check_aggregate(aggregate)
    if resources + intervals + as_ladder > 1:
        fail("--resources, --intervals and --ladder are views of their own: give one at a time")
    if resources:
        print_resources(directory, format, output, force)
    elif intervals:
        print_intervals(directory, format, output, force)
    elif as_ladder:
        print_ladder(directory, aggregate, format, output, force)
    else:
        print_report(directory, format, aggregate, output, force)


@app.command("import")
def import_command(
    files: Annotated[list[Path], typer.Argument(help="saved sysbench or pgbench output, one run per file")],
    tool: Annotated[str, typer.Option("--tool", help="sysbench or pgbench")],
    out: Annotated[Path, typer.Option("--out", help="a new or empty results directory")],
    target: Annotated[Optional[str], typer.Option("--target", help="the target's name (default: the tool)")] = None,
    queries_per_transaction: Annotated[int, typer.Option(help="pgbench: SQL commands per transaction")] = 1,
) -> None:
    """Read saved sysbench/pgbench output into a results directory (benchmark = file name up to its first dot)."""
    count = import_outputs(files, tool, out, target, queries_per_transaction)
    err_console.print(f"dbperf: imported {count} {tool} run(s) into {out}", highlight=False)
    print_report(out, "table", None)


MODES = ("auto", "simulated", "hardware")


def _profiler_setup(experiment: Path, mode: str, queries: int) -> tuple[Experiment, Profiler, Path]:
    if mode not in MODES:
        fail(f"--mode: expected one of {', '.join(MODES)}, got {mode!r}")
    if queries < 1:
        fail("--queries: must be at least 1")
    exp, _ = build_targets(parse_experiment(experiment), err_console)
    inspect_targets(exp)
    detected = detect_mode()
    if mode == "hardware" and detected.mode != "hardware":
        fail(f"hardware counters asked for, but {detected.reason}")
    chosen = detected if mode == "auto" else CounterMode(mode, detected.reason if mode == detected.mode
                                                          else f"asked for {mode} counters")
    err_console.print(f"dbperf: counters mode {chosen.mode}: {chosen.reason}", highlight=False)
    work = Path(tempfile.mkdtemp(prefix="dbperf-profile-"))
    return exp, Profiler(exp, work, queries=queries, mode=chosen), work


def _target(exp: Experiment, name: str) -> Target:
    for t in exp.targets:
        if t.name == name:
            return t
    fail(f"{exp.path}: no target {name!r} (targets: {', '.join(t.name for t in exp.targets)})")
    raise AssertionError


def _benchmark(exp: Experiment, name: str) -> Workload:
    (w,) = resolve([name], exp.path.parent, "--benchmark")
    return w


@app.command()
def profile(
    experiment: Annotated[Path, typer.Argument(help="experiment file")],
    target: Annotated[str, typer.Option(help="target name")],
    benchmark: Annotated[str, typer.Option(help="benchmark name or workload file")],
    queries: Annotated[int, typer.Option(help="queries in the profiled phase")] = 20_000,
    mode: Annotated[str, typer.Option(help="auto, simulated or hardware")] = "auto",
    json_out: Annotated[Optional[str], typer.Option("--json", help="also write the profile as JSON here")] = None,
    force: Annotated[bool, typer.Option("--force", help="replace the --json file if it exists")] = False,
) -> None:
    """Counters per query and the top functions of one target on one benchmark."""
    if json_out is not None:  # refused before the profile is measured, not after
        output_path(json_out, force, "profile.json", "--json")
    exp, profiler, work = _profiler_setup(experiment, mode, queries)
    try:
        p = profiler.profile(_target(exp, target), _benchmark(exp, benchmark))
    finally:
        profiler.close()
        shutil.rmtree(work, ignore_errors=True)
    render_profile(p, out_console)
    if json_out:
        write_file(json_out, json.dumps(to_builtins(p), indent=2) + "\n", force, "profile.json", "--json")


@app.command()
def diff(
    experiment: Annotated[Path, typer.Argument(help="experiment file")],
    a: Annotated[str, typer.Argument(help="target A (before)")],
    b: Annotated[str, typer.Argument(help="target B (after)")],
    benchmark: Annotated[str, typer.Option(help="benchmark name or workload file")],
    queries: Annotated[int, typer.Option(help="queries in the profiled phase")] = 20_000,
    mode: Annotated[str, typer.Option(help="auto, simulated or hardware")] = "auto",
    top: Annotated[int, typer.Option(help="functions to show")] = 25,
) -> None:
    """Per-function cost per query of B minus A on one benchmark, largest changes first."""
    exp, profiler, work = _profiler_setup(experiment, mode, queries)
    try:
        bench = _benchmark(exp, benchmark)
        pa, pb = profiler.profile(_target(exp, a), bench), profiler.profile(_target(exp, b), bench)
    finally:
        profiler.close()
        shutil.rmtree(work, ignore_errors=True)
    metric, rows, total_a, total_b = profile_diff(pa, pb)
    render_diff(a, b, metric, rows, total_a, total_b, pa.mode, out_console, top)


@app.command()
def check(
    experiment: Annotated[Path, typer.Argument(help="experiment file: every target against the base")],
    instructions: Annotated[bool, typer.Option("--instructions", help="gate on simulated instructions per query")]
    = False,
    max_regression: Annotated[str, typer.Option(help="allowed growth over the base, e.g. 1%")] = "1%",
    queries: Annotated[int, typer.Option(help="queries in the profiled phase")] = 20_000,
) -> None:
    """Exit 1 when a target's simulated instructions per query exceed the base's by more than the threshold."""
    if not instructions:
        fail("check: say what to gate on (--instructions)")
    text = max_regression.strip().removesuffix("%")
    try:
        threshold = float(text) / 100
    except ValueError:
        fail(f"--max-regression: expected a percentage such as 1%, got {max_regression!r}")
    exp, profiler, work = _profiler_setup(experiment, "simulated", queries)
    base = _target(exp, exp.base)
    failures = []
    table = Table(show_edge=False, pad_edge=False,
                  title=f"simulated instructions per query (cachegrind), threshold +{threshold:.2%}")
    for title in ("benchmark", "target", "instructions/query", f"vs {base.name}", "verdict"):
        table.add_column(title, justify="left" if title in ("benchmark", "target", "verdict") else "right")
    try:
        for bench in exp.benchmarks:
            base_ir = profiler.profile(base, bench).per_query["instructions"]
            table.add_row(bench.name, base.name, f"{base_ir:,.1f}", "base", "")
            for t in exp.targets:
                if t.name == base.name:
                    continue
                ir = profiler.profile(t, bench).per_query["instructions"]
                change = ir / base_ir - 1
                bad = change > threshold
                if bad:
                    failures.append(f"{t.name}/{bench.name} {change:+.2%}")
                table.add_row("", t.name, f"{ir:,.1f}", f"{change:+.3%}", "[red]REGRESSION[/red]" if bad else "ok")
    finally:
        profiler.close()
        shutil.rmtree(work, ignore_errors=True)
    out_console.print(table)
    if failures:
        err_console.print(f"dbperf: check failed: {'; '.join(failures)}", highlight=False)
        raise typer.Exit(1)


@app.command()
def probe(
    names: Annotated[Optional[list[str]], typer.Argument(help=f"probe families (default all: {', '.join(FAMILIES)})")]
    = None,
    json_output: Annotated[bool, typer.Option("--json", help="print the results as JSON")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", help="store the results (probes.json) in this directory")]
    = None,
    repeats: Annotated[int, typer.Option(help="repeats per figure (at least 5 for the published tables)")] = 5,
    scale: Annotated[float, typer.Option(help="multiplies every iteration count")] = 1.0,
    compare: Annotated[Optional[list[Path]], typer.Option("--compare", help="two stored result directories")]
    = None,
    fleet: Annotated[bool, typer.Option("--fleet", help="run on every host of a fleet: a table per family, a "
                                                        "column per host")] = False,
    scheduler: Annotated[Optional[str], typer.Option(help="with --fleet: the fleet's scheduler")] = None,
    certs: Annotated[Optional[Path], typer.Option(help="with --fleet: the lab's TLS certificates")] = None,
    local: Annotated[int, typer.Option(help="with --fleet: a local fleet of N workers instead of --scheduler")] = 0,
    force: Annotated[bool, typer.Option("--force", help="replace the probes.json already in --out")] = False,
) -> None:
    """Measure what barriers, mutexes, PAUSE, PRNGs, timers and false sharing cost on this CPU."""
    if out is not None and not force:  # a stored probe result is a measurement: said before probing, not after
        held = [p for p in (out / "probes.json", *out.glob("*/probes.json")) if p.exists()]
        if held:
            fail(f"--out {out}: already holds a probe result ({held[0]}); add --force to replace it")
    if not math.isfinite(scale) or scale <= 0:
        fail("--scale must be a positive finite number")
    if fleet:
        _probe_fleet(names or [], json_output, out, repeats, scale, scheduler, certs, local, force)
        return
    if compare:
        if len(compare) != 2:
            fail("--compare takes two result directories (--compare DIR1 --compare DIR2)")
        loaded = [_load_probes(d) for d in compare]
        render_compare(loaded[0], loaded[1], str(compare[0]), str(compare[1]), out_console)
        return
    result = run_probes(names or list(FAMILIES), repeats=repeats, scale=scale,
                        on_family=lambda f: err_console.print(f"dbperf: probing {f.name}: {f.description}",
                                                              highlight=False))
    if out:
        _store_probes(out, result, force)
    if json_output:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
    else:
        render_probes(result, out_console)


def _store_probes(directory: Path, result: dict, force: bool) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        fail(f"{directory}: cannot write results: {e.strerror}")
    write_file(directory / "probes.json", json.dumps(result, indent=2) + "\n", force, "probes.json", "--out")


def _probe_fleet(names: list[str], json_output: bool, out: Path | None, repeats: int, scale: float,
                 scheduler: str | None, certs: Path | None, local: int, force: bool) -> None:
    """`probe --fleet`: each host probes itself (dbperf/fleet/probe.py); DIR/HOST/probes.json with --out."""
    from dbperf.fleet.cluster import connect
    from dbperf.fleet.local import local_fleet
    from dbperf.fleet.probe import probe_fleet
    from dbperf.report.probe_hosts import render_hosts
    if local < 0:
        fail(f"--local: expected a number of workers of at least 1, got {local}")
    if (scheduler is None) == (local == 0):
        fail("--fleet: give the fleet's --scheduler, or --local N for N workers on this machine")
    args = [*names, "--repeats", str(repeats), "--scale", str(scale)]
    with contextlib.ExitStack() as stack:
        if local:
            lf = stack.enter_context(local_fleet(local))
            scheduler, certs = lf.scheduler, lf.certs
        assert scheduler is not None
        client = connect(scheduler, certs)
        stack.callback(client.close)
        if local:
            _wait_local(client, local)
        err_console.print("dbperf: probing every host of the fleet", highlight=False)
        results = probe_fleet(client, args, one_at_a_time=bool(local))
    if out:
        for host, result in results.items():
            _store_probes(out / host, result, force)
    if json_output:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
    else:
        render_hosts(results, out_console)


def _wait_local(client: Any, workers: int) -> None:
    import time

    from dbperf.fleet.cluster import connected_hosts
    from dbperf.fleet.local import START_TIMEOUT_S, local_names
    deadline = time.monotonic() + START_TIMEOUT_S
    while not set(local_names(workers)) <= set(connected_hosts(client)):
        if time.monotonic() > deadline:
            fail("the local workers did not join the scheduler")
        time.sleep(0.2)


def _load_probes(directory: Path) -> dict:
    path = directory / "probes.json" if directory.is_dir() else directory
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{path}: not a stored probe result ({e})")
        raise AssertionError from None


@app.command("list")
def list_benchmarks(
    sql: Annotated[bool, typer.Option("--sql/--no-sql", help="show each benchmark's SQL")] = True,
) -> None:
    """List the catalog's benchmarks and groups."""
    for group in GROUP_NAMES:
        names = HARNESS_GROUPS.get(group) or " ".join(w.name for w in expand_group(group))
        out_console.print(f"[bold]group {group}[/bold]: {names}", highlight=False)
    for w in builtin().values():
        out_console.print(f"\n[bold]{term(w.name)}[/bold]  [dim]{w.group}/{w.phase}, {w.queries_per_event} "
                          f"queries per event[/dim]\n  {term(w.description)}", highlight=False)
        if sql:
            for line in w.display_sql():
                out_console.print(f"    {line}", markup=False, highlight=False)


@app.command()
def keys() -> None:
    r"""Every key of an experiment's \[run] and \[\[target]] and of a workload file: type, default, unit, meaning."""
    for section, declared in key_table.SECTIONS.items():
        table = Table(title=term(section), title_justify="left", show_edge=False, pad_edge=False)
        for title in ("key", "type", "default", "unit", "meaning"):
            table.add_column(title)
        for k in declared:
            table.add_row(term(k.name), term(k.kind), term(k.default), term(k.unit), term(k.doc))
        out_console.print(table)
        out_console.print()


# The history store, series, regressions and compare (dbperf/history/commands.py).
register_history(app, out_console, err_console, fail, show)


@app.command()
def layout(
    binary: Annotated[Optional[Path], typer.Argument(help="ELF executable or shared library to check")] = None,
    run: Annotated[Optional[str], typer.Option("--run", help="run BINARY with these arguments under the dynamic "
                                                              "count")] = None,
    experiment: Annotated[Optional[Path], typer.Option(help="drive this experiment's target engine ...")] = None,
    target: Annotated[Optional[str], typer.Option(help="... this target (its SQLite library is checked) ...")]
    = None,
    benchmark: Annotated[Optional[str], typer.Option(help="... with this catalog benchmark")] = None,
    line: Annotated[Optional[int], typer.Option(help="cache line bytes, 64 or 128 (default: from the ELF "
                                                     "machine)")] = None,
    json_file: Annotated[Optional[str], typer.Option("--json", help="write the map and findings as JSON")] = None,
    fix: Annotated[bool, typer.Option("--fix", help="rebuild with the remedy, recheck, and A/B the workload")]
    = False,
    demo: Annotated[bool, typer.Option("--demo", help="check the repo's demo program (the seed's pattern and "
                                                      "decoys)")] = False,
    mode: Annotated[str, typer.Option(help="auto, simulated or hardware (perf mem)")] = "auto",
    lib: Annotated[Optional[list[Path]], typer.Option("--lib", help="also check this shared library of BINARY "
                                                                     "(repeatable)")] = None,
    force: Annotated[bool, typer.Option("--force", help="replace the --json file if it exists")] = False,
    trace_seconds: Annotated[Optional[str], typer.Option(help="trace the workload this long, then stop it and "
                                                              "analyse the counts so far (90, 90s, 2m; default "
                                                              "60 s)")] = None,
    trace_accesses: Annotated[Optional[str], typer.Option(help="... or until this many memory accesses are "
                                                               "traced (5000000, 5M)")] = None,
) -> None:
    """Find read-mostly globals sharing a cache line with written ones, propose the fix, and prove it."""
    from dbperf.layout.command import layout_command
    # The rules of every output file (output_file.py), checked before the analysis.
    json_path = None if json_file is None else output_path(json_file, force, "layout.json", "--json")

    layout_command(binary, run, experiment, target, benchmark, line, json_path, fix, demo, mode, out_console,
                   err_console, lib, trace_seconds, trace_accesses)


@app.command()
def version() -> None:
    """Print dbperf's version."""
    out_console.print(f"dbperf {__version__}")

# -- the fleet (dbperf/fleet): many benchmark hosts on Dask distributed ------------------------------------------

fleet_app = typer.Typer(no_args_is_help=True, help="Run an experiment across many benchmark hosts (Dask).")
app.add_typer(fleet_app, name="fleet")
CERTS_OPTION = typer.Option("--certs", help="the lab's TLS certificates (dbperf fleet certs DIR)")


@app.command()
def scheduler(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port (0: a free one)")] = 8786,
    certs: Annotated[Optional[Path], CERTS_OPTION] = None,
    address_file: Annotated[Optional[Path], typer.Option(help="write the address here once listening")] = None,
) -> None:
    """A Dask scheduler for the fleet (tls:// with --certs), until Ctrl-C."""
    from dbperf.fleet.cluster import run_scheduler
    run_scheduler(host, port, certs, address_file,
                  announce=lambda line: err_console.print(line, markup=False, highlight=False))


@app.command()
def worker(
    scheduler: Annotated[str, typer.Option("--scheduler", help="tls://HOST:PORT (or tcp://) of the scheduler")],
    name: Annotated[str, typer.Option("--name", help="this host's name in experiments and results")],
    certs: Annotated[Optional[Path], CERTS_OPTION] = None,
    cache: Annotated[Optional[Path], typer.Option(help="the lab's cache on this host (default $DBPERF_CACHE or "
                                                       "~/.cache/dbperf)")] = None,
    listen: Annotated[Optional[str], typer.Option(help="address to listen on (default: the interface that "
                                                       "reaches the scheduler)")] = None,
    join_timeout: Annotated[str, typer.Option(help="how long to keep trying to join the scheduler (e.g. 60s, "
                                                   "2m)")] = "60s",
    ready_file: Annotated[Optional[Path], typer.Option(hidden=True, help="written once joined (fleet local)")]
    = None,
) -> None:
    """Join the fleet as host NAME: one cell at a time, run with this host's dbperf, compiler and caches."""
    from dbperf.experiment.durations import parse_duration
    from dbperf.fleet.cluster import run_worker
    from dbperf.names import check_name
    timeout = parse_duration(join_timeout, "--join-timeout", positive=True)
    run_worker(scheduler, check_name(name, "--name"), certs, cache, listen, timeout, ready_file)


def _fleet_end(end: Any) -> None:
    _report_after_run(RunEnd(end.directory, end.exit_code), lambda d: print_report(d, "table", None))


@fleet_app.command("run")
def fleet_run(
    experiment: Annotated[Path, typer.Argument(help="experiment file with a [fleet] section")],
    out: Annotated[Optional[Path], OUT_OPTION] = None,
    scheduler: Annotated[Optional[str], typer.Option(help="overrides [fleet] scheduler")] = None,
    certs: Annotated[Optional[Path], CERTS_OPTION] = None,
    resume: Annotated[bool, typer.Option("--resume", help="run the cells --out DIR lacks")] = False,
    keep_data: Annotated[bool, typer.Option(help="keep each host's loaded data")] = False,
) -> None:
    """Run the matrix on the fleet's hosts; every record carries its host."""
    from dbperf.fleet.run import run_fleet
    _fleet_end(run_fleet(experiment, out, scheduler, certs, err_console, resume=resume, keep_data=keep_data))


@fleet_app.command("local")
def fleet_local(
    experiment: Annotated[Path, typer.Argument(help="experiment file")],
    workers: Annotated[int, typer.Option(help="workers (hosts local-1 ... local-N); at most 4 per CPU the lab may "
                                              "use, and as many as fit at 160 MiB each in half of MemAvailable")]
    = 2,
    out: Annotated[Optional[Path], OUT_OPTION] = None,
    tls: Annotated[bool, typer.Option("--tls", help="TLS with a fresh self-signed set")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="run the cells --out DIR lacks")] = False,
    keep_data: Annotated[bool, typer.Option(help="keep each host's loaded data")] = False,
) -> None:
    """Start a scheduler and N workers on 127.0.0.1, run the experiment on them, stop them (all of them, also on
    Ctrl-C or SIGTERM while they start). N is capped by this host: 4 workers per CPU the lab may use, and 160 MiB
    (one worker's measured resident size) each within half of MemAvailable."""
    from dbperf.fleet.run import run_local
    _fleet_end(run_local(experiment, workers, out, err_console, tls=tls, resume=resume, keep_data=keep_data))


@fleet_app.command("certs")
def fleet_certs(
    directory: Annotated[Path, typer.Argument(help="new directory for the certificate set")],
    host: Annotated[Optional[list[str]], typer.Option("--host", help="a name or address the scheduler is reached "
                                                                     "by (repeat)")] = None,
) -> None:
    """Make a self-signed CA and a lab certificate for the scheduler, the workers and the controller."""
    from dbperf.fleet.certs import make_certs
    for path in make_certs(directory, host or []):
        out_console.print(str(path), markup=False, highlight=False)



def _usage_error(e: click_errors.UsageError) -> NoReturn:
    """Typer's parameter errors (`history show abc`, `--threads x`, a missing argument) as one line, like every
    other bad input, instead of a usage banner and a boxed message."""
    names: list[str] = []
    ctx = e.ctx
    while ctx is not None and ctx.parent is not None:
        names.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    where = f"{' '.join(names)}: " if names else ""
    err_console.print(f"dbperf: error: {where}{e.format_message()} (--help shows the options)", markup=False,
                      highlight=False, soft_wrap=True)
    sys.exit(2)


def _typer_shows(e: click_errors.ClickException) -> NoReturn:
    from typer import rich_utils
    rich_utils.rich_format_error(e)
    sys.exit(e.exit_code)


def main() -> None:
    interrupts.install()
    try:
        code = app(standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except click_errors.NoArgsIsHelpError as e:  # the help, as Typer shows it
        _typer_shows(e)
    except click_errors.UsageError as e:
        _usage_error(e)
    except click_errors.ClickException as e:
        _typer_shows(e)
    except typer.Abort:
        err_console.print("dbperf: aborted", highlight=False)
        sys.exit(1)
    except UserError as e:
        err_console.print(f"dbperf: error: {e}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt as interrupt:
        # Interrupted outside a matrix run (building, starting servers, probing): nothing measured to report.
        err_console.print(f"dbperf: interrupted ({interrupts.reason(interrupt)})", highlight=False)
        sys.exit(interrupts.exit_code(interrupt))


if __name__ == "__main__":
    main()
