"""`dbperf bisect`: the first released version whose verdict turns slower (usecases/bisect.py), and the path to it."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Optional

import typer

from dbperf.buildlab.server_releases import available_versions
from dbperf.cli.common import YES_OPTION, fail, out_console, show
from dbperf.experiment.durations import parse_duration
from dbperf.usecases.bisect import (
    DEFAULT_TRIES,
    BisectResult,
    StepSettings,
    check_config_names,
    check_out,
    claimed,
    earlier_steps,
    expected_steps,
    parse_threshold,
    path_view,
    release_range,
    write_path,
)
from dbperf.usecases.bisect_metrics import METRICS, metric, require_tools, run_bisect
from dbperf.usecases.bisect_work import lead_view
from dbperf.usecases.progress import say


def _work_at(result: BisectResult, version: str | None) -> str:
    ratio = result.work_at(version)
    return "work unknown" if ratio is None else f"{ratio - 1:+.1%} work per query"


def _confirmed(result: BisectResult) -> str:
    if not result.confirmation:
        return ""
    said = ", ".join(f"{j.metric} {j.verdict}" + (f" (rQPS {j.rqps:.3f})" if j.rqps is not None else "")
                     for j in result.confirmation)
    return f"; at that step the wall clock says: {said} (reported, not deciding)"


def outcome_line(result: BisectResult, engine: str) -> str:
    n, good = len(result.versions), result.versions[0]
    steps = f"{len(result.steps)} step(s) over {n} releases (about {expected_steps(n)} when every step decides)"
    if result.metric == "simulated" and result.outcome == "found":
        return (f"first release with more work: {engine} {result.first_slower}, {_work_at(result, result.first_slower)}"
                f" against {good} (simulated instructions: work, not speed; last at the old level: "
                f"{result.last_not_slower}); {steps}{_confirmed(result)}")
    if result.metric == "simulated" and result.outcome == "none-slower":
        return (f"no release with more work: {engine} {result.last_not_slower} is at "
                f"{_work_at(result, result.last_not_slower)} against {good}; {steps}")
    if result.outcome == "found":
        return (f"first slower release: {engine} {result.first_slower} (last not slower: {result.last_not_slower}, "
                f"against {good}); {steps}")
    if result.outcome == "none-slower":
        return f"no slower release: {engine} {result.last_not_slower} is not slower than {good}; {steps}"
    bracket = (f"; the first slower release lies after {result.last_not_slower}, at or before "
               f"{result.first_slower}" if result.first_slower else "")
    why = {"undecided": "a step stayed undecided after its last try (more --budget or --tries may decide it)",
           "failed": "a step measured nothing (its errors are in its results directory)",
           "interrupted": "interrupted"}[result.outcome]
    return f"stopped: {why}{bracket}; {steps}"


def config_settings(pairs: list[str]) -> dict[str, str]:
    """`--config NAME=VALUE` pairs as the targets' config table (StepSettings.check checks names and values)."""
    settings: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip() or not value.strip():
            fail(f"--config: expected NAME=VALUE (e.g. shared_buffers=256MB), got {pair!r}")
        if name.strip() in settings:
            fail(f"--config: {name.strip()} is given twice")
        settings[name.strip()] = value.strip()
    return settings


def bisect(
    engine: Annotated[str, typer.Argument(help="postgres or mariadb (released binaries)")],
    first: Annotated[str, typer.Argument(help="the oldest version (the good one): e.g. 12 or 12.4")],
    last: Annotated[str, typer.Argument(help="the newest version of the range")],
    benchmark: Annotated[str, typer.Option(help="one catalog benchmark (`dbperf list`)")] = "point-query",
    threshold: Annotated[Optional[str], typer.Option(
        help="smallest slowdown called slower: the verdict's min_effect with --metric wall (default 5%), the growth "
             "of work per query with --metric simulated (default 2%; also the confirmation's min_effect)")] = None,
    metric_name: Annotated[str, typer.Option("--metric", help="what decides a step: " + "; ".join(
        f"{m.name}: {m.help}" for m in METRICS.values()))] = "wall",
    time: Annotated[str, typer.Option(help="measured time per cell")] = "5s",
    warmup: Annotated[str, typer.Option(help="warm-up per cell")] = "1s",
    budget: Annotated[str, typer.Option(help="measured rounds' budget of a step's first try (doubled per retry)")]
    = "2m",
    tries: Annotated[int, typer.Option(help="tries of an undecided step before the search stops")] = DEFAULT_TRIES,
    threads: Annotated[int, typer.Option(help="client threads")] = 1,
    table_size: Annotated[int, typer.Option(help="rows per table")] = 100_000,
    config: Annotated[Optional[list[str]], typer.Option("--config", help="a server setting of every step's two "
                                                  "targets, NAME=VALUE (repeatable): e.g. shared_buffers=256MB")]
    = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="directory of every step's results, new or empty "
                                                              "(default results/bisect-ENGINE-TIME)")] = None,
    yes: Annotated[bool, YES_OPTION] = False,
    resume: Annotated[bool, typer.Option("--resume", help="go on with the bisect cut short in --out DIR (the same "
                                                          "settings): its decided steps are kept, not run again")]
    = False,
) -> None:
    """Find the first released version whose verdict against the oldest turns slower (binary search, each step
    an A/B run decided by the sequential verdict). Exit 0: found; 1: the newest is not slower; 3: a step measured
    nothing; 4: a step stayed undecided; 2: bad input."""
    chosen = metric(metric_name)
    settings = StepSettings(engine, benchmark, parse_threshold(threshold or chosen.threshold),
                            parse_duration(time, "--time", positive=True),
                            parse_duration(warmup, "--warmup"), parse_duration(budget, "--budget", positive=True),
                            threads, table_size, config_settings(config or []), chosen.name)
    settings.check()
    if tries < 1:
        fail(f"--tries: expected at least 1, got {tries}")
    if resume and out is None:
        fail("--resume goes on with a bisect cut short: give its directory with --out DIR")
    # Every refusal before anything is fetched or started: the metric's tools, the folder, the range, the settings'
    # names.
    require_tools(settings)
    directory = (out or Path("results") / f"bisect-{engine}-{datetime.now():%Y%m%d-%H%M%S}").absolute()
    check_out(directory, resume)
    versions = release_range(engine, first, last, available_versions(engine))
    check_config_names(settings, versions)
    with claimed(directory, resume):
        earlier = earlier_steps(directory, settings, versions) if resume else []
        if not resume:  # the folder is this bisect's from now on: killed in its first step, it can be resumed
            write_path(directory, BisectResult(versions, metric=settings.metric), settings)
        by = " of simulated work per query" if chosen.name == "simulated" else ""
        say(f"dbperf: bisect {engine} {versions[0]} .. {versions[-1]}: {len(versions)} releases, {benchmark}, "
            f"slower at {settings.threshold:.1%}{by} or more; about {expected_steps(len(versions))} steps; results "
            f"in {directory}")

        def step_done(so_far: BisectResult) -> None:  # run_bisect writes the path after every step
            s = so_far.steps[-1]
            work = "" if s.judgement.work is None else f" ({s.judgement.work - 1:+.2%} work per query)"
            say(f"dbperf: step {s.number}: {s.version} (try {s.attempt}): {s.judgement.verdict}{work}")

        result = run_bisect(settings, versions, directory, tries, yes, earlier=earlier, on_step=step_done)
    show(path_view(result), "table")
    lead = lead_view(result)
    if lead is not None:
        show(lead, "table")
    out_console.print(outcome_line(result, engine), highlight=False)
    if result.exit_code:
        raise typer.Exit(result.exit_code)
