"""What reports say about a slices run's turns (`order = "slices"`, driver/src/stalls.rs): per cell, the time its
events ran past the ends of its slices into the next target's (a write target's checkpoint or fsync there is a hole
in another target's turn), the stalls among those overruns, and with `turn_checkpoint` the checkpoints each target
ran at the start of its own turns. One line beside the verdicts; nothing where no cell was measured in slices."""

from __future__ import annotations

import statistics

from dbperf.records import TurnStalls
from dbperf.stats.rqps_matrix import Cell, Matrix


def cell_turns(cell: Cell) -> list[TurnStalls]:
    """The cell's repeats' turns (repeats from another order, or from an older driver, have none)."""
    return [r.result.turns for r in cell.runs if r.result and r.result.turns]


def _ms(seconds: float) -> str:
    return f"{1000 * seconds:.1f} ms"


def _part(cell: Cell, turns: list[TurnStalls]) -> str:
    part = (f"{cell.target} {cell.benchmark} t={cell.threads} {_ms(statistics.median(t.spill_s for t in turns))} "
            f"({sum(t.spills for t in turns)} stalls over 1 ms, longest {_ms(max(t.spill_max_s for t in turns))})")
    if any(t.turn_checkpoint for t in turns):
        part += f", checkpoints in its own turns {_ms(statistics.median(t.checkpoint_s for t in turns))}"
    return part


def turns_lines(m: Matrix) -> list[str]:
    """One line: per cell with a stall or a turn checkpoint, the median per repeat of the time its events ran into
    the next target's slices (its stalls and the longest overrun) and of its checkpoints' time; or that none had."""
    cells = sorted((c for c in m.cells.values() if cell_turns(c)), key=lambda c: (c.benchmark, c.threads, c.target))
    if not cells:
        return []
    marked = [c for c in cells if any(t.spills or t.checkpoints for t in cell_turns(c))]
    head = ("slices: time each target's events ran past its slices' ends into the next target's, median per repeat "
            "(the target's own cost, measured in another's turn; docs/verdicts.md)")
    if not marked:
        return [f"{head}: no overrun longer than 1 ms in any cell"]
    return [f"{head}: " + "; ".join(_part(c, cell_turns(c)) for c in marked)]
