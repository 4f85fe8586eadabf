"""Independent builds at once, one a core: each reported as it finishes, in the caller's thread.

On the first failure no further build is started; the builds already running are waited for (each ends whole:
cached with its manifest, or refused without one, never cut off mid-write), then the failure is raised as it was
(a UserError stays one line). Builds are started in the order given: put the longest first.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

Job = TypeVar("Job", bound=Hashable)
Result = TypeVar("Result")


def run_at_once(jobs: Sequence[Job], work: Callable[[Job], Result],
                on_done: Callable[[Job, Result], None] | None = None, workers: int | None = None) -> dict[Job, Result]:
    """work(job) for every job, `workers` at a time (default: the cores this process may use); on_done(job,
    result) as each finishes."""
    size = max(1, min(len(jobs), workers or len(os.sched_getaffinity(0))))
    waiting = list(jobs)[::-1]
    running: dict[Future[Result], Job] = {}
    results: dict[Job, Result] = {}
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=size, thread_name_prefix="dbperf-build") as pool:
        try:
            while running or (waiting and failure is None):
                while waiting and failure is None and len(running) < size:
                    job = waiting.pop()
                    running[pool.submit(work, job)] = job
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    job = running.pop(future)
                    error = future.exception()
                    if error is not None:
                        failure = failure or error
                        continue
                    results[job] = future.result()
                    if on_done is not None:
                        on_done(job, results[job])
        except BaseException:  # Ctrl-C: start nothing more; the pool's exit waits for the running builds
            waiting.clear()
            raise
    if failure is not None:
        raise failure
    return results
