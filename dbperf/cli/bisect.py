"""`dbperf bisect`: the first released version whose verdict turns slower, or with --tree the first commit of a
checkout with more work (usecases/bisect.py), and the path to it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dbperf.cli.common import FORMAT_OPTION, YES_OPTION, fail, show
from dbperf.experiment.durations import parse_duration
from dbperf.metrics import among
from dbperf.report import formats
from dbperf.report.bisect_view import bisect_view
from dbperf.storage.bisect_path import BisectResult, StepSettings
from dbperf.usecases.bisect import bisect as run
from dbperf.usecases.bisect_metrics import metric
from dbperf.usecases.bisect_search import DEFAULT_TRIES
from dbperf.usecases.bisect_settings import parse_threshold
from dbperf.usecases.progress import say


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


def _range(words: list[str], tree: Path | None, engine: str | None) -> tuple[str, str, str]:
    """ENGINE FIRST LAST (releases), or GOOD BAD with --tree and --engine: (engine, first, last)."""
    if tree is None:
        if engine is not None:
            fail("--engine goes with --tree; a bisect of releases names its engine first: dbperf bisect ENGINE FIRST "
                 "LAST")
        if len(words) != 3:
            fail(f"bisect: expected ENGINE FIRST LAST (or --tree PATH --engine E GOOD BAD), got {len(words)} "
                 "argument(s)")
        return words[0], words[1], words[2]
    if engine is None:
        fail("--tree: give the engine of the tree with --engine (sqlite or postgres)")
    if len(words) != 2:
        fail(f"bisect --tree: expected GOOD BAD (two revisions of the checkout), got {len(words)} argument(s)")
    return engine, words[0], words[1]


def bisect(
    words: Annotated[list[str], typer.Argument(
        metavar="ENGINE FIRST LAST | GOOD BAD",
        help="releases: the engine (postgres or mariadb, released binaries; sqlite, built from source), the oldest "
             "version (the good one, e.g. "
             "12 or 12.4) and the newest; with --tree: the good revision and the bad one (commits, tags, branches)")],
    tree: Annotated[Optional[Path], typer.Option(
        help="bisect the commits of this git checkout between GOOD and BAD (first-parent), each built by the lab in "
             "its own copy (the checkout is never touched), by simulated work; SQLite, PostgreSQL, MariaDB and MySQL "
             "trees")] = None,
    engine_name: Annotated[Optional[str], typer.Option(
        "--engine", help="with --tree: the tree's engine (sqlite, postgres, mariadb or mysql)")] = None,
    cflag: Annotated[Optional[list[str]], typer.Option(
        "--cflag", help="with --tree or sqlite's releases: a compiler option appended to every build (repeatable; "
                        "e.g. --cflag=-O1)")] = None,
    confirm: Annotated[bool, typer.Option(
        "--confirm/--no-confirm", help="--metric simulated: run the found step once by the wall clock")] = True,
    benchmark: Annotated[str, typer.Option(help="one catalog benchmark (`dbperf list`)")] = "point-query",
    threshold: Annotated[Optional[str], typer.Option(
        help="smallest slowdown called slower: the verdict's min_effect with --metric wall (default 5%), the growth "
             "of work per query with --metric simulated (default 2%; also the confirmation's min_effect)")] = None,
    metric_name: Annotated[Optional[str], typer.Option("--metric", help="what decides a step (default: wall; with "
                                                                         "--tree: simulated): " + "; ".join(
        f"{m.name}: {m.help}" for m in among(lambda m: m.bisects)))] = None,
    time: Annotated[str, typer.Option(help="measured time per cell")] = "5s",
    warmup: Annotated[str, typer.Option(help="warm-up per cell")] = "1s",
    budget: Annotated[str, typer.Option(help="measured rounds' budget of a step's first try (doubled per retry)")]
    = "2m",
    tries: Annotated[int, typer.Option(help="tries of an undecided step before the search stops")] = DEFAULT_TRIES,
    threads: Annotated[int, typer.Option(help="client threads")] = 1,
    table_size: Annotated[int, typer.Option(help="rows per table")] = 100_000,
    order: Annotated[Optional[str], typer.Option(help="how a step's rounds run, as an experiment's `order`: slices "
                                                      "(the two servers take 20 ms turns in one driver: a narrower "
                                                      "A/A spread here, docs/verdicts.md); default: the lab's")]
    = None,
    config: Annotated[Optional[list[str]], typer.Option("--config", help="a setting of every step's two targets, "
                                                  "NAME=VALUE (repeatable): a server's, e.g. shared_buffers=256MB, "
                                                  "or SQLite's PRAGMA, e.g. journal_mode=WAL")]
    = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="directory of every step's results, new or empty "
                                                              "(default results/bisect-ENGINE-TIME)")] = None,
    yes: Annotated[bool, YES_OPTION] = False,
    format: Annotated[str, FORMAT_OPTION] = "table",
    resume: Annotated[bool, typer.Option("--resume", help="go on with the bisect cut short in --out DIR (the same "
                                                          "settings): its decided steps are kept, not run again")]
    = False,
) -> None:
    """Find the first released version whose verdict against the oldest turns slower (binary search, each step
    an A/B run decided by the sequential verdict); with --tree, the first commit of a checkout with more simulated
    work per query (a commit that does not build is skipped, as `git bisect skip`). Exit 0: found; 1: the newest is
    not slower; 3: a step measured nothing; 4: a step stayed undecided (or only skipped commits were left); 2: bad
    input."""
    engine, first, last = _range(words, tree, engine_name)
    chosen = metric(metric_name, tree=tree is not None)
    settings = StepSettings(engine, benchmark, parse_threshold(threshold or chosen.threshold),
                            parse_duration(time, "--time", positive=True),
                            parse_duration(warmup, "--warmup"), parse_duration(budget, "--budget", positive=True),
                            threads, table_size, config_settings(config or []), chosen, order,
                            str(tree.expanduser().resolve()) if tree else None, list(cflag or []))
    formats.format_named(format)  # before the search, not after it

    def step_done(so_far: BisectResult) -> None:  # run_bisect writes the path after every step
        s = so_far.steps[-1]
        work = "" if s.judgement.work is None else f" ({s.judgement.work - 1:+.2%} work per query)"
        why = f" ({s.judgement.why})" if s.judgement.why else ""
        say(f"dbperf: step {s.number}: {s.version} (try {s.attempt}): {s.judgement.verdict}{work}{why}")

    done = run(settings, first, last, out, tries, resume, yes, on_step=step_done, confirm=confirm)
    show(bisect_view(done.path, done.expected_steps), format)
    if done.path.result.exit_code:
        raise typer.Exit(done.path.result.exit_code)
