"""A study: one published result reproduced by one command, beside the figures of its public sources (blog posts
and bug reports, cited by author, title and date: docs/sources.md). Each is a TOML file in dbperf/studies/data/
naming what to run (steps: an experiment file, probes, the layout check, a bisect), the published figures (with the
section of the lab's notes they belong to) and where each is measured here. Checked when loaded, against the lab's
own tables (the catalog, the probe families, the experiment parser), so that a study cannot name what does not
exist.

    name = "barriers-spin"          # the file's stem
    title = "..."; duration = "about a minute"; description = "..."
    sources = ['Kristian Nielsen, "40% better single-threaded performance in MariaDB" (2014-01-20)']
                                    # the public sources it reproduces (`dbperf study list`, the summary); `brief`
                                    # and `seeds` (citations of the lab's private notes) are still read, not shown
    [[step]]                        # run in order, each into DIR/<name>/
    name = "probes"; kind = "probe" | "layout" | "experiment" | "bisect" | "diff"; ... ; quick = { overrides }
                                    # (or kind = "counters": every target's counters per query, STEP_KEYS)
    smoke = { overrides }           # --smoke: on top of the quick ones; a plumbing check of under a minute
    [[figure]]                      # one row of the summary table
    what = "..."; section = "§3"; published = "81 cycles/iter"
    measure = { from = "probe" | "cell" | "geomean" | "json", step = "probes", ... }; per = { ... }  # measure / per
    # a cell measure: target, benchmark, optionally threads, field (a per-query figure) and base (another target
    # of the experiment to compare with, instead of its base: its rQPS and the lab's verdict against that one)
    # a geomean measure: target (and optionally base): its geomean rQPS over every benchmark not trained on, and
    # how many cells the lab decided slower and faster
                                    # a json measure's `empty = "..."`: what a null there means (measured, none)
    quick = { target = "...", per = { target = "..." } }    # overrides of measure (and per) under --quick/--smoke
    quick = { skip = "why" }        # a figure the --quick/--smoke run does not measure by design (said, not missing)
    unit = "TSC ticks"; expect = { min = 2.0, max = 100.0 }; claim = "what the published figure says, restated"
    before = { from = ... }         # optional: the value it changed from, shown "before → measured"; expect then
                                    # bounds measured / before (a claim that something grew or shrank)
    [headline]                      # experiment studies: geomean rQPS of one target over its decided cells
    step = "run"; target = "pgo"
    also = ["other-run"]            # optional: the same target's line for other experiment steps

Three modes: the full study (the published method), --quick (fewer versions, smaller tables, shorter cells: still
the study's own builds) and --smoke (the quick overrides, then the step's `smoke` ones: tiny tables, one benchmark,
released binaries or cached builds, under a minute; what the e2e and server test tiers run so that a study cannot
rot). A study whose smoke run would build a server from source or run long is refused when it loads (SMOKE_LIMITS).
"""

from __future__ import annotations

import math
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dbperf.buildlab.server_releases import SOURCES
from dbperf.catalog.registry import builtin
from dbperf.errors import UserError
from dbperf.experiment.durations import parse_duration
from dbperf.experiment.model import Experiment
from dbperf.experiment.spec import parse_experiment
from dbperf.names import check_name
from dbperf.probes.catalog import FAMILIES
from dbperf.report.model import Block, Row, Section, View
from dbperf.studies import toml_text
from dbperf.usecases.explain import MODES as COUNTER_MODES

STUDY_DIR = Path(__file__).parent / "data"
STEP_KINDS = ("probe", "layout", "experiment", "bisect", "diff", "counters")
MEASURE_SOURCES = ("probe", "cell", "geomean", "json")
Mode = Literal["full", "quick", "smoke"]
MODES: tuple[Mode, ...] = ("full", "quick", "smoke")
OVERRIDES = ("quick", "smoke")  # a step's tables of overrides, one per mode besides the full one

