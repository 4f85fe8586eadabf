"""Fitting a cost model (records.CostModelRecord, used by stats/cost_model.py) on calibration cells: for each
(SQLite build, benchmark), the measured median user CPU time per query and the simulated tier's per-query counters.

The fit: non-negative nanoseconds per simulated event (scipy's NNLS: a negative cost per instruction or per miss has
no meaning, and an unconstrained fit on correlated counters trades a large positive weight for a large negative one).
What the data supports is chosen among candidates, each a feature set (instructions; + branch mispredicts; + I1, D1
and LL misses; + branches), with or without an intercept (a per-query cost no counter explains), and a weighting of
the rows:

- `level`: the cells as measured, in ns per query (the costly benchmarks dominate the fit);
- `relative`: each benchmark's rows divided by its median level among the cells fitted, so that every benchmark
  weighs the same and the residuals are relative errors;
- `change`: per benchmark one reference row (the base build, relative) and, for every other build, its difference
  to the reference (relative): the residual is then nearly the error of the predicted change, the quantity a
  verdict is about.

Validation leaves one build out at a time: the fit never sees the left-out build's cells. The error of the
predicted change is |predicted - measured| change of the left-out build against the base on the same benchmark,
the base's level predicted by the same fold's fit. The base cannot be left out of the change error (its change is 0
by definition): its fold gives a level error only. The candidate with the smallest median + 90th percentile change
error wins (ties: fewer parameters). Choosing among candidates on the same folds flatters the winner, so the whole
procedure is validated once more, nested: for each left-out build the choice is made again on the other builds
alone; those figures, when there are builds enough, are the model's band."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.optimize import nnls

from dbperf.records import CostModelRecord
from dbperf.stats.cost_model import FEATURES, MODEL_VERSION

Weighting = Literal["level", "relative", "change"]
Measure = Literal["user", "total"]
WEIGHTINGS: tuple[Weighting, ...] = ("level", "relative", "change")
MISPREDICTS = "branch_mispredicts_simulated_predictor"
FEATURE_SETS: tuple[tuple[str, ...], ...] = (
    ("instructions",),
    ("instructions", MISPREDICTS),
    ("instructions", MISPREDICTS, "i1_misses", "d1_misses", "ll_misses"),
    ("instructions", "branches", MISPREDICTS, "i1_misses", "d1_misses", "ll_misses"),
)
SHORT = {"instructions": "instr", "branches": "branches", MISPREDICTS: "mispredicts", "i1_misses": "I1",
         "d1_misses": "D1", "ll_misses": "LL"}
# Scores closer than this are a tie (then the simpler candidate wins): exact synthetic data fits to rounding error.
TIE = 1e-6
assert all(f in FEATURES for s in FEATURE_SETS for f in s)


@dataclass(frozen=True)
class CalibrationCell:
    """One (build, benchmark) of a calibration run."""
    build: str
    benchmark: str
    user_us: float  # measured median user CPU µs per query
    counters: Mapping[str, float]  # the simulated tier's per-query counters (explain/profile.py simulated_per_query)
    total_us: float | None = None  # measured median user + system CPU µs per query (None: not measured)

    @property
    def user_ns(self) -> float:
        return self.user_us * 1000.0

    def measured_us(self, measure: Measure) -> float:
        value = self.user_us if measure == "user" else self.total_us
        return value if value is not None else math.nan


@dataclass(frozen=True)
class Candidate:
    """`measure` "user": levels of user CPU per query from the counts. "total": user + system CPU per query, fitted
    and predicted as differences between builds of one benchmark, over the base's measured level: the kernel's work
    (half of the CPU of these cells on the host it was written on) is the same for every build of one benchmark and
    cancels, and the verdicts' CPU time is this total. The split of CPU time into user and system is itself sampled
    at the kernel's tick (cputime_adjust), so user CPU per query of a short cell is the noisier figure."""
    features: tuple[str, ...]
    weighting: Weighting
    intercept: bool
    measure: Measure = "user"

    @property
    def parameters(self) -> int:
        return len(self.features) + self.intercept

    def label(self) -> str:
        return ("+".join(SHORT[f] for f in self.features) + (" +intercept" if self.intercept else "")
                + f", {self.weighting}" + (", user + system CPU as differences" if self.measure == "total" else ""))


