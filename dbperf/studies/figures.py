"""A study's figures read back from what its steps wrote: a probe figure (probes.json), a cell of an experiment
(rQPS and the lab's verdict against the base), or a value in a JSON file (the layout check's, a report's, a
bisect's) by a path such as `replication.apply[workers=4,durability=binlog-crash-safe].vs_serial`. A figure that
was not measured says why; no number is ever made up."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import msgspec

from dbperf.errors import UserError
from dbperf.host.topology import HostShape
from dbperf.run_meta import HostMeta, RunMeta
from dbperf.stats.rqps_matrix import Matrix, build_matrix
from dbperf.stats.rule_history import RuleChange, under_run_rule
from dbperf.stats.verdict import CellVerdict, deciding
from dbperf.storage.results import read_results
from dbperf.studies.builds import build_problems
from dbperf.studies.evidence import (
    NOT_REPRODUCIBLE,
    Interval,
    median_interval,
    not_reproducible,
    proportion_interval,
    ratio_interval,
    said,
    spread_interval,
    word,
)
from dbperf.studies.model import Figure, Mode, Study, left_out
from dbperf.studies.steps import step_kind

PROBE_IDENTITY = ("x", "offset", "flag_offset", "n", "multiplier", "pair", "threads")
SEGMENT = re.compile(r"^([^\[\]]+)(?:\[([^\]]*)\])?$")


class NotMeasured(Exception):
    """Why a figure has no value (its step failed, or did not produce it)."""


@dataclass(frozen=True)
class Measured:
    value: float | None
    verdict: str | None = None  # the lab's verdict where the figure is a compared cell
    text: str | None = None  # a measured fact that is not a number (a version found, whether a finding is gone)
    interval: Interval | None = None  # where the value lies (evidence.py); None: `why_none` says why
    why_none: str | None = None
    decided: bool | None = None  # a compared cell's verdict decided (None: no verdict applies)
    samples: dict[int, float] | None = None  # per repeat (round), to pair with another cell of the same rounds
    builds: tuple[str, ...] = ()  # the build keys the value rests on (their manifests: studies/builds.py)
    problems: tuple[str, ...] = ()  # what is wrong with those builds, said on the figure
    # The run that measured it where that is not the step's own run (a diff step's worst cell, whose rQPS and verdict
    # a versions run kept on record measured): the figure names that run, not the one that read it back.
    run: Provenance | None = None


@dataclass(frozen=True)
class Provenance:
    """The run that measured a figure: its folder, command, when, and the host (summary.Host.to_json: vendor and
    model, family/model/stepping, microcode, kernel, vCPUs, load average at its start and end)."""
    directory: str | None
    command: str | None
    started: str | None
    ended: str | None
    host: dict[str, Any]
    # How it was established when not by the run itself (read back later from its results' meta.json), and what
    # that leaves unknown (the load average a study run keeps and a results directory does not).
    note: str | None = None

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Provenance:
        return cls(doc.get("directory"), doc.get("command"), doc.get("started"), doc.get("ended"),
                   dict(doc.get("host") or {}), doc.get("note"))

    @classmethod
    def of_results(cls, meta: RunMeta, folder: str | None) -> Provenance:
        """The run a results directory's meta.json describes (a results directory keeps no load average)."""
        h = meta.host or HostMeta()
        host = {"cpu": h.cpu_model, "cpu_id": h.cpu_id, "microcode": h.microcode, "cores": h.cores,
                "virtualised": h.virtualised, "kernel": h.kernel, "load_start": None, "load_end": None}
        return cls(folder, None, meta.started_at, meta.finished_at, host,
                   note="established from its results' meta.json kept beside the record (host, start and end); "
                        "a results directory keeps no load average, and the study run's command was not kept")

    @property
    def label(self) -> str:
        """The host column of a record: which CPU (and generation), how many vCPUs, which run, its load."""
        h = self.host
        cpu = str(h.get("cpu") or "?") + (f" ({h['cpu_id']})" if h.get("cpu_id") else " (generation not recorded)")
        when = (self.started or "?")[:16].replace("T", " ")
        load = (f"load {_load1(h.get('load_start'))} → {_load1(h.get('load_end'))}"
                if h.get("load_start") or h.get("load_end") else "load not recorded")
        return f"{cpu}, {h.get('cores', '?')} vCPUs{', VM' if h.get('virtualised') else ''}; run of {when} UTC, {load}"


