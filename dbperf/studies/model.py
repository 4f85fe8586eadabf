"""A study: one published result reproduced by one command, beside the figures of its public sources (blog posts
and bug reports, cited by author, title and date: docs/sources.md). Each is a TOML file in dbperf/studies/data/
naming what to run (steps: an experiment file, probes, the layout check, a bisect), the published figures (with the
source each comes from) and where each is measured here. Checked when loaded, against the lab's
own tables (the catalog, the probe families, the experiment parser), so that a study cannot name what does not
exist.

    name = "barriers-spin"          # the file's stem
    title = "..."; duration = "about a minute"; description = "..."
    sources = ['Kristian Nielsen, "40% better single-threaded performance in MariaDB" (2014-01-20)']
                                    # the public sources it reproduces (`dbperf study list`, the summary)
    [[step]]                        # run in order, each into DIR/<name>/
    name = "probes"; kind = "probe" | "layout" | "experiment" | "bisect" | "diff"; ... ; quick = { overrides }
                                    # each kind's keys, checks and limits: its module in steps/
    smoke = { overrides }           # --smoke: on top of the quick ones; a plumbing check of under a minute
    [[figure]]                      # one row of the summary table
    what = "..."; section = "§3"; published = "81 cycles/iter"
    measure = { from = "probe" | "cell" | "geomean" | "json", step = "probes", ... }; per = { ... }  # measure / per
                                    # each kind's keys, checks and how it reads: its module in measures/
    quick = { target = "...", per = { target = "..." } }    # overrides of measure (and per) under --quick/--smoke
    quick = { skip = "why" }        # a figure the --quick/--smoke run does not measure by design (said, not missing)
    unit = "TSC ticks"; expect = { min = 2.0, max = 100.0 }; claim = "what the published figure says, restated"
                                    # the word (studies/evidence.py): holds only when the figure's interval lies in
                                    # the range (a cell: decided), consistent, does not hold, inconclusive
    substitute = "what differs"     # measured with a different setup than the published figure: a row of its own
    derived = "why"                 # arithmetic, not a measurement (e.g. a mean of the probe's own definition):
                                    # shown, never judged
    requires = { threads = 8, own_cores = true, pmu = true, release = "mysql" }
                                    # what the host must have (host/topology.py); where it does not, the figure is
                                    # `not reproducible here`, with the measured reason, and no number
    floor = true                    # `per` claims to be a floor of the measure: a ratio below 1 refutes it, and
                                    # the figure gets no word
    before = { from = ... }         # optional: the value it changed from, shown "before → measured"; expect then
                                    # bounds measured / before (a claim that something grew or shrank)
    [headline]                      # experiment studies: geomean rQPS of one target over its decided cells
    step = "run"; target = "pgo"
    also = ["other-run"]            # optional: the same target's line for other experiment steps

Three modes: the full study (the published method), --quick (fewer versions, smaller tables, shorter cells: still
the study's own builds) and --smoke (the quick overrides, then the step's `smoke` ones: tiny tables, one benchmark,
released binaries or cached builds, under a minute; what the e2e and server test tiers run so that a study cannot
rot). A study whose smoke run would build a server from source or run long is refused when it loads
(EXPERIMENT_LIMITS, and each kind's StepKind.smoke_limits).
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

from dbperf.catalog.registry import builtin
from dbperf.errors import UserError
from dbperf.experiment.model import Experiment
from dbperf.host.topology import HostRequirement, parse_requirement
from dbperf.names import check_name
from dbperf.report.model import Block, Row, Section, View
from dbperf.studies.definition import (
    MODES,
    OVERRIDES,
    Figure,
    Mode,
    Step,
    Study,
    experiment_doc,
    figure_measures,
    in_mode,
    mode_flag,
    parsed_experiment,
)
from dbperf.studies.measures.base import Measure, MeasureChecking
from dbperf.studies.steps import kind_names, step_kind
from dbperf.studies.steps.base import Checking, Over

__all__ = ["MODES", "Figure", "Mode", "Step", "Study", "experiment_doc", "load_study", "mode_flag", "parse_study"]

STUDY_DIR = Path(__file__).parent / "data"
STUDY_KEYS = ("name", "title", "sources", "duration", "description", "long", "step", "figure",
              "headline")
FIGURE_KEYS = ("what", "section", "published", "measure", "per", "unit", "scale", "expect", "claim", "digits",
               "quick", "before", "derived", "floor", "requires", "substitute")


def left_out(study: Study, mode: Mode) -> dict[int, str]:
    """The figures (by index) that this mode's run does not measure, with why: a cell of a benchmark or target the
    quick or smoke run leaves out. They are said as such, and do not make the run incomplete."""
    if mode == "full":
        return {}
    runs: dict[str, Experiment] = {}
    out: dict[int, str] = {}
    for i, f in enumerate(study.figures):
        if f.quick.get("skip"):
            out[i] = f"the {mode_flag(mode)} run leaves it out ({f.quick['skip']})"
            continue
        for m in f.measures(mode):
            name = m.run_step() if m is not None else None
            if m is None or name is None or not step_kind(study.step(name).kind).has_cells:
                continue
            if name not in runs:
                runs[name] = parsed_experiment(study, study.step(name), mode)
            gone = m.left_out_of(runs[name])
            if gone is not None:
                out[i] = f"the {mode_flag(mode)} run leaves out {gone}"
                break
    return out


# Data beside the studies that is not a study (the sources table).
NOT_STUDIES = frozenset({"sources"})


def study_files() -> list[Path]:
    return sorted(p for p in STUDY_DIR.glob("*.toml") if p.stem not in NOT_STUDIES)


def study_names() -> list[str]:
    return [p.stem for p in study_files()]


def load_study(name: str) -> Study:
    path = STUDY_DIR / f"{name}.toml"
    if not path.is_file():
        raise UserError(f"study {name!r}: no such study (known: {', '.join(study_names())}; `dbperf study list`)")
    return parse_study(path)


def _unknown(raw: dict[str, Any], known: tuple[str, ...], where: str) -> None:
    extra = sorted(set(raw) - set(known))
    if extra:
        raise UserError(f"{where}: unknown key {extra[0]!r} (known: {', '.join(known)})")


def _text(raw: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str) or (default is None and not value.strip()):
        raise UserError(f"{where}: {key!r} must be a non-empty string")
    return value


def parse_study(path: Path) -> Study:
    where = str(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{where}: cannot read: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{where}: malformed TOML: {e}") from None
    _unknown(raw, STUDY_KEYS, where)
    name = check_name(raw.get("name"), where)
    if name != path.stem:
        raise UserError(f"{where}: name {name!r} must be the file's name ({path.stem!r})")
    steps = tuple(_step(s, i, where) for i, s in enumerate(raw.get("step", [])))
    if not steps:
        raise UserError(f"{where}: a study needs at least one [[step]]")
    names = [s.name for s in steps]
    if len(set(names)) != len(names):
        raise UserError(f"{where}: two steps share a name")
    study = Study(name=name, title=_text(raw, "title", where), duration=_text(raw, "duration", where),
                  description=_text(raw, "description", where), steps=steps,
                  figures=tuple(_figure(f, i, where) for i, f in enumerate(raw.get("figure", []))), path=path,
                  long=bool(raw.get("long", False)), headline=_headline(raw, where),
                  also_headlines=_also_headlines(raw, where),
                  sources=_sources(raw, where))
    _check_references(study, where)
    return study


def _headline(raw: dict[str, Any], where: str) -> dict[str, str]:
    table = raw.get("headline", {})
    if not isinstance(table, dict):
        raise UserError(f"{where} [headline]: must be a table (step, target, also)")
    return {k: str(v) for k, v in table.items() if k != "also"}


def _also_headlines(raw: dict[str, Any], where: str) -> tuple[str, ...]:
    also = raw.get("headline", {}).get("also", []) if isinstance(raw.get("headline"), dict) else []
    if not isinstance(also, list) or not all(isinstance(s, str) and s for s in also):
        raise UserError(f"{where} [headline] also: must be a list of step names")
    return tuple(also)


def _sources(raw: dict[str, Any], where: str) -> tuple[str, ...]:
    """The study's `sources`: a list of citations, each a non-empty string (none: an empty list or no key)."""
    value = raw.get("sources", [])
    if not isinstance(value, list) or not all(isinstance(s, str) and s.strip() for s in value):
        raise UserError(f"{where}: 'sources' must be a list of citations (non-empty strings, each "
                        "'Author, \"Title\" (YYYY-MM-DD)')")
    return tuple(s.strip() for s in value)