def candidates() -> list[Candidate]:
    """User CPU: every feature set, weighting and intercept; user + system: differences only (an intercept cancels)."""
    return ([Candidate(fs, w, i) for fs in FEATURE_SETS for i in (False, True) for w in WEIGHTINGS]
            + [Candidate(fs, "change", False, "total") for fs in FEATURE_SETS])


@dataclass(frozen=True)
class Weights:
    weights_ns: dict[str, float]
    intercept_ns: float = 0.0

    def predict_ns(self, counters: Mapping[str, float]) -> float:
        return self.intercept_ns + sum(w * counters.get(f, 0.0) for f, w in self.weights_ns.items())


def fit(cells: Sequence[CalibrationCell], candidate: Candidate, base: str) -> Weights:
    """Non-negative weights of `candidate` fitted on `cells` (none of a cell left out of them)."""
    rows, targets = _rows(cells, candidate, base)
    if not rows:  # a fold with no difference to fit (only the base left): no weights
        return Weights({f: 0.0 for f in candidate.features})
    a = np.asarray(rows, dtype=float)
    b = np.asarray(targets, dtype=float)
    # Columns scaled to unit norm: instructions (1e4-1e6 per query) and LL misses (tens) in one matrix otherwise
    # leave NNLS's tolerance meaningless for the small ones. The solution is scaled back.
    norms = np.linalg.norm(a, axis=0)
    usable = norms > 0
    solution = np.zeros(a.shape[1])
    if usable.any():
        try:
            z, _ = nnls(a[:, usable] / norms[usable], b, maxiter=50 * a.shape[1])
        except RuntimeError:  # NNLS did not converge: no weights rather than wrong ones (its folds then fail)
            z = np.zeros(int(usable.sum()))
        solution[usable] = z / norms[usable]
    weights = {f: float(solution[i]) for i, f in enumerate(candidate.features)}
    return Weights(weights, float(solution[-1]) if candidate.intercept else 0.0)


def _rows(cells: Sequence[CalibrationCell], c: Candidate, base: str) -> tuple[list[list[float]], list[float]]:
    def x(cell: CalibrationCell) -> list[float]:
        return [cell.counters.get(f, 0.0) for f in c.features] + ([1.0] if c.intercept else [])

    if c.measure == "total":
        return _difference_rows(cells, c, base)
    if c.weighting == "level":
        return [x(cell) for cell in cells], [cell.user_ns for cell in cells]
    rows: list[list[float]] = []
    targets: list[float] = []
    for group in _by_benchmark(cells).values():
        scale = statistics.median(cell.user_ns for cell in group)
        if c.weighting == "relative":
            rows += [[v / scale for v in x(cell)] for cell in group]
            targets += [cell.user_ns / scale for cell in group]
            continue
        ref = next((cell for cell in group if cell.build == base), group[0])
        xr = x(ref)
        rows.append([v / scale for v in xr])
        targets.append(ref.user_ns / scale)
        for cell in group:
            if cell is not ref:
                # the intercept cancels in a difference (its column is 0 here)
                rows.append([(v - r) / scale for v, r in zip(x(cell), xr, strict=True)])
                targets.append((cell.user_ns - ref.user_ns) / scale)
    return rows, targets


def _difference_rows(cells: Sequence[CalibrationCell], c: Candidate,
                     base: str) -> tuple[list[list[float]], list[float]]:
    """A "total" candidate's rows: per benchmark, every other build's counts minus the base's, over the base's
    measured user + system CPU, against the measured difference over the same: each residual is an error of the
    predicted change. A benchmark whose base was not measured gives no row."""
    rows: list[list[float]] = []
    targets: list[float] = []
    for group in _by_benchmark(cells).values():
        ref = next((cell for cell in group if cell.build == base), None)
        if ref is None or not ref.total_us:
            continue
        scale = ref.total_us * 1000.0
        for cell in group:
            if cell is not ref and cell.total_us is not None:
                rows.append([(cell.counters.get(f, 0.0) - ref.counters.get(f, 0.0)) / scale for f in c.features])
                targets.append((cell.total_us - ref.total_us) * 1000.0 / scale)
    return rows, targets