def _load1(load: Any) -> str:
    """The 1-minute load average of a host's (1, 5, 15) triple, or that it was not recorded."""
    return f"{float(load[0]):.2f}" if isinstance(load, (list, tuple)) and load else "not recorded"


@dataclass(frozen=True)
class Row:
    what: str
    # As every run writes them; a hand-made study.json may leave them out (read as empty).
    section: str = ""
    published: str = ""
    measured: str = ""  # formatted, or "not measured: WHY"
    verdict: str = ""
    value: float | None = None
    text: str | None = None  # a measured fact that is not a number
    left_out: bool = False  # by design of a --quick or --smoke run (a benchmark or target it does not run)
    host: str | None = None  # measured elsewhere: kept from the run on record (studies/record.py), its host and date
    # The evidence behind the verdict word (evidence.py): the interval of `value` and how it was computed, or why
    # there is none; the builds it rests on and what was found wrong with them since (superseded: no word holds).
    low: float | None = None  # the interval of `checked`
    high: float | None = None
    interval: str | None = None
    coverage: float | None = None  # how often the interval holds the true value (evidence.Interval.coverage)
    checked: float | None = None  # what the word judges: the value, or after / before for a change
    decided: bool | None = None
    run: Provenance | None = None
    builds: list[str] | None = None
    superseded: str | None = None

    @property
    def measured_anything(self) -> bool:
        return self.value is not None or self.text is not None

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Row:
        """A figure as study.json holds it (asdict)."""
        row = cls(**{f.name: doc[f.name] for f in fields(cls) if f.name in doc})
        return replace(row, run=Provenance.from_json(doc["run"])) if isinstance(doc.get("run"), dict) else row


def step_dir(directory: Path, step: str) -> Path:
    return directory / step


def json_file(directory: Path, study: Study, step_name: str, file: str | None) -> Path:
    """Where a step's JSON is: named by the figure, else the step kind's own file."""
    if file:
        return directory / file
    return step_kind(study.step(step_name).kind).own_file(directory, step_name)


def walk(doc: Any, path: str) -> Any:
    """`a.b[k=v,k2=v2].c`: keys of objects; `[k=v]` picks the first element of a list whose fields match (as text);
    `[3]` an index."""
    node = doc
    for part in path.split("."):
        m = SEGMENT.match(part)
        if m is None:
            raise NotMeasured(f"bad path segment {part!r}")
        key, select = m.groups()
        if not isinstance(node, dict) or key not in node:
            raise NotMeasured(f"no {key!r} in the results")
        node = node[key]
        if select is None:
            continue
        if not isinstance(node, list):
            raise NotMeasured(f"{key!r} is not a list")
        if select.isdigit():
            if int(select) >= len(node):
                raise NotMeasured(f"{key}[{select}]: out of range")
            node = node[int(select)]
            continue
        wanted = dict(p.split("=", 1) for p in select.split(",") if "=" in p)
        node = next((x for x in node if isinstance(x, dict)
                     and all(str(x.get(k)) == v for k, v in wanted.items())), None)
        if node is None:
            raise NotMeasured(f"no {key} entry with {select}")
    return node


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise NotMeasured(f"{what} is not a number ({value!r})")
    return float(value)


