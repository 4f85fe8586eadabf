"""`dbperf bisect`'s view: the path the search took, a row per step; with --metric simulated, the found step's
wall-clock confirmation and its lead (the per-function changes); and how the search ended, in one line (with --tree,
the first commit with more work named by hash, subject and author, and the commits skipped in another). Its JSON
is the bisect's path as bisect.json holds it (storage/bisect_path.py)."""

from __future__ import annotations

from dbperf.report.model import Block, Row, Section, View
from dbperf.storage.bisect_path import ONLY_SKIPPED, BisectPath, BisectResult, Judgement, Step


def _interval(j: Judgement) -> str:
    return "–" if j.lower is None or j.upper is None else f"[{j.lower:+.1%}, {j.upper:+.1%}]"


def _work(step: Step) -> str:
    w = step.judgement.work
    return "–" if w is None else f"{w:.4f}"


def _change(step: Step) -> str:
    w = step.judgement.work
    return "–" if w is None else f"{w - 1:+.2%}"


def _steps(result: BisectResult) -> Block:
    if result.metric.work:
        rows = tuple(Row((str(s.number), s.version, _work(s), _change(s), s.judgement.verdict,
                          s.judgement.directory or s.judgement.why or "–")) for s in result.steps)
        return Block("", "", ("step", "version", "work per query / oldest's", "change", "verdict (simulated)",
                              "counts or why skipped"), rows, text_columns=0, left=(1, 4, 5))
    rows = tuple(Row((str(s.number), s.version, str(s.attempt),
                      "–" if s.judgement.rqps is None else f"{s.judgement.rqps:.3f}", _interval(s.judgement),
                      s.judgement.verdict + s.judgement.metric.said,
                      str(s.judgement.rounds), s.judgement.directory or "–")) for s in result.steps)
    return Block("", "", ("step", "version", "try", "rQPS", "change interval", "verdict", "rounds", "results"), rows,
                 text_columns=0, left=(1, 5, 7))


def _confirmation(result: BisectResult) -> Section:
    title = (f"the step confirmed by the wall clock: {result.first_slower} against {result.last_not_slower} "
             "(reported, not deciding)")
    rows = tuple(Row((j.metric.name, "–" if j.rqps is None else f"{j.rqps:.3f}", _interval(j), j.verdict, str(j.rounds),
                      j.directory or "–")) for j in result.confirmation)
    return Section(title=title, block=Block("", "", ("measured on", "rQPS", "change interval", "verdict", "rounds",
                                                     "results"), rows, text_columns=0, left=(0, 3, 5)))


def path_sections(result: BisectResult) -> tuple[Section, ...]:
    """The path the search took, a row per step; then, for --metric simulated, the found step's wall-clock
    confirmation."""
    return (Section(block=_steps(result)), *((_confirmation(result),) if result.confirmation else ()))


def lead_section(result: BisectResult) -> Section | None:
    """The per-function changes at the found step (per query), or None when there are none."""
    if not result.lead:
        return None
    rows = tuple(Row((r.function, r.why, f"{r.before:,.1f}", f"{r.after:,.1f}", f"{r.after - r.before:+,.1f}",
                      "–" if r.misses is None else f"{r.misses:+,.2f}")) for r in result.lead)
    title = (f"the step's lead: {result.last_not_slower} → {result.first_slower}, per query (simulated: work, not "
             "speed)")
    block = Block("", "", ("function", "ranked by", "instructions before", "after", "change", "L1 misses change"),
                  rows, text_columns=0, left=(0, 1))
    return Section(title=title, block=block, rank="caption")


def _work_at(result: BisectResult, version: str | None) -> str:
    ratio = result.work_at(version)
    return "work unknown" if ratio is None else f"{ratio - 1:+.1%} work per query"


def _confirmed(result: BisectResult) -> str:
    if not result.confirmation:
        return ""
    said = ", ".join(f"{j.metric.name} {j.verdict}" + (f" (rQPS {j.rqps:.3f})" if j.rqps is not None else "")
                     for j in result.confirmation)
    return f"; at that step the wall clock says: {said} (reported, not deciding)"


def _step_work(result: BisectResult) -> str:
    """The found step's own change: instructions per query before and after it (the simulated metric)."""
    before, after = result.work_before, result.work_after
    if not before or after is None:
        return ""
    return f"; {before:,.0f} → {after:,.0f} instructions per query at the step ({after / before - 1:+.2%})"