def _step(raw: Any, i: int, where: str) -> Step:
    swhere = f"{where} [[step]] {i + 1}"
    if not isinstance(raw, dict):
        raise UserError(f"{swhere}: must be a table")
    kind = raw.get("kind")
    if kind not in kind_names():
        raise UserError(f"{swhere}: kind must be one of {', '.join(kind_names())}, got {kind!r}")
    known = step_kind(kind).keys
    _unknown(raw, ("name", "kind", *OVERRIDES, *known), swhere)
    overrides = {}
    for mode in OVERRIDES:
        table = raw.get(mode, {})
        if not isinstance(table, dict):
            raise UserError(f"{swhere}: {mode} must be a table")
        _unknown(table, (*known, "skip"), f"{swhere} {mode}")
        if not isinstance(table.get("skip", False), bool):
            raise UserError(f"{swhere} {mode}: skip must be true or false")
        overrides[mode] = table
    settings = {k: v for k, v in raw.items() if k not in ("name", "kind", *OVERRIDES)}
    return Step(check_name(raw.get("name"), swhere), kind, settings, overrides["quick"], overrides["smoke"])


def _figure(raw: Any, i: int, where: str) -> Figure:
    fwhere = f"{where} [[figure]] {i + 1}"
    if not isinstance(raw, dict):
        raise UserError(f"{fwhere}: must be a table")
    _unknown(raw, FIGURE_KEYS, fwhere)
    expect = raw.get("expect")
    bounds = None
    if expect is not None:
        if (not isinstance(expect, dict) or not expect or not set(expect) <= {"min", "max"}
                or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in expect.values())):
            raise UserError(f"{fwhere}: expect must be {{ min = X, max = Y }} (either or both, numbers)")
        bounds = (expect.get("min"), expect.get("max"))
    digits = raw.get("digits", 2)
    if isinstance(digits, bool) or not isinstance(digits, int) or not 0 <= digits <= 6:
        raise UserError(f"{fwhere}: digits must be a whole number from 0 to 6")
    quick = raw.get("quick", {})
    if not isinstance(quick, dict) or not isinstance(quick.get("skip", ""), str):
        raise UserError(f"{fwhere}: quick must be a table; its skip, the reason the short runs leave the figure out")
    scale = raw.get("scale", 1.0)
    if not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
        raise UserError(f"{fwhere}: scale must be a positive number")
    measures = figure_measures(raw, fwhere)
    return Figure(what=_text(raw, "what", fwhere), section=_text(raw, "section", fwhere),
                  published=_text(raw, "published", fwhere), unit=str(raw.get("unit", "")), scale=float(scale),
                  expect=bounds, claim=str(raw.get("claim", "")), digits=digits, quick=dict(quick),
                  derived=_text(raw, "derived", fwhere, ""), floor=_floor(raw, fwhere),
                  substitute=_text(raw, "substitute", fwhere, ""),
                  requires=_requires(raw, measures["measure"], fwhere), **measures)