class Reader:
    """Reads the measures of one study run, loading each file or matrix once."""

    def __init__(self, study: Study, directory: Path, kept: dict[str, Path] | None = None) -> None:
        """`kept`: a step's results directory where it is kept elsewhere (a record's copy, the layout A/B run's
        too), read instead of the folder the step wrote."""
        self.study, self.directory, self.kept = study, directory, kept or {}
        self._json: dict[Path, Any] = {}
        self._matrix: dict[str, Matrix] = {}
        self._meta: dict[str, RunMeta] = {}

    def load_json(self, path: Path) -> Any:
        if path not in self._json:
            try:
                self._json[path] = json.loads(path.read_text())
            except FileNotFoundError:
                raise NotMeasured(f"{path.name} was not written (did its step run?)") from None
            except (OSError, json.JSONDecodeError) as e:
                raise NotMeasured(f"{path.name}: unreadable ({e})") from None
        return self._json[path]

    def worst_cell(self, step: str, among: list[str] | None = None) -> tuple[str, str, str, float, str | None]:
        """(base, target, benchmark, rQPS, verdict) of an experiment step's worst cell against its base, one thread,
        the base's A/A copy left out: the lowest rQPS among the cells decided slower, or the lowest of all when none
        was decided slower (its verdict then says that the rQPS alone picked it). `among`: the step's own targets,
        where its results hold more (results kept from a run of several steps' targets at once)."""
        m = self.matrix(step)
        cells = [c for (t, _, _), c in m.cells.items()
                 if t != m.base and t != f"{m.base}-aa" and c.rqps is not None and c.threads == min(m.threads)
                 and (among is None or t in among)]
        if not cells:
            raise NotMeasured(f"step {step!r} has no compared cell")
        worst = min([c for c in cells if c.verdict == "slower"] or cells, key=lambda c: c.rqps or 0.0)
        return m.base, worst.target, worst.benchmark, worst.rqps or 0.0, worst.verdict

    def matrix(self, step: str, results_from: str | None = None, base: str | None = None) -> Matrix:
        """The rQPS matrix of an experiment step, or of the results directory a step's JSON names at the path
        `results_from` (the layout check's A/B run); with `base`, every cell against that target instead of the
        run's base, from the same rounds (the verdicts as the lab's rules give them on those rounds)."""
        key = f"{step}:{results_from or ''}:{base or ''}"
        if key not in self._matrix:
            where = step_dir(self.directory, step)
            if step in self.kept:
                where = self.kept[step]
            elif results_from:
                named = walk(self.load_json(json_file(self.directory, self.study, step, None)), results_from)
                if not isinstance(named, str):
                    raise NotMeasured(f"{results_from} names no results directory")
                where = Path(named)
            try:
                meta, records, _ = read_results(where)
            except UserError as e:
                raise NotMeasured(f"step {step!r} has no results ({e})") from None
            if base is not None and base not in meta.target_names:
                raise NotMeasured(f"step {step!r} has no target {base!r} to compare with")
            self._matrix[key] = build_matrix(meta if base is None else msgspec.structs.replace(meta, base=base),
                                             records)
            self._meta[key] = meta
        return self._matrix[key]

    def meta(self, step: str, results_from: str | None = None, base: str | None = None) -> RunMeta:
        """The meta.json of the run `matrix` read (the same arguments)."""
        self.matrix(step, results_from, base)
        return self._meta[f"{step}:{results_from or ''}:{base or ''}"]

    def host_shape(self, step: str) -> HostShape:
        """The host the step ran on, as its JSON describes it (vCPUs, cores, PMU, releases not served)."""
        doc = self.load_json(json_file(self.directory, self.study, step, None))
        shape = doc.get("host", {}).get("shape") if isinstance(doc, dict) else None
        if not isinstance(shape, dict):
            raise NotMeasured(f"step {step!r} kept no description of its host to check the figure's requirements")
        try:
            return HostShape.from_json(shape)
        except UserError as e:
            raise NotMeasured(f"step {step!r}: {e}") from None

    def measure(self, m: dict[str, Any]) -> Measured:
        """A figure's measure (its `from`: probe, cell, geomean or json) read from what its step wrote."""
        read = {"probe": self._probe, "cell": self._cell, "geomean": self._geomean}.get(m["from"], self._in_json)
        return read(m, m["step"])

    def _probe(self, m: dict[str, Any], step: str) -> Measured:
        doc = self.load_json(json_file(self.directory, self.study, step, None))
        family = doc.get("families", {}).get(m["family"], {})
        if "skipped" in family:
            raise NotMeasured(f"probe {m['family']} skipped: {family['skipped']}")
        for f in family.get("figures", []):
            if f["group"] == m["group"] and f["name"] == m["name"] and all(
                    f.get(k) == m[k] for k in PROBE_IDENTITY if k in m):
                value = f.get(m.get("field", "ns_per_op"))
                if isinstance(value, dict):  # median, min and max of the repeats
                    median = _number(value.get("median"), m["name"])
                    if isinstance(value.get("min"), (int, float)) and isinstance(value.get("max"), (int, float)):
                        return Measured(median, interval=spread_interval(value["min"], value["max"],
                                                                         f.get("repeats")))
                    return Measured(median, why_none="the probe kept its median only")
                return Measured(_number(value, m["name"]), why_none="the probe kept its median only")
        raise NotMeasured(f"probe figure {m['group']}: {m['name']} not in the results")

    def _cell(self, m: dict[str, Any], step: str) -> Measured:
        matrix = self.matrix(step, m.get("results_from"), m.get("base"))
        meta = self.meta(step, m.get("results_from"), m.get("base"))
        cell = matrix.cell(m["target"], m["benchmark"], int(m.get("threads", 1)))
        builds, problems = _builds(meta, [m["target"], m.get("base") or matrix.base])
        field = m.get("field", "rqps")
        if field != "rqps":  # a per-query figure of the cell (median of its repeats), no verdict
            value = cell.median_of(field) if cell is not None else None
            if value is None or cell is None:
                raise NotMeasured(f"cell {m['target']} {m['benchmark']} has no {field}")
            samples = {r.repeat: v for r, f in zip(cell.runs, cell.figures, strict=False)
                       if (v := f.get(field)) is not None}
            interval = median_interval(list(samples.values()))
            return Measured(value, samples=samples, builds=builds, problems=problems,
                            **_interval_or_why(interval))
        if cell is None or cell.rqps is None:
            raise NotMeasured(f"cell {m['target']} {m['benchmark']} has no rQPS")
        then, change = run_verdict(cell.verdict_detail, cell.cpu_verdict_detail, meta.started_at)
        word_: str = then.verdict if then else "undecided"
        if change is not None:
            word_ += f" (a rule added after the run, {change.date}, calls it: {change.what})"
        elif then is not None and then.decided and not then.metric.headline:
            word_ += " on CPU time (the wall clock undecided)"
        wall, _ = run_verdict(cell.verdict_detail, None, meta.started_at)
        return Measured(cell.rqps, word_, decided=bool(then and then.decided), builds=builds, problems=problems,
                        **_interval_or_why(_verdict_interval(wall)))

    def _geomean(self, m: dict[str, Any], step: str) -> Measured:
        """One target over every benchmark, as a headline counts it."""
        matrix = self.matrix(step, base=m.get("base"))
        meta = self.meta(step, base=m.get("base"))
        if not any(t == m["target"] for t, _, _ in matrix.cells):
            raise NotMeasured(f"step {step!r} ran no target {m['target']} (a run from before the study had it?)")
        t = tallied(matrix, m["target"], meta.started_at)
        if t.geomean is None:
            raise NotMeasured(f"target {m['target']} has no compared cell")
        held_out = {b for _, b, _ in matrix.rows() if not matrix.was_trained_on(m["target"], b)}
        short = (f"; over {t.compared} of {len(held_out)} benchmarks, the others without rQPS"
                 if t.compared < len(held_out) else "")
        builds, problems = _builds(meta, [m["target"], m.get("base") or matrix.base])
        return Measured(t.geomean, f"{t.breakdown()}{short}", builds=builds, problems=problems,
                        why_none="a geomean over cells, each with its own verdict (counted beside it)",
                        decided=False)

    def _in_json(self, m: dict[str, Any], step: str) -> Measured:
        doc = self.load_json(json_file(self.directory, self.study, step, m.get("file")))
        measured = self._json_value(m, step, doc)
        try:  # an output written before it named the run (or null: this run measured it) names none
            by = walk(doc, m["measured_by"]) if m.get("measured_by") else None
        except NotMeasured:
            by = None
        return replace(measured, run=Provenance.from_json(by)) if isinstance(by, dict) else measured

    def _json_value(self, m: dict[str, Any], step: str, doc: Any) -> Measured:
        found = walk(doc, m["path"])
        if isinstance(found, bool):
            return Measured(None, text="yes" if found else "no")
        if isinstance(found, str):
            return Measured(None, text=found)
        if isinstance(found, list):  # how many (findings, steps)
            return Measured(float(len(found)))
        if found is None:
            if isinstance(m.get("empty"), str):  # a measured absence (a bisect that found no slower release)
                return Measured(None, text=m["empty"])
            raise NotMeasured(f"{m['path']} is empty in the results")
        value = _number(found, m["path"])
        exact = step_kind(self.study.step(step).kind).exact(self.study.step(step).settings)
        if exact:
            return Measured(value, interval=Interval(value, value, exact, exact=True, coverage=1.0))
        if isinstance(m.get("spread"), list):  # the range of its runs, kept beside it
            low, high, runs = (walk(doc, p) for p in m["spread"])
            if not isinstance(runs, list) or len(runs) < 2:
                return Measured(value, why_none="a single run: no range")
            return Measured(value, interval=spread_interval(_number(low, m["spread"][0]), _number(high, m["spread"][1]),
                                                            len(runs) if isinstance(runs, list) else None))
        if isinstance(m.get("proportion"), list):  # a share counted: how many of how many
            count, of = (int(_number(walk(doc, p), p)) for p in m["proportion"])
            if of > 0:
                return Measured(value, interval=proportion_interval(count, of))
        return Measured(value, why_none="one value from the step's JSON (no repeats kept with it)")