def _by_benchmark(cells: Iterable[CalibrationCell]) -> dict[str, list[CalibrationCell]]:
    out: dict[str, list[CalibrationCell]] = {}
    for cell in cells:
        out.setdefault(cell.benchmark, []).append(cell)
    return out


@dataclass(frozen=True)
class Prediction:
    """One cell predicted by a fit (held out: a fit that did not see the cell's build)."""
    build: str
    benchmark: str
    measured_us: float
    predicted_us: float
    measured_change: float | None = None  # against the base on the same benchmark; None for the base itself
    predicted_change: float | None = None  # None also where the predicted base level is not positive

    @property
    def level_error(self) -> float:
        return abs(self.predicted_us / self.measured_us - 1)

    @property
    def change_error(self) -> float | None:
        if self.measured_change is None:
            return None
        return math.inf if self.predicted_change is None else abs(self.predicted_change - self.measured_change)


def predictions(weights: Weights, cells: Iterable[CalibrationCell], base_cells: Mapping[str, CalibrationCell],
                base: str, measure: Measure = "user") -> list[Prediction]:
    """`cells` predicted by `weights`, each change against the base's cell of its benchmark (`base_cells`), the
    base's level predicted by the same weights ("user"); or ("total") each difference from the base's cell over the
    base's measured level, the level then anchored on the base's measured one (the base's own is exact)."""
    if measure == "total":
        return _difference_predictions(weights, cells, base_cells, base)
    out = []
    for cell in cells:
        predicted = weights.predict_ns(cell.counters) / 1000.0
        ref = base_cells.get(cell.benchmark)
        if cell.build == base or ref is None:
            out.append(Prediction(cell.build, cell.benchmark, cell.user_us, predicted))
            continue
        ref_predicted = weights.predict_ns(ref.counters) / 1000.0
        out.append(Prediction(cell.build, cell.benchmark, cell.user_us, predicted, cell.user_us / ref.user_us - 1,
                              predicted / ref_predicted - 1 if ref_predicted > 0 else None))
    return out


def _difference_predictions(weights: Weights, cells: Iterable[CalibrationCell],
                            base_cells: Mapping[str, CalibrationCell], base: str) -> list[Prediction]:
    out = []
    for cell in cells:
        ref = base_cells.get(cell.benchmark)
        if cell.total_us is None or ref is None or not ref.total_us:
            continue
        if cell.build == base:
            out.append(Prediction(cell.build, cell.benchmark, cell.total_us, cell.total_us))
            continue
        difference = (weights.predict_ns(cell.counters) - weights.predict_ns(ref.counters)) / 1000.0
        out.append(Prediction(cell.build, cell.benchmark, cell.total_us, ref.total_us + difference,
                              cell.total_us / ref.total_us - 1, difference / ref.total_us))
    return out


def builds_of(cells: Iterable[CalibrationCell]) -> list[str]:
    return list(dict.fromkeys(cell.build for cell in cells))


def held_out(cells: Sequence[CalibrationCell], candidate: Candidate, base: str) -> list[Prediction]:
    """Leave one build out at a time: each build's cells predicted by a fit on the other builds' cells only."""
    base_cells = {cell.benchmark: cell for cell in cells if cell.build == base}
    out: list[Prediction] = []
    for build in builds_of(cells):
        train = [cell for cell in cells if cell.build != build]
        if not train:
            continue
        out += predictions(fit(train, candidate, base), [c for c in cells if c.build == build], base_cells, base,
                           candidate.measure)
    return out


def in_sample(cells: Sequence[CalibrationCell], candidate: Candidate, base: str) -> list[Prediction]:
    """Every cell predicted by the fit on all of them (for comparison with `held_out`)."""
    base_cells = {cell.benchmark: cell for cell in cells if cell.build == base}
    return predictions(fit(cells, candidate, base), cells, base_cells, base, candidate.measure)


