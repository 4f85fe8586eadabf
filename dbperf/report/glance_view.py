"""The run report read at a glance, the terminal's default: one cell per target in the rQPS matrix (the
rQPS, the verdict that decided it and which tier decided it, the simulated work Δ and the agreement mark), a legend
of at most five short lines before it (the targets, what a cell holds and the marks it uses, the verdict-quality
figures, the A/A false alarms, the cost model), and after it the cells whose tiers disagree, named with both
figures. Every tier's own column, how each figure was measured and the verdict rule are the full layout's
(matrix_layout.py: `--verbose`, Markdown, HTML; JSON and CSV carry every field) and docs/reports.md's."""

from __future__ import annotations

from dbperf.report.cell_text import (
    INTERFERED_MARK,
    NOISY_MARK,
    TRAINED_MARK,
    interfered_runs,
    matrix_rows,
    noisy,
    rqps_marks,
    verdict_word,
)
from dbperf.report.model import Block
from dbperf.report.simulated_view import REUSED_MARK, has_simulated, missing_lines, sim_of
from dbperf.report.steady_view import MARK as UNSETTLED_MARK
from dbperf.report.steady_view import unsettled_runs
from dbperf.report.tiers_view import (
    DISAGREE_MARK,
    cost_model_line,
    disagreement_lines,
    disagrees,
    mark,
    predicted_text,
)
from dbperf.report.verdict_quality import METRICS, aa_counts, metric_quality
from dbperf.run_meta import RunMeta
from dbperf.stats.rqps_matrix import Cell, Matrix

MORE = "every tier in its own column, how each figure was measured and the verdict rule: --verbose, the HTML report, " \
       "docs/reports.md"


def glance_text(m: Matrix, cell: Cell | None) -> str:
    """`1.04 faster·cpu !, sim -7.60% fewer ≠`: rQPS; the deciding verdict and its tier (wall clock, else CPU time;
    an undecided cell: what the wall clock could still hide); the measurement's marks; the simulated Δ est. cycles in
    words of work; with the host's cost model, the predicted CPU change ± its band and its own verdict; and ≠ where
    the tiers disagree. The base: its rQPS and marks only."""
    if cell is None:
        return "-"
    if cell.rqps is None:
        return "failed" if cell.failures and not cell.runs else "-"
    text = f"{cell.rqps:.2f}"
    if cell.target != m.base:
        v = cell.deciding_verdict
        # the measured tier that decided, after its verdict: `faster·cpu`
        text += " " + verdict_word(v) + (f"·{v.metric.name}" if v is not None and v.decided else "")
    marks = rqps_marks(m, cell)
    if marks:
        text += f" {marks}"
    s = sim_of(cell)
    if s is not None and cell.target != m.base:
        work = "missing" if s.estimated_cycles_delta is None else f"{s.estimated_cycles_delta:+.2%} {s.verdict}"
        text += f", sim {work}{f' {REUSED_MARK}' if s.reused_from else ''}"
        if cell.predicted is not None:  # the host's calibrated model: a CPU change, with its band and own verdict
            text += f", pred CPU {predicted_text(cell).removesuffix(' undecided')}"
        text += mark(cell)
    return text


def glance_block(m: Matrix) -> Block:
    rows = matrix_rows(m, lambda _, cell: [glance_text(m, cell)])
    # Left-aligned: a cell is words as much as figures, and its parts line up from the left.
    return Block("rQPS", "", ("benchmark", *[f"col-{i}" for i in range(1, len(m.targets) + 1)]), rows,
                 text_columns=1 + len(m.targets))


def targets_line(m: Matrix) -> str:
    """`col-1 : O2  (base) · col-2 : O3 · ...`: the targets on one line."""
    parts = []
    for i, t in enumerate(m.targets, 1):
        notes = ["base"] if t == m.base else []
        if m.trained_on.get(t):
            notes.append("PGO trained on: " + ", ".join(m.trained_on[t]))
        parts.append(f"col-{i} : {t}" + (f"  ({'; '.join(notes)})" if notes else ""))
    return " · ".join(parts)


def _marks_used(m: Matrix) -> list[str]:
    """The meaning of each mark the matrix shows, and of no other."""
    cells = [c for c in m.cells.values() if c.rqps is not None]
    used = [(NOISY_MARK, "noisy", any(noisy(m, c) for c in cells)),
            (TRAINED_MARK, "PGO trained on it", any(m.was_trained_on(c.target, c.benchmark) for c in cells)),
            (INTERFERED_MARK, "interfered", any(interfered_runs(c) for c in cells)),
            (UNSETTLED_MARK, "warm-up never settled", any(unsettled_runs(c) for c in cells)),
            (REUSED_MARK, "reused figures",
             any((s := sim_of(c)) and s.reused_from and c.target != m.base for c in cells)),
            (DISAGREE_MARK, "tiers disagree (below)", any(disagrees(c) for c in cells))]
    return [f"{sign} {meaning}" for sign, meaning, present in used if present]


def key_line(m: Matrix) -> str:
    """What a cell holds, and the marks it uses."""
    line = "cell: rQPS, verdict·tier that decided it (wall, else cpu; ?±x%: undecided)"
    if has_simulated(m):
        line += ", sim Δ est. cycles (work, not speed)"
    if m.cost_model is not None:
        line += ", pred CPU Δ ±band (cost model)"
    marks = _marks_used(m)
    return line + ("; " + ", ".join(marks) if marks else "")


def quality_line(m: Matrix, meta: RunMeta) -> str:
    """Decided counts per measured tier, with the median noise threshold, and the tiers' agreement."""
    parts = []
    for metric, get in METRICS:
        q = metric_quality(m, get)
        if q is None:
            continue
        median = q["noise_threshold_median"]
        parts.append(f"{metric.label} {q['decided']} of {q['cells']} decided"
                     + ("" if median is None else f" (noise threshold median {median:.1%})"))
    line = "verdict quality: " + (", ".join(parts) or "no compared cell")
    agreement = _agreement(m, meta)
    return line + (f"; tiers {agreement}" if agreement else "")


def _agreement(m: Matrix, meta: RunMeta) -> str | None:
    own = [c for c in m.cells.values() if c.tiers is not None and c.target != meta.aa_target]
    if not own:
        return None
    counts = {w: sum(1 for c in own if c.tiers and c.tiers.tiers == w) for w in ("agree", "disagree", "open")}
    return ", ".join(f"{n} {w}" for w, n in counts.items() if n)


def aa_short(m: Matrix, meta: RunMeta) -> list[str]:
    """The A/A false alarms per measured tier, in one line (the cells they were and the decided counts: --verbose,
    JSON `aa`)."""
    target = meta.aa_target
    if not target:
        return []
    parts: list[str] = []
    for metric, get in METRICS:
        aa = aa_counts(m, target, get)
        if aa is not None:
            parts.append(f"{metric.label} {aa['changed']} of {aa['cells']}"
                         + (" cells called changed" if not parts else ""))
    return [f"A/A: {target} is {m.base} run against itself: " + (", ".join(parts) or "no cell compared")
            + " (false alarms on this host)"]


def short_legend(m: Matrix, meta: RunMeta) -> tuple[str, ...]:
    """At most five lines: the targets, what a cell holds, the verdict quality, the A/A false alarms, the model."""
    model = cost_model_line(m)
    return (targets_line(m), key_line(m), quality_line(m, meta), *aa_short(m, meta), *([model] if model else []))


def findings(m: Matrix) -> tuple[str, ...]:
    """After the matrix: each disagreement with both figures, and why a simulated figure is missing."""
    return (*disagreement_lines(m), *missing_lines(m))