def run_verdict(wall: CellVerdict | None, cpu: CellVerdict | None,
                started: str | None) -> tuple[CellVerdict | None, RuleChange | None]:
    """The deciding verdict as the run's own rule gives it (stats/rule_history.py), and the later change that made
    the call today's rule makes, if one did."""
    wall_then, wall_change = under_run_rule(wall, started)
    cpu_then, cpu_change = under_run_rule(cpu, started)
    now = deciding(wall, cpu)
    then = deciding(wall_then, cpu_then)
    change = wall_change or cpu_change
    if now is not None and now.decided and (then is None or not then.decided) and change is not None:
        return then, change
    return then, None


def _verdict_interval(v: CellVerdict | None) -> Interval | str:
    if v is None or v.rule != "sequential" or v.lower is None or v.upper is None:
        return "too few rounds for the sequential rule's interval"
    kind = "interval at planned looks" if v.planned else "anytime-valid interval"
    return Interval(1 + v.lower, 1 + v.upper,
                    f"the sequential rule's {1 - v.alpha:.1%} {kind} of the wall clock's per-round ratio, "
                    f"{v.paired.n if v.paired else '?'} rounds", coverage=1 - v.alpha)


def _interval_or_why(found: Interval | str) -> dict[str, Any]:
    return {"interval": found} if isinstance(found, Interval) else {"why_none": found}


