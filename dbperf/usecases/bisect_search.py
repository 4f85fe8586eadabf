"""The search of `dbperf bisect`, pure: a binary search for the first version whose verdict against the oldest is
slower, Pinpoint's way ([Pinpoint]), that only sees a judge, `judge(good, probe, attempt) -> Judgement`, so that its
order, its handling of undecided steps and its number of steps are tested with a fake judge. A step that ends
undecided (or unstable) is judged again, up to `tries`; if it is still undecided the search stops and says so with
the path so far: it never guesses a side. A candidate judged `skipped` (a commit that could not be built or counted)
is left out as `git bisect skip` leaves it: the next probe is the untried candidate nearest the middle of the
bracket; when only skipped ones are left, the answer is the bracket. The real judges are usecases/bisect_step.py's
(an A/B run a step) and usecases/bisect_work.py's (simulated work per query)."""

from __future__ import annotations

import math
from collections.abc import Callable

from dbperf.errors import UserError
from dbperf.storage.bisect_path import (
    DECIDED,
    FAILED,
    FOUND,
    NONE_SLOWER,
    ONLY_SKIPPED,
    SKIPPED,
    SLOWER,
    STEP_FAILED,
    STILL_UNDECIDED,
    BisectResult,
    Judgement,
    Step,
)

DEFAULT_TRIES = 3

Judge = Callable[[str, str, int], Judgement]  # (good, probe, attempt from 0) -> verdict of probe against good


def search(versions: list[str], judge: Judge, tries: int = DEFAULT_TRIES,
           on_step: Callable[[BisectResult], object] | None = None) -> BisectResult:
    """Binary search for the first version whose verdict against versions[0] is slower. The newest is judged
    first (if it is not slower there is nothing to find); then the middle of the bracket (last not slower, first
    slower) until the two are neighbours: 1 + ceil(log2(n - 1)) steps when every step is decided at once.
    `on_step` sees the result after every step (its outcome still "undecided" until the search ends)."""
    if len(versions) < 2:
        raise UserError("bisect: the range holds one release: give an older first and a newer last version")
    if tries < 1:
        raise UserError(f"--tries: expected at least 1, got {tries}")
    result = BisectResult(list(versions))
    good = versions[0]

    def decide(index: int) -> Judgement:
        judgement = Judgement("undecided")
        for attempt in range(tries):
            judgement = judge(good, versions[index], attempt)
            step = Step(len(result.steps) + 1, versions[index], attempt + 1, judgement)
            result.steps.append(step)
            if on_step is not None:
                on_step(result)  # the path so far, e.g. to be written before the next step runs
            if judgement.verdict in (*DECIDED, FAILED, SKIPPED) or judgement.exit_code:
                break
        return judgement

    lo, hi = 0, len(versions) - 1
    newest = decide(hi)
    if newest.verdict == SKIPPED:  # the newest is what the search is about: without it there is no range
        raise UserError(f"bisect: the newest, {versions[hi]}, could not be judged: {newest.why or 'skipped'}")
    if _stopped(result, newest):
        return result
    if newest.verdict != SLOWER:
        result.outcome, result.exit_code, result.last_not_slower = "none-slower", NONE_SLOWER, versions[hi]
        return result
    skipped: set[int] = set()
    while (mid := probe(lo, hi, skipped)) is not None:
        j = decide(mid)
        if j.verdict == SKIPPED:
            skipped.add(mid)
            continue
        if _stopped(result, j):
            result.last_not_slower, result.first_slower = versions[lo], versions[hi]  # the bracket so far
            return result
        if j.verdict == SLOWER:
            hi = mid
        else:
            lo = mid
    result.outcome, result.exit_code = ("found", FOUND) if hi - lo == 1 else (ONLY_SKIPPED, STILL_UNDECIDED)
    result.first_slower, result.last_not_slower = versions[hi], versions[lo]
    return result


def probe(lo: int, hi: int, skipped: set[int]) -> int | None:
    """The next index to judge strictly between lo and hi: the middle, or the untried one nearest it (the lower of
    two as near); None when none is left."""
    mid = (lo + hi) // 2
    left = [i for i in range(lo + 1, hi) if i not in skipped]
    return min(left, key=lambda i: (abs(i - mid), i)) if left else None


def _stopped(result: BisectResult, j: Judgement) -> bool:
    """Sets the outcome of a step that does not count: interrupted, failed, or undecided after every try."""
    if j.interrupted:
        result.outcome, result.exit_code = "interrupted", j.exit_code
    elif j.verdict == FAILED or j.exit_code:
        result.outcome, result.exit_code = "failed", STEP_FAILED
    elif j.verdict not in DECIDED:
        result.outcome, result.exit_code = "undecided", STILL_UNDECIDED
    else:
        return False
    return True


def expected_steps(n: int) -> int:
    """Steps of a search over n versions in which every step is decided at its first try (at most)."""
    return 1 + math.ceil(math.log2(n - 1)) if n > 2 else 1
