"""The build pool (buildlab/build_pool.py): builds run at once, each reported as it finishes; a failure starts nothing
more, lets the running builds end whole, and is raised as it was. Plain functions stand for builds: no compiler."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from dbperf.buildlab.build_pool import run_at_once
from dbperf.errors import UserError

pytestmark = pytest.mark.unit

TIMEOUT_S = 10


def test_builds_run_at_once_and_every_one_finishes():
    # Each job waits for the other at the barrier: one after another, the first would time out there.
    barrier = threading.Barrier(2, timeout=TIMEOUT_S)

    def work(job: str) -> str:
        barrier.wait()
        return job.upper()

    assert run_at_once(["o2", "o3"], work, workers=2) == {"o2": "O2", "o3": "O3"}


def test_each_build_is_reported_as_it_finishes_in_the_callers_thread():
    reported: list[str] = []
    threads: set[str] = set()
    fast_reported = threading.Event()

    def work(job: str) -> int:
        if job == "pgo":  # started first, finishes last: it waits until the fast one has been reported
            assert fast_reported.wait(TIMEOUT_S)
        return len(job)

    def on_done(job: str, result: int) -> None:
        reported.append(f"{job}={result}")
        threads.add(threading.current_thread().name)
        if job == "o2":
            fast_reported.set()

    assert run_at_once(["pgo", "o2"], work, on_done, workers=2) == {"pgo": 3, "o2": 2}
    assert reported == ["o2=2", "pgo=3"]
    assert threads == {threading.current_thread().name}


def test_no_more_builds_than_workers_run_at_once():
    lock = threading.Lock()
    barrier = threading.Barrier(2, timeout=TIMEOUT_S)  # two at a time meet here: the peak is at least 2
    now = peak = 0

    def work(job: int) -> int:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
        barrier.wait()
        with lock:
            now -= 1
        return job

    assert run_at_once(list(range(6)), work, workers=2) == {i: i for i in range(6)}
    assert peak == 2


def test_a_failure_is_raised_as_it_was_and_the_running_build_ends_whole(tmp_path: Path):
    failing = threading.Event()
    started: list[str] = []

    def work(job: str) -> Path:
        started.append(job)
        out = tmp_path / job
        if job == "bad":
            failing.set()
            raise UserError("build of sqlite@3.54.1 [O2 -fno-such-option] failed (log build.log): gcc: error")
        if job == "running":  # still writing when the other fails: it is waited for, not cut off
            assert failing.wait(TIMEOUT_S)
            time.sleep(0.2)
            out.write_text("library\nmanifest\n")
        return out

    with pytest.raises(UserError) as raised:
        run_at_once(["bad", "running", "later"], work, workers=2)
    assert str(raised.value) == "build of sqlite@3.54.1 [O2 -fno-such-option] failed (log build.log): gcc: error"
    assert (tmp_path / "running").read_text() == "library\nmanifest\n"
    assert "later" not in started  # not started once a build had failed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["running"]


def test_a_report_of_a_finished_build_still_comes_when_another_fails():
    reported: list[str] = []
    good_done = threading.Event()

    def work(job: str) -> str:
        if job == "bad":
            assert good_done.wait(TIMEOUT_S)
            raise UserError("bad build")
        good_done.set()
        return job

    with pytest.raises(UserError, match=r"^bad build$"):
        run_at_once(["bad", "good"], work, lambda job, _: reported.append(job), workers=2)
    assert reported == ["good"]


def test_no_builds_is_no_work():
    assert run_at_once([], lambda job: job) == {}
