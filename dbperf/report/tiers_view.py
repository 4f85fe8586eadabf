"""Do the tiers agree, in a run's report (stats/tiers.py): the mark beside a cell whose measured call the simulated
work does not share, the lines that name each such cell with both figures, the calibrated prediction of CPU per
query (stats/cost_model.py) where the host has a cost model, or the note that it has none and how to make one, and the
fields JSON and CSV carry. Speed words here belong to the measured tiers and to the calibrated prediction only."""

from __future__ import annotations

from typing import Any

import msgspec

from dbperf.report.verdict_quality import cell_label
from dbperf.stats.rqps_matrix import Cell, Matrix
from dbperf.stats.tiers import AA_REASON

DISAGREE_MARK = "≠"
CALIBRATE = "`dbperf calibrate` makes one (`--quick`: fewer cells)"
TIERS_LEGEND = (
    f"{DISAGREE_MARK} : the tiers disagree: a decided measured faster/slower (the wall clock, else the CPU time) whose "
    "simulated work is not fewer/more alike, or a calibrated prediction outside its band from the measured CPU "
    "change (user, or user + system: the model's measure); each one is named with both figures (JSON/CSV `tiers`: "
    "agree, disagree, open (nothing measured decided); `tiers_why`); the A/A copy agrees by construction")
PREDICTED_LEGEND = (
    "col-N predicted CPU Δ : the host's calibrated cost model on the simulated counts: CPU per query (its measure: "
    "user, or user + system as a difference over the base's measured level) against the base's (negative: less "
    "CPU), ± the model's error band on builds its fit did not see; faster/slower only when the band excludes "
    "±min_effect, same when it lies within it, else undecided")


def disagrees(cell: Cell | None) -> bool:
    return cell is not None and cell.tiers is not None and cell.tiers.tiers == "disagree"


def mark(cell: Cell | None) -> str:
    """` ≠` after a disagreeing cell's simulated figure; nothing otherwise."""
    return f" {DISAGREE_MARK}" if disagrees(cell) else ""


def _ordered(m: Matrix) -> list[Cell]:
    return [c for _, b, t in m.rows() for target in m.targets if (c := m.cell(target, b, t)) is not None]


def disagreement_lines(m: Matrix) -> list[str]:
    """One line per disagreeing cell, in report order: where, and why in both tiers' figures."""
    return [f"{DISAGREE_MARK} {cell_label(m, c)}: {c.tiers.why}" for c in _ordered(m) if disagrees(c) and c.tiers]


def predicted_text(cell: Cell | None) -> str:
    """The calibrated prediction: Δ CPU per query ± its band and its own verdict; `-` where there is none."""
    p = cell.predicted if cell is not None else None
    if p is None:
        return "-"
    return f"{p.delta:+.1%} ±{p.band:.1%} {p.verdict}"


def has_model(m: Matrix) -> bool:
    return m.cost_model is not None


def cost_model_line(m: Matrix) -> str | None:
    """What the simulated tier can say about speed on this host: the model it predicts with, or why it has none and
    how to make one. None where the run has no simulated tier."""
    model = m.cost_model
    if model is not None:
        band = "-" if model.change_error_p90 is None else f"{model.change_error_p90:.1%}"
        what = "user CPU" if model.measure == "user" else "user + system CPU"
        return (f"cost model: calibrated {model.created[:10]} on {model.host.get('cpu_model', 'this host')}, predicts "
                f"{what} ({model.cells} cells{', --quick' if model.quick else ''}; change error p90 {band})")
    note = m.cost_model_note
    if note is None:
        return None
    return note + ("" if "dbperf calibrate" in note else f"; {CALIBRATE}")


def cost_model_json(m: Matrix) -> dict[str, Any] | None:
    """For JSON's `simulated`: the model's weights, errors, host and creation, or the note why there is none."""
    if m.cost_model is not None:
        return {**msgspec.to_builtins(m.cost_model), "note": None}
    if m.cost_model_note is not None:
        return {"note": cost_model_line(m)}  # no weights: none is usable here
    return None


def tiers_fields(m: Matrix, cell: Cell) -> dict[str, Any]:
    """JSON and CSV: the agreement, the calibrated prediction and the measured CPU changes it is checked on (user, or
    user + system: the model's `measure`)."""
    t, p, u, c = cell.tiers, cell.predicted, cell.user_cpu_change, cell.cpu_change
    return {
        "tiers": t.tiers if t else None,
        "tiers_why": t.why if t else None,
        "predicted_cpu_delta": p.delta if p else None,
        "predicted_cpu_band": p.band if p else None,
        "predicted_verdict": p.verdict if p else None,
        "user_cpu_delta": u.estimate if u else None,
        "user_cpu_delta_low": u.low if u else None,
        "user_cpu_delta_high": u.high if u else None,
        "cpu_delta": c.estimate if c else None,
        "cpu_delta_low": c.low if c else None,
        "cpu_delta_high": c.high if c else None,
        "predicted_measure": (m.cost_model.measure if m.cost_model else None) if p else None,
    }


TIERS_FIELD_NAMES = tuple(tiers_fields(Matrix("", [], [], [], {}, "median"), Cell("", "", "", 1)))


def tiers_json() -> dict[str, str]:
    """For JSON's `simulated`: what `tiers` means, the A/A copy's by construction."""
    return {"agree": "the measured call (or same) is shared by the work, and by the calibrated prediction within its "
                     "band",
            "disagree": "a decided measured faster/slower is not shared by the simulated work, or the calibrated "
                        "prediction lies outside its band from the measured change of what it predicts (user "
                        "CPU, or user + system CPU: the model's measure)",
            "open": "nothing measured decided, or no simulated figure to compare",
            "aa_copy": AA_REASON}