# The keys each step kind takes (besides name, kind, quick, smoke); a step's `quick` and `smoke` override some.
STEP_KEYS: dict[str, tuple[str, ...]] = {
    "probe": ("families", "repeats", "scale"),
    "layout": ("demo", "binary", "run", "experiment", "target", "benchmark", "fix", "trace_seconds"),
    "experiment": ("experiment", "aa", "run", "replication", "targets"),
    "bisect": ("engine", "first", "last", "benchmark", "threshold", "time", "warmup", "budget", "tries", "threads",
               "table_size", "config"),
    # the simulated per-function diff of an earlier experiment step's worst cell (its base against that target)
    "diff": ("of", "queries", "top", "mode"),
    # the counters per query of every target of an earlier experiment step on one benchmark (dbperf profile)
    "counters": ("of", "benchmark", "queries", "mode"),
}
STUDY_KEYS = ("name", "title", "sources", "brief", "seeds", "duration", "description", "long", "step", "figure",
              "headline")
FIGURE_KEYS = ("what", "section", "published", "measure", "per", "unit", "scale", "expect", "claim", "digits",
               "quick", "before")


def _merged(settings: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """`overrides` on top of `settings`; `run` and `replication`, the experiment's sections, key by key."""
    merged = {**settings, **overrides}
    for section in ("run", "replication"):
        if isinstance(settings.get(section), dict) and isinstance(overrides.get(section), dict):
            merged[section] = {**settings[section], **overrides[section]}
    return merged


@dataclass(frozen=True)
class Step:
    name: str
    kind: str
    settings: dict[str, Any]
    quick: dict[str, Any]
    smoke: dict[str, Any] = field(default_factory=dict)

    def effective(self, mode: Mode) -> dict[str, Any]:
        """The step's settings in this mode: the `quick` overrides under --quick, and under --smoke the `smoke`
        ones on top of those."""
        if mode == "full":
            return dict(self.settings)
        merged = _merged(self.settings, self.quick)
        return _merged(merged, self.smoke) if mode == "smoke" else merged

    def skipped(self, mode: Mode) -> bool:
        """Whether this mode's run leaves the step out (`quick`/`smoke` `skip = true`: a step whose cost no short
        run can cut, such as cachegrind starting two servers)."""
        return bool(self.effective(mode).get("skip", False))


@dataclass(frozen=True)
class Figure:
    what: str
    section: str
    published: str
    measure: dict[str, Any]
    per: dict[str, Any] | None = None
    unit: str = ""
    scale: float = 1.0  # measured value × scale (ns → µs: 0.001)
    expect: tuple[float | None, float | None] | None = None  # the claim's range for the measured value
    claim: str = ""
    digits: int = 2
    quick: dict[str, Any] = field(default_factory=dict)  # overrides of measure with --quick/--smoke; its `per`, of per
    before: dict[str, Any] | None = None  # the value the measured one changed from; `expect` then bounds their ratio

    def measures(self, mode: Mode) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The measure and the reference it is divided by (None: none), with the --quick overrides (which a smoke
        run, built on the quick one, takes too)."""
        if mode == "full":
            return self.measure, self.per
        overrides = {k: v for k, v in self.quick.items() if k not in ("per", "skip")}
        per = None if self.per is None else {**self.per, **self.quick.get("per", {})}
        return {**self.measure, **overrides}, per


@dataclass(frozen=True)
class Study:
    name: str
    title: str
    brief: str
    seeds: tuple[str, ...]
    duration: str
    description: str
    steps: tuple[Step, ...]
    figures: tuple[Figure, ...]
    path: Path
    long: bool = False  # builds from source: hours here, not part of a quick check
    headline: dict[str, str] = field(default_factory=dict)
    # [headline] also = ["STEP", ...]: other experiment steps whose geomean of the same target gets a line of its own
    # under the headline ("study NAME STEP: geomean rQPS ..."), e.g. the PGO study's PostgreSQL beside MariaDB.
    also_headlines: tuple[str, ...] = ()
    # The public sources it reproduces, each "Author, \"Title\" (YYYY-MM-DD)": what `study list` and the summary cite
    # (`brief` and `seeds` cite the lab's private notes, which no user has: read, never shown).
    sources: tuple[str, ...] = ()

    def step(self, name: str) -> Step:
        return next(s for s in self.steps if s.name == name)

    def experiment_path(self, step: Step, mode: Mode = "full") -> Path:
        """The step's experiment file in this mode, relative to the study file."""
        return (self.path.parent / str(step.effective(mode)["experiment"])).resolve()


def experiment_doc(study: Study, step: Step, mode: Mode) -> dict[str, Any]:
    """The step's experiment file as a document, with its [run] and [replication] overrides and its target subset
    (the base follows the subset when the subset leaves it out). A fixed number of repeats drops the file's budget,
    which only `repeats = "auto"` takes."""
    s = step.effective(mode)
    source = study.experiment_path(step, mode)
    try:
        doc = tomllib.loads(source.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise UserError(f"{source}: cannot read the study's experiment: {e}") from None
    doc["run"] = {**doc.get("run", {}), **s.get("run", {})}
    if "repeats" in s.get("run", {}) and s["run"]["repeats"] != "auto":
        doc["run"].pop("budget", None)
    if s.get("replication"):
        doc["replication"] = {**doc.get("replication", {}), **s["replication"]}
    if s.get("targets"):
        keep = list(s["targets"])
        missing = [t for t in keep if t not in {t.get("name") for t in doc.get("target", [])}]
        if missing:
            raise UserError(f"{study.path} step {step.name!r}: target {missing[0]!r} is not in {source.name}")
        doc["target"] = [t for t in doc.get("target", []) if t.get("name") in keep]
        if doc["run"].get("base") not in keep:
            doc["run"]["base"] = keep[0]
    return doc


def mode_flag(mode: Mode) -> str:
    """The command-line flag of a mode ("" for the full study)."""
    return "" if mode == "full" else f"--{mode}"


def _in_mode(mode: Mode) -> str:
    return f" ({mode_flag(mode)})" if mode != "full" else ""


def _parsed(study: Study, step: Step, mode: Mode) -> Experiment:
    """The step's experiment as it will run, through the lab's own parser (keys, benchmarks, sources)."""
    with tempfile.TemporaryDirectory(prefix="dbperf-study-") as tmp:
        path = Path(tmp) / f"{step.name}-{mode}.toml"
        path.write_text(toml_text.document(experiment_doc(study, step, mode)))
        try:
            return parse_experiment(path)
        except UserError as e:
            raise UserError(f"{study.path} step {step.name!r}{_in_mode(mode)}: {e}") from None


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
            if m is None or m.get("from") not in ("cell", "geomean") or m.get("results_from"):
                continue
            step = study.step(str(m["step"]))
            if step.kind != "experiment":
                continue
            if step.name not in runs:
                runs[step.name] = _parsed(study, step, mode)
            exp = runs[step.name]
            if m.get("from") == "cell" and m.get("benchmark") not in {b.name for b in exp.benchmarks}:
                out[i] = f"the {mode_flag(mode)} run leaves out {m.get('benchmark')}"
            else:
                names = {t.name for t in exp.targets}
                gone = [n for n in (m.get("target"), m.get("base")) if n is not None and n not in names]
                if gone:
                    out[i] = f"the {mode_flag(mode)} run leaves out target {gone[0]}"
            if i in out:
                break
    return out


def study_files() -> list[Path]:
    return sorted(STUDY_DIR.glob("*.toml"))


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
    study = Study(name=name, title=_text(raw, "title", where), brief=_text(raw, "brief", where, ""),
                  seeds=tuple(str(s) for s in raw.get("seeds", [])), duration=_text(raw, "duration", where),
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
    if kind not in STEP_KINDS:
        raise UserError(f"{swhere}: kind must be one of {', '.join(STEP_KINDS)}, got {kind!r}")
    known = STEP_KEYS[kind]
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
    measure = raw.get("measure")
    if not isinstance(measure, dict):
        raise UserError(f"{fwhere}: measure must be a table")
    digits = raw.get("digits", 2)
    if isinstance(digits, bool) or not isinstance(digits, int) or not 0 <= digits <= 6:
        raise UserError(f"{fwhere}: digits must be a whole number from 0 to 6")
    quick = raw.get("quick", {})
    if not isinstance(quick, dict) or not isinstance(quick.get("skip", ""), str):
        raise UserError(f"{fwhere}: quick must be a table; its skip, the reason the short runs leave the figure out")
    scale = raw.get("scale", 1.0)
    if not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
        raise UserError(f"{fwhere}: scale must be a positive number")
    return Figure(what=_text(raw, "what", fwhere), section=_text(raw, "section", fwhere),
                  published=_text(raw, "published", fwhere), measure=measure, per=raw.get("per"),
                  unit=str(raw.get("unit", "")), scale=float(scale), expect=bounds, claim=str(raw.get("claim", "")),
                  digits=digits, quick=dict(quick), before=raw.get("before"))


def _check_references(study: Study, where: str) -> None:
    """Every step names what exists (benchmarks, probe families, experiment files and their targets, released
    engines); every figure names a step of the study and what that step measures."""
    catalog = builtin()
    experiments: dict[Mode, dict[str, Experiment]] = {mode: {} for mode in MODES}
    for step in study.steps:
        swhere = f"{where} step {step.name!r}"
        for mode in MODES:
            s = step.effective(mode)
            if step.kind == "probe":
                unknown = [f for f in s.get("families", []) if f not in FAMILIES]
                if unknown or not s.get("families"):
                    raise UserError(f"{swhere}: families must name probe families ({', '.join(FAMILIES)})")
            elif step.kind == "bisect":
                if s.get("engine") not in SOURCES:
                    raise UserError(f"{swhere}: engine must be one of {', '.join(sorted(SOURCES))}")
                if s.get("benchmark") not in catalog:
                    raise UserError(f"{swhere}: benchmark {s.get('benchmark')!r} is not in the catalog")
                for key in ("time", "warmup", "budget"):
                    if key in s:
                        parse_duration(s[key], f"{swhere} {key}")
            elif step.kind == "layout" and s.get("benchmark") is not None and s["benchmark"] not in catalog:
                raise UserError(f"{swhere}: benchmark {s['benchmark']!r} is not in the catalog")
            elif step.kind == "diff":
                earlier = [e.name for e in study.steps[:study.steps.index(step)] if e.kind == "experiment"]
                if s.get("of") not in earlier:
                    raise UserError(f"{swhere}: 'of' must name an experiment step before it ({', '.join(earlier)})")
                if not isinstance(s.get("queries", 1), int) or s.get("queries", 1) < 1:
                    raise UserError(f"{swhere}: queries must be a whole number of at least 1")
            elif step.kind == "counters":
                earlier = [e.name for e in study.steps[:study.steps.index(step)] if e.kind == "experiment"]
                if s.get("of") not in earlier:
                    raise UserError(f"{swhere}: 'of' must name an experiment step before it ({', '.join(earlier)})")
                if s.get("benchmark", "point-query") not in catalog:
                    raise UserError(f"{swhere}: benchmark {s.get('benchmark')!r} is not in the catalog")
                queries = s.get("queries", 1)
                if isinstance(queries, bool) or not isinstance(queries, int) or queries < 1:
                    raise UserError(f"{swhere}: queries must be a whole number of at least 1")
                if s.get("mode", "simulated") not in COUNTER_MODES:
                    raise UserError(f"{swhere}: mode must be one of {', '.join(COUNTER_MODES)}")
        if step.kind == "experiment":
            for mode in MODES:
                experiments[mode][step.name] = _parsed(study, step, mode)
        elif "experiment" in step.settings:  # a layout step's experiment (and its quick and smoke ones)
            for mode in MODES:
                path = study.experiment_path(step, mode)
                exp = parse_experiment(path)
                experiments[mode][step.name] = exp
                if step.settings.get("target") not in {t.name for t in exp.targets}:
                    raise UserError(f"{swhere}: target {step.settings.get('target')!r} is not in {path.name}")
        if not step.skipped("smoke"):
            _check_smoke(step, step.effective("smoke"), experiments["smoke"].get(step.name), swhere)
    # A figure may name a target the quick or smoke run leaves out (it is then "not measured" there): checked
    # against the targets of any run.
    targets = {n: {t.name for mode in MODES for t in experiments[mode][n].targets} for n in experiments["full"]}
    for i, f in enumerate(study.figures):
        for mode in MODES:
            for m in f.measures(mode):
                if m is not None:
                    _check_measure(m, study, targets, catalog, f"{where} [[figure]] {i + 1}{_in_mode(mode)}")
        if f.before is not None:
            if not isinstance(f.before, dict):
                raise UserError(f"{where} [[figure]] {i + 1}: before must be a table")
            _check_measure(f.before, study, targets, catalog, f"{where} [[figure]] {i + 1} before")
    if study.headline:
        full = experiments["full"]
        named = study.headline.get("step", "")
        if named not in full or study.headline.get("target") not in {t.name for t in full[named].targets}:
            raise UserError(f"{where} [headline]: step and target must name an experiment step and one of its targets")
        for also in study.also_headlines:
            if also not in full or study.headline.get("target") not in {t.name for t in full[also].targets}:
                raise UserError(f"{where} [headline] also: {also!r} must name an experiment step with a target "
                                f"{study.headline.get('target')!r}")


# What a smoke run may do, so that each study's smoke test stays under a minute once its binaries are cached: tiny
# tables, one benchmark, short cells and budgets, a few transactions, released or cached engines (never a server
# built from source: an hour here).
SMOKE_LIMITS: dict[str, float] = {"table_size": 10_000, "benchmarks": 1, "time_s": 1.0, "warmup_s": 1.0,
                                  "budget_s": 30.0, "repeats": 3, "transactions": 2_000, "stale_reads": 200,
                                  "replication_repeats": 1, "probe_scale": 0.1, "probe_repeats": 5,
                                  "trace_seconds": 5.0, "bisect_tries": 1, "diff_queries": 1_000,
                                  "counters_queries": 1_000}


def _check_smoke(step: Step, s: dict[str, Any], exp: Experiment | None, where: str) -> None:
    """Refuses a step whose --smoke run would build a server from source or run long: a new study cannot forget
    its `smoke = { ... }` overrides."""
    over: list[str] = []

    def limit(value: float | None, key: str, what: str) -> None:
        if value is not None and value > SMOKE_LIMITS[key]:
            over.append(f"{what} {value:g} (at most {SMOKE_LIMITS[key]:g})")

    if exp is not None:
        built = [t.name for t in exp.targets if t.server_build is not None]
        if built:
            over.append(f"target {built[0]!r} builds a server from source (use a released one, engine@VERSION)")
        limit(len(exp.benchmarks), "benchmarks", "benchmarks")
        limit(exp.tables * exp.table_size, "table_size", "rows")
        if exp.replication is None:  # timed cells
            limit(exp.time_s, "time_s", "seconds a cell")
            limit(exp.warmup_s, "warmup_s", "seconds of warm-up")
            limit(exp.budget_s, "budget_s", "seconds of budget")
            limit(exp.repeats if exp.budget_s is None else None, "repeats", "repeats")
        else:  # the replication lab counts transactions instead
            limit(exp.replication.transactions, "transactions", "transactions")
            limit(exp.replication.stale_reads, "stale_reads", "stale-read probes")
            limit(exp.replication.repeats, "replication_repeats", "replication repeats")
    if step.kind == "probe":
        limit(float(s.get("scale", 1.0)), "probe_scale", "probe scale")
        limit(int(s.get("repeats", 5)), "probe_repeats", "probe repeats")
    elif step.kind == "layout" and (s.get("experiment") or s.get("run")):
        limit(parse_duration(s.get("trace_seconds", "60"), f"{where} trace_seconds"), "trace_seconds",
              "seconds traced")
    elif step.kind == "bisect":
        limit(int(s.get("table_size", 100_000)), "table_size", "rows")
        limit(parse_duration(s.get("time", "5s"), f"{where} time"), "time_s", "seconds a cell")
        limit(parse_duration(s.get("warmup", "1s"), f"{where} warmup"), "warmup_s", "seconds of warm-up")
        limit(parse_duration(s.get("budget", "2m"), f"{where} budget"), "budget_s", "seconds of budget")
        limit(int(s.get("tries", 3)), "bisect_tries", "tries")
    elif step.kind == "diff":
        limit(int(s.get("queries", 20_000)), "diff_queries", "queries")
    elif step.kind == "counters":
        limit(int(s.get("queries", 5_000)), "counters_queries", "queries")
    if over:
        raise UserError(f"{where}: too long for --smoke ({over[0]}); give the step smoke = {{ ... }} overrides "
                        "(tiny tables, one benchmark, released binaries)")


def _check_measure(m: dict[str, Any], study: Study, targets: dict[str, set[str]], catalog: dict[str, Any],
                   where: str) -> None:
    source, step_name = m.get("from"), m.get("step")
    if source not in MEASURE_SOURCES:
        raise UserError(f"{where}: measure 'from' must be one of {', '.join(MEASURE_SOURCES)}, got {source!r}")
    if step_name not in [s.name for s in study.steps]:
        raise UserError(f"{where}: measure step {step_name!r} is not a step of the study")
    step = study.step(step_name)
    if source == "probe":
        if step.kind != "probe" or m.get("family") not in step.settings.get("families", []):
            raise UserError(f"{where}: a probe measure names a family its probe step runs")
        if not m.get("group") or not m.get("name"):
            raise UserError(f"{where}: a probe measure needs the figure's group and name")
    elif source in ("cell", "geomean"):
        names = targets.get(step_name)
        if names is None:
            raise UserError(f"{where}: a {source} measure names an experiment step")
        if source == "geomean" and m.get("results_from"):
            raise UserError(f"{where}: a geomean measure reads its step's own results (no results_from)")
        # A run the step makes of its own (results_from: the layout check's A/B) has targets the file does not.
        if not m.get("results_from") and m.get("target") not in names:
            raise UserError(f"{where}: target {m.get('target')!r} is not in step {step_name!r}'s experiment")
        # base: the target compared against instead of the experiment's base (the rung below, on a ladder)
        if m.get("base") is not None and (m.get("results_from") or m["base"] not in names):
            raise UserError(f"{where}: base {m.get('base')!r} is not a target of step {step_name!r}'s experiment")
        if source == "cell" and m.get("benchmark") not in catalog:
            raise UserError(f"{where}: benchmark {m.get('benchmark')!r} is not in the catalog")
    elif not isinstance(m.get("path"), str) or not isinstance(m.get("file", ""), str):
        raise UserError(f"{where}: a json measure needs a path (and optionally the step's file)")


def study_list_view() -> View:
    """`dbperf study list`: each study, the public source(s) it reproduces (docs/sources.md), what it measures and
    how long it takes."""
    rows = []
    for name in study_names():
        s = load_study(name)
        rows.append(Row((s.name, "; ".join(s.sources) or "–", s.title,
                         s.duration + (" (builds from source)" if s.long else ""))))
    return View("studies", "studies", (Section(block=Block("", "", ("study", "source", "what", "takes"), tuple(rows),
                                                           text_columns=4)),))