def _builds(meta: RunMeta, names: list[str | None]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The build keys of the named targets of a run, and what is wrong with them."""
    keys, problems = [], []
    for t in meta.targets:
        if t.name in names and isinstance(t.build, dict):
            if t.build.get("key"):
                keys.append(str(t.build["key"]))
            problems += build_problems(t.build)
    return tuple(dict.fromkeys(keys)), tuple(dict.fromkeys(problems))


def claim_check(figure: Figure, value: float, interval: Interval | None, decided: bool | None,
                why_none: str | None) -> str:
    """The figure's word against the published claim (evidence.py), with the claim and the interval's basis; "" when
    the figure has no claim to check, or is derived (arithmetic: no measurement to hold)."""
    if figure.expect is None or figure.derived:
        return ""
    return said(word(figure.expect, value, interval, decided), figure.claim, interval, why_none)


def not_a_floor(checked: float, interval: Interval | None) -> bool:
    """A ratio to a floor below 1: where there is an interval, wholly below 1."""
    return interval.high < 1 if interval is not None else checked < 1


def _combined(measured: Measured, other: Measured, op: str) -> tuple[Interval | None, str | None]:
    """The interval of measured / other: per repeat when both carry samples of the same rounds, else from both
    intervals; None with why when either has none."""
    if measured.samples and other.samples:
        common = sorted(set(measured.samples) & set(other.samples))
        ratios = [measured.samples[r] / other.samples[r] for r in common if other.samples[r]]
        found = median_interval(ratios)
        if isinstance(found, Interval):
            return Interval(found.low, found.high, f"{found.how}, of the per-round {op}",
                            coverage=found.coverage), None
        return None, found
    if measured.interval is not None and other.interval is not None:
        ratio = ratio_interval(measured.interval, other.interval)
        return (ratio, None) if ratio is not None else (None, "the reference's interval reaches 0")
    return None, measured.why_none or other.why_none or "no interval for one of its parts"


def row(reader: Reader, figure: Figure, mode: Mode = "full") -> Row:
    measure, per_measure = figure.measures(mode)
    try:
        if figure.requires is not None:
            unmet = figure.requires.unmet(reader.host_shape(measure["step"]))
            if unmet:
                return Row(figure.what, figure.section, figure.published, not_reproducible(unmet), NOT_REPRODUCIBLE)
        measured = reader.measure(measure)
        if measured.value is None:  # a fact, not a number
            text = measured.text or ""
            return Row(figure.what, figure.section, figure.published, text, SHOWN, text=text, run=measured.run)
        value, interval, why_none = measured.value, measured.interval, measured.why_none
        builds, problems = list(measured.builds), list(measured.problems)
        if per_measure is not None:
            per = reader.measure(per_measure)
            if not per.value:
                raise NotMeasured("the reference figure is 0 or not a number")
            value /= per.value
            interval, why_none = _combined(measured, per, "ratio")
            builds += per.builds
            problems += per.problems
        value *= figure.scale
        interval = interval.scaled(figure.scale) if interval is not None else None
        before = None
        if figure.before is not None:  # the value it changed from, read and scaled the same
            was = reader.measure(figure.before)
            if not was.value:
                raise NotMeasured(f"the value before is 0 or not a number ({figure.before.get('path', '')})")
            before = was.value * figure.scale
            interval, why_none = _combined(replace(measured, interval=interval), was, "after / before")
    except NotMeasured as why:
        return Row(figure.what, figure.section, figure.published, f"not measured: {why}", "–")
    found = judged(figure, value, before, interval, why_none, measured.verdict if per_measure is None else None,
                   measured.decided if per_measure is None else None, builds, problems)
    return found if measured.run is None else replace(found, run=measured.run)


SHOWN = "shown beside the published one"


def judged(figure: Figure, value: float, before: float | None, interval: Interval | None, why_none: str | None,
           verdict: str | None, decided: bool | None, builds: list[str], problems: list[str]) -> Row:
    """A measured figure's row: its text, its words (the lab's verdict for a compared cell, the claim's word by the
    evidence rule), its interval, the builds it rests on and what supersedes it."""
    checked = value / before if before is not None else value
    superseded = "; ".join(dict.fromkeys(problems)) or None
    claim = claim_check(figure, checked, interval, False if superseded else decided, why_none)
    if figure.floor and not_a_floor(checked, interval):
        claim = (f"not judged: the reference is not a floor (the measure / the reference = {checked:.3g}, "
                 f"{'interval below 1' if interval else 'below 1'}): it does more work than what it is the floor of")
    change = f" (after / before {checked:.3f})" if before is not None else ""
    words = [w for w in (verdict, claim + change if claim else "",
                         f"derived, not measured: {figure.derived}" if figure.derived else "") if w]
    text = ("" if before is None else f"{_formatted(figure, before)} → ") + _formatted(figure, value)
    return Row(figure.what, figure.section, figure.published, text, "; ".join(words) or SHOWN, value,
               low=interval.low if interval else None, high=interval.high if interval else None,
               interval=interval.how if interval else why_none, coverage=interval.coverage if interval else None,
               checked=checked, decided=decided,
               builds=list(dict.fromkeys(builds)) or None, superseded=superseded)


def _formatted(figure: Figure, value: float) -> str:
    return f"{value:,.{figure.digits}f}" + (figure.unit if figure.unit in ("×", "%") else
                                            f" {figure.unit}" if figure.unit else "")


def rows(study: Study, directory: Path, mode: Mode = "full") -> list[Row]:
    reader = Reader(study, directory)
    skipped = left_out(study, mode)
    return [Row(f.what, f.section, f.published, f"not measured: {skipped[i]}", "–", left_out=True) if i in skipped
            else row(reader, f, mode) for i, f in enumerate(study.figures)]


@dataclass(frozen=True)
class Headline:
    target: str
    geomean: float | None
    decided: int  # under the rule the run had (stats/rule_history.py)
    compared: int
    slower: int
    on_cpu_time: int = 0  # of `decided`: by CPU time, the wall clock undecided (docs/verdicts.md)
    faster: int | None = None  # None: a headline recorded before the lab counted them
    # Cells today's rule calls that the run's rule left undecided (not in `decided`), and the change that did.
    by_later_rule: int = 0
    later_rule: str | None = None
    superseded: str | None = None  # what is wrong with the builds it compares (builds.py)
    # The base's A/A copy (a second server of the same build) over the same benchmarks: how many of its cells were
    # compared, and the benchmarks where the run's rule called it changed: there the base differed from itself by
    # as much as a verdict, so the target's call on those benchmarks is not the build's. None: no A/A copy.
    aa_compared: int | None = None
    aa_changed: tuple[str, ...] | None = None
    aa_overlap: int = 0  # of `decided`: cells on a benchmark where the A/A copy changed

    def first_line(self, study: str) -> str:
        g = "–" if self.geomean is None else f"{self.geomean:.3f}"
        return f"study {study}: geomean rQPS {g}, decided {self.decided} of {self.compared}, slower {self.slower}"

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Headline:
        """The headline as study.json holds it (asdict)."""
        return cls(**{f.name: doc[f.name] for f in fields(cls) if f.name in doc})

    def breakdown(self) -> str:
        """How the cells were decided, short: the geomean figure's verdict column."""
        faster = "" if self.faster is None else f", {self.faster} faster"
        how = (f" ({self.decided - self.on_cpu_time} on the wall clock, {self.on_cpu_time} on CPU time only)"
               if self.decided else "")
        later = f"; {self.by_later_rule} more called by a rule added after the run" if self.by_later_rule else ""
        return f"decided {self.decided} of {self.compared}{how}: {self.slower} slower{faster}{later}"

    def decided_by(self) -> str:
        """The line under the headline: how each decided cell was decided, and what a later rule would add."""
        said = (f"Of the {self.decided} decided, {self.decided - self.on_cpu_time} on the wall clock (QPS) and "
                f"{self.on_cpu_time} on CPU time only (queries per CPU second; their wall clock undecided); "
                f"{self.compared - self.decided} undecided." if self.decided else
                f"None of the {self.compared} cells was decided.")
        if self.by_later_rule:
            said += (f" {self.by_later_rule} more cell(s) are called by a rule added after the run "
                     f"({self.later_rule}); they are not counted as decided here.")
        if self.aa_compared:
            changed = self.aa_changed or ()
            said += f" The A/A copy of the base changed {len(changed)} of {self.aa_compared} cells"
            said += (f" ({', '.join(changed)}): on {'that benchmark' if len(changed) == 1 else 'those benchmarks'} "
                     "two servers of the same build differed by as much as a verdict, so "
                     f"{self.aa_overlap} of the decided cells above say{'s' if self.aa_overlap == 1 else ''} "
                     "nothing of the build there." if changed else ".")
        if self.superseded:
            said += f" Superseded: {self.superseded}."
        return said

    def last_line(self) -> str:
        return f"ratio {'–' if self.geomean is None else f'{self.geomean:.3f}'}"


