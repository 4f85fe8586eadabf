"""A study's figures read back from what its steps wrote: a probe figure (probes.json), a cell of an experiment
(rQPS and the lab's verdict against the base), or a value in a JSON file (the layout check's, a report's, a
bisect's) by a path such as `replication.apply[workers=4,durability=binlog-crash-safe].vs_serial`. A figure that
was not measured says why; no number is ever made up."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import msgspec

from dbperf.errors import UserError
from dbperf.stats.rqps_matrix import Matrix, build_matrix
from dbperf.storage.results import read_results
from dbperf.studies.model import Figure, Mode, Study, left_out
from dbperf.studies.steps import step_kind

PROBE_IDENTITY = ("x", "offset", "flag_offset", "n", "multiplier")
SEGMENT = re.compile(r"^([^\[\]]+)(?:\[([^\]]*)\])?$")


class NotMeasured(Exception):
    """Why a figure has no value (its step failed, or did not produce it)."""


@dataclass(frozen=True)
class Measured:
    value: float | None
    verdict: str | None = None  # the lab's verdict where the figure is a compared cell
    text: str | None = None  # a measured fact that is not a number (a version found, whether a finding is gone)


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

    @property
    def measured_anything(self) -> bool:
        return self.value is not None or self.text is not None

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Row:
        """A figure as study.json holds it (asdict)."""
        return cls(**{f.name: doc[f.name] for f in fields(cls) if f.name in doc})


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

    def __init__(self, study: Study, directory: Path) -> None:
        self.study, self.directory = study, directory
        self._json: dict[Path, Any] = {}
        self._matrix: dict[str, Matrix] = {}

    def load_json(self, path: Path) -> Any:
        if path not in self._json:
            try:
                self._json[path] = json.loads(path.read_text())
            except FileNotFoundError:
                raise NotMeasured(f"{path.name} was not written (did its step run?)") from None
            except (OSError, json.JSONDecodeError) as e:
                raise NotMeasured(f"{path.name}: unreadable ({e})") from None
        return self._json[path]

    def worst_cell(self, step: str) -> tuple[str, str, str, float, str | None]:
        """(base, target, benchmark, rQPS, verdict) of an experiment step's worst cell against its base, one thread,
        the base's A/A copy left out: the lowest rQPS among the cells decided slower, or the lowest of all when none
        was decided slower (its verdict then says that the rQPS alone picked it)."""
        m = self.matrix(step)
        cells = [c for (t, _, _), c in m.cells.items()
                 if t != m.base and t != f"{m.base}-aa" and c.rqps is not None and c.threads == min(m.threads)]
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
            if results_from:
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
        return self._matrix[key]

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
                return Measured(_number(value["median"] if isinstance(value, dict) else value, m["name"]))
        raise NotMeasured(f"probe figure {m['group']}: {m['name']} not in the results")

    def _cell(self, m: dict[str, Any], step: str) -> Measured:
        matrix = self.matrix(step, m.get("results_from"), m.get("base"))
        cell = matrix.cell(m["target"], m["benchmark"], int(m.get("threads", 1)))
        field = m.get("field", "rqps")
        if field != "rqps":  # a per-query figure of the cell (median of its repeats), no verdict
            value = cell.median_of(field) if cell is not None else None
            if value is None:
                raise NotMeasured(f"cell {m['target']} {m['benchmark']} has no {field}")
            return Measured(value)
        if cell is None or cell.rqps is None:
            raise NotMeasured(f"cell {m['target']} {m['benchmark']} has no rQPS")
        v = cell.deciding_verdict
        return Measured(cell.rqps, v.verdict if v else "undecided")

    def _geomean(self, m: dict[str, Any], step: str) -> Measured:
        """One target over every benchmark, as a headline counts it."""
        matrix = self.matrix(step, base=m.get("base"))
        if not any(t == m["target"] for t, _, _ in matrix.cells):
            raise NotMeasured(f"step {step!r} ran no target {m['target']} (a run from before the study had it?)")
        t = tallied(matrix, m["target"])
        if t.geomean is None:
            raise NotMeasured(f"target {m['target']} has no compared cell")
        held_out = {b for _, b, _ in matrix.rows() if not matrix.was_trained_on(m["target"], b)}
        short = (f"; over {t.compared} of {len(held_out)} benchmarks, the others without rQPS"
                 if t.compared < len(held_out) else "")
        return Measured(t.geomean, f"decided {t.decided} of {t.compared}: {t.slower} slower, {t.faster} faster{short}")

    def _in_json(self, m: dict[str, Any], step: str) -> Measured:
        doc = self.load_json(json_file(self.directory, self.study, step, m.get("file")))
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
        return Measured(_number(found, m["path"]))


def claim_check(figure: Figure, value: float, before: float | None = None) -> str:
    """Whether the published claim, restated as a range for this figure, holds on this host; with a value `before`,
    the range bounds the change, value / before."""
    if figure.expect is None:
        return ""
    if before is not None:
        value /= before
    lo, hi = figure.expect
    inside = (lo is None or value >= lo) and (hi is None or value <= hi)
    side = "" if inside else " (below its range)" if lo is not None and value < lo else " (above its range)"
    change = f" (after / before {value:.3f})" if before is not None else ""
    return ("holds" if inside else "does not hold") + side + (f": {figure.claim}" if figure.claim else "") + change


def row(reader: Reader, figure: Figure, mode: Mode = "full") -> Row:
    measure, per_measure = figure.measures(mode)
    try:
        measured = reader.measure(measure)
        if measured.value is None:  # a fact, not a number
            text = measured.text or ""
            return Row(figure.what, figure.section, figure.published, text, "shown beside the published one", text=text)
        value = measured.value
        if per_measure is not None:
            per = reader.measure(per_measure)
            if not per.value:
                raise NotMeasured("the reference figure is 0 or not a number")
            value /= per.value
        value *= figure.scale
        before = None
        if figure.before is not None:  # the value it changed from, read and scaled the same
            was = reader.measure(figure.before).value
            if not was:
                raise NotMeasured(f"the value before is 0 or not a number ({figure.before.get('path', '')})")
            before = was * figure.scale
    except NotMeasured as why:
        return Row(figure.what, figure.section, figure.published, f"not measured: {why}", "–")
    words = [w for w in (measured.verdict if per_measure is None else None, claim_check(figure, value, before)) if w]
    text = ("" if before is None else f"{_formatted(figure, before)} → ") + _formatted(figure, value)
    return Row(figure.what, figure.section, figure.published, text,
               "; ".join(words) or "shown beside the published one", value)


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
    decided: int
    compared: int
    slower: int
    on_cpu_time: int = 0  # of `decided`: by CPU time, the wall clock undecided (docs/verdicts.md)
    faster: int | None = None  # None: a headline recorded before the lab counted them

    def first_line(self, study: str) -> str:
        g = "–" if self.geomean is None else f"{self.geomean:.3f}"
        return f"study {study}: geomean rQPS {g}, decided {self.decided} of {self.compared}, slower {self.slower}"

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Headline:
        """The headline as study.json holds it (asdict)."""
        return cls(**{f.name: doc[f.name] for f in fields(cls) if f.name in doc})

    def decided_by(self) -> str | None:
        """Which metric decided the cells, when CPU time decided some of them: the first line counts a cell as
        decided by either, as a verdict does."""
        if not self.on_cpu_time:
            return None
        return (f"Of the {self.decided} decided, {self.decided - self.on_cpu_time} on the wall clock (QPS) and "
                f"{self.on_cpu_time} on CPU time only (queries per CPU second; their wall clock undecided).")

    def last_line(self) -> str:
        return f"ratio {'–' if self.geomean is None else f'{self.geomean:.3f}'}"


def headline(study: Study, directory: Path) -> Headline | None:
    """The geomean rQPS of the headline target over its cells not trained on (held out), with how many of them
    the lab decided and how many it called slower."""
    if not study.headline:
        return None
    target = study.headline["target"]
    try:
        m = Reader(study, directory).matrix(study.headline["step"])
    except NotMeasured:
        return Headline(target, None, 0, 0, 0)
    return tallied(m, target)


def step_headlines(study: Study, directory: Path) -> dict[str, Headline]:
    """The headline target's line for each of the study's other steps named in [headline] also."""
    out = {}
    for step in study.also_headlines:
        target = study.headline["target"]
        try:
            out[step] = tallied(Reader(study, directory).matrix(step), target)
        except NotMeasured:
            out[step] = Headline(target, None, 0, 0, 0)
    return out


def tallied(m: Matrix, target: str) -> Headline:
    """One target of an experiment against its base over every benchmark it was not trained on (held out): the
    geomean rQPS, and how many cells the lab decided, called slower and called faster."""
    cells = [c for (t, b, _), c in m.cells.items() if t == target and c.rqps and not m.was_trained_on(t, b)]
    verdicts = [c.deciding_verdict for c in cells]
    geomean = math.exp(sum(math.log(c.rqps) for c in cells if c.rqps) / len(cells)) if cells else None
    decided = [v for v in verdicts if v is not None and v.decided]
    return Headline(target, geomean, len(decided), len(cells), sum(1 for v in decided if v.verdict == "slower"),
                    sum(1 for v in decided if v.metric == "cpu"), sum(1 for v in decided if v.verdict == "faster"))