def quantile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between order statistics (numpy's default); infinities allowed."""
    if not values:
        return None
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    if v[lo] == v[hi]:
        return v[lo]
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


@dataclass(frozen=True)
class Figures:
    """Errors over predicted cells: of the change against the base (absolute, in fraction of the base's level:
    0.03 = 3 points) and of the level (relative)."""
    change_median: float | None
    change_p90: float | None
    level_median: float | None
    level_p90: float | None
    changes: int  # cells the change figures are over
    levels: int

    @staticmethod
    def of(predicted: Sequence[Prediction]) -> Figures:
        changes = [e for p in predicted if (e := p.change_error) is not None]
        levels = [p.level_error for p in predicted]
        return Figures(quantile(changes, 0.5), quantile(changes, 0.9), quantile(levels, 0.5), quantile(levels, 0.9),
                       len(changes), len(levels))

    def score(self) -> float:
        """What candidates are ranked by: the median and the 90th percentile change error (the figure and the band
        a prediction is quoted with); the level's where no change could be validated."""
        if self.change_median is not None and self.change_p90 is not None:
            return self.change_median + self.change_p90
        if self.level_median is not None and self.level_p90 is not None:
            return self.level_median + self.level_p90
        return math.inf


@dataclass(frozen=True)
class Evaluation:
    """A candidate: its weights fitted on all cells, its R² there, and its leave-one-build-out figures."""
    candidate: Candidate
    weights: Weights
    r2: float | None
    held_out: list[Prediction]
    figures: Figures

    def rank(self) -> tuple[float, int]:
        score = self.figures.score()
        return (round(score / TIE) * TIE if math.isfinite(score) else math.inf, self.candidate.parameters)


def r_squared(predicted: Sequence[Prediction]) -> float | None:
    """R² of the level (µs per query) over `predicted`."""
    measured = [p.measured_us for p in predicted]
    if len(measured) < 2:
        return None
    mean = statistics.fmean(measured)
    total = sum((m - mean) ** 2 for m in measured)
    if total == 0:
        return None
    return 1 - sum((p.predicted_us - p.measured_us) ** 2 for p in predicted) / total


def evaluate(cells: Sequence[CalibrationCell], candidate: Candidate, base: str) -> Evaluation:
    weights = fit(cells, candidate, base)
    base_cells = {cell.benchmark: cell for cell in cells if cell.build == base}
    held = held_out(cells, candidate, base)
    # A "total" candidate's levels are anchored on the measured base: no R² of its own level
    r2 = r_squared(predictions(weights, cells, base_cells, base)) if candidate.measure == "user" else None
    return Evaluation(candidate, weights, r2, held, Figures.of(held))


def choose(cells: Sequence[CalibrationCell], base: str,
           among: Sequence[Candidate] | None = None) -> list[Evaluation]:
    """Every candidate evaluated, best first."""
    return sorted((evaluate(cells, c, base) for c in among or candidates()), key=Evaluation.rank)


@dataclass(frozen=True)
class Nested:
    """The whole procedure validated on builds it did not see: for each left-out build (not the base), the
    candidate chosen on the other builds alone, fitted on them, predicting the left-out build's changes."""
    figures: Figures
    chosen: dict[str, str]  # left-out build -> the candidate chosen without it
    held_out: list[Prediction]


def nested(cells: Sequence[CalibrationCell], base: str, among: Sequence[Candidate] | None = None) -> Nested | None:
    """None when there are too few builds: the choice without a left-out build needs two other builds than the
    base to validate on."""
    others = [b for b in builds_of(cells) if b != base]
    if len(others) < 3:
        return None
    base_cells = {cell.benchmark: cell for cell in cells if cell.build == base}
    chosen: dict[str, str] = {}
    held: list[Prediction] = []
    for build in others:
        train = [cell for cell in cells if cell.build != build]
        best = choose(train, base, among)[0]
        chosen[build] = best.candidate.label()
        held += predictions(best.weights, [c for c in cells if c.build == build], base_cells, base,
                            best.candidate.measure)
    return Nested(Figures.of(held), chosen, held)


@dataclass(frozen=True)
class Calibration:
    """The chosen model and how it was validated."""
    base: str
    cells: list[CalibrationCell]
    evaluations: list[Evaluation]  # every candidate, best first
    nested: Nested | None
    excluded: list[str] = field(default_factory=list)  # cells left out of the fit, with why

    @property
    def chosen(self) -> Evaluation:
        return self.evaluations[0]

    @property
    def builds(self) -> list[str]:
        return builds_of(self.cells)

    @property
    def benchmarks(self) -> list[str]:
        return list(dict.fromkeys(cell.benchmark for cell in self.cells))

    def band(self) -> Figures:
        """The change figures the model is quoted with: the nested ones where there are builds enough (they
        include the choice of candidate), else the chosen candidate's; the level's are the chosen candidate's."""
        mine = self.chosen.figures
        if self.nested is None or self.nested.figures.change_median is None:
            return mine
        n = self.nested.figures
        return Figures(n.change_median, n.change_p90, mine.level_median, mine.level_p90, n.changes, mine.levels)

    def per_build(self) -> list[BuildRow]:
        """Per build, held out (the chosen candidate's folds) and in sample: predicted against measured change."""
        inside = in_sample(self.cells, self.chosen.candidate, self.base)
        rows = []
        for build in self.builds:
            held = [p for p in self.chosen.held_out if p.build == build]
            fitted = [p for p in inside if p.build == build]
            rows.append(BuildRow(build, build == self.base, _median(p.measured_change for p in held),
                                 _median(p.predicted_change for p in held), Figures.of(held), Figures.of(fitted)))
        return rows

    def record(self, host: Mapping[str, str], created: str, quick: bool = False,
               source: str | None = None) -> CostModelRecord:
        band = self.band()
        chosen = self.chosen
        return CostModelRecord(
            type="cost_model", version=MODEL_VERSION, host=dict(host), created=created,
            weights_ns={f: _round(w) for f, w in chosen.weights.weights_ns.items()},
            intercept_ns=_round(chosen.weights.intercept_ns), r2=_maybe(chosen.r2),
            change_error_median=_maybe(band.change_median), change_error_p90=_maybe(band.change_p90),
            level_error_median=_maybe(band.level_median), level_error_p90=_maybe(band.level_p90),
            cells=len(self.cells), builds=self.builds, benchmarks=self.benchmarks, base=self.base, quick=quick,
            source=source, measure=chosen.candidate.measure)


@dataclass(frozen=True)
class BuildRow:
    build: str
    is_base: bool
    measured_change: float | None  # median over its benchmarks
    predicted_change: float | None  # median over its benchmarks, held out
    held_out: Figures
    in_sample: Figures


def _median(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def _round(x: float) -> float:
    return float(f"{x:.6g}")


def _maybe(x: float | None) -> float | None:
    """A figure for the record: JSON has no infinity (a fold whose fit predicted nothing)."""
    return None if x is None or not math.isfinite(x) else _round(x)


class TooFewCells(ValueError):
    """Not enough measured cells to fit and validate: the message says what is missing."""


def calibrate(cells: Sequence[CalibrationCell], base: str, among: Sequence[Candidate] | None = None,
              excluded: Sequence[str] = ()) -> Calibration:
    """Chooses, fits and validates. Needs the base and at least one other build measured on a common benchmark."""
    cells = [c for c in cells if math.isfinite(c.user_us) and c.user_us > 0]
    if not any(c.build == base for c in cells):
        raise TooFewCells(f"the base build {base} has no measured cell")
    shared = {c.benchmark for c in cells if c.build == base}
    if not any(c.build != base and c.benchmark in shared for c in cells):
        raise TooFewCells("no build other than the base was measured on a benchmark the base was measured on")
    return Calibration(base, list(cells), choose(cells, base, among), nested(cells, base, among), list(excluded))