def _requires(raw: dict[str, Any], measure: Measure, where: str) -> HostRequirement | None:
    """The figure's `requires`; checked against the host a probe step keeps (its vCPUs, cores, PMU, releases served),
    or, of any other step, its threads against the vCPUs its run's meta.json names."""
    if "requires" not in raw:
        return None
    required = parse_requirement(raw["requires"], where)
    if not measure.describes_host and set(raw["requires"]) - {"threads"}:
        raise UserError(f"{where}: requires of a figure not measured from = \"probe\" may name threads only (its "
                        "step's run says its host's vCPUs, not its cores, PMU or releases)")
    return required


def _floor(raw: dict[str, Any], where: str) -> bool:
    floor = raw.get("floor", False)
    if not isinstance(floor, bool) or (floor and raw.get("per") is None):
        raise UserError(f"{where}: floor must be true or false, and true only with a per (the reference it is)")
    return floor


def _check_references(study: Study, where: str) -> None:
    """Every step names what exists (benchmarks, probe families, experiment files and their targets, released
    engines: each kind checks its own); every figure names a step of the study and what that step measures."""
    catalog = builtin()
    experiments: dict[Mode, dict[str, Experiment]] = {mode: {} for mode in MODES}
    for i, step in enumerate(study.steps):
        kind, swhere = step_kind(step.kind), f"{where} step {step.name!r}"
        earlier = tuple(e.name for e in study.steps[:i] if step_kind(e.kind).has_cells)
        at = Checking(study, step, swhere, catalog, earlier)
        for mode in MODES:
            kind.check(step.effective(mode), at)
        for mode, exp in kind.experiments(study, step, swhere).items():
            experiments[mode][step.name] = exp
        if not step.skipped("smoke"):
            _check_smoke(step, step.effective("smoke"), experiments["smoke"].get(step.name), swhere)
    # A figure may name a target the quick or smoke run leaves out (it is then "not measured" there): checked
    # against the targets of any run.
    targets = {n: {t.name for mode in MODES for t in experiments[mode][n].targets} for n in experiments["full"]}
    _check_figures(study, where, targets, catalog)
    _check_headline(study, where, experiments["full"])