def _tally(study: Study, directory: Path, step: str, kept: dict[str, Path] | None = None) -> Headline:
    target = study.headline["target"]
    reader = Reader(study, directory, kept)
    try:
        m = reader.matrix(step)
    except NotMeasured:
        return Headline(target, None, 0, 0, 0)
    meta = reader.meta(step)
    _, problems = _builds(meta, [target, m.base])
    return replace(tallied(m, target, meta.started_at), superseded="; ".join(problems) or None)


def headline(study: Study, directory: Path, kept: dict[str, Path] | None = None) -> Headline | None:
    """The geomean rQPS of the headline target over its cells not trained on (held out), with how many of them
    the lab decided (under the run's rule) and how many it called slower."""
    if not study.headline:
        return None
    return _tally(study, directory, study.headline["step"], kept)


def step_headlines(study: Study, directory: Path, kept: dict[str, Path] | None = None) -> dict[str, Headline]:
    """The headline target's line for each of the study's other steps named in [headline] also."""
    return {step: _tally(study, directory, step, kept) for step in study.also_headlines}


def tallied(m: Matrix, target: str, started: str | None = None) -> Headline:
    """One target of an experiment against its base over every benchmark it was not trained on (held out): the
    geomean rQPS, and how many cells the lab decided under the rule of the run started at `started`, called slower
    and called faster; the cells only a later rule calls are counted apart."""
    keyed = [(b, c) for (t, b, _), c in m.cells.items() if t == target and c.rqps and not m.was_trained_on(t, b)]
    cells = [c for _, c in keyed]
    judged_ = [run_verdict(c.verdict_detail, c.cpu_verdict_detail, started) for c in cells]
    geomean = math.exp(sum(math.log(c.rqps) for c in cells if c.rqps) / len(cells)) if cells else None
    decided = [v for v, _ in judged_ if v is not None and v.decided]
    later = [change for _, change in judged_ if change is not None]
    slower, on_cpu, faster = _counted(decided)
    aa_compared, changed, overlap = _aa_changed(m, target, started, [b for b, _ in keyed], [v for v, _ in judged_])
    return Headline(target, geomean, len(decided), len(cells), slower, on_cpu, faster,
                    len(later), "; ".join(dict.fromkeys(f"{c.date}: {c.what}" for c in later)) or None,
                    aa_compared=aa_compared, aa_changed=changed, aa_overlap=overlap)


