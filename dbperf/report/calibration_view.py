"""`dbperf calibrate`'s views: the fit's story (the model, which candidate and why, its validation, a table per
build) and `--show`'s model as stored, drawn as the lines they have always been; their JSON is the cost model as
stored (records.py's CostModelRecord: its fields are what a script reads)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from dbperf.records import CostModelRecord
from dbperf.report.model import Section, View
from dbperf.stats.cost_fit import MISPREDICTS, Calibration

NAMES = {"instructions": "instruction", "branches": "branch", MISPREDICTS: "branch mispredict (simulated predictor)",
         "i1_misses": "I1 miss", "d1_misses": "D1 miss", "ll_misses": "LL miss"}


def pct(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "–"
    if not math.isfinite(x):
        return "∞"
    return f"{x:+.1%}" if signed else f"{x:.1%}"


def host_line(host: Mapping[str, str]) -> str:
    return f"{host.get('cpu_model')}, microcode {host.get('microcode')}, kernel {host.get('kernel')}"


def model_lines(model: CostModelRecord) -> list[str]:
    """The model as stored: what `calibrate --show` prints and `calibrate` ends with."""
    weights = ", ".join(f"{w:.4g} ns per {NAMES.get(f, f)}" for f, w in model.weights_ns.items())
    lines = [
        f"cost model of {host_line(model.host)}: calibrated {model.created}"
        + (" (--quick: fewer cells, a weaker validation)" if model.quick else ""),
        (f"  user CPU per query = {weights}" + (f" + {model.intercept_ns:.4g} ns" if model.intercept_ns else "")
         if model.measure == "user" else
         f"  user + system CPU per query = the base's measured level + {weights} × (each count minus the base's): "
         "the kernel's work, the same for every build of a benchmark, cancels"),
        f"  fitted on {model.cells} cells: {len(model.builds)} SQLite builds ({', '.join(model.builds)}) × "
        f"{len(model.benchmarks)} benchmarks; base {model.base}",
        f"  R² of the level (all cells, in sample): {'–' if model.r2 is None else f'{model.r2:.3f}'}"
        + (" (differences over the measured base: no level of its own)" if model.measure == "total" else ""),
        f"  change against the base, builds left out one at a time: |error| median {pct(model.change_error_median)}, "
        f"p90 {pct(model.change_error_p90)} (the band a prediction is quoted with)",
        f"  level, builds left out one at a time: |relative error| median {pct(model.level_error_median)}, p90 "
        f"{pct(model.level_error_p90)}" + (" (anchored on the base's measured level)" if model.measure == "total"
                                           else ""),
    ]
    if model.source:
        lines.append(f"  measured in {model.source}")
    return lines


def calibration_lines(c: Calibration, model: CostModelRecord, stored: Path, version: int) -> list[str]:
    """The fit's story: the model, which candidate and why, the validation and a per-build table."""
    chosen = c.chosen
    lines = model_lines(model)
    lines.append(f"  stored as this host's current model: {stored} (version {version})")
    lines.append("")
    lines.append(f"chosen: {chosen.candidate.label()}, of {len(c.evaluations)} candidates (user CPU: feature sets × "
                 "with or without an intercept × level/relative/change weighting; user + system CPU: feature sets as "
                 "differences), by the median + p90 |error| of the predicted change on builds left out")
    f = chosen.figures
    lines.append(f"  its own folds: change |error| median {pct(f.change_median)}, p90 {pct(f.change_p90)} over "
                 f"{f.changes} cells; level median {pct(f.level_median)}, p90 {pct(f.level_p90)} over {f.levels}")
    if c.nested is not None:
        n = c.nested.figures
        lines.append(f"  the whole procedure (the choice too made without the left-out build): change |error| median "
                     f"{pct(n.change_median)}, p90 {pct(n.change_p90)}: the model's band")
    else:
        lines.append("  too few builds to validate the choice itself (it needs 3 besides the base): the band is the "
                     "chosen candidate's own folds, which flatter it")
    lines.append(f"  builds left out one at a time: {', '.join(c.builds)} (the base {c.base}: its level only, its "
                 "change is 0 by definition)")
    if c.excluded:
        lines.append(f"  not fitted ({len(c.excluded)}): " + "; ".join(c.excluded))
    lines.append("")
    what = "user CPU" if chosen.candidate.measure == "user" else "user + system CPU"
    lines.append(f"per build, change of {what} per query against the base (median over its benchmarks), held out "
                 "and in sample:")
    header = ("build", "measured Δ", "predicted Δ", "|err| median", "|err| p90", "level err", "in-sample |err|")
    rows = [header]
    for r in c.per_build():
        rows.append((r.build + (" (base)" if r.is_base else ""), pct(r.measured_change, True),
                     pct(r.predicted_change, True), pct(r.held_out.change_median), pct(r.held_out.change_p90),
                     pct(r.held_out.level_median), pct(r.in_sample.change_median)))
    lines += table(rows)
    lines.append("")
    lines.append("candidates, best first (leave-one-build-out |error| of the change: median, p90; R² in sample):")
    for e in c.evaluations[:8]:
        lines.append(f"  {e.candidate.label():60} {pct(e.figures.change_median):>7} {pct(e.figures.change_p90):>7}"
                     f"   R² {'–' if e.r2 is None else f'{e.r2:.3f}'}")
    return lines


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths,
                                                                                                  strict=True)))
            for r in rows]


def _view(name: str, lines: list[str], model: CostModelRecord) -> View:
    # The lines as written, no title drawn: the text `dbperf calibrate` has always printed.
    return View(name, "", (Section(lines=tuple(lines)),), document=msgspec.to_builtins(model))


def calibration_view(c: Calibration, model: CostModelRecord, stored: Path, version: int) -> View:
    """What `dbperf calibrate` ends with: the fit's story; JSON: the model stored."""
    return _view("calibration", calibration_lines(c, model, stored, version), model)


def model_view(model: CostModelRecord, stored: Path, versions: int) -> View:
    """`dbperf calibrate --show`: the host's current model; JSON: the model as stored."""
    return _view("cost-model", [*model_lines(model), f"  stored in {stored} (version {versions}; "
                                              "earlier versions beside it as NAME.N.json)"], model)