def _check_figures(study: Study, where: str, targets: dict[str, set[str]], catalog: dict[str, Any]) -> None:
    """Each figure's measures (in every mode) and its `before` name a step of the study and what it measures (each
    measure checks its own: measures/)."""
    families = {s.name: step_kind(s.kind).families(s.settings) for s in study.steps}
    steps = {s.name for s in study.steps}
    for i, f in enumerate(study.figures):
        at = f"{where} [[figure]] {i + 1}"
        for mode in MODES:
            for m in f.measures(mode):
                if m is not None:
                    m.check(MeasureChecking(f"{at}{in_mode(mode)}", steps, families, targets, catalog))
        if f.before is not None:
            f.before.check(MeasureChecking(f"{at} before", steps, families, targets, catalog))


def _check_headline(study: Study, where: str, full: dict[str, Experiment]) -> None:
    """[headline] step (and each of `also`) names an experiment step with the headline's target."""
    if not study.headline:
        return
    named = study.headline.get("step", "")
    if named not in full or study.headline.get("target") not in {t.name for t in full[named].targets}:
        raise UserError(f"{where} [headline]: step and target must name an experiment step and one of its targets")
    for also in study.also_headlines:
        if also not in full or study.headline.get("target") not in {t.name for t in full[also].targets}:
            raise UserError(f"{where} [headline] also: {also!r} must name an experiment step with a target "
                            f"{study.headline.get('target')!r}")


# What a smoke run may do, so that each study's smoke test stays under a minute once its binaries are cached: tiny
# tables, one benchmark, short cells and budgets, a few transactions, released or cached engines (never a server
# built from source: an hour here). These bound any step's experiment; each kind adds its own (StepKind.smoke_limits).
EXPERIMENT_LIMITS: dict[str, float] = {"table_size": 10_000, "benchmarks": 1, "time_s": 1.0, "warmup_s": 1.0,
                                       "budget_s": 30.0, "repeats": 3, "transactions": 2_000, "stale_reads": 200,
                                       "replication_repeats": 1}


def _check_smoke(step: Step, s: dict[str, Any], exp: Experiment | None, where: str) -> None:
    """Refuses a step whose --smoke run would build a server from source or run long: a new study cannot forget
    its `smoke = { ... }` overrides."""
    kind = step_kind(step.kind)
    over = Over({**EXPERIMENT_LIMITS, **kind.smoke_limits})
    if exp is not None:
        _experiment_over(exp, over)
    kind.smoke(s, over, where)
    if over.said:
        raise UserError(f"{where}: too long for --smoke ({over.said[0]}); give the step smoke = {{ ... }} overrides "
                        "(tiny tables, one benchmark, released binaries)")


def _experiment_over(exp: Experiment, over: Over) -> None:
    built = [t.name for t in exp.targets if t.server_build is not None]
    if built:
        over.said.append(f"target {built[0]!r} builds a server from source (use a released one, engine@VERSION)")
    over(len(exp.benchmarks), "benchmarks", "benchmarks")
    over(exp.tables * exp.table_size, "table_size", "rows")
    if exp.replication is None:  # timed cells
        over(exp.time_s, "time_s", "seconds a cell")
        over(exp.warmup_s, "warmup_s", "seconds of warm-up")
        over(exp.budget_s, "budget_s", "seconds of budget")
        over(exp.repeats if exp.budget_s is None else None, "repeats", "repeats")
    else:  # the replication lab counts transactions instead
        over(exp.replication.transactions, "transactions", "transactions")
        over(exp.replication.stale_reads, "stale_reads", "stale-read probes")
        over(exp.replication.repeats, "replication_repeats", "replication repeats")


def study_list_view() -> View:
    """`dbperf study list`: each study, the public source(s) it reproduces (docs/sources.md), what it measures, how
    long it takes and what its figures need of the host."""
    rows = []
    for name in study_names():
        s = load_study(name)
        rows.append(Row((s.name, "; ".join(s.sources) or "–", s.title,
                         s.duration + (" (builds from source)" if s.long else ""), host_requirements(s))))
    return View("studies", "studies", (Section(block=Block("", "", ("study", "source", "what", "takes", "needs"),
                                                           tuple(rows), text_columns=5)),))


def host_requirements(study: Study) -> str:
    """What its figures require of the host (`requires`), each once; "–" for none. A host without it records those
    figures as not reproducible here."""
    said = [f.requires.describe() for f in study.figures if f.requires is not None]
    return "; ".join(dict.fromkeys(d for d in said if d)) or "–"