def _aa_changed(m: Matrix, target: str, started: str | None, benchmarks: list[str],
                verdicts: list[CellVerdict | None]) -> tuple[int | None, tuple[str, ...] | None, int]:
    """How many cells of the base's A/A copy were compared over `target`'s held-out benchmarks, the benchmarks where
    the run's rule called it faster or slower, and how many of `target`'s decided cells (its `verdicts` on
    `benchmarks`) lie on those; (None, None, 0) without an A/A copy."""
    aa = [(b, run_verdict(c.verdict_detail, c.cpu_verdict_detail, started)[0])
          for (t, b, _), c in m.cells.items() if t == f"{m.base}-aa" and c.rqps and not m.was_trained_on(target, b)]
    if not aa:
        return None, None, 0
    changed = tuple(sorted({b for b, v in aa if v is not None and v.decided and v.verdict in ("faster", "slower")}))
    return len(aa), changed, sum(1 for b, v in zip(benchmarks, verdicts, strict=True)
                                 if v is not None and v.decided and b in changed)


def _counted(decided: list[CellVerdict]) -> tuple[int, int, int]:
    """Of the decided verdicts: how many slower, how many on CPU time only, how many faster."""
    return (sum(v.verdict == "slower" for v in decided), sum(not v.metric.headline for v in decided),
            sum(v.verdict == "faster" for v in decided))
