"""The `dbperf layout` command: which binary, which workload, which proof."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from dbperf.errors import UserError
from dbperf.layout import build
from dbperf.layout.check import Checked, check_many, render, result_json, write_json
from dbperf.layout.dynamic import TraceBudget, TraceInterrupted, parse_budget
from dbperf.runner import interrupts

MODES = ("auto", "simulated", "hardware")
DEMO_ITERATIONS = "50000"


def layout_command(binary: Path | None, run: str | None, experiment: Path | None, target: str | None,
                   benchmark: str | None, line: int | None, json_file: Path | None, fix: bool, demo: bool,
                   mode: str, out: Console, err: Console, libraries: list[Path] | None = None,
                   trace_seconds: str | None = None, trace_accesses: str | None = None) -> int:
    """The layout check, its fix and its proof; the exit status: 0, or the signal's when interrupted."""
    budget = parse_budget(trace_seconds, trace_accesses)
    if (trace_seconds is not None or trace_accesses is not None) and run is None and not demo and experiment is None:
        raise UserError("--trace-seconds and --trace-accesses bound a traced run: give --run, --demo or --experiment")
    try:
        _layout(binary, run, experiment, target, benchmark, line, json_file, fix, demo, mode, out, err,
                libraries or [], budget)
        return 0
    except KeyboardInterrupt as interrupt:
        # Ctrl-C, SIGTERM or SIGHUP: the trace has stopped valgrind, the traced program and its process group on
        # the way out. Said here, with the signal's exit code, because Typer turns an interrupt into a silent 130.
        reported = isinstance(interrupt, TraceInterrupted) and interrupt.checked
        err.print("dbperf: interrupted" + (" while tracing: the report covers the run up to the interrupt"
                                           if reported else ""), highlight=False)
        return interrupts.exit_code(interrupt)


def _check_options(libraries: list[Path], experiment: bool, demo: bool, fix: bool, mode: str,
                   line: int | None) -> None:
    """The options every form of the command checks first."""
    if libraries and (experiment or demo or fix):
        raise UserError("--lib names shared libraries of BINARY: not with --experiment, --demo or --fix")
    if mode not in MODES:
        raise UserError(f"--mode: expected one of {', '.join(MODES)}, got {mode!r}")
    if line is not None and line not in (64, 128):
        raise UserError(f"--line: expected 64 or 128, got {line}")


def _layout(binary: Path | None, run: str | None, experiment: Path | None, target: str | None,
            benchmark: str | None, line: int | None, json_file: Path | None, fix: bool, demo: bool, mode: str,
            out: Console, err: Console, libraries: list[Path], budget: TraceBudget) -> None:
    _check_options(libraries, experiment is not None, demo, fix, mode, line)
    if experiment is not None or target is not None or benchmark is not None:
        if experiment is None or target is None or benchmark is None:
            raise UserError("--experiment, --target and --benchmark go together")
        if run is not None or demo:
            raise UserError("--experiment drives a lab target: it does not take --run or --demo")
        # Imported here: the static check of a binary needs none of the experiment machinery an A/B run does.
        from dbperf.layout.experiment import experiment_layout

        experiment_layout(binary, experiment, target, benchmark, line, json_file, fix, mode, out, err, budget)
        return
    if demo:
        if binary is not None:
            raise UserError("--demo checks the repo's demo program: give no BINARY")
        binary = build.demo()
        run = DEMO_ITERATIONS if run is None else run
        err.print(f"dbperf: demo program {binary} (dbperf/layout/c/demo.c), run with {run}", markup=False,
                  highlight=False)
        if fix:
            from dbperf.layout.fix import demo_fix

            demo_fix(binary, run, line, json_file, mode, out, err, budget)
            return
    elif binary is None:
        raise UserError("layout: give a BINARY, --demo, or --experiment E --target T --benchmark B")
    elif fix:
        raise UserError("--fix rebuilds what the lab builds: use it with --demo or --experiment (a SQLite target)")
    try:
        checked = check_many(binary, libraries, run, line, mode, budget=budget, err=err)
    except TraceInterrupted as interrupted:
        if interrupted.checked:
            _report(interrupted.checked, libraries, json_file, out)  # what was counted before the interrupt
        raise
    _report(checked, libraries, json_file, out)


def _report(checked: list[Checked], libraries: list[Path], json_file: Path | None, out: Console) -> None:
    for static, counts, found in checked:
        render(static, counts, found, out)
    if json_file is not None:
        static, counts, found = checked[0]
        everything = sorted((f for _, _, fs in checked for f in fs), key=lambda f: -f.cost)
        data = result_json(static, counts, everything)
        if libraries:
            data["libraries"] = [result_json(s, c, f) for s, c, f in checked[1:]]
        write_json(json_file, data)
