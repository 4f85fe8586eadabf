"""The history store's use cases: record a run, add results directories, list the runs, read one run, query a
series and show it or its change points (dbperf/history/ holds the store and the series)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from dbperf.errors import UserError
from dbperf.history.series import BY, Series, build_series
from dbperf.history.store import Result, Run, Store, history_path, open_store
from dbperf.metrics import WALL, Metric
from dbperf.run_meta import RunMeta
from dbperf.usecases.progress import PROGRESS, say


def record_run(directory: Path, err: Console = PROGRESS) -> None:
    """At the end of `dbperf run`: the run goes into the history. A store that cannot be written is a warning: the
    run's own results are already safe in its directory."""
    try:
        path = history_path()
        if path is None or not (directory / "meta.json").is_file():
            return
        store = Store(path)
        try:
            run_id, _ = store.add_run(directory)
        finally:
            store.close()
    except UserError as e:
        say(f"dbperf: warning: not recorded in the history: {e}", err)
        return
    say(f"dbperf: recorded in the history as run {run_id} ({path})", err)


def add_runs(directories: list[Path]) -> list[tuple[Path, int, bool]]:
    """Each directory with its run id and whether it is new to the store."""
    store = open_store()
    try:
        return [(d, *store.add_run(d)) for d in directories]
    finally:
        store.close()


def list_runs() -> tuple[Path, list[Run]]:
    """The store's path and its runs."""
    store = open_store()
    try:
        return store.path, store.runs()
    finally:
        store.close()


@dataclass
class StoredRun:
    id: int
    meta: RunMeta
    results: list[Result]


def stored_run(run: int | None) -> StoredRun:
    """One run of the store (the latest without an id)."""
    store = open_store()
    try:
        runs = store.runs()
        if not runs:
            raise UserError(f"{store.path}: the history is empty (dbperf history add DIR records a results directory)")
        run_id = run if run is not None else runs[-1].id
        return StoredRun(run_id, store.meta(run_id), store.results(run_id))
    finally:
        store.close()


def query_series(engine: str | None, benchmarks: list[str] | None, threads: int | None, host: str | None,
                 build: str | None, config: str | None, target: str | None, by: str, pvalue: float,
                 metric: Metric = WALL) -> Series:
    """The stored results that match, as a series by version or by run, with its change points."""
    if by not in BY:
        raise UserError(f"--by: expected one of {', '.join(BY)}, got {by!r}")
    if not 0 < pvalue < 1:
        raise UserError(f"--pvalue: expected a probability between 0 and 1, got {pvalue}")
    store = open_store()
    try:
        results = store.results(engine=engine, threads=threads, host=host, build=build, config=config,
                                target=target)
    finally:
        store.close()
    if benchmarks:
        unknown = set(benchmarks) - {r.benchmark for r in results}
        if unknown:
            raise UserError(f"--benchmark: nothing stored for {', '.join(sorted(unknown))}")
        results = [r for r in results if r.benchmark in benchmarks]
    return build_series(results, by, pvalue=pvalue, metric=metric)
