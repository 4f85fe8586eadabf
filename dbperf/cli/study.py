"""`dbperf study list/run/summary/check/record`: published results (their public sources: docs/sources.md)
reproduced end to end (dbperf/studies/)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from dbperf.cli.common import YES_OPTION, show
from dbperf.errors import UserError
from dbperf.experiment.durations import parse_duration
from dbperf.studies.check import all_records, check_record, check_records, check_run
from dbperf.studies.model import load_study, study_list_view
from dbperf.studies.record import record_study
from dbperf.studies.rerecord import rerecord
from dbperf.studies.study_record import DOCS_STUDIES, STUDY_JSON
from dbperf.studies.study_run import Limits, run_study, summarise
from dbperf.usecases.progress import say

study_app = typer.Typer(no_args_is_help=True, help="Studies: each published result (blog posts and bug reports, "
                                                   "docs/sources.md) reproduced by one command, beside its "
                                                   "published figures.")


@study_app.command("list")
def study_list() -> None:
    """The studies, with the public source(s) each reproduces, what it measures and how long it takes."""
    show(study_list_view(), "table")


@study_app.command("run")
def study_run(
    name: Annotated[str, typer.Argument(help="the study (`dbperf study list`)")],
    out: Annotated[Optional[Path], typer.Option("--out", help="a new or empty results directory (default "
                                                              "results/study-NAME-TIME); with --resume, this "
                                                              "study's run")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="fewer versions, smaller tables and shorter cells, still "
                                                        "the study's own builds: a check that the study runs, not "
                                                        "the published method")] = False,
    smoke: Annotated[bool, typer.Option("--smoke", help="tiny tables, one benchmark, released or cached binaries, "
                                                        "under a minute: a check of the study's plumbing (what the "
                                                        "tests run); its figures are not results")] = False,
    step: Annotated[Optional[list[str]], typer.Option("--step", help="run only this step (repeatable); the "
                                                                     "others' figures say they were not run")] = None,
    budget: Annotated[Optional[str], typer.Option("--budget", help="cap each experiment step's budget (e.g. "
                                                                   "30m): its undecided cells stay undecided")] = None,
    yes: Annotated[bool, YES_OPTION] = False,
    resume: Annotated[bool, typer.Option("--resume", help="go on with this study's run cut short in --out DIR "
                                                          "(same options): finished steps are kept, an experiment "
                                                          "cut short goes on from the cells it measured, a step "
                                                          "that cannot go on (a replication run) runs again, its "
                                                          "earlier output kept aside")] = False,
    extend: Annotated[Optional[str], typer.Option("--extend", help="go on with the study run in --out DIR (same "
                                                                   "options) giving each experiment step whose "
                                                                   "budget left cells undecided this much more "
                                                                   "(e.g. 1h); implies --resume")] = None,
) -> None:
    """Run a study end to end: its steps, its reports, and summary.md and summary.html (published figure |
    measured here | verdict | host), into a new or empty --out. Exit 0, or 1 when a step failed or a figure was not
    measured (the summary says which)."""
    if quick and smoke:
        raise UserError("--quick and --smoke are two modes: give one")
    limits = Limits(tuple(step or ()), parse_duration(budget, "--budget", positive=True) if budget else None)
    end = run_study(load_study(name), out, "smoke" if smoke else "quick" if quick else "full", yes, limits=limits,
                    resume=resume, extend_s=parse_duration(extend, "--extend", positive=True) if extend else 0.0)
    sys.stdout.write(end.summary)
    say(f"dbperf: study {name}: summary in {end.directory / 'summary.md'}")
    if end.exit_code:
        raise typer.Exit(end.exit_code)


@study_app.command("summary")
def study_summary(
    directory: Annotated[Path, typer.Argument(help="the study run's results directory")],
) -> None:
    """Write a study run's summary again from its results (summary.md, summary.html, study.json), with the
    study's figures as defined now: a figure added since the run is read back without running its steps again.
    Exit 0, or 1 when a step had failed or a figure was not measured."""
    end = summarise(directory.absolute())
    sys.stdout.write(end.summary)
    say(f"dbperf: study summary written again in {end.directory / 'summary.md'}")
    if end.exit_code:
        raise typer.Exit(end.exit_code)


@study_app.command("check")
def study_check(
    what: Annotated[Optional[str], typer.Argument(help="a study's name (its record in the docs) or a study run's "
                                                       "folder; none: every study on record")] = None,
    docs: Annotated[Optional[Path], typer.Option(help="the directory of the records (default: docs/studies of this "
                                                      "checkout)")] = None,
    catches: Annotated[bool, typer.Option("--catches", help="hold every record to the latest catches, whether or not "
                                                            "it opts into them (its `checks`)")] = False,
) -> None:
    """Check a study record as a reviewer would: the page is what its JSON gives, every word is the one its evidence
    gives, every figure names a run whose kept results agree (CPU, times), none rests on an unfit build unmarked,
    the headline counts what the kept results decide, no internal vocabulary. Each defect one line; exit 1 if any."""
    where = docs or DOCS_STUDIES
    if docs is not None and not docs.is_dir():
        raise UserError(f"--docs {docs}: {'no such folder' if not docs.exists() else 'not a folder'} (the folder "
                        "of the study records, docs/studies)")
    if what is None:
        names = all_records(where)
        if not names:
            raise UserError(f"--docs {where}: holds no study record (NAME.json of a known study): nothing to check")
        checked = check_records(names, where, catches)
    elif Path(what).is_dir() and (Path(what) / STUDY_JSON).is_file():
        checked = [check_run(Path(what).absolute(), catches)]
    else:
        load_study(what)
        checked = [check_record(what, where, catches)]
    bad = 0
    for c in checked:
        for defect in c.defects:
            sys.stdout.write(f"{c.what}: {defect}\n")
        bad += len(c.defects)
        say(f"dbperf: {c.what}: {c.figures} figure(s), " + (f"{len(c.defects)} defect(s)" if c.defects else "checked"))
    if bad:
        raise typer.Exit(1)


@study_app.command("record")
def study_record(
    name: Annotated[str, typer.Argument(help="the study")],
    directory: Annotated[Optional[Path], typer.Argument(help="the study run's results directory")] = None,
    docs: Annotated[Optional[Path], typer.Option(help="the directory the records go in (default: docs/studies of "
                                                      "this checkout)")] = None,
    force: Annotated[bool, typer.Option("--force", help="replace the study's record in the docs (NAME.md, "
                                                        "NAME.json and its steps' results)")] = False,
    partial: Annotated[bool, typer.Option("--partial", help="put on record a run that was interrupted or did not "
                                                            "measure every figure; the record says so")] = False,
    contradicted: Annotated[bool, typer.Option("--contradicted", help="put on record a run whose decided verdicts "
                                                                    "the record's kept run of a step contradicts; "
                                                                    "the record names the cells")] = False,
    again: Annotated[bool, typer.Option("--again", help="write the study's record again under today's rules from "
                                                        "what it keeps (no DIRECTORY): figures read back from the "
                                                        "kept results, words from their evidence, each figure's "
                                                        "run; one whose run cannot be established is withdrawn")]
    = False,
) -> None:
    """Put a study run on record in the documentation (docs/studies/NAME.md, dated, with the host): later runs
    are compared against it. A run cut short or incomplete is refused unless --partial; one whose decided verdicts
    the kept run on record contradicts, unless --contradicted."""
    load_study(name)
    if again and directory is not None:
        raise UserError(f"--again writes the record again from what it keeps, without a run: give {directory} or "
                        "--again, not both")
    if not again and directory is None:
        raise UserError("give the study run's DIRECTORY to put on record, or --again to write the record again")
    written = (rerecord(name, docs or DOCS_STUDIES) if directory is None
               else record_study(name, directory, docs or DOCS_STUDIES, force, partial, contradicted=contradicted))
    for path in written:
        say(f"dbperf: wrote {path}")
