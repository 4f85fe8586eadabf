"""A study as its TOML file defines it (model.py parses and checks it): its steps, each of a kind (steps/: what the
kind takes, checks and runs), its figures, its headline; the three modes a study runs in, and a step's experiment
file as that mode runs it. Data only: no step kind is asked here, so that the kinds (steps/) build on it. A figure's
measures are decoded here, once, into their kinds' structs (measures/)."""

from __future__ import annotations

import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dbperf.errors import UserError
from dbperf.experiment import toml_text
from dbperf.experiment.model import Experiment
from dbperf.experiment.spec import parse_experiment
from dbperf.host.topology import HostRequirement
from dbperf.studies.measures import decoded, overridden
from dbperf.studies.measures.base import Measure

Mode = Literal["full", "quick", "smoke"]
MODES: tuple[Mode, ...] = ("full", "quick", "smoke")
OVERRIDES = ("quick", "smoke")  # a step's tables of overrides, one per mode besides the full one


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
    measure: Measure
    per: Measure | None = None
    unit: str = ""
    scale: float = 1.0  # measured value × scale (ns → µs: 0.001)
    expect: tuple[float | None, float | None] | None = None  # the claim's range for the measured value
    claim: str = ""
    digits: int = 2
    quick: dict[str, Any] = field(default_factory=dict)  # overrides of measure with --quick/--smoke; its `per`, of per
    before: Measure | None = None  # the value the measured one changed from; `expect` then bounds their ratio
    # Why the figure is arithmetic, not a measurement (the probe's own definitions give it): no word holds of it.
    derived: str = ""
    # The reference (`per`) claims to be a floor of the measure (a loop without the barrier): a ratio below 1 says it
    # is not one, and the figure then gets no word.
    floor: bool = False
    # What the host must have for the figure to mean the published one (threads, own cores, a PMU, a release
    # served): where it does not, the figure is `not reproducible here`, with the measured reason.
    requires: HostRequirement | None = None
    # Measured with a different setup than the published figure (what differs): a substitute, in a row of its own.
    substitute: str = ""
    # The measure and per under --quick (and --smoke, built on it): `quick`'s overrides applied, decoded once.
    quick_measures: tuple[Measure, Measure | None] | None = None

    def measures(self, mode: Mode) -> tuple[Measure, Measure | None]:
        """The measure and the reference it is divided by (None: none), with the --quick overrides (which a smoke
        run, built on the quick one, takes too)."""
        if mode == "full" or self.quick_measures is None:
            return self.measure, self.per
        return self.quick_measures

    def all_measures(self) -> tuple[Measure, ...]:
        """Every measure it reads in the full run: the measure, its reference, the value before."""
        return tuple(m for m in (self.measure, self.per, self.before) if m is not None)


def figure_measures(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """A [[figure]] table's measure, per and before as their kinds' structs, and its --quick ones (`quick`'s
    overrides of measure, its `per` of per): Figure's fields."""
    measure = decoded(raw.get("measure"), where)
    per = None if raw.get("per") is None else decoded(raw["per"], f"{where} per")
    before = None if raw.get("before") is None else decoded(raw["before"], f"{where} before")
    quick = raw.get("quick", {})
    quick_per = per if per is None else overridden(per, quick.get("per", {}), f"{where} (--quick) per")
    quick_measure = overridden(measure, {k: v for k, v in quick.items() if k not in ("per", "skip")},
                               f"{where} (--quick)")
    return {"measure": measure, "per": per, "before": before, "quick_measures": (quick_measure, quick_per)}


@dataclass(frozen=True)
class Study:
    name: str
    title: str
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
    # The public sources it reproduces, each "Author, \"Title\" (YYYY-MM-DD)": what `study list` and the summary cite.
    sources: tuple[str, ...] = ()

    def step(self, name: str) -> Step:
        return next(s for s in self.steps if s.name == name)

    @property
    def times_the_cpu(self) -> bool:
        """Whether a figure times instructions on this CPU (a probe's loop): the host notes on cycles are for it."""
        return any(m.times_the_cpu for f in self.figures for m in f.all_measures())

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


def in_mode(mode: Mode) -> str:
    return f" ({mode_flag(mode)})" if mode != "full" else ""


def parsed_experiment(study: Study, step: Step, mode: Mode) -> Experiment:
    """The step's experiment as it will run, through the lab's own parser (keys, benchmarks, sources)."""
    with tempfile.TemporaryDirectory(prefix="dbperf-study-") as tmp:
        path = Path(tmp) / f"{step.name}-{mode}.toml"
        path.write_text(toml_text.document(experiment_doc(study, step, mode)))
        try:
            return parse_experiment(path)
        except UserError as e:
            raise UserError(f"{study.path} step {step.name!r}{in_mode(mode)}: {e}") from None


def study_command(study: Study, mode: Mode, flags: list[str] | tuple[str, ...] = ()) -> str:
    """The command that runs the study in this mode (`flags`: what narrows it, study_run.Limits)."""
    return " ".join(w for w in ("dbperf study run", study.name, mode_flag(mode), *flags) if w)
