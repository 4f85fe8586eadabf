"""A cost model calibrated on the host (records.CostModelRecord, fitted by stats/cost_fit.py): it turns the simulated
tier's per-query counts into predicted CPU time per query (user, or user + system as a difference over the base's
measured level), so that a change in work can be said as a change in
speed with a validated error band. The simulated tier alone measures work (stats/simulated.py); only a prediction
whose band excludes ±min_effect earns a speed word."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from dbperf.records import CostModelRecord
from dbperf.storage.cost_models import HOST_KEYS  # what a model is valid for (host/facts.py's names)

MODEL_VERSION = 1
# The simulated per-query counters a model may weigh (explain/profile.py simulated_per_query's keys).
FEATURES = ("instructions", "branches", "branch_mispredicts_simulated_predictor", "i1_misses", "d1_misses",
            "ll_misses")

PredictedVerdict = Literal["faster", "slower", "same", "undecided"]


@dataclass(frozen=True)
class PredictedChange:
    """The calibrated prediction for one cell: CPU per query (the model's `measure`: user, or user + system), target
    vs base (-0.05: 5% less CPU per query, i.e. faster), quoted with the model's validated band (the 90th percentile
    of |error| on builds the fit did not see)."""
    delta: float
    band: float
    verdict: PredictedVerdict

    @property
    def low(self) -> float:
        return self.delta - self.band

    @property
    def high(self) -> float:
        return self.delta + self.band


def predict_ns(model: CostModelRecord, per_query: Mapping[str, float]) -> float | None:
    """Predicted CPU nanoseconds per query (of a "total" model: its part the counts explain); None when a counter the
    model weighs is missing."""
    total = model.intercept_ns
    for name, weight in model.weights_ns.items():
        value = per_query.get(name)
        if value is None:
            return None
        total += weight * value
    return total


def predicted_verdict(delta: float, band: float, min_effect: float) -> PredictedVerdict:
    """faster/slower only when the whole band lies beyond ±min_effect on one side; same when it lies within it."""
    if delta + band < -min_effect:
        return "faster"
    if delta - band > min_effect:
        return "slower"
    if -min_effect <= delta - band and delta + band <= min_effect:
        return "same"
    return "undecided"


def predicted_change(model: CostModelRecord, target: Mapping[str, float], base: Mapping[str, float],
                     min_effect: float, base_measured_ns: float | None = None) -> PredictedChange | None:
    """The predicted change of CPU per query of `target` against `base` (both simulated per-query counts). A "user"
    model predicts both levels; a "total" model predicts the difference, over the base's measured user + system CPU
    per query (`base_measured_ns`, the run's own: None, no prediction)."""
    t, b = predict_ns(model, target), predict_ns(model, base)
    if t is None or b is None or model.change_error_p90 is None:
        return None
    if model.measure == "total":
        if not base_measured_ns or base_measured_ns <= 0:
            return None
        delta = (t - b) / base_measured_ns
    elif b <= 0:
        return None
    else:
        delta = t / b - 1
    return PredictedChange(delta, model.change_error_p90, predicted_verdict(delta, model.change_error_p90, min_effect))


def usable(model: CostModelRecord, host: Mapping[str, object]) -> str | None:
    """Why `model` cannot predict for a run measured on `host` (None: it can)."""
    if model.version != MODEL_VERSION:
        return f"the cost model is of format {model.version}, this dbperf reads {MODEL_VERSION}: calibrate again"
    for key in HOST_KEYS:
        if str(host.get(key)) != model.host.get(key):
            return f"the cost model was calibrated on another {key.replace('_', ' ')} ({model.host.get(key)})"
    return None