def _found_commit(result: BisectResult) -> str:
    c = result.found
    assert c is not None
    return (f"first commit with more work: {c.hash} \"{c.subject}\" by {c.author}{_step_work(result)}, "
            f"{_work_at(result, result.first_slower)} against {result.versions[0][:12]} (simulated instructions: work, "
            f"not speed; its parent at the old level: {result.last_not_slower})")


def skipped_line(result: BisectResult) -> str | None:
    """The candidates left out (`git bisect skip`'s), named, or None when none was."""
    if not result.skipped:
        return None
    return (f"skipped ({len(result.skipped)}, could not be built or counted; the steps say why): "
            + ", ".join(result.skipped))


STOPPED = {"undecided": "a step stayed undecided after its last try (more --budget or --tries may decide it)",
           "failed": "a step measured nothing (its errors are in its results directory)",
           "interrupted": "interrupted"}


def outcome_line(result: BisectResult, engine: str, expected: int, noun: str = "releases") -> str:
    """How the search ended, in one line; `expected`: its steps when every step decides at once; `noun`: what the
    search went over (releases or commits)."""
    n, good = len(result.versions), result.versions[0]
    steps = f"{len(result.steps)} step(s) over {n} {noun} (about {expected} when every step decides)"
    if result.outcome == "found" and result.found is not None:
        return f"{_found_commit(result)}; {steps}{_confirmed(result)}"
    if result.metric.work and result.outcome == "found":
        return (f"first release with more work: {engine} {result.first_slower}, {_work_at(result, result.first_slower)}"
                f" against {good}{_step_work(result)} (simulated instructions: work, not speed; last at the old "
                f"level: {result.last_not_slower}); {steps}{_confirmed(result)}")
    if result.outcome == ONLY_SKIPPED:
        between = result.versions[result.versions.index(result.last_not_slower or good) + 1:
                                  result.versions.index(result.first_slower or result.versions[-1]) + 1]
        return (f"not found: only skipped {noun} were left: the first with more work is one of "
                f"{', '.join(between)} (after {result.last_not_slower}); {steps}")
    if result.metric.work and result.outcome == "none-slower":
        return (f"not found: no {noun[:-1]} with more work: {engine} {result.last_not_slower} is at "
                f"{_work_at(result, result.last_not_slower)} against {good}, within the threshold; {steps}")
    if result.outcome == "found":
        return (f"first slower release: {engine} {result.first_slower} (last not slower: {result.last_not_slower}, "
                f"against {good}); {steps}")
    if result.outcome == "none-slower":
        return f"no slower release: {engine} {result.last_not_slower} is not slower than {good}; {steps}"
    bracket = (f"; the first slower release lies after {result.last_not_slower}, at or before "
               f"{result.first_slower}" if result.first_slower else "")
    return f"stopped: {STOPPED.get(result.outcome, result.outcome)}{bracket}; {steps}"


def bisect_view(path: BisectPath, expected: int) -> View:
    """The whole of a bisect's answer (`expected`: its steps when every step decides at once); JSON: its path."""
    result = path.result
    lead = lead_section(result)
    skipped = skipped_line(result)
    ended = Section(lines=(outcome_line(result, path.settings.engine, expected, path.candidates),
                           *((skipped,) if skipped else ())))
    return View("bisect", "bisect path", (*path_sections(result), *((lead,) if lead else ()), ended),
                document=path.document(), rows=step_rows(result), columns=STEP_COLUMNS)


# CSV: a line per step, then the outcome as the last line's `outcome` (a search of no step still says how it ended).
STEP_COLUMNS = ("step", "version", "attempt", "verdict", "metric", "rqps", "lower", "upper", "rounds", "work",
                "directory", "why", "outcome", "answer", "exit_code")


def step_rows(result: BisectResult) -> tuple[dict[str, object], ...]:
    steps: list[dict[str, object]] = [
        {"step": s.number, "version": s.version, "attempt": s.attempt, "verdict": s.judgement.verdict,
              "metric": s.judgement.metric.name, "rqps": s.judgement.rqps, "lower": s.judgement.lower,
              "upper": s.judgement.upper, "rounds": s.judgement.rounds, "work": s.judgement.work,
              "directory": s.judgement.directory, "why": s.judgement.why, "outcome": "", "answer": "",
              "exit_code": ""} for s in result.steps]
    ended = {c: "" for c in STEP_COLUMNS} | {"outcome": result.outcome, "answer": result.answer or "",
                                             "exit_code": result.exit_code}
    return (*steps, ended)
